"""Axis 1 of the design: which CUDA runtimes a driver can run, and how.

A CUDA x.y runtime runs on driver D

* **natively** when D is at least the minimum driver of the x.y general-availability release
  (NVIDIA's "CUDA Toolkit and Corresponding Driver Versions" table); where the table has no row,
  when D's branch is at least the first branch whose highest native CUDA reaches x.y;
* through **minor-version compatibility** (CUDA 11 and later) when D is at least the major's floor
  (11.x >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580) — without PTX JIT of newer PTX;
* through **forward compatibility** when every GPU is a data-center GPU and the ``cuda-compat``
  package of that release supports D's branch.

Pure functions over the Matrix; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudaenv.matrix import Matrix
from cudaenv.versions import driver_branch, numeric_key

NATIVE = "native"
MINOR_VERSION = "minor-version"
FORWARD = "forward"

MINOR_VERSION_LIMITS = ("features that need a newer driver are unavailable and PTX newer than the "
                        "driver cannot be JIT-compiled")


def requirement_text(min_driver: str | None, min_driver_compat: str | None) -> str:
    """A stack's driver requirement in words: ">= X natively (or >= Y through minor-version compatibility)".

    One wording for every place that states it (resolve output, check, run, the Dockerfile header),
    so a user sees the same sentence wherever the requirement comes up.
    """
    if not min_driver:
        return "unknown to this matrix"
    text = f">= {min_driver} natively"
    if min_driver_compat and min_driver_compat != min_driver:
        text += f" (or >= {min_driver_compat} through minor-version compatibility)"
    return text


def native_min_driver(matrix: Matrix, cuda_xy: str) -> str | None:
    """Lowest driver that runs CUDA x.y natively per NVIDIA's table (the x.y releases' lowest minimum)."""
    drivers = [r.min_driver for r in matrix.cuda_releases_for(cuda_xy) if r.min_driver]
    return min(drivers, key=numeric_key) if drivers else None


def native_min_branch(matrix: Matrix, cuda_xy: str) -> int | None:
    """Lowest driver branch whose highest native CUDA reaches x.y."""
    want = numeric_key(cuda_xy)
    branches = [b.branch for b in matrix.driver_branches if numeric_key(b.max_cuda) >= want]
    return min(branches) if branches else None


def native_requirement(matrix: Matrix, cuda_xy: str) -> str | None:
    """What a driver needs to run x.y natively, as a driver version (or ``"<branch>"``)."""
    exact = native_min_driver(matrix, cuda_xy)
    if exact:
        return exact
    branch = native_min_branch(matrix, cuda_xy)
    return str(branch) if branch is not None else None


def runs_natively(matrix: Matrix, driver: str, cuda_xy: str) -> bool:
    required = native_requirement(matrix, cuda_xy)
    return required is not None and numeric_key(driver) >= numeric_key(required)


def minor_version_floor(matrix: Matrix, cuda_xy: str) -> str | None:
    major = matrix.cuda_major(int(cuda_xy.split(".")[0]))
    return major.minor_version_floor if major else None


def runs_minor_version(matrix: Matrix, driver: str, cuda_xy: str) -> bool:
    floor = minor_version_floor(matrix, cuda_xy)
    return floor is not None and numeric_key(driver) >= numeric_key(floor)


def forward_compat_branches(matrix: Matrix, cuda_xy: str) -> tuple[int, ...]:
    """Driver branches the cuda-compat package of any x.y release supports, ascending."""
    return tuple(sorted({b for r in matrix.cuda_releases_for(cuda_xy) for b in r.forward_compat_branches}))


def runs_forward(matrix: Matrix, driver: str, cuda_xy: str, all_datacenter: bool) -> bool:
    return all_datacenter and driver_branch(driver) in forward_compat_branches(matrix, cuda_xy)


def driver_mode(matrix: Matrix, driver: str, cuda_xy: str, *, all_datacenter: bool = False) -> str | None:
    """How ``driver`` runs CUDA x.y: native, minor-version, forward, or None (it cannot)."""
    if runs_natively(matrix, driver, cuda_xy):
        return NATIVE
    if runs_minor_version(matrix, driver, cuda_xy):
        return MINOR_VERSION
    if runs_forward(matrix, driver, cuda_xy, all_datacenter):
        return FORWARD
    return None


@dataclass(frozen=True)
class DriverSupport:
    """What one driver version runs: the facts behind ``cudaenv matrix show driver``."""

    driver: str
    branch: int
    max_native_cuda: str | None
    max_minor_version_cuda: str | None
    architectures: tuple[str, ...]
    branch_known: bool

    @property
    def cuda_text(self) -> str:
        """``CUDA <= 12.2 natively and <= 12.9 through minor-version compatibility``: one sentence
        for every message that says what a driver runs."""
        text = f"CUDA <= {self.max_native_cuda} natively" if self.max_native_cuda else "no CUDA natively"
        if self.max_minor_version_cuda and self.max_minor_version_cuda != self.max_native_cuda:
            text += f" and <= {self.max_minor_version_cuda} through minor-version compatibility"
        return text


def driver_support(matrix: Matrix, driver: str) -> DriverSupport:
    native = [xy for xy in matrix.cuda_minors if runs_natively(matrix, driver, xy)]
    minor = [xy for xy in matrix.cuda_minors if runs_natively(matrix, driver, xy) or runs_minor_version(matrix, driver, xy)]
    branch = matrix.driver_branch(driver_branch(driver))
    return DriverSupport(
        driver=driver,
        branch=driver_branch(driver),
        max_native_cuda=native[-1] if native else None,
        max_minor_version_cuda=minor[-1] if minor else None,
        architectures=branch.architectures if branch else (),
        branch_known=branch is not None,
    )
