"""Rootless Docker (issue 36 §4): files a container writes in the mounted project belong to the caller.

A real rootless dockerd (the rootless test user's, under rootlesskit; tests/support/docker_rootless.py)
and cudaenv run by that user through runuser, with DOCKER_HOST at the daemon's socket. Under rootless
Docker the container's UID 0 is the user on the host and every other container UID a subordinate
one, so the caller's own UID:GID (what ``cudaenv run`` asks for) must run as the container's root;
a UID chosen on purpose is left alone and lands on its subordinate UID, which the last test shows.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import STANDIN_IMAGE
from tests.support import docker_rootless

pytestmark = pytest.mark.docker_rootless

# Run by the rootless user: a container as the caller (cudaenv's run_user, what `cudaenv run` asks
# for) through both ways cudaenv creates containers (the SDK's run, the socket's create + start +
# exec), each writing into the mounted project; prints what it saw as JSON.
AS_CALLER = """
import json, sys
from dataclasses import replace
from pathlib import Path

from cudaenv.engine import get_engine
from cudaenv.engine.values import ContainerSpec, Mount
from cudaenv.hosts.user import run_user

project, image = Path(sys.argv[1]), sys.argv[2]
engine = get_engine()
user, user_env = run_user()
spec = ContainerSpec(image=image, mounts=(Mount(project, "/workspace"),), working_dir="/workspace", user=user,
                     env={**user_env, "NVIDIA_VISIBLE_DEVICES": "void"},
                     command=("sh", "-c", "echo from-run > from-run.txt && mkdir made-by-run && id -u && id -g"))
ran = engine.run(spec, timeout=120)
container = engine.create(replace(spec, command=("sleep", "120")))
try:
    engine.start(container)
    executed = engine.exec(container, ["sh", "-c", "echo from-exec > from-exec.txt && id -u"])
finally:
    engine.remove(container)
print(json.dumps({"engine": engine.name, "reason": engine.choice.reason, "rootless": engine._rootless(),
                  "asked": user, "run": [ran.exit_code, ran.output], "exec": [executed.exit_code, executed.output]}))
"""

# Run by the rootless user: a container as a UID chosen on purpose, which cudaenv leaves alone.
AS_CHOSEN_UID = """
import sys
from pathlib import Path

from cudaenv.engine import get_engine
from cudaenv.engine.values import ContainerSpec, Mount

project, image, user = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
result = get_engine().run(ContainerSpec(image=image, mounts=(Mount(project, "/workspace"),), user=user,
                                        env={"NVIDIA_VISIBLE_DEVICES": "void"},
                                        command=("sh", "-c", "touch /workspace/chosen.txt && id -u")), timeout=120)
print(result.exit_code, result.output.strip())
"""


@pytest.fixture(scope="session")
def rootless_standin() -> str:
    """The stand-in base image in the rootless daemon's own store (copied there once)."""
    if not docker_rootless.has_image(STANDIN_IMAGE):
        docker_rootless.import_standin(STANDIN_IMAGE)
    return STANDIN_IMAGE


@pytest.fixture
def project_dir():
    """A directory the rootless user owns (pytest's own are root's, 0700): the mounted project."""
    directory = Path(tempfile.mkdtemp(prefix="cudaenv-rootless-docker-"))
    directory.chmod(0o755)
    os.chown(directory, *docker_rootless.user_ids())
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_files_written_in_the_project_belong_to_the_caller(rootless_standin, project_dir):
    uid, gid = docker_rootless.user_ids()
    proc = docker_rootless.cudaenv_as_user(str(project_dir), rootless_standin, python=AS_CALLER)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["engine"] == "docker" and "DOCKER_HOST" in seen["reason"]
    assert seen["rootless"] is True and seen["asked"] == f"{uid}:{gid}"
    assert seen["run"] == [0, "0\n0\n"]  # the caller's UID:GID ran as the container's root
    assert seen["exec"] == [0, "0\n"]  # and so does what `cudaenv exec` runs in it
    for name in ("from-run.txt", "made-by-run", "from-exec.txt"):
        written = (project_dir / name).stat()
        assert (written.st_uid, written.st_gid) == (uid, gid), name
    assert (project_dir / "from-exec.txt").read_text() == "from-exec\n"


def test_a_uid_chosen_on_purpose_is_a_subordinate_uid_on_the_host(rootless_standin, project_dir):
    """What the rewrite above avoids: any container UID but 0 is a subordinate one on the host."""
    shared = project_dir / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    proc = docker_rootless.cudaenv_as_user(str(shared), rootless_standin, "4242:4242", python=AS_CHOSEN_UID)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["0", "4242"]
    written = (shared / "chosen.txt").stat()
    assert (written.st_uid, written.st_gid) == (docker_rootless.subordinate_start("uid") + 4241,
                                                docker_rootless.subordinate_start("gid") + 4241)


def test_doctor_reports_the_rootless_docker_engine():
    cache = Path(tempfile.mkdtemp(prefix="cudaenv-rootless-doctor-"))
    os.chown(cache, *docker_rootless.user_ids())
    try:
        proc = docker_rootless.cudaenv_as_user("doctor", "--json", CUDAENV_CACHE_DIR=str(cache))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    payload = json.loads(proc.stdout)
    checks = {check["name"]: check for check in payload["checks"]}
    engine = checks["container engine"]
    assert engine["ok"] and engine["detail"].startswith("docker: automatic: DOCKER_HOST=")
    assert docker_rootless.docker_host() in engine["detail"]
    docker = checks["Docker engine"]
    assert docker["ok"] and docker["detail"].startswith("Docker ") and ", rootless: " in docker["detail"]
    assert payload["host"]["docker_host"] == docker_rootless.docker_host()
    assert proc.returncode == (0 if payload["ok"] else 1)


# Run by the rootless user: a build with a RUN step on a daemon without a bridge network.
BUILDS = """
import sys, tempfile
from pathlib import Path

from cudaenv.engine import get_engine
from cudaenv.engine.values import BuildRequest, ContainerSpec

context = Path(tempfile.mkdtemp())
(context / "Dockerfile").write_text(f"FROM {sys.argv[1]}\\nRUN echo built > /built.txt\\n")
engine = get_engine()
tag = "cudaenv-test/rootless-build:1"
result = engine.build(BuildRequest(context=context, tags=(tag,)))
ran = engine.run(ContainerSpec(image=tag, command=("cat", "/built.txt"), env={"NVIDIA_VISIBLE_DEVICES": "void"}),
                 timeout=120)
print(ran.output.strip())
engine.remove_image(tag, force=True)
"""


def test_a_build_runs_its_steps_on_a_rootless_daemon_without_a_bridge(rootless_standin):
    """This daemon runs with --bridge=none (user-mode networking is denied here): RUN steps need the
    host's network, which the engine then asks for, instead of failing "network bridge not found"."""
    proc = docker_rootless.cudaenv_as_user(rootless_standin, python=BUILDS)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] == "built"
