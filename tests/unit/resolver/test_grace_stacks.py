"""Issue 35, item 3: on a Grace host (GH200, GB200, GB300, GB10: an Arm CPU) the resolver chooses
among builds published for aarch64, and when none exists says why. The facts behind each case,
read 2026-11-28 (matrix/torch.toml and matrix/images.toml carry them per row):

- PyPI's aarch64 torch wheels are CPU builds up to 2.10.0 (torch/version.py cuda = None) and CUDA
  13.0 builds from 2.11.0 (2.15.0: CUDA 13.2), carrying sm_80 sm_90 sm_100 sm_110 sm_120 (the arch
  string compiled into libtorch_python.so of torch-2.12.0-cp312-cp312-manylinux_2_28_aarch64.whl);
- PyTorch's own index has aarch64 CUDA builds from 2.4 (cu124); 2.8.0 only for cu129
  (pytorch/test-infra generate_binary_build_matrix.py at the release commit);
- TensorFlow's aarch64 wheels are CPU builds (build_info is_cuda_build False in 2.16.1-2.21.0; a
  stub pulling tensorflow-cpu-aws before), so no CUDA TensorFlow exists for aarch64.
"""

from __future__ import annotations

import json

import pytest

from tests.support.cli import cudaenv, without_target_overrides
from tests.unit.resolver.helpers import codes, resolve_case


def test_torch_2_12_on_a_gh200_is_a_real_aarch64_cuda_build():
    result = resolve_case(torch="==2.12", driver="580.65.06", gpus=["NVIDIA GH200 480GB"])
    assert result.ok and result.stack.arch == "aarch64"
    assert result.stack.framework("torch") == "2.12.0" and result.stack.cuda == "13.0"
    sass = dict((n, s) for n, s, _ in result.stack.gpu_targets)["torch"]
    assert sass == ("8.0", "9.0", "10.0", "11.0", "12.0")  # the aarch64 wheel's list, not x86_64's (7.5 .. 12.0)


def test_from_pypi_alone_the_gh200_gets_pypis_aarch64_wheel():
    from dataclasses import replace

    from cudaenv.resolver.resolve import resolve
    from tests.unit.resolver.helpers import constraints, host, matrix

    result = resolve(matrix(), replace(constraints(torch="==2.12.0"), framework_index="pypi"),
                     host("580.65.06", ["GH200"]))
    assert result.ok and result.stack.index_urls == ("https://pypi.org/simple",) and result.stack.cuda == "13.0"
    assert result.stack.nvidia_requires  # the aarch64 wheel's own pins (cuda-toolkit, nvidia-cudnn-cu13, ...)


def test_torch_2_10_from_pypi_on_a_gh200_is_a_no_its_aarch64_wheel_is_cpu_only():
    from dataclasses import replace

    from cudaenv.resolver.resolve import resolve
    from tests.unit.resolver.helpers import constraints, host, matrix

    result = resolve(matrix(), replace(constraints(torch="==2.10.0"), framework_index="pypi"),
                     host("580.65.06", ["GH200"]))
    assert not result.ok
    assert "index-lacks-build" in codes(result)


def test_torch_2_0_on_a_grace_host_says_no_aarch64_cuda_build_and_what_does():
    result = resolve_case(torch="==2.0.1", driver="580.65.06", gpus=["GB200"])
    assert not result.ok and codes(result) == ["no-build-for-platform"]
    assert result.problems[0].message.startswith(
        "torch 2.0.1 publishes no CUDA build for aarch64 (only for x86_64); torch 2.15.0 does (CUDA 13.2)")
    fix = next(p for p in result.problems if p.code == "fix-relax-pin")
    assert fix.message == "relax the torch pin (2.0.1): torch 2.4.0 fits this host (newest that fits: 2.15.0)"


def test_torch_2_8_on_aarch64_is_the_cu129_build_only():
    result = resolve_case(torch="==2.8.0", driver="580.65.06", gpus=["GH200"])
    assert result.ok and result.stack.cuda == "12.9"
    assert result.stack.index_urls == ("https://download.pytorch.org/whl/cu129",)


def test_tensorflow_on_a_gh200_is_a_truthful_no():
    result = resolve_case(tensorflow="any", driver="580.65.06", gpus=["GH200"])
    assert not result.ok and codes(result) == ["no-build-for-platform"]
    assert "publishes no CUDA build for aarch64" in result.problems[0].message
    assert "no tensorflow release in the matrix does" in result.problems[0].message


def test_a_gb10_runs_the_sm_120_code_by_binary_compatibility():
    result = resolve_case(torch="any", driver="580.95.05", gpus=["GB10"])
    assert result.ok and result.stack.arch == "aarch64"
    assert "ptx-jit-only" not in codes(result)


def test_a_build_whose_gpu_list_is_not_recorded_is_a_yes_with_a_warning_never_silent():
    result = resolve_case(torch="==2.4.1", driver="580.65.06", gpus=["GH200"])
    assert result.ok and result.stack.cuda == "12.4" and result.stack.arch == "aarch64"
    assert "gpu-unchecked" in codes(result)


def test_the_x86_64_answer_is_unchanged_by_the_aarch64_rows():
    result = resolve_case(torch="==2.12.0", driver="580.65.06", gpus=["H100"])
    assert result.ok and result.stack.arch == "x86_64"
    sass = dict((n, s) for n, s, _ in result.stack.gpu_targets)["torch"]
    assert "7.5" in sass and "11.0" not in sass


@pytest.mark.parametrize("gpu", ["NVIDIA GH200 480GB", "GB200", "GB300", "GB10"], ids=["gh200", "gb200", "gb300", "gb10"])
def test_the_cli_resolves_grace_gpus_for_aarch64(gpu):
    proc = cudaenv("resolve", "--torch", "2.12", "--driver", "580.95.05", "--gpu", gpu, "--json",
                   env=without_target_overrides(), timeout=120)
    answer = json.loads(proc.stdout)
    assert proc.returncode == 0, answer
    assert answer["stack"]["arch"] == "aarch64" and answer["host"]["arch"] == "aarch64"


def test_a_pinned_build_that_exists_for_x86_64_only_names_the_aarch64_builds_of_its_release():
    # torch 2.8.0+cu128 exists, but not for aarch64, where 2.8.0 is the cu129 build only: that is
    # the reason, not an empty list of CUDA versions
    proc = cudaenv("resolve", "--torch", "==2.8.0+cu128", "--driver", "580.65.06", "--gpu", "GH200", "--json",
                   env=without_target_overrides(), timeout=120)
    assert proc.returncode == 1, proc.stderr
    problems = json.loads(proc.stdout)["problems"]
    assert problems[0]["code"] == "no-build-for-platform"
    assert problems[0]["message"] == ("torch 2.8.0+cu128 publishes no CUDA build for aarch64 (only for x86_64); "
                                      "torch 2.8.0 is built for aarch64 as +cu129")
    assert "()" not in " ".join(p["message"] for p in problems)


@pytest.mark.parametrize("jax,jaxlib", [("0.4.37", "0.4.36"), ("0.5.2", "0.5.1")])
def test_a_jax_release_without_a_jaxlib_of_its_own_runs_on_aarch64_through_the_one_it_installs(jax, jaxlib):
    # jax 0.4.37 and 0.5.2 install jaxlib, jax-cuda12-plugin and jax-cuda12-pjrt 0.4.36 / 0.5.1, whose
    # manylinux aarch64 wheels are on PyPI (cp310-cp313): not "no CUDA build for aarch64"
    result = resolve_case(jax=f"=={jax}", driver="580.65.06", gpus=["GH200"])
    assert result.ok and result.stack.arch == "aarch64", [p.message for p in result.problems]
    assert result.stack.framework("jaxlib") == jaxlib


@pytest.mark.parametrize("jax", ["0.4.23", "0.4.24", "0.4.27", "0.4.28"])
def test_a_jax_release_that_needs_cudnn_8_9_is_not_an_aarch64_stack(jax):
    # its jax-cuda12-plugin has aarch64 wheels, but [cuda12] requires nvidia-cudnn-cu12 8.9, which has
    # none for aarch64 (PyPI: from 9.0.0.312): the lock could never install the stack resolve chose
    result = resolve_case(jax=f"=={jax}", driver="580.65.06", gpus=["GH200"])
    assert not result.ok and codes(result) == ["no-build-for-platform"]
    assert resolve_case(jax=f"=={jax}", driver="580.65.06", gpus=["H100"]).ok  # x86_64 has cuDNN 8.9 wheels


def test_on_aarch64_jax_starts_at_0_4_29_with_cudnn_9():
    result = resolve_case(jax=">=0.4.23,<0.4.30", driver="580.65.06", gpus=["GH200"])
    assert result.ok and result.stack.framework("jax") == "0.4.29" and result.stack.cudnn.startswith("9.")
