"""A target without a GPU gets CPU builds only (no CUDA library), and a GPU target never gets a CPU
build: when the only build that fits is CPU-only, it is refused with that reason."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.matrix.model import CpuBuild
from cudaenv.project.pins import cpu_clashes, pin_clashes
from cudaenv.resolver.cpu import cpu_builds, cpu_only_problem, resolve_cpu
from cudaenv.resolver.model import Host, Stack
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import constraints, host, matrix

CPU = Host(cpu=True)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def test_a_cpu_target_gets_torch_from_the_cpu_index_and_no_cuda():
    found = resolve(matrix(), constraints(torch=">=2.6"), CPU)
    stack = found.stack
    assert found.ok and stack.cpu and stack.device == "cpu"
    assert (stack.cuda, stack.cuda_release, stack.cudnn, stack.min_driver) == (None, None, None, None)
    assert stack.frameworks == (("torch", "2.9.1"),) and stack.requirements == ("torch==2.9.1+cpu",)  # the CPU index's label names the build
    assert stack.index_urls == (CPU_INDEX,) and not stack.brings_own_cuda and stack.nvidia_requires == ()
    assert stack.flavor == "cpu" and stack.base_image == f"python:{stack.python}-slim"
    assert stack.compute_capabilities == () and stack.gpu_targets == () and found.valid_cuda == ()


def test_a_cpu_target_takes_the_newest_python_the_cpu_build_has():
    stack = resolve(matrix(), constraints(torch="==2.6.0"), CPU).stack
    release = next(r for r in matrix().torch if r.version == "2.6.0")
    assert stack.python == max(release.python, key=lambda p: tuple(map(int, p.split("."))))
    assert resolve(matrix(), constraints(torch="==2.6.0", python="==3.10"), CPU).stack.python == "3.10"


def test_a_cpu_target_gets_the_companion_made_for_its_torch_when_asked_for():
    stack = resolve(matrix(), constraints(torch="==2.9.0", torchvision="any"), CPU).stack
    assert stack.frameworks == (("torch", "2.9.0"), ("torchvision", "0.24.0"))
    assert stack.requirements == ("torch==2.9.0+cpu", "torchvision==0.24.0+cpu")  # the CPU index's builds, by name


def test_a_companion_pin_no_cpu_torch_pairs_with_is_refused():
    found = resolve(matrix(), constraints(torch=">=2.6", torchvision="==0.21.0"), CPU)
    assert found.ok and found.stack.framework("torch") == "2.6.0"
    assert not resolve(matrix(), constraints(torch=">=2.9", torchvision="==0.21.0"), CPU).ok


def test_a_release_without_a_recorded_cpu_build_is_refused_naming_the_ones_recorded():
    found = resolve(matrix(), constraints(torch="==2.14.1"), CPU)
    assert not found.ok and [p.code for p in found.problems] == ["no-cpu-build"]
    assert found.problems[0].message == ("torch==2.14.1: no CPU-only build of it is recorded for x86_64 "
                                         "(CPU builds recorded: torch 2.9.1, 2.9.0, 2.6.0)")


def test_a_framework_with_no_cpu_build_in_the_matrix_is_refused_never_given_a_cuda_build():
    found = resolve(matrix(), constraints(tensorflow="any"), CPU)
    assert not found.ok and found.stack is None
    assert found.problems[0].code == "no-cpu-build" and "tensorflow" in found.problems[0].message


def test_an_aarch64_cpu_target_finds_no_x86_64_cpu_build():
    found = resolve(matrix(), constraints(torch="==2.6.0"), Host(arch="aarch64", cpu=True))
    assert not found.ok and "for aarch64" in found.problems[0].message


def test_a_pin_of_a_cuda_build_on_a_cpu_target_is_refused():
    pinned = replace(constraints(torch="==2.6.0"), variants=(("torch", "cu124"),))
    found = resolve(matrix(), pinned, CPU)
    assert not found.ok and [p.code for p in found.problems] == ["cpu-target-cuda-pin"]
    assert resolve(matrix(), replace(constraints(torch="==2.6.0"), variants=(("torch", "cpu"),)), CPU).ok


def test_a_yanked_release_is_a_cpu_choice_only_for_an_exact_pin():
    yanked = replace(matrix(), torch=tuple(replace(r, yanked="broken") if r.version == "2.9.1" else r
                                           for r in matrix().torch))
    assert resolve(yanked, constraints(torch=">=2.6"), CPU).stack.framework("torch") == "2.9.0"
    assert resolve(yanked, constraints(torch="==2.9.1"), CPU).stack.framework("torch") == "2.9.1"


def test_a_cpu_target_without_a_framework_gets_a_plain_python_stack():
    found = resolve(matrix(), constraints(python="==3.12"), CPU)
    assert found.ok and found.stack.python == "3.12" and found.stack.requirements == () and found.stack.cpu


def test_a_python_no_cpu_build_has_is_refused():
    found = resolve(matrix(), constraints(torch="==2.6.0", python="==3.8"), CPU)
    assert not found.ok and [p.code for p in found.problems] == ["cpu-python"]


def test_the_cpu_builds_are_newest_first_per_platform():
    assert [c.version for c in cpu_builds(matrix(), "x86_64")["torch"]] == ["2.9.1", "2.9.0", "2.6.0"]
    assert cpu_builds(matrix(), "aarch64")["torch"] == []


# --- a GPU target never gets a CPU build -----------------------------------------------------------


def only_cpu_for(python: str):
    """The matrix with torch 2.6.0's CPU build published for ``python`` too, which none of its CUDA
    builds has: for that Python the release is CPU-only."""
    def with_cpu(release):
        if release.version != "2.6.0":
            return release
        return replace(release, cpu=(CpuBuild(index_url=CPU_INDEX, source="test", python=(python,)),))
    return replace(matrix(), torch=tuple(with_cpu(r) for r in matrix().torch))


def test_a_gpu_target_is_refused_when_the_pin_has_only_a_cpu_build_for_its_python():
    m = only_cpu_for("3.14")
    pinned = constraints(torch="==2.6.0", python="==3.14")
    assert resolve(m, pinned, CPU).stack.python == "3.14"  # the CPU target gets it
    found = resolve(m, pinned, host(driver="550.54.15", gpus=("A100",)))
    assert not found.ok and found.stack is None
    assert found.problems[0].code == "cpu-build-only"
    assert found.problems[0].message == (
        "the only build of torch 2.6.0 that fits (Python 3.14) is a CPU-only build "
        f"({CPU_INDEX}): a GPU target never gets a CPU build, so it is refused")


def test_no_cpu_only_reason_where_a_cuda_build_of_that_release_exists_for_that_python():
    found = resolve(matrix(), constraints(torch="==2.6.0", cuda="==11.0"), host(driver="550.54.15", gpus=("A100",)))
    assert not found.ok and "cpu-build-only" not in [p.code for p in found.problems]
    assert cpu_only_problem(matrix(), constraints(torch="==2.6.0"), host(driver="550.54.15", gpus=("A100",))) is None


def test_no_cpu_only_reason_for_a_project_without_a_framework():
    assert cpu_only_problem(matrix(), constraints(python="==3.12"), host(driver="550.54.15", gpus=("A100",))) is None


@pytest.mark.parametrize("version", ["2.6.0", "2.9.0", "2.9.1"])
def test_a_gpu_target_resolves_every_release_with_a_cpu_build_to_a_cuda_build(version):
    stack = resolve(matrix(), constraints(torch=f"=={version}"), host(driver="580.65.06", gpus=("H100",))).stack
    assert not stack.cpu and stack.cuda and stack.index_urls[0] != CPU_INDEX


def test_a_gpu_target_is_never_answered_by_resolve_cpu():
    assert resolve_cpu(matrix(), constraints(torch="==2.6.0"), CPU).stack.cpu
    assert not resolve(matrix(), constraints(torch="==2.6.0"), host(driver="550.54.15")).stack.cpu


# --- the stack value and the pins --------------------------------------------------------------------


def test_a_cpu_stack_reads_back_from_its_dict_and_says_its_device():
    stack = resolve(matrix(), constraints(torch="==2.6.0"), CPU).stack
    data = {k: v for k, v in stack.as_dict().items() if v is not None}  # as a lock keeps it
    assert data["device"] == "cpu" and "cuda" not in data
    assert Stack.from_dict(data) == stack


def test_a_cuda_stack_says_no_device():
    stack = resolve(matrix(), constraints(torch="==2.6.0"), host(driver="550.54.15", gpus=("A100",))).stack
    assert "device" not in stack.as_dict() and Stack.from_dict(stack.as_dict()).device == "cuda"


@pytest.mark.parametrize("data, said", [
    ({"device": "tpu"}, "stack.device must be one of cuda, cpu, got 'tpu'"),
    ({"device": "cuda", "cuda": None}, "stack.cuda must be a string"),
])
def test_a_damaged_device_is_refused(data, said):
    stack = {k: v for k, v in resolve(matrix(), constraints(torch="==2.6.0"), CPU).stack.as_dict().items()
             if v is not None}
    with pytest.raises(ValueError, match=said):
        Stack.from_dict({**stack, **data})


@pytest.mark.parametrize("pin, carries", [
    ("torch==2.6.0+cu124", "a CUDA build (cu124)"),
    ("torch==2.6.0+rocm6.1", "a ROCm build (rocm6.1)"),
    ("nvidia-cublas-cu12==12.4.5.8", "a CUDA library"),
    ("nvidia-cudnn-cu12==9.1.0.70", "a CUDA library"),
    ("nvidia-nccl-cu12==2.21.5", "a CUDA library"),
    ("nvidia-cuda-runtime==13.0.96", "a CUDA library"),
    ("cuda-toolkit==13.0.3.0", "a CUDA library"),
    ("jax-cuda12-plugin==0.4.30", "a CUDA library"),
])
def test_every_pin_that_brings_cuda_clashes_with_a_cpu_stack(pin, carries):
    stack = resolve(matrix(), constraints(torch="==2.6.0"), CPU).stack
    (clash,) = pin_clashes(stack, ["numpy==2.1.3", pin])
    assert (clash.pin, clash.carries, clash.expected) == (pin, carries, "a CPU-only stack")


@pytest.mark.parametrize("pin", ["torch==2.6.0+cpu", "torch==2.6.0", "nvidia-ml-py==12.560.30", "numpy==2.1.3"])
def test_a_cpu_stack_keeps_pins_that_bring_no_cuda(pin):
    assert cpu_clashes([pin]) == []


def test_a_gpu_stack_still_refuses_a_cpu_torch_pin():
    stack = resolve(matrix(), constraints(torch="==2.6.0"), host(driver="550.54.15", gpus=("A100",))).stack
    (clash,) = pin_clashes(stack, ["torch==2.6.0+cpu"])
    assert clash.carries == "a CPU-only build"


def test_a_cpu_build_pin_is_a_cpu_targets_and_a_clean_no_for_a_gpu_target():
    pinned = replace(constraints(torch="==2.6.0"), variants=(("torch", "cpu"),))
    assert resolve(matrix(), pinned, CPU).stack.framework("torch") == "2.6.0"
    found = resolve(matrix(), pinned, host(driver="550.54.15", gpus=("A100",)))
    assert not found.ok and [p.code for p in found.problems] == ["cpu-pin-on-gpu-target"]
    assert found.problems[0].message == "torch is pinned to its CPU build (+cpu): a GPU target never gets a CPU build"
