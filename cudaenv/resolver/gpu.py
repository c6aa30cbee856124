"""Axis 2 of the design: can this GPU run code from this toolkit and this framework build?

* The toolkit's libraries (cuBLAS, cuDNN, …) are prebuilt binaries like any other: they run on a
  GPU whose capability is at least the lowest one the release targets (Kepler sm_37 left CUDA
  12.0: nothing below runs) and, above the highest one, by NVIDIA's binary-compatibility rule —
  SASS for X.y runs on X.z with z >= y (an RTX 4090, sm_89, runs CUDA 11.7's sm_86/sm_87 code) —
  or, for a newer major, through PTX JIT. What the release can *compile* for (nvcc's target
  range, e.g. sm_89 needs CUDA 11.8) matters only when the stack compiles for the GPU (devel).
* The build: native code (SASS) for X.y runs on X.z with z >= y; PTX for any capability <= the
  GPU's is JIT-compiled by the driver — but not under minor-version compatibility, and not where
  the matrix records that the build's PTX fails (TensorFlow <= 2.21 on sm_120: its kernels do not
  load, CUDA_ERROR_INVALID_PTX). A build that reaches a GPU only through PTX runs with a caveat.
* The driver branch must still support the GPU's architecture (Kepler ends at R470).
"""

from __future__ import annotations

from cudaenv.matrix import Matrix
from cudaenv.resolver.model import TargetGpu
from cudaenv.versions import numeric_key


def toolkit_range(matrix: Matrix, cuda_xy: str) -> tuple[str, str] | None:
    """(min, max) compute capability of the newest CUDA release of that x.y."""
    releases = matrix.cuda_releases_for(cuda_xy)
    if not releases:
        return None
    newest = max(releases, key=lambda r: numeric_key(r.version))
    return newest.min_compute_capability, newest.max_compute_capability


def toolkit_supports(matrix: Matrix, cuda_xy: str, cc: str) -> bool:
    bounds = toolkit_range(matrix, cuda_xy)
    if bounds is None:
        return False
    low, high = (numeric_key(b) for b in bounds)
    return low <= numeric_key(cc) <= high


def toolkit_runs_on(matrix: Matrix, cuda_xy: str, cc: str, *, ptx_jit: bool) -> bool:
    """Whether CUDA x.y's own prebuilt libraries run on a GPU of capability ``cc`` (CUDA C++
    Programming Guide, "Binary Compatibility" and "PTX Compatibility")."""
    bounds = toolkit_range(matrix, cuda_xy)
    if bounds is None:
        return False
    low, high = (numeric_key(b) for b in bounds)
    gpu = numeric_key(cc)
    if gpu < low:
        return False  # the release carries no code old enough
    if gpu <= high or gpu[0] == high[0]:
        return True  # native, or SASS of the same major and a lower minor
    return ptx_jit  # a newer major: only the PTX the libraries carry, JIT-compiled by the driver


def sass_runs_on(sass: tuple[str, ...], cc: str) -> bool:
    """Native code for X.y runs on X.z with z >= y (binary compatibility within a major)."""
    major, minor = numeric_key(cc)
    return any(numeric_key(b)[0] == major and numeric_key(b)[1] <= minor for b in sass)


def ptx_covers(ptx: tuple[str, ...], cc: str) -> bool:
    """PTX for any capability <= the GPU's can be JIT-compiled for it (when JIT is available)."""
    return any(numeric_key(p) <= numeric_key(cc) for p in ptx)


def build_runs_on(sass: tuple[str, ...], ptx: tuple[str, ...], cc: str, *, ptx_jit: bool,
                  ptx_unusable_on: tuple[str, ...] = ()) -> bool | None:
    """Whether code built for ``sass``/``ptx`` runs on a GPU of capability ``cc``; None if not recorded.
    ``ptx_unusable_on``: capabilities where the build's PTX is known not to run (reports in the matrix)."""
    if not sass and not ptx:
        return None
    if sass_runs_on(sass, cc):
        return True
    return ptx_jit and cc not in ptx_unusable_on and ptx_covers(ptx, cc)


def only_through_ptx(sass: tuple[str, ...], ptx: tuple[str, ...], cc: str) -> bool:
    """The build has no native code for the GPU and reaches it only by the driver JIT-compiling its
    PTX: it runs, but every kernel is compiled at first use and none was compiled for that GPU."""
    return bool(sass or ptx) and not sass_runs_on(sass, cc) and ptx_covers(ptx, cc)


def architecture_name(matrix: Matrix, gpu: TargetGpu) -> str | None:
    if gpu.architecture:
        return gpu.architecture
    row = matrix.architecture_of(gpu.compute_capability)
    return row.name if row else None


def driver_supports_architecture(matrix: Matrix, driver: str, gpu: TargetGpu) -> bool | None:
    """Whether the driver's branch supports the GPU's architecture; None when unknown."""
    from cudaenv.versions import driver_branch

    branch = matrix.driver_branch(driver_branch(driver))
    arch = architecture_name(matrix, gpu)
    if branch is None or arch is None:
        return None
    return arch in branch.architectures


def first_branch_for(matrix: Matrix, architecture: str) -> int | None:
    branches = [b.branch for b in matrix.driver_branches if architecture in b.architectures]
    return min(branches) if branches else None


def last_branch_for(matrix: Matrix, architecture: str) -> int | None:
    branches = [b.branch for b in matrix.driver_branches if architecture in b.architectures]
    return max(branches) if branches else None
