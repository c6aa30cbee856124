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


def test_a_missing_docker_library_is_not_a_stopped_daemon(monkeypatch):
    """Recorded on the GPU machine (#27): with no `docker` package doctor told the user to start
    the daemon, which was running. The fix names what is missing instead."""
    import builtins
    import sys

    from cudaenv.run.doctor import _docker_checks

    real_import = builtins.__import__

    def no_docker(name, *args, **kwargs):
        if name == "docker" or name.startswith("docker."):
            raise ModuleNotFoundError("No module named 'docker'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_docker)
    for name in [m for m in sys.modules if m == "docker" or m.startswith("docker.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr("importlib.import_module", lambda name, package=None: no_docker(name))
    (check,), info = _docker_checks()
    assert (check.ok, info) == (False, None)
    assert "No module named 'docker'" in check.detail
    assert "`docker` Python package" in check.fix and "daemon" not in check.fix
