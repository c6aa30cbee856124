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


def test_a_refused_build_names_every_sass_and_ptx_target_it_has(torch_12_4):
    """The reason lists the build's whole SM list, SASS first then PTX, so the user sees which GPUs it
    was built for; a refused stack has no mode even though the driver runs its CUDA natively."""
    built = replace(torch_12_4, gpu_targets=(("torch", ("8.6", "9.0"), ("8.6", "9.0")),))
    verdict = check_stack(matrix(), built, host("550.54.15", ["A100"]))
    assert verdict.reasons == ("GPU A100 (sm_80) is not in the torch 2.6.0 build's SM list "
                               "(sm_86, sm_90, sm_86 PTX, sm_90 PTX)",)
    assert (verdict.compatible, verdict.mode) == (False, None)
    assert check_stack(matrix(), torch_12_4, host("550.54.15", ["A100"])).mode == drv.NATIVE


def test_the_matrixs_ptx_reports_apply_to_the_build_the_stack_records_and_only_to_it():
    """Placement (export affinities) and check share one rule: TensorFlow 2.20's compute_90 PTX is
    reported failing on sm_120, so its build does not run there though PTX would cover it; it runs on
    sm_100 (no report); the same SM list under a version the matrix has no build of carries no
    report; and without PTX JIT (minor-version compatibility) PTX reaches nothing."""
    from cudaenv.resolver.check import stack_build_runs_on

    stack = resolve_case(driver="580.95.05", gpus=["RTX 4090"], tensorflow="2.20").stack
    [(framework, sass, ptx)] = [t for t in stack.gpu_targets if t[0] == "tensorflow"]
    assert ptx and "12.0" not in sass

    def runs(on_stack, cc, jit=True):
        return stack_build_runs_on(matrix(), on_stack, framework, sass, ptx, cc, ptx_jit=jit)

    assert runs(stack, "12.0") is False
    assert runs(stack, "10.0") is True
    assert runs(stack, "10.0", jit=False) is False
    unknown = replace(stack, frameworks=tuple((n, "2.99.0" if n == "tensorflow" else v) for n, v in stack.frameworks))
    assert runs(unknown, "12.0") is True
    assert stack_build_runs_on(matrix(), stack, framework, (), (), "12.0", ptx_jit=True) is None
    other_list = (tuple(sass) + ("12.0",), ptx)
    assert stack_build_runs_on(matrix(), stack, framework, *other_list, "12.0", ptx_jit=True) is True


def test_check_quotes_the_ptx_reports_only_where_jit_would_otherwise_reach_the_gpu():
    """TensorFlow 2.20 on an RTX 5080: the reason quotes the reports behind the refusal, word for word
    the resolver's own explanation of the build; where the driver cannot JIT PTX at all (minor-version
    compatibility) the reports are beside the point and the reason is the SM list alone."""
    from cudaenv.matrix.builds import framework_builds
    from cudaenv.resolver.resolve import ptx_fails_text

    stack = resolve_case(driver="580.95.05", gpus=["RTX 4090"], tensorflow="2.20").stack
    [(_, sass, ptx)] = [t for t in stack.gpu_targets if t[0] == "tensorflow"]
    [build] = [b for b in framework_builds(matrix())["tensorflow"]
               if b.version == "2.20.0" and b.sass == tuple(sass) and b.ptx == tuple(ptx)]
    verdict = check_stack(matrix(), stack, host("580.95.05", ["NVIDIA GeForce RTX 5080"]))
    built = ", ".join("sm_" + c.replace(".", "") for c in sass) + "".join(f", sm_{c.replace('.', '')} PTX" for c in ptx)
    assert verdict.reasons == (f"GPU RTX 5080 (sm_120) is not in the tensorflow 2.20.0 build's SM list ({built}): "
                               f"{ptx_fails_text(build, '12.0')}",)
    # the same build in a CUDA 12.9 image on R570 (native CUDA <= 12.8): minor-version compatibility
    newer = replace(stack, cuda="12.9", gpu_targets=(("tensorflow", sass, ptx),))
    no_jit = check_stack(matrix(), newer, host("570.124.06", ["NVIDIA GeForce RTX 5080"]))
    assert no_jit.reasons == (f"GPU RTX 5080 (sm_120) is not in the tensorflow 2.20.0 build's SM list ({built})",)


def test_a_build_of_a_framework_the_matrix_has_no_builds_of_is_judged_by_its_sm_list_alone():
    """A lock from a newer cudaenv may name a framework this matrix has no builds of: there is no
    report to apply, and its recorded SM list still decides."""
    from cudaenv.resolver.check import stack_build_runs_on

    stack = resolve_case(driver="550.54.15", gpus=["A100"], torch="2.6").stack
    assert stack_build_runs_on(matrix(), stack, "paddle", ("8.0",), (), "8.6", ptx_jit=True) is True
    assert stack_build_runs_on(matrix(), stack, "paddle", ("9.0",), (), "8.0", ptx_jit=True) is False
    verdict = check_stack(matrix(), replace(stack, gpu_targets=(("paddle", ("8.0",), ()),)), host("550.54.15", ["A100"]))
    assert verdict.compatible and verdict.reasons == ()


def test_a_build_reaching_a_gpu_only_through_ptx_is_named_in_the_caveat_word_for_word():
    """B200 (sm_100) runs TensorFlow 2.20 only by JIT-compiling its compute_90 PTX: the caveat names the
    GPU, the framework and version, the PTX, and what the build was compiled for."""
    stack = resolve_case(driver="580.95.05", gpus=["RTX 4090"], tensorflow="2.20").stack
    [(_, sass, ptx)] = [t for t in stack.gpu_targets if t[0] == "tensorflow"]
    assert ptx == ("9.0",)
    verdict = check_stack(matrix(), stack, host("580.95.05", ["B200"]))
    built = ", ".join("sm_" + c.replace(".", "") for c in sass)
    assert verdict.compatible and verdict.caveats == (
        "B200 (sm_100) runs tensorflow 2.20.0 only through its compute_90 PTX, JIT-compiled by the driver at first "
        f"use: the build has no native code for it (built for {built})",)
