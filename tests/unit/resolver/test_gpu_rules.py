"""Axis 2 (cudaenv.resolver.gpu): whether a GPU runs a toolkit's libraries and a framework build's
code, and which driver branches carry its architecture -- on a small matrix whose facts each test
states, so every boundary of the compatibility rules is visible (issue 25 §3)."""

from __future__ import annotations

import pytest

from cudaenv.matrix import Matrix
from cudaenv.matrix.model import Architecture, CudaRelease, DriverBranch
from cudaenv.resolver import gpu as gpu_rules
from cudaenv.resolver.model import TargetGpu

SRC = "test"


def _release(version: str, low: str, high: str) -> CudaRelease:
    return CudaRelease(version=version, min_compute_capability=low, max_compute_capability=high, source=SRC)


# CUDA 11.7's libraries target sm_35..sm_87 (its newest release decides: 11.7.0 still said sm_86);
# CUDA 12.0 dropped Kepler: sm_50..sm_90. Kepler ends at R470, Hopper starts at R525.
MATRIX = Matrix(
    cuda_releases=(_release("11.7.0", "3.5", "8.6"), _release("11.7.1", "3.5", "8.7"), _release("12.0.0", "5.0", "9.0")),
    architectures=(
        Architecture(name="Kepler", compute_capabilities=("3.5", "3.7"), source=SRC),
        Architecture(name="Ampere", compute_capabilities=("8.0", "8.6", "8.7"), source=SRC),
        Architecture(name="Ada", compute_capabilities=("8.9",), source=SRC),
        Architecture(name="Hopper", compute_capabilities=("9.0",), source=SRC),
    ),
    driver_branches=(
        DriverBranch(branch=470, max_cuda="11.4", architectures=("Kepler", "Ampere"), source=SRC),
        DriverBranch(branch=525, max_cuda="12.0", architectures=("Ampere", "Ada", "Hopper"), source=SRC),
        DriverBranch(branch=535, max_cuda="12.2", architectures=("Ampere", "Ada", "Hopper"), source=SRC),
    ),
)


# --- the toolkit's own libraries ---------------------------------------------------------------


def test_the_toolkit_range_is_the_newest_release_of_that_cuda():
    """11.7.1 added sm_87: the x.y's range is its newest release's, not the first one's."""
    assert gpu_rules.toolkit_range(MATRIX, "11.7") == ("3.5", "8.7")
    assert gpu_rules.toolkit_range(MATRIX, "11.8") is None


@pytest.mark.parametrize(("cuda", "cc", "ptx_jit", "runs"), [
    ("12.0", "3.7", True, False),   # below the lowest capability: no code old enough, JIT or not
    ("12.0", "5.0", False, True),   # the lowest capability itself
    ("12.0", "9.0", False, True),   # the highest capability itself
    ("11.7", "8.9", False, True),   # same major above the highest: sm_86/sm_87 SASS runs on sm_89
    ("11.7", "9.0", True, True),    # a newer major: only through PTX JIT
    ("11.7", "9.0", False, False),  # ... which minor-version compatibility does not allow
    ("11.8", "8.0", True, False),   # a CUDA the matrix does not know runs nowhere
], ids=["below-range", "lowest", "highest", "same-major-above", "newer-major-jit", "newer-major-no-jit",
        "unknown-cuda"])
def test_a_toolkits_libraries_run_by_binary_compatibility_or_ptx_jit(cuda, cc, ptx_jit, runs):
    """CUDA's binary-compatibility rule (SASS X.y runs on X.z, z >= y) and PTX rule (a newer major
    only through JIT), with the release's lowest capability as a hard floor."""
    assert gpu_rules.toolkit_runs_on(MATRIX, cuda, cc, ptx_jit=ptx_jit) is runs


@pytest.mark.parametrize(("cc", "supported"), [("3.4", False), ("3.5", True), ("8.7", True), ("8.9", False)])
def test_nvcc_targets_exactly_the_releases_range(cc, supported):
    """What a devel image can compile for is the range itself, both ends included."""
    assert gpu_rules.toolkit_supports(MATRIX, "11.7", cc) is supported
    assert gpu_rules.toolkit_supports(MATRIX, "11.8", "8.0") is False


# --- a framework build's code ------------------------------------------------------------------


@pytest.mark.parametrize(("sass", "ptx", "cc", "ptx_jit", "unusable", "runs"), [
    ((), (), "8.0", True, (), None),                    # not recorded: not judged
    (("8.0",), (), "8.6", False, (), True),             # SASS 8.0 runs on 8.6
    (("8.6",), (), "8.0", True, (), False),             # but not on an older minor
    (("8.0",), (), "9.0", True, (), False),             # nor on another major
    (("8.0",), ("9.0",), "9.0", True, (), True),        # PTX of exactly the GPU's capability
    (("8.0",), ("8.0",), "12.0", True, (), True),       # PTX of an older capability, JIT-compiled
    (("8.0",), ("8.0",), "12.0", False, (), False),     # no JIT under minor-version compatibility
    (("8.0",), ("8.0",), "12.0", True, ("12.0",), False),  # the matrix reports that PTX failing there
    (("8.0",), ("8.0",), "9.0", True, ("12.0",), True),    # ... only there
    ((), ("9.0",), "8.9", True, (), False),             # PTX newer than the GPU is of no use
], ids=["unrecorded", "sass-older-minor", "sass-newer-minor", "sass-other-major", "ptx-equal", "ptx-older",
        "ptx-no-jit", "ptx-reported-failing", "ptx-failing-elsewhere", "ptx-newer"])
def test_a_build_runs_through_its_sass_or_its_ptx(sass, ptx, cc, ptx_jit, unusable, runs):
    """The build axis: native SASS within a major, else PTX for a capability <= the GPU's, JIT-compiled
    by the driver unless JIT is unavailable or the matrix records that build's PTX failing on it."""
    assert gpu_rules.build_runs_on(sass, ptx, cc, ptx_jit=ptx_jit, ptx_unusable_on=unusable) is runs


@pytest.mark.parametrize(("sass", "ptx", "cc", "only_ptx"), [
    (("8.0",), ("9.0",), "12.0", True),   # no SASS for Blackwell: every kernel JIT-compiled
    (("8.0",), ("9.0",), "9.0", True),    # PTX of the GPU's own capability is still PTX
    (("8.0", "9.0"), ("9.0",), "9.0", False),  # SASS for it: native
    (("8.0",), ("9.0",), "8.9", False),   # SASS 8.0 runs on sm_89 natively
    ((), ("8.0",), "9.0", True),          # a build that ships PTX alone
    (("8.0",), (), "12.0", False),        # no PTX: it does not run at all, so not "only through PTX"
    ((), (), "9.0", False),               # nothing recorded
], ids=["blackwell", "ptx-equal", "native", "native-same-major", "ptx-only-build", "no-ptx", "unrecorded"])
def test_only_through_ptx_means_no_native_code_but_covering_ptx(sass, ptx, cc, only_ptx):
    """The ptx-jit-only caveat names builds that reach a GPU by JIT alone; a native build or one that
    does not run must not get it."""
    assert gpu_rules.only_through_ptx(sass, ptx, cc) is only_ptx


# --- architectures and driver branches ---------------------------------------------------------


def test_a_gpus_architecture_comes_from_its_row_or_else_from_its_compute_capability():
    """A GPU named by model carries its architecture; one given only as sm_89 gets the matrix's
    architecture of that capability; an unknown capability has none."""
    assert gpu_rules.architecture_name(MATRIX, TargetGpu("8.9", "L4", "Lovelace")) == "Lovelace"
    assert gpu_rules.architecture_name(MATRIX, TargetGpu("8.9")) == "Ada"
    assert gpu_rules.architecture_name(MATRIX, TargetGpu("7.5")) is None


@pytest.mark.parametrize(("driver", "gpu", "supported"), [
    ("470.82.01", TargetGpu("3.7"), True),       # Kepler on R470
    ("525.60.13", TargetGpu("3.7"), False),      # Kepler ended at R470
    ("525.60.13", TargetGpu("9.0"), True),       # Hopper, architecture from the capability
    ("470.82.01", TargetGpu("9.0"), False),
    ("550.54.14", TargetGpu("9.0"), None),       # R550 is not in this matrix: unknown
    ("535.104.05", TargetGpu("7.5"), None),      # sm_75 has no architecture here: unknown
], ids=["kepler-r470", "kepler-r525", "hopper-r525", "hopper-r470", "unknown-branch", "unknown-arch"])
def test_the_driver_branch_must_carry_the_gpus_architecture(driver, gpu, supported):
    """A driver branch drops old architectures (Kepler after R470); when the branch or the
    architecture is not in the matrix the answer is unknown, not a guess."""
    assert gpu_rules.driver_supports_architecture(MATRIX, driver, gpu) is supported


def test_first_and_last_branches_of_an_architecture_bound_the_drivers_that_carry_it():
    """The fix text names the first branch with the architecture (upgrade to) and the last one (stay
    at or below); an architecture no branch carries has neither."""
    assert gpu_rules.first_branch_for(MATRIX, "Ampere") == 470
    assert gpu_rules.last_branch_for(MATRIX, "Ampere") == 535
    assert gpu_rules.first_branch_for(MATRIX, "Hopper") == 525
    assert gpu_rules.last_branch_for(MATRIX, "Kepler") == 470
    assert gpu_rules.first_branch_for(MATRIX, "Maxwell") is None
    assert gpu_rules.last_branch_for(MATRIX, "Maxwell") is None
