"""Axis 2 of the design: can this GPU run code from this toolkit and this framework build?

* The toolkit's libraries (cuBLAS, cuDNN, …) are prebuilt binaries like any other: they run on a
  GPU whose capability is at least the lowest one the release targets (Kepler sm_37 left CUDA
  12.0: nothing below runs) and, above the highest one, by NVIDIA's binary-compatibility rule —
  SASS for X.y runs on X.z with z >= y (an RTX 4090, sm_89, runs CUDA 11.7's sm_86/sm_87 code) —
  or, for a newer major, through PTX JIT. What the release can *compile* for (nvcc's target
  range, e.g. sm_89 needs CUDA 11.8) matters only when the stack compiles for the GPU (devel).
* The build: native code (SASS) for X.y runs on X.z with z >= y; PTX for any capability <= the
  GPU's is JIT-compiled by the driver — but not under minor-version compatibility.
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


def build_runs_on(sass: tuple[str, ...], ptx: tuple[str, ...], cc: str, *, ptx_jit: bool) -> bool | None:
    """Whether code built for ``sass``/``ptx`` runs on a GPU of capability ``cc``; None if not recorded."""
    if not sass and not ptx:
        return None
    major, minor = numeric_key(cc)
    for built in sass:
        b_major, b_minor = numeric_key(built)
        if b_major == major and b_minor <= minor:
            return True
    if ptx_jit:
        return any(numeric_key(p) <= (major, minor) for p in ptx)
    return False


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
