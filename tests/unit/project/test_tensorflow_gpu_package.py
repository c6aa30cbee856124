"""A project that installs TensorFlow as ``tensorflow-gpu`` gets that package. PyPI's tensorflow-gpu
is the same GPU build as ``tensorflow`` for 1.15.0 and 2.1.0-2.11.0 (its manylinux wheels; read
2026-11-28, the rows' ``gpu_alias``), the only GPU build before (``gpu_package``), and has no release
after 2.11.0 but a source-only stub (2.12.0) that refuses to install. So ``tensorflow-gpu==2.10.0``
locks tensorflow-gpu 2.10.0 (not tensorflow 2.10.0 beside it, the same files twice), an unpinned
tensorflow-gpu gets 2.11.0 (not a 2.21 that package never had), and ``tensorflow-gpu>=2.12`` is a
no that says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import project_constraints
from cudaenv.project.detect import detect_project
from cudaenv.project.init import constraints_from_detected
from cudaenv.project.inputs import read_project_requirements
from cudaenv.project.intent import framework_packages
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import host


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def resolve_as(matrix, spec: str, package: str | None = "tensorflow-gpu"):
    constraints = Constraints(frameworks=(("tensorflow", SpecifierSet(spec)),),
                              packages=(("tensorflow", package),) if package else ())
    return resolve(matrix, constraints, host("535.104.05", ["A100"]))


def lines(tmp_path: Path, text: str):
    (tmp_path / "requirements.txt").write_text(text)
    return read_project_requirements(tmp_path, ["requirements.txt"]).lines


@pytest.mark.parametrize(("text", "expected"), [
    ("tensorflow-gpu==2.10.0\n", (("tensorflow", "tensorflow-gpu"),)),
    ("Tensorflow_GPU>=2.4\n", (("tensorflow", "tensorflow-gpu"),)),
    ("tensorflow==2.10.0\n", ()),
    ("-c constraints.txt\ntensorflow\n", ()),
    ("tensorflow-gpu==2.10.0; sys_platform == 'win32'\ntensorflow==2.10.0\n", ()),
], ids=["pinned", "spelling", "plain", "constraint-only", "windows-only"])
def test_the_lines_that_install_tensorflow_as_tensorflow_gpu(tmp_path, text, expected):
    (tmp_path / "constraints.txt").write_text("tensorflow-gpu==2.10.0\n")
    assert framework_packages(lines(tmp_path, text)) == expected


def test_a_pin_of_tensorflow_gpu_installs_tensorflow_gpu(matrix):
    result = resolve_as(matrix, "==2.10.0")
    assert result.ok and result.stack.requirements == ("tensorflow-gpu==2.10.0",)
    plain = resolve_as(matrix, "==2.10.0", package=None)
    assert plain.ok and plain.stack.requirements == ("tensorflow==2.10.0",)


def test_a_release_whose_only_gpu_package_is_tensorflow_gpu_is_unchanged(matrix):
    for package in ("tensorflow-gpu", None):  # named or not, 1.14.0's GPU build is the tensorflow-gpu package
        constraints = Constraints(frameworks=(("tensorflow", SpecifierSet("==1.14.0")),),
                                  packages=(("tensorflow", package),) if package else ())
        result = resolve(matrix, constraints, host("450.80.02", ["V100"]))
        assert result.ok and result.stack.requirements == ("tensorflow-gpu==1.14.0",)


def test_unpinned_tensorflow_gpu_gets_its_last_release_not_tensorflows(matrix):
    result = resolve_as(matrix, "")
    assert result.ok and result.stack.framework("tensorflow") == "2.11.0"
    assert result.stack.requirements == ("tensorflow-gpu==2.11.0",)


def test_tensorflow_gpu_past_its_last_release_is_a_no_that_says_why(matrix):
    result = resolve_as(matrix, ">=2.12")
    assert not result.ok
    problem = next(p for p in result.problems if p.code == "package-lacks-release")
    assert problem.message == ("tensorflow-gpu >=2.12: no tensorflow release the project allows is published as "
                               "tensorflow-gpu (its GPU builds there: tensorflow 1.0.0 .. 2.11.0); later releases are "
                               "the tensorflow package itself")
    assert problem.fix == "pin tensorflow-gpu<=2.11.0, or write tensorflow instead of tensorflow-gpu"


def test_init_and_the_lock_both_read_the_package_from_the_project(tmp_path, matrix):
    (tmp_path / "requirements.txt").write_text("tensorflow-gpu==2.10.0\nnumpy\n")
    plan = constraints_from_detected(detect_project(tmp_path))
    assert plan.constraints.packages == (("tensorflow", "tensorflow-gpu"),)
    (tmp_path / "cudaenv.toml").write_text('[project]\nrequirements = ["requirements.txt"]\n\n'
                                           '[frameworks]\ntensorflow = "==2.10.0"\n')
    constraints = project_constraints(matrix, load_project(tmp_path))
    assert constraints.packages == (("tensorflow", "tensorflow-gpu"),)
    result = resolve(matrix, constraints, Host("535.104.05"))
    assert result.ok and result.stack.requirements == ("tensorflow-gpu==2.10.0",)
