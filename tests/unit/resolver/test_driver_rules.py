"""Axis 1 (cudaenv.resolver.driver): which CUDA a driver runs, and how, on a small matrix whose
facts each test states, so every boundary of the rules is visible (issue 25 §3)."""

from __future__ import annotations

import pytest

from cudaenv.matrix import Matrix
from cudaenv.matrix.model import CudaMajor, CudaRelease, DriverBranch
from cudaenv.resolver import driver as drv

SRC = "test"


def _release(version: str, min_driver: str | None = None, forward: tuple[int, ...] = ()) -> CudaRelease:
    return CudaRelease(version=version, min_compute_capability="5.0", max_compute_capability="9.0", source=SRC,
                       min_driver=min_driver, forward_compat_branches=forward)


# NVIDIA's table, in small: 12.0 and 12.1 need 525.60.13 / 530.30.02 natively, 12.2 has two releases
# whose minimums compare differently as text and as numbers, 12.3 has no table row (only the driver
# branches say who runs it natively), 12.4 is newer than every branch's native CUDA and comes with
# cuda-compat for R535. CUDA 12.x runs on >= 525.60.13 through minor-version compatibility; CUDA 10.2
# (native >= 440.33) predates minor-version compatibility.
MATRIX = Matrix(
    cuda_majors=(CudaMajor(major=12, minor_version_floor="525.60.13", source=SRC),),
    cuda_releases=(
        _release("10.2.89", "440.33"),
        _release("12.0.0", "525.60.13"),
        _release("12.1.0", "530.30.02"),
        _release("12.2.0", "535.54.03"),
        _release("12.2.2", "535.104.05"),
        _release("12.3.0"),
        _release("12.4.0", forward=(535,)),
    ),
    driver_branches=(
        DriverBranch(branch=440, max_cuda="10.2", architectures=("Kepler", "Volta"), source=SRC),
        DriverBranch(branch=525, max_cuda="12.0", architectures=("Volta", "Ampere"), source=SRC),
        DriverBranch(branch=535, max_cuda="12.2", architectures=("Volta", "Ampere", "Hopper"), source=SRC),
        DriverBranch(branch=545, max_cuda="12.3", architectures=("Volta", "Ampere", "Hopper"), source=SRC),
    ),
)


# --- the requirement in words ------------------------------------------------------------------


@pytest.mark.parametrize(("min_driver", "compat", "text"), [
    (None, None, "unknown to this matrix"),
    ("", "525.60.13", "unknown to this matrix"),
    ("440.33", None, ">= 440.33 natively"),
    ("535.54.03", "535.54.03", ">= 535.54.03 natively"),
    ("535.54.03", "525.60.13", ">= 535.54.03 natively (or >= 525.60.13 through minor-version compatibility)"),
], ids=["unknown", "no-native-driver", "native-only", "same-floor", "with-minor-version"])
def test_a_driver_requirement_reads_the_same_sentence_everywhere(min_driver, compat, text):
    """resolve, check, run and the Dockerfile header all print this sentence: its wording is a contract,
    and the minor-version part appears only when it lowers the requirement."""
    assert drv.requirement_text(min_driver, compat) == text


# --- natively ----------------------------------------------------------------------------------


def test_the_native_minimum_is_the_lowest_of_the_releases_minimums_as_numbers():
    """12.2.0 needs 535.54.03 and 12.2.2 needs 535.104.05: compared as text "535.104.05" would look
    lower, but the driver that runs the first 12.2 release is the lower number."""
    assert drv.native_min_driver(MATRIX, "12.2") == "535.54.03"
    assert drv.native_requirement(MATRIX, "12.2") == "535.54.03"


def test_a_cuda_without_a_table_row_runs_natively_from_the_first_branch_that_reaches_it():
    """12.3 has no row in NVIDIA's table: the lowest branch whose highest native CUDA is 12.3 or more
    (R545 reaches exactly 12.3) is the requirement, written as the branch."""
    assert drv.native_min_driver(MATRIX, "12.3") is None
    assert drv.native_min_branch(MATRIX, "12.3") == 545
    assert drv.native_requirement(MATRIX, "12.3") == "545"
    assert drv.runs_natively(MATRIX, "545.23.06", "12.3")
    assert not drv.runs_natively(MATRIX, "535.104.05", "12.3")


def test_a_branch_reaching_the_cuda_exactly_counts_and_the_lowest_such_branch_wins():
    """R535's highest native CUDA is 12.2: it runs 12.2 natively, and R545 (also reaching it) is not
    the minimum."""
    assert drv.native_min_branch(MATRIX, "12.2") == 535
    assert drv.native_min_branch(MATRIX, "12.0") == 525


def test_a_cuda_newer_than_every_branch_has_no_native_requirement():
    """12.4 has no table row and no branch reaches it: no driver of this matrix runs it natively."""
    assert drv.native_min_branch(MATRIX, "12.4") is None
    assert drv.native_requirement(MATRIX, "12.4") is None
    assert not drv.runs_natively(MATRIX, "545.23.06", "12.4")


def test_the_minimum_driver_itself_runs_the_cuda_natively():
    """NVIDIA's minimum is inclusive: 535.54.03 runs 12.2 natively, 535.54.02 does not."""
    assert drv.runs_natively(MATRIX, "535.54.03", "12.2")
    assert not drv.runs_natively(MATRIX, "535.54.02", "12.2")
    assert drv.driver_mode(MATRIX, "535.54.03", "12.2") == drv.NATIVE


# --- forward compatibility ---------------------------------------------------------------------


def test_forward_compatibility_is_off_unless_the_caller_says_every_gpu_is_data_center():
    """cuda-compat only works on data-center GPUs: a caller that says nothing about the GPUs must not
    get a forward-compatible mode (R535 + cuda-compat 12.4 on a consumer card fails at run time)."""
    assert drv.driver_mode(MATRIX, "535.104.05", "12.4") == drv.MINOR_VERSION  # 12.x floor: minor-version
    no_floor = Matrix(cuda_releases=MATRIX.cuda_releases, driver_branches=MATRIX.driver_branches)
    assert drv.driver_mode(no_floor, "535.104.05", "12.4") is None
    assert drv.driver_mode(no_floor, "535.104.05", "12.4", all_datacenter=True) == drv.FORWARD
    assert drv.driver_mode(no_floor, "545.23.06", "12.4", all_datacenter=True) is None  # no cuda-compat for R545


# --- what one driver runs (`cudaenv matrix show driver`) ---------------------------------------


def test_driver_support_names_the_newest_cuda_each_way_and_the_branchs_architectures():
    """R535.104.05 runs 12.0-12.2 natively and, through the 12.x floor, 12.3 and 12.4 too: the newest
    of each list is what the user is told, with R535's architectures from the branch table."""
    support = drv.driver_support(MATRIX, "535.104.05")
    assert support == drv.DriverSupport(driver="535.104.05", branch=535, max_native_cuda="12.2",
                                        max_minor_version_cuda="12.4",
                                        architectures=("Volta", "Ampere", "Hopper"), branch_known=True)
    assert support.cuda_text == "CUDA <= 12.2 natively and <= 12.4 through minor-version compatibility"


def test_a_cuda_before_minor_version_compatibility_counts_in_both_lists_when_run_natively():
    """R440 runs 10.2 natively and nothing through minor-version compatibility (10.x has no floor):
    what it runs "either way" is still 10.2, so the sentence names it once."""
    support = drv.driver_support(MATRIX, "440.33")
    assert (support.max_native_cuda, support.max_minor_version_cuda) == ("10.2", "10.2")
    assert support.cuda_text == "CUDA <= 10.2 natively"


def test_a_driver_of_an_unknown_branch_runs_nothing_and_has_no_architectures():
    """A driver older than every row (R410) runs no CUDA of this matrix and its branch is unknown:
    the report says so rather than inventing architectures."""
    support = drv.driver_support(MATRIX, "410.48")
    assert support == drv.DriverSupport(driver="410.48", branch=410, max_native_cuda=None,
                                        max_minor_version_cuda=None, architectures=(), branch_known=False)
    assert support.cuda_text == "no CUDA natively"


def test_a_driver_below_the_native_minimum_runs_cuda_only_through_minor_version_compatibility():
    """525.60.13 is the 12.x floor but below 12.1's native minimum: natively it runs 12.0 only,
    everything 12.x else through minor-version compatibility."""
    support = drv.driver_support(MATRIX, "525.60.13")
    assert (support.max_native_cuda, support.max_minor_version_cuda) == ("12.0", "12.4")
    assert support.branch_known and support.architectures == ("Volta", "Ampere")
