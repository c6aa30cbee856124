"""A compose file exported for two projects, brought up for real with Docker Compose v2 on the
stand-in images: both services run their project's command in their own image, with the project
mounted. A service that reserves GPUs fails on this GPU-less engine with Docker's own "could not
select device driver" error, which is what a user without the NVIDIA runtime would see."""

from __future__ import annotations

import os
import subprocess
import uuid
from functools import partial
from pathlib import Path

import pytest

from tests.support.cli import cudaenv as run_cli
from tests.unit.export.test_compose_export import compose_binary

pytestmark = [pytest.mark.docker, pytest.mark.registry]

RUN_ID = uuid.uuid4().hex[:6]


cudaenv = partial(run_cli, timeout=900)


def make_project(root: Path, name: str, registry: str, message: str) -> Path:
    root.mkdir()
    root.chmod(0o777)
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{registry}"\n\n'
        f'[run]\nulimits = {{ memlock = 8388608 }}\nenv = {{ MESSAGE = "{message}" }}\n'
        'command = ["sh", "-c", "echo \\"$MESSAGE from $(pwd) as $(id -u)\\" > ran.txt"]\n')
    return root


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory, standins, engine):
    standins.provide("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
    base = tmp_path_factory.mktemp("compose")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_UID="4321", CUDAENV_GID="4321")
    projects = [make_project(base / f"svc{i}", f"compose-{RUN_ID}-{i}", standins.host, f"hello {i} $HOME")
                for i in range(2)]
    for project in projects:
        built = cudaenv("build", project, env=env)
        assert built.returncode == 0, built.stderr[-2000:]
    yield base, projects, env
    for project in projects:
        for image in engine.client.images.list(name=f"cudaenv/{project.name}"):
            for tag in image.tags:
                engine.remove_image(tag, force=True)


def compose(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([compose_binary(), "-f", str(path), *args], capture_output=True, text=True, timeout=600,
                          cwd=path.parent)


def test_two_exported_services_run_for_real(two_projects):
    base, projects, env = two_projects
    out = base / "compose.yaml"
    exported = cudaenv("export", "compose", *projects, "--gpus", "none", "--name", f"cudaenv-{RUN_ID}", "-o", out,
                       env=env)
    assert exported.returncode == 0, exported.stderr
    assert compose(out, "config", "-q").returncode == 0
    try:
        up = compose(out, "up", "--no-color")
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        for i, project in enumerate(projects):  # each ran its own command, in its own mounted project, as the user
            assert (project / "ran.txt").read_text() == f"hello {i} $HOME from /workspace as 4321\n"
    finally:
        compose(out, "down", "--remove-orphans")


def test_a_gpu_service_without_the_nvidia_runtime_fails_with_dockers_own_error(two_projects):
    base, projects, env = two_projects
    out = base / "compose-gpu.yaml"
    exported = cudaenv("export", "compose", projects[0], "--gpus", "all", "--name", f"cudaenv-gpu-{RUN_ID}", "-o", out,
                       env=env)
    assert exported.returncode == 0, exported.stderr
    try:
        up = compose(out, "up", "--no-color")
        assert up.returncode != 0
        assert "could not select device driver" in up.stdout + up.stderr
    finally:
        compose(out, "down", "--remove-orphans")


def test_export_refuses_to_overwrite_without_force(two_projects):
    base, projects, env = two_projects
    out = base / "exists.yaml"
    out.write_text("keep me\n")
    proc = cudaenv("export", "compose", projects[0], "--gpus", "none", "-o", out, env=env)
    assert proc.returncode == 2 and out.read_text() == "keep me\n" and "--force" in proc.stderr
