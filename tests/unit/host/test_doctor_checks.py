"""doctor's driver and GPU checks read a detected host with the resolver's own rules: a board the
driver branch dropped fails with a fix, an unidentifiable one fails, a driver the matrix knows no
CUDA for says so in words."""

from __future__ import annotations

import pytest

from cudaenv.run.doctor import _driver_checks
from cudaenv.hosts.detect import DetectedGpu, HostInfo
from cudaenv.matrix import load_matrix


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def by_name(checks):
    return {c.name: c for c in checks}


def test_each_gpu_is_checked_against_the_driver_branch(matrix):
    info = HostInfo(driver="580.65.06", source="nvidia-smi", gpus=(
        DetectedGpu(0, "Tesla K80", None),  # R470-era nvidia-smi: no compute_cap, named from the matrix
        DetectedGpu(1, "Mystery 9000", None),
        DetectedGpu(2, "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-1"),
    ))
    checks = by_name(_driver_checks(matrix, info))
    assert (checks["GPU 0"].ok, checks["GPU 0"].detail) == (False, "Tesla K80, sm_37 (kepler)")
    assert "R580 no longer supports kepler" in checks["GPU 0"].fix
    assert (checks["GPU 1"].ok, checks["GPU 1"].detail) == (False, "Mystery 9000: compute capability unknown")
    assert (checks["GPU 2"].ok, checks["GPU 2"].detail) == (True, "NVIDIA H100 80GB HBM3, sm_90 (hopper), 79 GiB, GPU-1")


def test_a_driver_older_than_every_cuda_says_so_in_words(matrix):
    check = by_name(_driver_checks(matrix, HostInfo(driver="300.10", source="proc")))["CUDA supported"]
    assert (check.ok, check.detail) == (False, "no CUDA natively")
    assert "upgrade the driver" in check.fix
