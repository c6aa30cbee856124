"""What a ContainerSpec becomes on Podman's command line (`podman create ...`): the rules that make
rootless files the caller's, GPUs CDI devices, and paths reach the container as themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.engine import ContainerSpec, GpuRequest, Mount
from cudaenv.engine.podman_engine import cdi_device_names, create_argv, mount_argv, network_for
from cudaenv.errors import EngineError


def test_a_foreground_run_is_created_with_rm_and_a_kept_one_without():
    assert create_argv(ContainerSpec(image="img"), rootless=False, remove=True)[:2] == ["create", "--rm"]
    assert "--rm" not in create_argv(ContainerSpec(image="img"), rootless=False)


def test_rootless_keeps_the_callers_uid_and_uses_the_hosts_network():
    argv = create_argv(ContainerSpec(image="img"), rootless=True, network=network_for(True, {}))
    assert "--userns=keep-id" in argv
    assert argv[argv.index("--network") + 1] == "host"
    assert "--userns=keep-id" not in create_argv(ContainerSpec(image="img"), rootless=False)
    assert network_for(False, {}) is None
    assert network_for(True, {"CUDAENV_PODMAN_NETWORK": "slirp4netns"}) == "slirp4netns"


def test_gpus_are_cdi_devices_and_the_command_follows_the_image_after_a_double_dash():
    spec = ContainerSpec(image="img", command=("--privileged", "x"),
                         gpus=GpuRequest(count=1, cdi_devices=("nvidia.com/gpu=0",)))
    argv = create_argv(spec, rootless=False)
    assert argv[argv.index("--device") + 1] == "nvidia.com/gpu=0"
    assert argv[-4:] == ["--", "img", "--privileged", "x"]
    assert argv.count("--privileged") == 1  # only as the container's own argument


@pytest.mark.parametrize("request_, names", [
    (GpuRequest(count=-1), ["nvidia.com/gpu=all"]),
    (GpuRequest(count=2), ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]),
    (GpuRequest(device_ids=("1",)), ["nvidia.com/gpu=1"]),
    (GpuRequest(count=1, cdi_devices=("nvidia.com/gpu=GPU-ab",)), ["nvidia.com/gpu=GPU-ab"]),
], ids=["all", "count", "ids", "chosen"])
def test_cdi_names_default_to_nvidia_ctks(request_, names):
    assert cdi_device_names(request_) == names


def test_a_path_with_a_comma_goes_through_volume_so_it_cannot_add_mount_options(tmp_path: Path):
    tricky = tmp_path / "a,readonly=false,target=/etc"
    assert mount_argv(Mount(tricky, "/workspace")) == ["--volume", f"{tricky}:/workspace:rw"]
    assert mount_argv(Mount(tricky, "/workspace", read_only=True)) == ["--volume", f"{tricky}:/workspace:ro"]


def test_a_path_with_a_colon_goes_through_mount(tmp_path: Path):
    colon = tmp_path / "a:b"
    assert mount_argv(Mount(colon, "/workspace")) == ["--mount", f"type=bind,source={colon},target=/workspace"]
    assert mount_argv(Mount(colon, "/workspace", True))[1].endswith(",ro=true")


def test_a_path_with_both_is_refused_naming_it(tmp_path: Path):
    with pytest.raises(EngineError, match=r"holds both ',' and ':'"):
        mount_argv(Mount(tmp_path / "a,b:c", "/workspace"))


@pytest.mark.parametrize(("text", "missing"), [
    ("Error: cudaenv/x:1: image not known", True),
    ('Error: short-name "x:none" did not resolve to an alias and no unqualified-search registries are defined', True),
    ("Error: no such image: x", True),
    ("Error: repository name must be lowercase", True),
    ("Error: crun: setrlimit `RLIMIT_MEMLOCK`: Operation not permitted: OCI permission denied", False),
    ("Error: unresolvable CDI devices nvidia.com/gpu=0", False),
], ids=["not-known", "short-name", "no-such", "bad-name", "rlimit", "cdi"])
def test_podmans_ways_of_saying_an_image_is_not_here(text, missing):
    from cudaenv.engine.podman_engine import image_missing

    assert image_missing(text) is missing
