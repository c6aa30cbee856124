"""A conda environment file's match specs as conda reads them
(https://docs.conda.io/projects/conda-build/en/latest/resources/package-spec.html): an operator other
than ``=``/``==`` on ``python`` or ``cudatoolkit`` is a range (``python<3.8`` excludes 3.8, it does
not pick it), and the space-separated form ``pytorch 1.7.1`` (name, version, build) pins the version
exactly, as ``pytorch==1.7.1`` does."""

from __future__ import annotations

import pytest

from cudaenv.project.config import ConfigError
from cudaenv.project.detect import detect_project


def detect(tmp_path, *lines: str):
    (tmp_path / "environment.yml").write_text("dependencies:\n" + "".join(f"  - {line}\n" for line in lines))
    return detect_project(tmp_path)


@pytest.mark.parametrize(("line", "python"), [
    ("python<3.8", "<3.8"),
    ("python>=3.6,<3.8", ">=3.6,<3.8"),
    ("python!=3.9", "!=3.9"),
    ("python=3.7", "3.7"),
    ("python==3.7.3", "3.7"),
    ("python 3.7", "3.7"),
])
def test_a_python_range_stays_a_range(tmp_path, line, python):
    assert detect(tmp_path, line, "pytorch=1.7.1").python == python


@pytest.mark.parametrize(("line", "cuda"), [
    ("cudatoolkit<11", "<11"),
    ("cudatoolkit>=10.1,<11", ">=10.1,<11"),
    ("cudatoolkit=10.2", "10.2"),
    ("cudatoolkit 10.2.89 h8f6ccaa_8", "10.2"),
])
def test_a_cuda_range_stays_a_range(tmp_path, line, cuda):
    assert detect(tmp_path, line, "pytorch=1.7.1").cuda == cuda


@pytest.mark.parametrize(("line", "spec"), [
    ("pytorch 1.7.1", "==1.7.1"),
    ("pytorch 1.7.1 py3.8_cuda11.0.221_cudnn8.0.5_0", "==1.7.1"),
    ("pytorch 1.7*", "==1.7.*"),
    ("pytorch >=1.7,<1.8", "<1.8,>=1.7"),
])
def test_the_space_separated_form_pins_the_version(tmp_path, line, spec):
    found = detect(tmp_path, line)
    assert found.frameworks["torch"] in (spec, ">=1.7,<1.8")


def test_a_range_that_is_no_range_names_the_line(tmp_path):
    with pytest.raises(ConfigError, match=r"environment.yml:2: python>=3\.x"):
        detect(tmp_path, "python>=3.x", "pytorch=1.7.1")


def test_a_cuda_range_that_is_no_range_names_the_line(tmp_path):
    with pytest.raises(ConfigError, match=r"environment.yml:2: cudatoolkit<eleven: .*'cudatoolkit>=11\.8,<13'"):
        detect(tmp_path, "cudatoolkit<eleven", "pytorch=1.7.1")
