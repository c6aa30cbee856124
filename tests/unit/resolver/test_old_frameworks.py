"""Issue 34: the frameworks' history on today's GPUs, with the answers the issue asks for, each from
the matrix rows read from the wheels and the frameworks' own pages (matrix/SOURCES.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.resolver.helpers import constraints, host, matrix, resolve_case
from cudaenv.resolver.resolve import resolve


def codes(result) -> list[str]:
    return [p.code for p in result.problems]


def test_torch_1_7_1_on_an_a100_with_driver_450_is_the_cu110_build_from_pytorchs_index():
    result = resolve_case(torch="==1.7.1", driver="450.80.02", gpus=["A100"])
    assert result.ok and result.stack.cuda == "11.0" and result.stack.framework("torch") == "1.7.1"
    assert result.stack.index_urls == ("https://download.pytorch.org/whl/cu110",)
    assert "8.0" in result.stack.compute_capabilities


def test_torch_1_7_1_from_pypi_alone_on_an_a100_is_a_no_naming_sm_80_and_the_cu110_index():
    """PyPI's 1.7.1 is the CUDA 10.2 build (sm_37 .. sm_75, no PTX: read from the wheel)."""
    result = resolve(matrix(), replace(constraints(torch="==1.7.1"), framework_index="pypi"), host("450.80.02", ["A100"]))
    assert not result.ok
    unsupported = next(p.message for p in result.problems if p.code == "gpu-unsupported-by-build")
    assert unsupported.startswith("A100 (sm_80) is not in the SM list of torch 1.7.1 for CUDA 10.2 (built for sm_37, "
                                  "sm_50, sm_60, sm_70, sm_75)")
    index_fix = next(p for p in result.problems if p.code == "fix-framework-index")
    assert "https://download.pytorch.org/whl/cu110" in index_fix.message


def test_torch_1_7_1_on_an_h100_has_no_ptx_to_run_from():
    result = resolve_case(torch="==1.7.1", driver="535.104.05", gpus=["H100"])
    assert not result.ok and codes(result)[0] == "gpu-unsupported-by-build"


def test_torch_1_9_1_from_pypi_runs_on_a_v100_and_not_on_an_a100():
    on_v100 = resolve(matrix(), replace(constraints(torch="==1.9.1"), framework_index="pypi"), host("535.104.05", ["V100"]))
    assert on_v100.ok and on_v100.stack.cuda == "10.2" and on_v100.stack.index_urls == ("https://pypi.org/simple",)
    on_a100 = resolve(matrix(), replace(constraints(torch="==1.9.1"), framework_index="pypi"), host("535.104.05", ["A100"]))
    assert not on_a100.ok
    assert any("https://download.pytorch.org/whl/cu111" in p.message for p in on_a100.problems if p.is_fix)


def test_tensorflow_1_15_on_a_v100_is_cuda_10_0_cudnn_7_python_3_7_on_the_bionic_base():
    result = resolve_case(tensorflow="==1.15.5", driver="450.80.02", gpus=["V100"])
    assert result.ok
    stack = result.stack
    assert (stack.cuda, stack.cudnn, stack.python) == ("10.0", "7.6", "3.7")
    assert stack.requirements == ("tensorflow-gpu==1.15.5",)  # plain tensorflow 1.15.5 is the CPU build
    assert stack.base_image == "nvidia/cuda:10.0-cudnn7-runtime-ubuntu18.04"
    assert stack.python_packages == ("python3.7", "python3-distutils") and stack.init == "dumb-init"
    assert codes(result) == ["base-image-removed"]


def test_tensorflow_1_15_on_an_a100_runs_only_through_ptx_and_names_nvidias_tf1():
    result = resolve_case(tensorflow="==1.15.5", driver="535.104.05", gpus=["A100"])
    assert result.ok and codes(result)[:2] == ["ptx-jit-only", "gpu-route"]
    route = result.problems[1].message
    assert "nvidia-tensorflow" in route and "https://pypi.ngc.nvidia.com" in route
    assert "nvcr.io/nvidia/tensorflow:23.03-tf1-py3" in route


def test_a_project_that_also_admits_tensorflow_2_is_not_pointed_at_nvidias_tf1():
    result = resolve_case(tensorflow="any", driver="570.124.06", gpus=["RTX 5090"])
    assert "gpu-route" not in codes(result)


def test_tensorflow_1_12_needs_cuda_9_0_whose_images_cudaenv_cannot_build_on():
    result = resolve_case(tensorflow="==1.12.0", driver="450.80.02", gpus=["V100"])
    assert not result.ok and [p.code for p in result.problems if not p.is_fix] == ["no-base-image"]
    assert result.problems[0].message == (
        "no nvidia/cuda base image in the matrix fits CUDA 9.0 with the cuDNN these builds need (their images are on "
        "centos6, centos7, ubi7, ubuntu16.04, ubuntu17.04; cudaenv builds only on an Ubuntu whose own archive has an "
        "init, tini or dumb-init, which ubuntu16.04, ubuntu17.04 lack)")
    assert [p.message for p in result.problems if p.is_fix] == [
        "relax the tensorflow pin (1.12.0): tensorflow 1.13.1 fits this host (newest that fits: 2.14.1)"]


@pytest.mark.parametrize(("version", "package"), [("1.14.0", "tensorflow-gpu"), ("1.15.0", "tensorflow"),
                                                   ("2.0.0", "tensorflow-gpu"), ("2.1.0", "tensorflow")],
                         ids=["1.14-split", "1.15.0-bundled", "2.0-split-again", "2.1-bundled"])
def test_the_package_that_carries_cuda_is_the_one_installed(version, package):
    """Read from both packages' wheels: 1.15.0 and 2.1+ ship the CUDA build as tensorflow, 1.15.2 to
    2.0.4 went back to the split (tensorflow/tensorflow#36347)."""
    result = resolve_case(tensorflow=f"=={version}", driver="535.104.05", gpus=["V100"])
    assert result.ok and result.stack.requirements == (f"{package}=={version}",)


def test_check_names_nvidias_tf1_route_where_resolve_does():
    """`check` judges a stack (from a lock, an image or flags) on a host; for TensorFlow 1.x on an
    A100 it says what resolve says: PTX only, and the route that runs TF1 natively there."""
    from cudaenv.resolver.check import check_stack

    stack = resolve_case(tensorflow="==1.15.5", driver="450.80.02", gpus=["V100"]).stack
    verdict = check_stack(matrix(), stack, host("580.65.06", ["A100"]))
    assert verdict.compatible
    assert any("nvidia-tensorflow" in c and "https://pypi.ngc.nvidia.com" in c for c in verdict.caveats)
    on_v100 = check_stack(matrix(), stack, host("450.80.02", ["V100"]))
    assert not any("nvidia-tensorflow" in c for c in on_v100.caveats)  # native code there: no route to name
