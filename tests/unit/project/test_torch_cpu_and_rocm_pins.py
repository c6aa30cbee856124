"""A PyTorch pin's local label names its build (PEP 440; PyTorch's own index spells them +cu110,
+cpu, +rocm4.0.1). ``+cpu`` asks for torch on the CPU, as PyTorch's /whl/cpu index does: the stack
brings no CUDA torch for it. ``+rocm…`` is the AMD GPU build, which no CUDA stack can hold: bad
input naming the line. Before, both silently got the CUDA 11.0 build (an attack on the issue-34
surfaces found it)."""

from __future__ import annotations

import pytest

from cudaenv.project.detect import detect_project
from cudaenv.project.locate import ConfigError


def detect(tmp_path, text: str):
    (tmp_path / "requirements.txt").write_text(text)
    return detect_project(tmp_path)


@pytest.mark.parametrize("text", ["torch==1.7.1+cpu\n", "torch==1.7.1+CPU\ntorchvision==0.8.2+cpu\n"],
                         ids=["torch", "upper-case-with-torchvision"])
def test_a_cpu_build_pin_is_torch_on_the_cpu(tmp_path, text):
    detected = detect(tmp_path, text)
    assert "torch" in detected.cpu_only and "torch" not in detected.frameworks
    assert detected.cuda is None
    assert any("torch==1.7.1+" in r for r in detected.other_requirements)


@pytest.mark.parametrize("text", ["torch==1.7.1+rocm4.0.1\n", "numpy\ntorchvision==0.8.2+rocm4.0.1\n"],
                         ids=["torch", "torchvision"])
def test_a_rocm_build_pin_is_bad_input_naming_the_line(tmp_path, text):
    line = text.count("\n", 0, text.index("rocm")) + 1
    with pytest.raises(ConfigError, match=rf"^requirements.txt:{line}: '.*\+rocm4.0.1' is PyTorch's ROCm build"):
        detect(tmp_path, text)


def test_a_cuda_build_pin_still_names_its_cuda(tmp_path):
    detected = detect(tmp_path, "torch==1.7.1+cu101\n")
    assert detected.frameworks["torch"] == "==1.7.1" and detected.cuda == "10.1"
