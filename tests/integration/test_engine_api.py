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


def test_ps_reads_containers_without_the_docker_sdk_or_click(labelled):
    code = ("import sys\nfrom cudaenv.entry import main\nsys.argv = ['cudaenv', 'ps', '--json', '--all']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
            "assert 'docker' not in sys.modules and 'click' not in sys.modules, 'SDK or click imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
