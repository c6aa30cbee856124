"""Which GPUs a container gets (`--gpus`), what the host has, and whether its driver runs the image.

No GPU exists on the test machines: the GPU inventory is declared (CUDAENV_GPUS) or read from a
fake ``nvidia-smi`` on PATH, and the containers other cudaenv runs hold are an in-memory list of
what the engine would report. Against the real daemon, see tests/integration/test_run_containers.py.
"""

from __future__ import annotations

import fcntl
import os
import stat

import pytest

from cudaenv.run.containers import (LABEL_GPUS, LABEL_MANAGED, allocation_lock, check_host_driver, choose_gpus, held_gpus,
                                inventory, parse_gpus)
from cudaenv.engine import ContainerInfo, GpuRequest
from cudaenv.errors import CudaenvError, UserError
from cudaenv.hosts.detect import HostInfo
from cudaenv.matrix import load_matrix


class ContainersSeenByTheEngine:
    """Only what GPU selection asks an engine: the labelled containers, running or not."""

    def __init__(self, *containers: ContainerInfo) -> None:
        self._containers = containers

    def containers(self, label: str, *, running_only: bool = False) -> list[ContainerInfo]:
        key, _, value = label.partition("=")
        return [c for c in self._containers
                if key in c.labels and (not value or c.labels[key] == value)
                and (c.status == "running" or not running_only)]


def container(name: str, gpus: str, *, status: str = "running", managed: bool = True) -> ContainerInfo:
    labels = {LABEL_GPUS: gpus}
    if managed:
        labels[LABEL_MANAGED] = "true"
    return ContainerInfo(id=f"id-{name}", name=name, image="cudaenv/x:1", status=status, labels=labels,
                         started_at="2026-01-01T00:00:00Z" if status == "running" else "")


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "A100,A100")


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


# --- parsing --gpus -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec, expected", [
    ("all", ("all", None)),
    ("none", ("none", None)),
    ("auto", ("auto", None)),
    ("auto:2", ("auto", 2)),
    ("3", ("count", 3)),
    ("0,1", ("ids", ("0", "1"))),
    (" 2 , 3 ", ("ids", ("2", "3"))),
    ("GPU-6f1b2c3d-aaaa-bbbb-cccc-0123456789ab", ("ids", ("GPU-6f1b2c3d-aaaa-bbbb-cccc-0123456789ab",))),
    ("MIG-GPU-6f1b2c3d/1/0", ("ids", ("MIG-GPU-6f1b2c3d/1/0",))),
])
def test_gpu_spec_forms_are_recognised(spec, expected):
    assert parse_gpus(spec) == expected


@pytest.mark.parametrize("spec", ["", "any", "auto:", "auto:x", "0;1", "gpu0", "-1", "0,,x"])
def test_unreadable_gpu_spec_is_bad_usage_with_the_accepted_forms(spec):
    with pytest.raises(UserError) as info:
        parse_gpus(spec)
    assert info.value.exit_code == 2
    assert "all, none, auto" in str(info.value)


# --- explicit choices ---------------------------------------------------------------------------


def test_gpus_none_asks_for_no_device():
    choice = choose_gpus("none", ContainersSeenByTheEngine())
    assert choice.request is None
    assert choice.held == "none"


def test_gpus_all_asks_for_every_device_and_records_all():
    choice = choose_gpus("all", ContainersSeenByTheEngine())
    assert choice.request == GpuRequest(count=-1)
    assert choice.held == "all"


def test_gpu_count_asks_for_that_many_devices():
    choice = choose_gpus("2", ContainersSeenByTheEngine())
    assert choice.request == GpuRequest(count=2)
    assert choice.held == "count:2"


def test_gpu_ids_ask_for_exactly_those_devices():
    choice = choose_gpus("1,3", ContainersSeenByTheEngine())
    assert choice.request == GpuRequest(device_ids=("1", "3"))
    assert choice.held == "1,3"


def test_explicit_ids_may_share_a_gpu_another_container_holds(two_gpus):
    """Sharing on purpose is allowed: only `auto` avoids held GPUs."""
    engine = ContainersSeenByTheEngine(container("other", "0"))
    assert choose_gpus("0,1", engine).request == GpuRequest(device_ids=("0", "1"))


def test_gpus_zero_never_becomes_a_request_for_no_gpu():
    """`--gpus 0` (or [run] gpus = 0) is refused with the spellings that mean what it might mean."""
    with pytest.raises(UserError) as info:
        choose_gpus("0", ContainersSeenByTheEngine())
    assert "--gpus none" in str(info.value) and "device=0" in str(info.value)


def test_device_prefix_selects_one_gpu_by_index():
    assert choose_gpus("device=1", ContainersSeenByTheEngine()).request == GpuRequest(device_ids=("1",))


# --- --gpus auto ----------------------------------------------------------------------------------


def test_auto_takes_the_first_gpu_when_none_is_held(two_gpus):
    choice = choose_gpus("auto", ContainersSeenByTheEngine())
    assert choice.request == GpuRequest(device_ids=("0",))
    assert choice.held == "0"


def test_auto_skips_gpus_held_by_running_cudaenv_containers(two_gpus):
    engine = ContainersSeenByTheEngine(container("project-a", "0"))
    choice = choose_gpus("auto", engine)
    assert choice.request == GpuRequest(device_ids=("1",))
    assert choice.held == "1"


def test_auto_counts_each_gpu_of_a_multi_gpu_holder(monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "A100,A100,A100,A100")
    engine = ContainersSeenByTheEngine(container("project-a", "0,2"))
    assert choose_gpus("auto:2", engine).request == GpuRequest(device_ids=("1", "3"))


def test_auto_ignores_exited_containers(two_gpus):
    engine = ContainersSeenByTheEngine(container("finished", "0", status="exited"))
    assert choose_gpus("auto", engine).held == "0"


def test_auto_ignores_containers_that_hold_no_gpu(two_gpus):
    engine = ContainersSeenByTheEngine(container("cpu-only", "none"))
    assert choose_gpus("auto", engine).held == "0"


def test_auto_ignores_containers_that_cudaenv_does_not_manage(two_gpus):
    engine = ContainersSeenByTheEngine(container("foreign", "0", managed=False))
    assert choose_gpus("auto", engine).held == "0"


def test_auto_with_a_count_takes_that_many_free_gpus(monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "H100;H100;H100")
    engine = ContainersSeenByTheEngine(container("project-a", "1"))
    choice = choose_gpus("auto:2", engine)
    assert choice.request == GpuRequest(device_ids=("0", "2"))
    assert choice.held == "0,2"


def test_auto_refuses_when_every_gpu_is_held_and_names_the_holders(two_gpus):
    engine = ContainersSeenByTheEngine(container("project-a", "0"), container("project-b", "1"))
    with pytest.raises(CudaenvError) as info:
        choose_gpus("auto", engine)
    assert info.value.exit_code == 1
    message = str(info.value)
    assert "project-a" in message and "project-b" in message
    assert "0 free of 2" in message


def test_auto_refuses_when_fewer_gpus_are_free_than_asked(two_gpus):
    engine = ContainersSeenByTheEngine(container("project-a", "1"))
    with pytest.raises(CudaenvError, match="2 free GPU"):
        choose_gpus("auto:2", engine)


def test_auto_refuses_while_a_container_holds_all_gpus(two_gpus):
    engine = ContainersSeenByTheEngine(container("greedy", "all"))
    with pytest.raises(CudaenvError) as info:
        choose_gpus("auto", engine)
    assert info.value.exit_code == 1
    assert "greedy" in str(info.value)
    assert "--gpus all" in str(info.value)


def test_auto_without_any_gpu_says_how_to_declare_them(monkeypatch):
    monkeypatch.delenv("CUDAENV_GPUS", raising=False)
    monkeypatch.setattr("cudaenv.hosts.detect.detect", lambda *a, **k: HostInfo(driver=None, source=None))
    with pytest.raises(CudaenvError) as info:
        choose_gpus("auto", ContainersSeenByTheEngine())
    assert "no GPU detected" in str(info.value)
    assert "CUDAENV_GPUS" in str(info.value)


def test_auto_does_not_hand_out_a_gpu_that_a_count_holder_has(monkeypatch):
    """Docker's NVIDIA device request with Count=N exposes GPUs 0..N-1; auto must not give those away."""
    monkeypatch.setenv("CUDAENV_GPUS", "A100,A100,A100")
    engine = ContainersSeenByTheEngine(container("counted", "count:2"))
    try:
        choice = choose_gpus("auto", engine)
    except CudaenvError:
        return  # refusing is as good as avoiding them
    assert choice.request.device_ids == ("2",)


def test_held_gpus_maps_each_gpu_to_its_holder():
    engine = ContainersSeenByTheEngine(container("a", "0,1"), container("b", "3"), container("c", "none"),
                                       container("d", "2", status="exited"))
    assert held_gpus(engine) == {"0": "a", "1": "a", "3": "b"}


# --- the GPU inventory ----------------------------------------------------------------------------


def test_inventory_has_one_index_per_declared_gpu(monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "A100, T4 ,RTX 3090")
    assert inventory() == [("0", None), ("1", None), ("2", None)]  # declared by name: no UUIDs


FAKE_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=*)
    printf '%s\\n' \\
      "0, NVIDIA A100-SXM4-80GB, 8.0, 81920, GPU-11111111-2222-3333-4444-555555555555, 550.54.15" \\
      "1, NVIDIA A100-SXM4-80GB, 8.0, 81920, GPU-66666666-7777-8888-9999-000000000000, 550.54.15" \\
      "2, NVIDIA A100-SXM4-80GB, 8.0, 81920, GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee, 550.54.15"
    ;;
  *)
    echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |"
    ;;
esac
"""


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """A host with three A100s, as nvidia-smi would describe it (NVML absent, as on such a host
    without nvidia-ml-py)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("CUDAENV_GPUS", raising=False)
    monkeypatch.setattr("cudaenv.hosts.detect.from_nvml", lambda: None)
    return smi


def test_inventory_comes_from_nvidia_smi_when_nothing_is_declared(fake_nvidia_smi):
    listed = inventory()
    assert [index for index, _ in listed] == ["0", "1", "2"]
    assert listed[0][1] == "GPU-11111111-2222-3333-4444-555555555555"


def test_declared_gpus_override_the_detected_ones(fake_nvidia_smi, monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "T4")
    assert inventory() == [("0", None)]


def test_auto_picks_from_the_gpus_nvidia_smi_reports(fake_nvidia_smi):
    engine = ContainersSeenByTheEngine(container("project-a", "0"), container("project-b", "1"))
    assert choose_gpus("auto", engine).request == GpuRequest(device_ids=("2",))


def test_auto_skips_a_gpu_held_by_its_uuid(fake_nvidia_smi):
    engine = ContainersSeenByTheEngine(container("by-uuid", "GPU-11111111-2222-3333-4444-555555555555"))
    assert choose_gpus("auto", engine).request == GpuRequest(device_ids=("1",))


# --- concurrent `--gpus auto` ---------------------------------------------------------------------


def test_allocation_lock_excludes_a_second_allocator_while_held(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    with allocation_lock():
        lock_file = tmp_path / "cache" / "gpu-allocation.lock"
        with open(lock_file, "w") as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(lock_file, "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on exit: free again
        fcntl.flock(other, fcntl.LOCK_UN)


# --- the host driver against the image's CUDA -------------------------------------------------------

CUDA_12_4 = {"cuda": "12.4", "min_driver": "550.54.14", "min_driver_compat": "525.60.13"}
CUDA_11_8 = {"cuda": "11.8", "min_driver": "520.61.05", "min_driver_compat": "450.80.02"}


def test_driver_too_old_for_the_images_cuda_is_refused_with_the_fix(matrix):
    problem = check_host_driver(matrix, CUDA_12_4, "470.82.01")
    assert problem is not None
    assert "470.82.01" in problem and "12.4" in problem
    assert "upgrade the driver" in problem


@pytest.mark.parametrize("driver", ["550.54.14", "560.35.03"])
def test_driver_at_or_above_the_native_minimum_runs_the_image(matrix, driver):
    assert check_host_driver(matrix, CUDA_12_4, driver) is None


def test_driver_in_the_minor_version_compatibility_range_runs_the_image(matrix):
    assert check_host_driver(matrix, CUDA_12_4, "535.104.05") is None


def test_driver_below_the_major_floor_is_refused(matrix):
    assert check_host_driver(matrix, CUDA_12_4, "520.61.05") is not None


def test_the_same_old_driver_runs_an_older_cuda_image(matrix):
    """470 is refused for CUDA 12.4 but runs CUDA 11.8 through minor-version compatibility."""
    assert check_host_driver(matrix, CUDA_11_8, "470.82.01") is None


CUDA_13_0_FORWARD = {"cuda": "13.0", "min_driver": "580.65.06", "min_driver_compat": "580",
                     "driver_compatibility": "forward"}


def test_a_forward_compatibility_image_runs_on_an_old_branch_only_with_data_center_gpus(matrix):
    """cuda-compat 13.0 supports R535 (NVIDIA's forward-compatibility matrix), on data-center GPUs only."""
    assert check_host_driver(matrix, CUDA_13_0_FORWARD, "535.104.05", datacenter=True) is None
    problem = check_host_driver(matrix, CUDA_13_0_FORWARD, "535.104.05", datacenter=False)
    assert problem is not None and "535.104.05" in problem and "13.0" in problem


def test_data_center_gpus_alone_do_not_make_an_image_forward_compatible(matrix):
    plain = {k: v for k, v in CUDA_13_0_FORWARD.items() if k != "driver_compatibility"}
    assert check_host_driver(matrix, plain, "535.104.05", datacenter=True) is not None


def test_unknown_driver_is_not_refused(matrix):
    """A build machine without a driver cannot judge; the runtime's own check still applies."""
    assert check_host_driver(matrix, CUDA_12_4, None) is None

