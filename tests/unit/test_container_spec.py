"""What a ContainerSpec becomes in the docker SDK's create() call (GPU paths are checked here,
since no GPU exists on the test machines)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_cdi_device_names_become_a_cdi_device_request_in_the_sdk_and_the_socket_body():
    from cudaenv.engine.api import container_body

    spec = ContainerSpec(image="x", gpus=GpuRequest(count=1, cdi_devices=("nvidia.com/gpu=0",)))
    (request,) = create_kwargs(spec)["device_requests"]
    assert (request["Driver"], request["DeviceIDs"], request["Count"]) == ("cdi", ["nvidia.com/gpu=0"], 0)
    assert container_body(spec)["HostConfig"]["DeviceRequests"] == [dict(request)]


def daemon_with_cdi(tmp_path: Path, info_dirs):
    from cudaenv.engine.docker_engine import DockerEngine

    spec_dir = tmp_path / "cdi"
    spec_dir.mkdir()
    (spec_dir / "nvidia.yaml").write_text(
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n" + "".join(f"- name: '{n}'\n  containerEdits: {{env: [A=1]}}\n" for n in ("0", "1", "all")))
    engine = DockerEngine()
    info = {"ID": "test", "CDISpecDirs": [str(spec_dir)] if info_dirs else []}
    engine._daemon_facts = lambda: info  # the daemon's answer, as Docker 25+ with and without CDI gives it
    return engine


def test_a_daemon_with_cdi_and_nvidia_specs_gets_the_gpus_by_cdi_name(tmp_path: Path):
    engine = daemon_with_cdi(tmp_path, info_dirs=True)
    routed = engine._with_gpu_route(ContainerSpec(image="x", gpus=GpuRequest(device_ids=("1",))))
    assert routed.gpus.cdi_devices == ("nvidia.com/gpu=1",)
    routed = engine._with_gpu_route(ContainerSpec(image="x", gpus=GpuRequest(count=-1)))
    assert routed.gpus.cdi_devices == ("nvidia.com/gpu=all",)


def test_a_daemon_without_cdi_keeps_the_legacy_nvidia_request(tmp_path: Path):
    engine = daemon_with_cdi(tmp_path, info_dirs=False)
    spec = ContainerSpec(image="x", gpus=GpuRequest(count=-1))
    assert engine._with_gpu_route(spec) is spec


def test_a_container_without_gpus_never_asks_the_daemon_about_cdi():
    from cudaenv.engine.docker_engine import DockerEngine

    engine = DockerEngine()
    engine._daemon_facts = lambda: pytest.fail("asked the daemon")
    spec = ContainerSpec(image="x")
    assert engine._with_gpu_route(spec) is spec


@pytest.mark.parametrize("options, expected", [
    (["name=seccomp,profile=default", "name=rootless", "name=cgroupns"], "0:0"),
    (["name=seccomp,profile=default"], None),
    ([], None),
], ids=["rootless", "rootful", "none"])
def test_under_rootless_docker_the_callers_uid_runs_as_the_containers_root(options, expected):
    """Rootless Docker maps the container's root to the daemon's user and every other UID to a
    subordinate one: the caller's UID:GID becomes 0:0 there, so files in /workspace stay theirs."""
    import os

    from cudaenv.engine.docker_engine import DockerEngine

    engine = DockerEngine()
    engine._daemon_facts = lambda: {"SecurityOptions": options}
    caller = f"{os.getuid()}:{os.getgid()}"
    assert engine._with_rootless_user(ContainerSpec(image="x", user=caller)).user == (expected or caller)
    assert engine._with_rootless_user(ContainerSpec(image="x", user="4242:4242")).user == "4242:4242"  # chosen on purpose
    assert engine._with_rootless_user(ContainerSpec(image="x")).user is None
