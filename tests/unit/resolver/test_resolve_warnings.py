"""What a good answer must still say: the caveats of the chosen stack on this host (an unknown driver
or GPU, minor-version or forward compatibility, PTX-only GPUs, a build the matrix doubts or warns
about, a removed base image), and the host problems that rule out every stack (issue 25 §3)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import (UNESTABLISHED, driver_candidates, host_problems, resolve, smallest_driver,
                                      warnings_for)
from cudaenv.versions import numeric_key
from tests.unit.resolver.helpers import constraints, host, matrix

# Matrix facts: torch 2.6.0 is built for CUDA 11.8/12.4/12.6 (SASS up to sm_90) and needs >= 560.28.03
# natively for 12.6, >= 525.60.13 for any 12.x through minor-version compatibility; torch 2.15.0 needs
# CUDA 13 (native from 595.45.04), which R535 reaches only through cuda-compat on an A100; TensorFlow
# 2.15.1 on CUDA 12.2 carries sm_50..sm_80 SASS and compute_80 PTX; TensorFlow 2.15.0's [and-cuda]
# extra cannot be installed; CUDA 10.1's images were deleted from Docker Hub; Blackwell needs R570,
# Kepler's last branch is R470.
GOOD = [
    pytest.param(dict(torch="2.6.0"), [
        ("driver-unknown", "no driver version given or detected: this stack needs a driver >= 560.28.03 natively "
                           "(or >= 525.60.13 through minor-version compatibility)", None),
        ("gpu-unknown", "no GPU given or detected: compute capabilities were not checked; the builds carry "
                        "sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90", None),
    ], id="no-driver-no-gpu"),
    pytest.param(dict(driver="418.87.01"), [
        ("gpu-unknown", "no GPU given or detected: compute capabilities were not checked", None),
        ("base-image-removed", "NVIDIA deleted the nvidia/cuda:10.1-runtime-ubuntu18.04 tags from Docker Hub in its "
                               "EOL cleanup", "set build.base_registry to a mirror that kept them, or allow a newer CUDA"),
    ], id="no-framework-on-a-removed-image"),
    pytest.param(dict(torch="2.6.0", cuda=">=12", driver="535.104.05", gpus=["A100"]), [
        ("minor-version-compatibility", "driver 535.104.05 runs CUDA 12.6 only through minor-version compatibility: "
                                        "features that need a newer driver are unavailable and PTX newer than the "
                                        "driver cannot be JIT-compiled",
         "upgrade the driver to >= 560.28.03 to run it natively"),
    ], id="minor-version"),
    pytest.param(dict(torch="==2.15.0", driver="535.104.05", gpus=["A100"]), [
        ("forward-compatibility", "driver 535.104.05 runs CUDA 13.2 through forward compatibility: the image carries "
                                  "NVIDIA's cuda-compat package, which works on data-center GPUs only",
         "upgrade the driver to >= 595.45.04 to run it natively"),
    ], id="forward"),
    pytest.param(dict(tensorflow="any", cuda="==12.2", driver="535.104.05", gpus=["H100", "H100"]), [
        ("ptx-jit-only", "H100 (sm_90) runs tensorflow 2.15.1 only through its compute_80 PTX, JIT-compiled by the "
                         "driver at first use: the build has no native code for it (built for sm_50, sm_60, sm_70, "
                         "sm_75, sm_80)", None),
    ], id="ptx-only-once-per-board"),
    pytest.param(dict(tensorflow="==2.15.0", driver="550.54.15"), [
        ("gpu-unknown", "no GPU given or detected: compute capabilities were not checked; the builds carry "
                        "sm_50, sm_60, sm_70, sm_75, sm_80", None),
        ("build-caveat", "tensorflow 2.15.0 runs as plain tensorflow on the CUDA 12.2 + cuDNN 8.9 image: its "
                         "[and-cuda] extra cannot be installed from PyPI (it pins tensorrt-libs==8.6.1, which PyPI "
                         "never had; 2.15.0.post1 is the same release without that pin)", None),
    ], id="build-caveat"),
]


def _resolve(driver=None, gpus=(), explain=True, **kw):
    return resolve(matrix(), constraints(**kw), host(driver, gpus), explain=explain)


@pytest.mark.parametrize("case,expected", GOOD)
def test_a_stack_comes_with_every_caveat_of_running_it_here(case, expected):
    """A yes with a condition is not a plain yes: each condition is one problem with its fix."""
    result = _resolve(**case)
    assert result.ok
    assert [(p.code, p.message, p.fix) for p in result.problems] == expected


@pytest.mark.parametrize("case,expected", GOOD)
def test_warnings_for_any_stack_are_the_best_stacks_own(case, expected):
    """warnings_for (used for every alternative a report shows) says what resolve says for the best one."""
    result = _resolve(**case)
    c = constraints(**{k: v for k, v in case.items() if k not in ("driver", "gpus")})
    h = host(case.get("driver"), case.get("gpus", ()))
    assert warnings_for(matrix(), c, h, result.stack) == list(result.problems)


def test_a_build_no_source_shows_was_published_is_a_warning_with_a_way_out():
    """Chosen only because nothing established fits: the user must know, and what to allow instead."""
    stack = _resolve(torch="2.6.0", driver="560.35.03", gpus=["A100"]).stack
    doubtful = replace(stack, notes=(f"{UNESTABLISHED}torch 2.6.0 (cu126)",))
    problems = warnings_for(matrix(), constraints(torch="2.6.0"), host("560.35.03", ["A100"]), doubtful)
    assert [(p.code, p.message, p.fix) for p in problems] == [
        ("variant-unestablished", "torch 2.6.0 (cu126): no primary source shows this build was published (see the "
                                  "matrix row's note); chosen only because no established build fits",
         "allow another CUDA version or framework release")]


def test_a_valid_cuda_list_is_in_version_order():
    """valid_cuda is read by people and compared by tools: oldest first, by version."""
    result = _resolve(torch="2.6.0", driver="560.35.03", gpus=["A100"])
    assert list(result.valid_cuda) == sorted(result.valid_cuda, key=numeric_key) == ["11.8", "12.4", "12.6"]


def test_a_project_without_frameworks_still_gets_a_cuda_image():
    """No framework named: the newest CUDA image the driver runs (R418: CUDA 10.1) is the stack."""
    result = _resolve(driver="418.87.01")
    assert result.ok and result.stack.cuda == "10.1" and result.stack.frameworks == ()


# --- host problems -------------------------------------------------------------------------------

HOST = [
    pytest.param("560.35.03", ["A100", "RTX 5090"], [
        ("driver-predates-architecture", "driver 560.35.03 (R560) predates Blackwell GPUs such as RTX 5090 (sm_120): "
                                         "they need driver branch R570 or newer",
         "upgrade the driver to branch R570 or newer"),
    ], id="predates-the-second-gpu"),
    pytest.param("560.35.03", ["K80"], [
        ("driver-drops-architecture", "driver 560.35.03 (R560) no longer supports Kepler GPUs such as K80 (sm_37); "
                                      "the last driver branch that does is R470",
         "install a driver from branch R470 or older for this GPU; R470 runs CUDA 11.4 and older natively"),
    ], id="drops"),
    pytest.param(None, ["GB10"], [], id="arm-host"),  # an aarch64 host: resolved for aarch64, not refused
    pytest.param(None, ["Jetson AGX Orin"], [
        ("host-platform-unsupported", "Jetson Orin (sm_87) is a Jetson module: its CUDA comes with NVIDIA's Jetson "
                                      "Linux (L4T, JetPack), and the framework wheels and nvidia/cuda images cudaenv "
                                      "builds with are the server (SBSA) ones, which do not run there",
         "use NVIDIA's JetPack containers (nvcr.io/nvidia/l4t-*) and the Jetson wheels NVIDIA publishes for this module"),
    ], id="jetson-l4t"),
    pytest.param("570.124.06", ["A100", "RTX 5090"], [], id="first-supporting-branch"),
    pytest.param("470.82.01", ["K80"], [], id="last-supporting-branch"),
]


@pytest.mark.parametrize("driver,gpus,expected", HOST)
def test_host_problems_name_the_gpu_the_driver_and_the_branch_to_install(driver, gpus, expected):
    """A host no stack can fix is told what to change on the host, per GPU."""
    problems = host_problems(matrix(), host(driver, gpus))
    assert [(p.code, p.message, p.fix) for p in problems] == expected


def test_a_driver_that_predates_a_gpu_gets_the_smallest_driver_that_gives_a_stack():
    """R560 and an RTX 5090: the explanation adds the driver to install (R570, Blackwell's first branch)."""
    result = _resolve(torch="any", driver="560.35.03", gpus=["RTX 5090"])
    assert [(p.code, p.message) for p in result.problems] == [
        ("driver-predates-architecture", "driver 560.35.03 (R560) predates Blackwell GPUs such as RTX 5090 (sm_120): "
                                         "they need driver branch R570 or newer"),
        ("fix-driver", "upgrade the driver to branch R570 or newer")]
    assert result.problems[1].fix == "upgrade the NVIDIA driver to branch R570 or newer"
    quiet = _resolve(torch="any", driver="560.35.03", gpus=["RTX 5090"], explain=False)
    assert [p.code for p in quiet.problems] == ["driver-predates-architecture"]


def test_a_driver_that_drops_a_gpu_gets_no_driver_upgrade():
    """Past Kepler's last branch, a newer driver cannot help: no fix-driver is offered."""
    result = _resolve(torch="any", driver="560.35.03", gpus=["K80"])
    assert [p.code for p in result.problems] == ["driver-drops-architecture"]


def test_a_cuda_pin_the_last_branch_cannot_run_is_named_as_a_fix_too():
    """K80 on R535 with CUDA 12.4 asked for: R470 (Kepler's last branch) runs CUDA 11.4 natively, so
    installing it alone would not do; the CUDA pin must go down too. Without a pin, or with one that
    already allows 11.4 or older, only the driver is named."""
    result = _resolve(cuda="==12.4", driver="535.104.05", gpus=["K80"])
    assert [(p.code, p.message, p.fix) for p in result.problems][1:] == [
        ("fix-cuda", "relax the cuda constraint (12.4): on R470 a stack needs CUDA 11.4 or older", "allow cuda 11.4")]
    assert [p.code for p in _resolve(cuda=">=11", driver="535.104.05", gpus=["K80"]).problems] == \
        ["driver-drops-architecture"]
    assert _resolve(cuda="==11.4", driver="470.82.01", gpus=["K80"]).ok


# --- the smallest driver -------------------------------------------------------------------------


def test_driver_candidates_are_every_point_where_the_answer_changes_in_version_order():
    """Native minimums, minor-version floors and native branches, in version order (not text order)."""
    m = matrix()
    found = driver_candidates(m)
    assert found == sorted(found, key=numeric_key) and len(found) == len(set(found))
    assert {r.min_driver for r in m.cuda_releases if r.min_driver} <= set(found)
    assert {major.minor_version_floor for major in m.cuda_majors} <= set(found)
    assert "570" in found  # CUDA 12.8's native branch (a bare branch, told as "branch R570 or newer")


@pytest.mark.parametrize("driver,gpus,project,expected", [
    ("560.35.03", ["RTX 5090"], dict(torch="any"), "570"),
    (None, ["A100"], dict(torch="2.9.0"), "525.60.13"),
    ("470.82.01", ["A100"], dict(torch="2.9.0"), "525.60.13"),
    ("525.60.13", ["A100"], dict(torch="2.9.0"), "525.85.12"),
    ("560.35.03", ["K80"], dict(torch="any"), None),
], ids=["past-a-host-problem", "no-driver-known", "above-the-hosts", "strictly-above-the-hosts", "no-driver-helps"])
def test_the_smallest_driver_is_the_first_candidate_above_the_hosts_that_works(driver, gpus, project, expected):
    """The upgrade to suggest is the smallest one that gives every project a stack on every GPU; it is
    always above the host's own driver (525.85.12 is the candidate after 525.60.13, CUDA 12.0's floor)."""
    assert smallest_driver(matrix(), [constraints(**project)], host(driver, gpus)) == expected


def test_the_smallest_driver_serves_every_project():
    """Two projects: the driver must give both a stack (torch 2.9.0 needs CUDA 12; 2.15.0 needs CUDA 13)."""
    projects = [constraints(torch="2.9.0"), constraints(torch="==2.15.0")]
    both = smallest_driver(matrix(), projects, host("470.82.01", ["RTX 4090"]))
    alone = smallest_driver(matrix(), projects[:1], host("470.82.01", ["RTX 4090"]))
    assert numeric_key(alone) < numeric_key(both)
    assert all(resolve(matrix(), p, host(both, ["RTX 4090"])).ok for p in projects)
