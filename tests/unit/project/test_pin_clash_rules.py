"""The rules by which a pin contradicts its stack (``cudaenv.project.pins``), one case a row, with
the exact sentence each clash is said in: a framework build's local label (+cpu, +rocm, +cuXYZ), a
CUDA runtime or toolkit pin (major.minor), an NVRTC pin (major only), a cuDNN pin (the CUDA it is
built for, and its major.minor), and the ranges a framework build declares itself (JAX's extras),
inside which only the major is the stack's to fix."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cudaenv.project.pins import clash_message, pin_clashes

RUNTIME_RANGE = (("nvidia_cuda_runtime_cu12", ">=12.1,<13"),)
CUDNN_RANGE = (("nvidia-cudnn-cu12", ">=9.10.2.21,<10"),)


def stack(cuda="12.6", cudnn="9.5", index_urls=(), frameworks=(("torch", "2.6.0"),), **more):
    """What the pin rules read of a stack: its CUDA, cuDNN, own index, its frameworks and (when it
    has any) the nvidia ranges its framework build declares."""
    return SimpleNamespace(cuda=cuda, cudnn=cudnn, index_urls=index_urls,
                           framework=lambda name: dict(frameworks).get(name), **more)


@pytest.mark.parametrize("pin, the_stack, said", [
    ("torch==2.6.0+cpu", stack(), ["torch==2.6.0+cpu carries a CPU-only build, but the stack is CUDA 12.6"]),
    ("  torchvision==0.21.0+rocm6.2 ", stack(),
     ["torchvision==0.21.0+rocm6.2 carries a ROCm build, but the stack is CUDA 12.6"]),
    ("torchaudio==2.6.0+ROCM6.2", stack(), ["torchaudio==2.6.0+ROCM6.2 carries a ROCm build, but the stack is CUDA 12.6"]),
    ("torch==2.6.0+cu124", stack(), ["torch==2.6.0+cu124 carries CUDA 12.4, but the stack is CUDA 12.6"]),
    ("torch==2.6.0+cu126", stack(), []),
    ("torch==2.6.0", stack(), []),
    ("cuda-toolkit==13.0.3.0", stack(), ["cuda-toolkit==13.0.3.0 carries CUDA 13.0, but the stack is CUDA 12.6"]),
    ("CUDA-Toolkit==12.4.1", stack(), ["CUDA-Toolkit==12.4.1 carries CUDA 12.4, but the stack is CUDA 12.6"]),
    ("cuda-toolkit==12.6.3", stack(), []),
    ("nvidia-cuda-runtime-cu12==12.4.127", stack(),
     ["nvidia-cuda-runtime-cu12==12.4.127 carries CUDA 12.4, but the stack is CUDA 12.6"]),
    ("nvidia-cuda-runtime==13.0.96", stack(), ["nvidia-cuda-runtime==13.0.96 carries CUDA 13.0, but the stack is CUDA 12.6"]),
    ("nvidia-cuda-nvrtc-cu12==12.4.127", stack(), []),
    ("nvidia-cuda-nvrtc==13.0.48", stack(), ["nvidia-cuda-nvrtc==13.0.48 carries CUDA 13.0, but the stack is CUDA 12.6"]),
    ("nvidia-cudnn-cu11==9.5.0.50", stack(),
     ["nvidia-cudnn-cu11==9.5.0.50 carries a cuDNN built for CUDA 11, but the stack is CUDA 12.6"]),
    ("nvidia-cudnn-cu12==9.1.0.70", stack(), ["nvidia-cudnn-cu12==9.1.0.70 carries cuDNN 9.1, but the stack is cuDNN 9.5"]),
    ("nvidia-cudnn-cu12==9.5.1.17", stack(), []),
    ("nvidia-cudnn-cu12==9.1.0.70", stack(cudnn=None), []),
], ids=["cpu", "rocm", "rocm-upper", "cu124", "cu126", "no-label", "toolkit-13", "toolkit-upper-minor",
        "toolkit-same", "runtime-minor", "runtime-13", "nvrtc-same-major", "nvrtc-13", "cudnn-for-cuda-11",
        "cudnn-minor", "cudnn-same", "stack-without-cudnn"])
def test_each_pin_is_judged_by_what_it_carries(pin, the_stack, said):
    """A pin that carries another CUDA or cuDNN than the stack would install libraries the stack never asked for."""
    assert [str(c) for c in pin_clashes(the_stack, [pin])] == said


@pytest.mark.parametrize("pin, requires, said", [
    ("nvidia-cuda-runtime-cu12==12.9.79", RUNTIME_RANGE, []),
    ("nvidia-cuda-runtime-cu12[extra]==12.9.79", RUNTIME_RANGE, []),
    ("nvidia-cuda-runtime-cu12==12.9.0rc1", RUNTIME_RANGE, []),
    ("nvidia-cuda-runtime-cu12==12.9.79;python_version>'3'", RUNTIME_RANGE, []),
    ("nvidia-cuda-runtime-cu12==12.0.1", RUNTIME_RANGE,
     ["nvidia-cuda-runtime-cu12==12.0.1 carries CUDA 12.0, but the stack is CUDA 12.6"]),
    ("nvidia-cuda-runtime-cu12==12.9.79", (("nvidia-cuda-runtime-cu12", "==12.9.79"),),
     ["nvidia-cuda-runtime-cu12==12.9.79 carries CUDA 12.9, but the stack is CUDA 12.6"]),
    ("nvidia-cuda-runtime-cu12==12.9.79", (("nvidia-cuda-runtime-cu12", "not a range"),),
     ["nvidia-cuda-runtime-cu12==12.9.79 carries CUDA 12.9, but the stack is CUDA 12.6"]),
    ("nvidia-cudnn-cu12==9.26.0.51", CUDNN_RANGE, []),
], ids=["runtime-in-range", "extras", "prerelease-in-range", "marker", "runtime-below-range", "exact-pin-is-no-range",
        "unreadable-range", "cudnn-in-range"])
def test_inside_a_range_the_framework_build_declares_only_the_major_is_fixed(pin, requires, said):
    """JAX's extras ask for ranges and uv rightly takes the newest inside them: that is no contradiction."""
    assert [str(c) for c in pin_clashes(stack(cudnn="9.10", nvidia_requires=requires), [pin])] == said


def test_a_range_for_the_same_cuda_major_does_not_excuse_another_major():
    assert [str(c) for c in pin_clashes(stack(cuda="13.0", cudnn=None, nvidia_requires=RUNTIME_RANGE),
                                        ["nvidia-cuda-runtime-cu12==12.9.79"])] == \
        ["nvidia-cuda-runtime-cu12==12.9.79 carries CUDA 12.9, but the stack is CUDA 13.0"]


def test_a_range_inside_another_cudnn_major_is_still_a_clash():
    assert [str(c) for c in pin_clashes(stack(cudnn="8.9", nvidia_requires=CUDNN_RANGE), ["nvidia-cudnn-cu12==9.26.0.51"])] \
        == ["nvidia-cudnn-cu12==9.26.0.51 carries cuDNN 9.26, but the stack is cuDNN 8.9"]


def test_one_pin_can_clash_twice_and_every_pin_is_judged():
    """A cuDNN for CUDA 13 of another minor: both facts are said, and the other pins are not skipped."""
    clashes = pin_clashes(stack(), ["nvidia-cudnn-cu13==9.24.0.43", "numpy==2.1.3", "torch==2.6.0+cpu"])
    assert [str(c) for c in clashes] == [
        "nvidia-cudnn-cu13==9.24.0.43 carries a cuDNN built for CUDA 13, but the stack is CUDA 12.6",
        "nvidia-cudnn-cu13==9.24.0.43 carries cuDNN 9.24, but the stack is cuDNN 9.5",
        "torch==2.6.0+cpu carries a CPU-only build, but the stack is CUDA 12.6"]
    assert [(c.pin, c.carries, c.expected) for c in clashes][1] == ("nvidia-cudnn-cu13==9.24.0.43", "cuDNN 9.24", "cuDNN 9.5")


CU126 = "https://download.pytorch.org/whl/cu126"


def test_the_clash_message_says_what_contradicts_what_where_it_came_from_and_where_to_point():
    """The user fixes this by pointing the framework index at the build's own index: say which."""
    clashes = pin_clashes(stack(index_urls=(CU126,)), ["cuda-toolkit==13.0.3.0"])
    assert clash_message(clashes, stack(index_urls=(CU126,)), "https://pypi.org/simple") == (
        "the locked packages contradict the stack (CUDA 12.6, cuDNN 9.5): cuda-toolkit==13.0.3.0 carries CUDA 13.0, "
        "but the stack is CUDA 12.6. The framework wheels came from https://pypi.org/simple. Point [build] "
        f"framework_index / CUDAENV_FRAMEWORK_INDEX at {CU126} (or a mirror of exactly that index), then run "
        "`cudaenv lock` again.")


def test_a_stack_without_its_own_index_is_told_to_pin_the_variant():
    clashes = pin_clashes(stack(cudnn=None), ["torch==2.6.0+cpu"])
    assert clash_message(clashes, stack(cudnn=None), None) == (
        "the locked packages contradict the stack (CUDA 12.6): torch==2.6.0+cpu carries a CPU-only build, but the "
        "stack is CUDA 12.6. Pin the CUDA variant in the project's requirements or use an index that serves this "
        "stack's build.")


@pytest.mark.parametrize("count, tail", [(4, ""), (5, "; and 1 more"), (7, "; and 3 more")])
def test_the_clash_message_shows_four_clashes_and_counts_the_rest(count, tail):
    clashes = pin_clashes(stack(cudnn=None), [f"torch==2.{n}.0+cpu" for n in range(count)])
    shown = "; ".join(f"torch==2.{n}.0+cpu carries a CPU-only build, but the stack is CUDA 12.6" for n in range(4))
    message = clash_message(clashes, stack(cudnn=None), None)
    assert message.startswith(f"the locked packages contradict the stack (CUDA 12.6): {shown}{tail}. Pin the CUDA")


def test_a_cpu_torch_beside_a_gpu_jax_is_the_projects_choice_not_a_clash():
    """--extra-index-url https://download.pytorch.org/whl/cpu beside jax[cuda12]: torch only feeds data."""
    from packaging.specifiers import SpecifierSet

    from cudaenv.matrix import load_matrix
    from cudaenv.project.pins import pin_clashes
    from cudaenv.resolver.model import Constraints, Host
    from cudaenv.resolver.resolve import resolve

    matrix = load_matrix(overlays=[])
    jax = resolve(matrix, Constraints(frameworks=(("jax", SpecifierSet("==0.4.30")),)), Host(driver="550.54.15")).stack
    assert pin_clashes(jax, ["torch==2.4.1+cpu", "torchvision==0.19.1+cpu", "jax==0.4.30"]) == []
    torch = resolve(matrix, Constraints(frameworks=(("torch", SpecifierSet("==2.4.1")),)), Host(driver="550.54.15")).stack
    assert [c.carries for c in pin_clashes(torch, ["torch==2.4.1+cpu"])] == ["a CPU-only build"]
