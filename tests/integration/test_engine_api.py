"""The socket reader answers what the docker SDK answers (real engine, real containers)."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from cudaenv.engine import api
from cudaenv.engine.docker_engine import container_info

pytestmark = pytest.mark.docker


@pytest.fixture
def labelled(standin_image):
    """One running and one exited container carrying a label unique to this test."""
    label = f"io.cudaenv.test-api={uuid.uuid4().hex[:12]}"
    names = []
    for command in (["sleep", "300"], ["sh", "-c", "exit 3"]):
        name = f"cudaenv-test-api-{uuid.uuid4().hex[:8]}"
        subprocess.run(["docker", "run", "-d", "--name", name, "--label", label, "--label", "io.cudaenv.stack={}",
                        standin_image, *command], check=True, capture_output=True)
        names.append(name)
    subprocess.run(["docker", "wait", names[1]], check=True, capture_output=True)
    yield label, names
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True)


def test_listing_through_the_socket_equals_the_sdks(engine, labelled):
    label, names = labelled
    for running_only in (False, True):
        by_sdk = [container_info(c.attrs) for c in engine.client.containers.list(all=not running_only,
                                                                                   filters={"label": label})]
        by_socket = engine.containers(label, running_only=running_only)
        assert sorted(by_socket, key=lambda c: c.name) == sorted(by_sdk, key=lambda c: c.name)
        assert {c.name for c in by_socket} == ({names[0]} if running_only else set(names))
    exited = next(c for c in engine.containers(label) if c.name == names[1])
    assert (exited.status, exited.exit_code) == ("exited", 3)


def test_image_labels_through_the_socket_equal_the_sdks(engine, standin_image):
    found = api.image_inspect(standin_image)
    assert found is not None
    assert dict(found["Config"].get("Labels") or {}) == dict(engine.client.images.get(standin_image).labels or {})
    assert api.image_inspect(f"cudaenv-no-such-image-{uuid.uuid4().hex[:8]}:nope") is None


def test_ps_reads_containers_without_the_docker_sdk(labelled):
    code = ("import sys\nfrom cudaenv.entry import main\nsys.argv = ['cudaenv', 'ps', '--json', '--all']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
            "assert 'docker' not in sys.modules, 'the docker SDK imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("gpus", [None, "all", "ids"])
def test_a_container_created_through_the_socket_equals_one_the_sdk_creates(engine, standin_image, tmp_path, gpus):
    from cudaenv.engine import ContainerSpec, GpuRequest, Mount
    from cudaenv.engine.docker_engine import create_kwargs

    request = {None: None, "all": GpuRequest(count=-1), "ids": GpuRequest(device_ids=("0", "GPU-1234"))}[gpus]
    spec = ContainerSpec(gpus=request,
        image=standin_image, command=("sh", "-c", "true"), env={"A": "1", "B": "two words"},
        labels={"io.cudaenv.test-api": "create"}, mounts=(Mount(tmp_path, "/workspace", read_only=True),),
        working_dir="/workspace", user="1000:1000", shm_size="192m", ipc_mode="private",
        ulimits={"stack": (67108864, 67108864), "nofile": (1024, 2048)},
        ports={"8888/tcp": ("127.0.0.1", 18888), "9000/udp": None, "7000/tcp": 17000},
    )
    by_socket = engine.inspect(engine.create(spec))
    by_sdk = engine.client.containers.create(**create_kwargs(spec)).attrs
    try:
        for key in ("Image", "Cmd", "Env", "Labels", "WorkingDir", "User", "ExposedPorts", "Tty", "OpenStdin"):
            assert by_socket["Config"].get(key) == by_sdk["Config"].get(key), key
        for key in ("Init", "Mounts", "ShmSize", "IpcMode", "Ulimits", "PortBindings", "NetworkMode", "DeviceRequests"):
            assert by_socket["HostConfig"].get(key) == by_sdk["HostConfig"].get(key), key
    finally:
        for container_id in (by_socket["Id"], by_sdk["Id"]):
            engine.remove(container_id)


def test_run_does_not_load_the_docker_sdk(standin_image):
    """The whole foreground lifecycle (create, start, output, wait, remove) on the socket."""
    code = ("import sys\nfrom cudaenv.engine import ContainerSpec, get_engine\nfrom cudaenv.cli.run_cmd import _foreground\n"
            f"engine = get_engine()\ncid = engine.create(ContainerSpec(image={standin_image!r}, "
            "command=('sh', '-c', 'echo out; echo err >&2; printf last; exit 5')))\n"
            "code = _foreground(engine, cid)\nsys.stdout.flush()\n"
            "assert code == 5, code\nassert 'docker' not in sys.modules, 'docker SDK imported'\n"
            "import docker.errors\n"
            "try:\n    engine.client.containers.get(cid)\nexcept docker.errors.NotFound:\n    pass\n"
            "else:\n    raise AssertionError('container left behind')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["err", "last", "out"]  # both streams, the unterminated line too
