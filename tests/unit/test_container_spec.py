"""What a ContainerSpec becomes in the docker SDK's create() call (GPU paths are checked here,
since no GPU exists on the test machines)."""

from __future__ import annotations

from pathlib import Path

from cudaenv.engine import ContainerSpec, GpuRequest, Mount
from cudaenv.engine.docker_engine import create_kwargs


def test_all_gpus_become_an_nvidia_device_request_with_count_minus_one():
    kwargs = create_kwargs(ContainerSpec(image="x", gpus=GpuRequest(count=-1)))
    (request,) = kwargs["device_requests"]
    assert request["Driver"] == "nvidia"
    assert request["Count"] == -1
    assert request["Capabilities"] == [["gpu", "compute", "utility"]]


def test_device_ids_select_gpus_by_index_or_uuid():
    kwargs = create_kwargs(ContainerSpec(image="x", gpus=GpuRequest(device_ids=("0", "GPU-1234"))))
    (request,) = kwargs["device_requests"]
    assert request["DeviceIDs"] == ["0", "GPU-1234"]
    assert request["Count"] == 0  # Docker rejects a request with both a count and device IDs


def test_no_gpu_request_means_no_device_requests():
    assert "device_requests" not in create_kwargs(ContainerSpec(image="x"))


def test_mounts_ulimits_and_shm_reach_the_create_arguments(tmp_path: Path):
    spec = ContainerSpec(
        image="x", mounts=(Mount(tmp_path, "/workspace"),), shm_size="8g",
        ulimits={"memlock": (-1, -1), "stack": (67108864, 67108864)},
    )
    kwargs = create_kwargs(spec)
    assert kwargs["mounts"][0]["Target"] == "/workspace"
    assert kwargs["mounts"][0]["Source"] == str(tmp_path)
    assert kwargs["shm_size"] == "8g"
    assert {u["Name"]: (u["Soft"], u["Hard"]) for u in kwargs["ulimits"]} == {
        "memlock": (-1, -1), "stack": (67108864, 67108864),
    }
