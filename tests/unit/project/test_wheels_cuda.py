"""The wheels' CUDA is the truth (issue 23, class 2): when the locked wheels carry another CUDA
than the stack first chosen, the lock adopts it where the target host runs it (resolved again
against the host), and refuses only what cannot run."""

from __future__ import annotations

import pytest

from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import current_lock, make_lock, wheels_stack
from cudaenv.project.pins import carried_cuda
from cudaenv.project.config import resolve_project
from cudaenv.hosts.target import project_target

PYPI_2_15_0 = ["torch==2.15.0", "cuda-toolkit==13.2.2", "nvidia-cuda-runtime==13.2.86", "nvidia-cudnn-cu13==9.26.0.51"]


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def no_index_environment(monkeypatch):
    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX", raising=False)


def project(tmp_path, torch: str, driver: str, gpu: str, cuda: str = ""):
    (tmp_path / "cudaenv.toml").write_text(
        f'[project]\nname = "p"\n\n[frameworks]\ntorch = "{torch}"\n\n'
        + (f'[cuda]\nversion = "{cuda}"\n\n' if cuda else "")
        + f'[target]\ndriver = "{driver}"\ngpus = ["{gpu}"]\n')
    return load_project(tmp_path)


def chosen(matrix, project):
    return resolve_project(matrix, project, project_target(matrix, project).host).stack


def test_wheels_carrying_a_cuda_the_host_runs_make_the_stack(tmp_path, matrix):
    """R580 runs CUDA 13.0 natively, so torch 2.15.0's cu130 build is chosen first; PyPI's 2.15.0 is
    the CUDA 13.2 build, which R580 runs through minor-version compatibility."""
    p = project(tmp_path, "==2.15.0", "580.65.06", "A100")
    first = chosen(matrix, p)
    assert first.cuda == "13.0"
    adopted = wheels_stack(matrix, p, project_target(matrix, p).host, first, PYPI_2_15_0)
    assert adopted.ok and adopted.stack.cuda == "13.2"
    assert adopted.stack.driver_compatibility == "minor-version"
    assert adopted.stack.frameworks == first.frameworks and adopted.stack.python == first.python


def test_wheels_carrying_a_cuda_the_host_cannot_run_are_not_adopted(tmp_path, matrix):
    p = project(tmp_path, "==2.9.1", "570.86.15", "RTX 4090")
    first = chosen(matrix, p)
    assert first.cuda == "12.8"
    adopted = wheels_stack(matrix, p, project_target(matrix, p).host, first, ["torch==2.9.1", "cuda-toolkit==13.0.3.0"])
    assert not adopted.ok and "driver 570.86.15" in adopted.reasons[0]


def test_a_cuda_the_project_excludes_is_never_adopted(tmp_path, matrix):
    p = project(tmp_path, "==2.15.0", "580.65.06", "A100", cuda="13.0")
    assert wheels_stack(matrix, p, project_target(matrix, p).host, chosen(matrix, p), PYPI_2_15_0) is None


@pytest.mark.parametrize("pinned,carried", [
    (PYPI_2_15_0, ("13.2", "cuda-toolkit==13.2.2")),
    (["torch==2.9.1+cu126", "numpy==2.1.3"], ("12.6", "torch==2.9.1+cu126")),
    (["nvidia-cuda-runtime-cu12==12.8.90", "nvidia-cudnn-cu12==9.10.2.21"], ("12.8", "nvidia-cuda-runtime-cu12==12.8.90")),
    (["cuda-toolkit==13.0.3.0", "nvidia-cuda-runtime-cu12==12.8.90"], None),  # they disagree: no one truth
    (["numpy==2.1.3", "torch==2.9.1+cpu"], None),
])
def test_the_cuda_the_pins_carry(pinned, carried):
    assert carried_cuda(pinned) == carried


def test_lock_check_calls_a_lock_that_adopted_its_wheels_cuda_current(tmp_path, matrix):
    p = project(tmp_path, "==2.15.0", "580.65.06", "A100")
    target = project_target(matrix, p)
    adopted = wheels_stack(matrix, p, target.host, chosen(matrix, p), PYPI_2_15_0).stack
    lock = make_lock(p, adopted, matrix_revision=matrix.revision, target=target.as_dict(), pinned=PYPI_2_15_0)
    p.lock_path.write_text(lock.as_toml())
    assert current_lock(p, matrix)[1] == []


def test_lock_check_still_fails_a_lock_whose_stack_contradicts_its_wheels(tmp_path, matrix):
    p = project(tmp_path, "==2.15.0", "580.65.06", "A100")
    target = project_target(matrix, p)
    lock = make_lock(p, chosen(matrix, p), matrix_revision=matrix.revision, target=target.as_dict(), pinned=PYPI_2_15_0)
    p.lock_path.write_text(lock.as_toml())
    reasons = current_lock(p, matrix)[1]
    assert any("contradict" in r and "cuda-toolkit==13.2.2" in r for r in reasons), reasons
