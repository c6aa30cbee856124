"""``check_stack``, word for word and in process: the verdict behind `cudaenv check`, `check
--nodes` and the export affinities. (tests/unit/test_check_cli.py runs the command in a subprocess;
these pin the rules where a mutation tool can see them.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.resolver import driver as drv
from cudaenv.resolver.check import check_stack
from tests.unit.resolver.helpers import host, matrix, resolve_case

NEWEST_TORCH_PIN = "==2.15.0"


@pytest.fixture(scope="module")
def forward():
    """A stack that runs on R535 + A100 only through forward compatibility (cuda-compat in the image)."""
    stack = resolve_case(driver="535.104.05", gpus=["A100"], torch=NEWEST_TORCH_PIN).stack
    assert stack.driver_compatibility == drv.FORWARD
    return stack


@pytest.fixture(scope="module")
def native_13():
    """The same torch built for CUDA 13.0 as a wheels image, resolved for a new driver: no cuda-compat."""
    stack = resolve_case(driver="580.95.05", gpus=["A100"], torch=NEWEST_TORCH_PIN).stack
    assert stack.driver_compatibility == drv.NATIVE
    return stack


@pytest.fixture(scope="module")
def torch_12_4():
    return resolve_case(driver="550.54.15", gpus=["A100"], torch="2.6", cuda="==12.4").stack


def test_forward_compatibility_runs_on_data_center_gpus_with_its_caveat(forward):
    verdict = check_stack(matrix(), forward, host("535.104.05", ["A100"]))
    assert (verdict.compatible, verdict.mode, verdict.reasons) == (True, drv.FORWARD, ())
    assert verdict.caveats == ("runs through forward compatibility (cuda-compat in the image; data-center GPUs only)",)


def test_forward_compatibility_is_refused_on_a_geforce_gpu(forward):
    verdict = check_stack(matrix(), forward, host("535.104.05", ["RTX 4090"]))
    assert (verdict.compatible, verdict.mode, verdict.caveats) == (False, None, ())
    assert verdict.reasons == (
        "driver 535.104.05 runs CUDA <= 12.2 natively and <= 12.9 through minor-version compatibility; this stack is "
        f"CUDA {forward.cuda}: the driver must be >= {forward.min_driver} natively (or >= "
        f"{forward.min_driver_compat} through minor-version compatibility)",)


def test_an_image_without_cuda_compat_never_runs_through_forward_compatibility(native_13):
    """The image was built for a driver that runs CUDA 13 itself: it carries no cuda-compat, so an
    R535 data-center host cannot run it, whatever forward compatibility could have done."""
    verdict = check_stack(matrix(), native_13, host("535.104.05", ["A100"]))
    assert verdict.compatible is False and verdict.mode is None
    assert verdict.reasons[0].startswith("driver 535.104.05 runs CUDA <= 12.2 natively")


def test_minor_version_compatibility_runs_with_its_caveat(torch_12_4):
    verdict = check_stack(matrix(), torch_12_4, host("535.104.05", ["A100"]))
    assert (verdict.compatible, verdict.mode, verdict.reasons) == (True, drv.MINOR_VERSION, ())
    assert verdict.caveats == (f"runs through minor-version compatibility: {drv.MINOR_VERSION_LIMITS}",)


def test_native_has_no_caveat(torch_12_4):
    assert check_stack(matrix(), torch_12_4, host("550.54.15", ["A100"])) == check_stack(
        matrix(), torch_12_4, host("560.35.03", ["A100"]))
    verdict = check_stack(matrix(), torch_12_4, host("550.54.15", ["A100"]))
    assert (verdict.compatible, verdict.mode, verdict.reasons, verdict.caveats) == (True, drv.NATIVE, (), ())


def test_no_driver_is_a_no_that_says_what_driver_the_stack_needs(torch_12_4):
    verdict = check_stack(matrix(), torch_12_4, host(None, ["A100"]))
    assert (verdict.compatible, verdict.mode) == (False, None)
    assert verdict.reasons == (
        "no NVIDIA driver found or declared (pass --driver, or set CUDAENV_DRIVER_VERSION): the stack needs a "
        f"driver >= {torch_12_4.min_driver} natively (or >= {torch_12_4.min_driver_compat} through minor-version "
        "compatibility)",)


def test_a_cuda_the_matrix_does_not_know_is_refused_with_a_hint(torch_12_4):
    verdict = check_stack(matrix(), replace(torch_12_4, cuda="99.9"), host("550.54.15", ["A100"]))
    assert verdict == type(verdict)(False, None, (
        "the stack's CUDA 99.9 is not a CUDA release in this matrix (written by a newer cudaenv or matrix? run "
        "`cudaenv matrix check`)",), ())


def test_a_gpu_outside_the_toolkits_range_is_refused_naming_the_range(torch_12_4):
    verdict = check_stack(matrix(), replace(torch_12_4, gpu_targets=()), host("550.54.15", ["K80"]))
    assert verdict.compatible is False
    assert "GPU K80 (sm_37) cannot run the libraries of CUDA 12.4 (sm_50–sm_90)" in verdict.reasons


def test_every_gpu_is_checked_not_only_the_first(torch_12_4):
    verdict = check_stack(matrix(), replace(torch_12_4, gpu_targets=()), host("550.54.15", ["K80", "K80", "A100"]))
    assert [r for r in verdict.reasons if "cannot run the libraries" in r] == [
        "GPU K80 (sm_37) cannot run the libraries of CUDA 12.4 (sm_50–sm_90)"] * 2


def test_a_gpu_not_in_a_builds_sm_list_is_refused_naming_the_build(torch_12_4):
    only_hopper = replace(torch_12_4, gpu_targets=(("torch", ("9.0",), ()),))
    verdict = check_stack(matrix(), only_hopper, host("550.54.15", ["A100"]))
    assert verdict.reasons == ("GPU A100 (sm_80) is not in the torch 2.6.0 build's SM list (sm_90)",)
    with_ptx = replace(torch_12_4, gpu_targets=(("torch", ("7.0",), ("7.0",)),))
    assert check_stack(matrix(), with_ptx, host("550.54.15", ["A100"])).compatible  # PTX JIT-compiled natively
    jit = check_stack(matrix(), with_ptx, host("535.104.05", ["A100"]))  # minor-version: no PTX JIT
    assert jit.reasons == ("GPU A100 (sm_80) is not in the torch 2.6.0 build's SM list (sm_70, sm_70 PTX)",)


def test_an_unrecorded_sm_list_is_a_caveat_not_a_pass(torch_12_4):
    unrecorded = replace(torch_12_4, gpu_targets=(("torch", (), ()),))
    verdict = check_stack(matrix(), unrecorded, host("550.54.15", ["A100"]))
    assert verdict.compatible and verdict.caveats == ("the torch build's SM list is not recorded: A100 (sm_80) not checked",)


def test_the_devel_caveat_is_only_for_devel_images(torch_12_4):
    runtime = replace(torch_12_4, flavor="runtime", gpu_targets=())
    on = host("570.124.06", ["RTX 5090"])
    assert not any(c.startswith("nvcc") for c in check_stack(matrix(), runtime, on).caveats)
    assert any(c.startswith("nvcc of CUDA 12.4 cannot target RTX 5090 (sm_120)")
               for c in check_stack(matrix(), replace(runtime, flavor="devel"), on).caveats)
