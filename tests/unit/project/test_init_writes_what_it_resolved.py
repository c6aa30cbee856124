"""The configuration `cudaenv init` writes leads `cudaenv lock` to the stack init printed (issue
23, class 4): every framework and companion the project names is written, so lock resolves the
same constraints again (a torch range alone once lost torchaudio, and lock then chose torch 2.15.0
on Python 3.15, for which no torchaudio exists)."""

from __future__ import annotations

import pytest
import tomlkit

from cudaenv.matrix import load_matrix
from cudaenv.project.config import parse_config, resolve_project
from cudaenv.project.detect import Detected
from cudaenv.project.init import constraints_from_detected, render_config
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import resolve_target


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def no_index_environment(monkeypatch):
    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX", raising=False)


CASES = {
    "torch and torchaudio, unpinned": ({"torch": "", "torchaudio": ""}, None),
    "torch and torchvision, unpinned": ({"torch": "", "torchvision": ""}, None),
    "all three, torch ranged": ({"torch": ">=2.4", "torchvision": "", "torchaudio": ""}, None),
    "torchaudio alone": ({"torchaudio": ""}, None),
    "torch on Python 3.12": ({"torch": ""}, ">=3.12,<3.13"),
    "tensorflow and keras": ({"tensorflow": "", "keras": ""}, None),
    "jax": ({"jax": ""}, None),
}


@pytest.mark.parametrize("driver,gpu", [("580.65.06", "RTX 4090"), ("550.54.15", "A100"), ("535.104.05", "T4")])
@pytest.mark.parametrize("case", sorted(CASES))
def test_lock_resolves_the_written_configuration_to_the_stack_init_resolved(tmp_path, matrix, case, driver, gpu):
    frameworks, python = CASES[case]
    detected = Detected(frameworks=dict(frameworks), python=python, requirement_files=["requirements.txt"])
    (tmp_path / "requirements.txt").write_text("\n".join(frameworks) + "\n")
    plan = constraints_from_detected(detected)
    target = resolve_target(matrix, driver=driver, gpus=(gpu,), compute_capabilities=(), detect=False)
    printed = resolve(matrix, plan.constraints, target.host)
    assert printed.ok, printed.reasons
    text = render_config(tmp_path.name, detected, plan, printed.stack, target.host, ["requirements.txt"],
                         known_gpu=lambda name: matrix.find_gpu(name) is not None)
    project = parse_config(tmp_path, tomlkit.parse(text).unwrap(), "cudaenv.toml", tmp_path / "cudaenv.toml")
    locked = resolve_project(matrix, project, target.host)
    assert locked.stack == printed.stack, (text, locked.stack.frameworks, printed.stack.frameworks)


def test_an_unpinned_companion_is_written_as_any(tmp_path, matrix):
    detected = Detected(frameworks={"torch": "", "torchaudio": ""}, requirement_files=["requirements.txt"])
    plan = constraints_from_detected(detected)
    target = resolve_target(matrix, driver="580.65.06", gpus=("RTX 4090",), compute_capabilities=(), detect=False)
    stack = resolve(matrix, plan.constraints, target.host).stack
    written = tomlkit.parse(render_config("p", detected, plan, stack, target.host, ["requirements.txt"])).unwrap()
    assert written["frameworks"] == {"torch": ">=2.11,<3", "torchaudio": "any"}


def test_a_detected_gpu_the_matrix_does_not_know_is_written_by_its_compute_capability(tmp_path, matrix):
    """A board newer than cudaenv's data (detected by NVML with its capability): its name would make
    every later command refuse the configuration, so init writes what the resolver used."""
    from cudaenv.project.config import load_project
    from cudaenv.resolver.model import Host, TargetGpu

    detected = Detected(frameworks={"torch": ""}, requirement_files=["requirements.txt"])
    (tmp_path / "requirements.txt").write_text("torch\n")
    plan = constraints_from_detected(detected)
    host = Host("580.65.06", (TargetGpu("9.0", "NVIDIA H100 80GB HBM3", matrix.architecture_of("9.0").name, True),
                              TargetGpu("12.0", "NVIDIA Mystery Board 9000", matrix.architecture_of("12.0").name)))
    stack = resolve(matrix, plan.constraints, host).stack
    text = render_config(tmp_path.name, detected, plan, stack, host, ["requirements.txt"],
                         known_gpu=lambda name: matrix.find_gpu(name) is not None)
    target = tomlkit.parse(text).unwrap()["target"]
    assert target["gpus"] == ["NVIDIA H100 80GB HBM3"] and target["compute_capabilities"] == ["12.0"]
    (tmp_path / "cudaenv.toml").write_text(text)
    assert load_project(tmp_path).name  # later commands read what init wrote
