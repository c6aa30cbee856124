"""Issue 34's conda case, through the command line as a user runs it: an environment.yml pinning
``pytorch=1.9.1`` with ``cudatoolkit=10.2`` (PyTorch's own conda line for that release's CUDA 10.2
build, https://pytorch.org/get-started/previous-versions/#v191). The CUDA 10.2 build is the one PyPI
serves (its wheel read: sm_37 .. sm_70, no sm_80); the CUDA 11.1 build with sm_80 exists only on
PyTorch's whl/cu111 index. So a V100 gets the 10.2 build, from PyPI when PyPI is the framework
index, and an A100 gets a "no" that names sm_80 and the cu111 build that would run."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import cudaenv, isolated_env

CONDA_FILE = """name: paper
channels:
  - pytorch
  - defaults
dependencies:
  - python=3.8
  - pytorch=1.9.1
  - torchvision
  - cudatoolkit=10.2
  - pip
"""


def init(project, gpu: str, **env: str) -> tuple[int, dict]:
    done = cudaenv("init", "--no-lock", "--no-detect", "--driver", "535.104.05", "--gpu", gpu, "--json", project,
                   env=isolated_env(**env))
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "environment.yml").write_text(CONDA_FILE)
    return tmp_path


def test_on_a_v100_the_conda_file_gets_the_cuda_10_2_build_that_pypi_serves(project):
    code, out = init(project, "V100", CUDAENV_FRAMEWORK_INDEX="https://pypi.org/simple")
    stack = out["resolution"]["stack"]
    assert code == 0 and stack["cuda"] == "10.2" and stack["frameworks"] == {"torch": "1.9.1", "torchvision": "0.10.1"}
    assert stack["index_urls"] == ["https://pypi.org/simple"]
    assert "7.0" in stack["gpu_targets"]["torch"]["sass"]
    assert "cudatoolkit 10.2 (environment.yml)" in out["found"]
    assert (project / "cudaenv.toml").is_file()


def test_without_a_framework_index_the_v100_gets_the_same_build_from_its_own_index(project):
    code, out = init(project, "V100")
    stack = out["resolution"]["stack"]
    assert code == 0 and stack["cuda"] == "10.2"
    assert stack["index_urls"] == ["https://download.pytorch.org/whl/cu102"]


def test_on_an_a100_the_conda_file_is_a_no_naming_sm_80_and_the_cu111_build(project):
    code, out = init(project, "A100")
    assert code == 1 and out["ok"] is False and out["written"] == []
    assert not (project / "cudaenv.toml").exists()
    problems = {p["code"]: p["message"] for p in out["resolution"]["problems"]}
    assert problems["gpu-unsupported-by-build"].startswith(
        "A100 (sm_80) is not in the SM list of torch 1.9.1 for CUDA 10.2 (built for sm_37, sm_50, sm_60, sm_70)")
    assert problems["fix-cuda"] == ("relax the cuda constraint (==10.2): cuda 11.1 fits (torch 1.9.1, torchvision "
                                    "0.10.1 from https://download.pytorch.org/whl/cu111)")
    # the older release that still fits has no sm_80 code either: the fix says it is a JIT-only yes
    assert problems["fix-relax-pin"].endswith("fits this host only through PTX JIT")


def test_without_the_cudatoolkit_line_the_a100_gets_the_cu111_build(project):
    (project / "environment.yml").write_text(CONDA_FILE.replace("  - cudatoolkit=10.2\n", ""))
    code, out = init(project, "A100")
    stack = out["resolution"]["stack"]
    assert code == 0 and stack["cuda"] == "11.1" and "8.0" in stack["gpu_targets"]["torch"]["sass"]
    assert stack["index_urls"] == ["https://download.pytorch.org/whl/cu111"]
