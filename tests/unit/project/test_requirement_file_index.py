"""pip installs from a requirement file's ``--index-url`` only. When that index is a framework build's
own (PyTorch's whl/cu101), it decides which build the project gets, for pip and so for cudaenv:
``torch==1.7.1`` from whl/cu101 is the CUDA 10.1 build, not the CUDA 11.0 one another index would
serve. Before, cudaenv chose cu110 while the file's index line also reached the lock and the image.
An index that is no framework build's own (a company mirror) says nothing about builds."""

from __future__ import annotations

import pytest

from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import project_constraints
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import host


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def no_index_environment(monkeypatch):
    for name in ("CUDAENV_FRAMEWORK_INDEX", "CUDAENV_FRAMEWORK_INDEX_MIRRORS"):
        monkeypatch.delenv(name, raising=False)


def project(tmp_path, index_line: str):
    (tmp_path / "requirements.txt").write_text(f"{index_line}\ntorch==1.7.1\n")
    (tmp_path / "cudaenv.toml").write_text('[project]\nrequirements = ["requirements.txt"]\n\n'
                                           '[frameworks]\ntorch = "==1.7.1"\n')
    return load_project(tmp_path)


def test_a_framework_builds_own_index_line_decides_the_build(tmp_path, matrix):
    constraints = project_constraints(matrix, project(tmp_path, "--index-url https://download.pytorch.org/whl/cu101"))
    assert constraints.framework_index == "https://download.pytorch.org/whl/cu101"
    result = resolve(matrix, constraints, host("450.80.02", ["V100"]))
    assert result.ok and result.stack.cuda == "10.1"


@pytest.mark.parametrize("line", ["--index-url https://pypi.example.com/simple", "",
                                  "--extra-index-url https://download.pytorch.org/whl/cu101"],
                         ids=["mirror", "none", "extra-index"])
def test_other_index_lines_leave_the_choice_open(tmp_path, matrix, line):
    constraints = project_constraints(matrix, project(tmp_path, line))
    assert constraints.framework_index is None
    assert resolve(matrix, constraints, host("450.80.02", ["V100"])).stack.cuda == "11.0"


def test_the_configured_framework_index_wins_over_the_file(tmp_path, matrix, monkeypatch):
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://download.pytorch.org/whl/cu110")
    constraints = project_constraints(matrix, project(tmp_path, "--index-url https://download.pytorch.org/whl/cu101"))
    assert constraints.framework_index == "https://download.pytorch.org/whl/cu110"
