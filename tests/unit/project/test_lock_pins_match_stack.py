"""A lock's pins must carry the CUDA and cuDNN its stack says: PyPI's CUDA 13 build of torch (with
cuda-toolkit 13 and nvidia-cudnn-cu13) under a CUDA 12.6 stack is a contradiction that `lock
--check` and `check` report, instead of calling the lock current and the host compatible."""

from __future__ import annotations

import json

import pytest

from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import make_lock
from cudaenv.project.pins import pin_clashes
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import project_target

from tests.support.cli import cudaenv, without_target_overrides

PYPI_CUDA13 = ["torch==2.9.1", "cuda-toolkit==13.0.3.0", "nvidia-cuda-runtime==13.0.96",
               "nvidia-cudnn-cu13==9.24.0.43", "torchvision==0.24.1", "torchaudio==2.9.1"]
CU126 = ["torch==2.9.1+cu126", "nvidia-cuda-runtime-cu12==12.6.77", "nvidia-cudnn-cu12==9.10.2.21",
         "torchvision==0.24.1+cu126"]


def cu126_project(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "pins"\npython = "3.11"\n\n[frameworks]\ntorch = "==2.9.1"\n\n'
                                           '[cuda]\nversion = "12.6"\n\n[target]\ndriver = "560.35.03"\ngpus = ["A100"]\n')
    matrix = load_matrix(overlays=[])
    project = load_project(tmp_path)
    stack = resolve(matrix, project.constraints, project_target(matrix, project).host).stack
    assert stack.cuda == "12.6"
    return matrix, project, stack


def write_lock(tmp_path, pinned):
    matrix, project, stack = cu126_project(tmp_path)
    lock = make_lock(project, stack, matrix_revision=matrix.revision, target={}, pinned=pinned)
    project.lock_path.write_text(lock.as_toml())
    return stack


def cli(*args, cwd):
    return cudaenv(*args, cwd=cwd, env=without_target_overrides(), timeout=120)


def test_pypi_cuda13_pins_clash_with_a_cuda_12_6_stack(tmp_path):
    _, _, stack = cu126_project(tmp_path)
    clashes = {c.pin: c.carries for c in pin_clashes(stack, PYPI_CUDA13)}
    assert clashes["cuda-toolkit==13.0.3.0"] == "CUDA 13.0"
    assert clashes["nvidia-cuda-runtime==13.0.96"] == "CUDA 13.0"
    assert "nvidia-cudnn-cu13==9.24.0.43" in clashes


def test_the_cu126_builds_own_pins_do_not_clash(tmp_path):
    _, _, stack = cu126_project(tmp_path)
    assert stack.cudnn == "9.10"
    assert pin_clashes(stack, CU126) == []


@pytest.mark.parametrize("pin,carries", [("torch==2.9.1+cu130", "CUDA 13.0"), ("torch==2.9.1+cpu", "a CPU-only build"),
                                         ("nvidia-cuda-runtime-cu12==12.8.90", "CUDA 12.8")])
def test_a_build_for_another_cuda_or_none_clashes(tmp_path, pin, carries):
    _, _, stack = cu126_project(tmp_path)
    (clash,) = pin_clashes(stack, [pin])
    assert clash.carries == carries


def test_lock_check_fails_on_a_lock_whose_pins_contradict_its_stack(tmp_path):
    write_lock(tmp_path, PYPI_CUDA13)
    proc = cli("lock", "--check", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "contradict" in proc.stdout and "cuda-toolkit==13.0.3.0" in proc.stdout


def test_lock_check_passes_when_the_pins_match(tmp_path):
    write_lock(tmp_path, CU126)
    proc = cli("lock", "--check", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_never_passes_a_lock_whose_pins_contradict_its_stack(tmp_path):
    """The lock would install CUDA 13 wheels on a CUDA 12.6 stack: `build` relocks such a lock, so
    `check` judges what that relock gives, and says why on stderr, never ✓ for the lock's stack."""
    write_lock(tmp_path, PYPI_CUDA13)
    proc = cli("check", "--driver", "535.104.05", "--json", cwd=tmp_path)
    (result,) = json.loads(proc.stdout)["results"]
    assert "cudaenv.lock is stale: judging what `cudaenv build` would lock" in result["source"]
    assert "the locked packages contradict the locked stack" in proc.stderr and "CUDA 13.0" in proc.stderr


def jax_stack():
    from cudaenv.resolver.model import Constraints, Host
    from cudaenv.versions import parse_specifier

    stack = resolve(load_matrix(overlays=[]), Constraints(frameworks=(("jax", parse_specifier("==0.12.0.1")),),
                                                          python=parse_specifier("3.12")),
                    Host(driver="550.54.15")).stack
    assert stack.cuda == "12.9" and dict(stack.nvidia_requires)["nvidia-cudnn-cu12"].startswith("<10")
    return stack


def test_pins_inside_a_range_the_framework_build_declares_do_not_clash():
    # what uv took from PyPI for jax[cuda12]==0.12.0.1: the newest 9.x cuDNN and 12.x runtime its ranges allow
    pins = ["jax==0.12.0.1", "nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cudnn-cu12==9.28.0.42"]
    assert pin_clashes(jax_stack(), pins) == []


def test_a_ranged_framework_still_refuses_another_cuda_major():
    clashes = pin_clashes(jax_stack(), ["nvidia-cuda-runtime==13.0.96", "nvidia-cudnn-cu13==9.24.0.43"])
    assert {c.pin for c in clashes} == {"nvidia-cuda-runtime==13.0.96", "nvidia-cudnn-cu13==9.24.0.43"}
