"""`cudaenv export devcontainer`, brought up for real by the Dev Containers reference CLI
(@devcontainers/cli, `devcontainer up`) against the test engine, on a project built from the
stand-in images. The CLI's read-configuration accepts broken files, so the fields cudaenv writes
are checked here too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.integration.test_compose_up import cudaenv, make_project

pytestmark = [pytest.mark.docker, pytest.mark.registry]

REPO = Path(__file__).resolve().parents[2]


def devcontainer_cli() -> str:
    found = shutil.which("devcontainer", path=str(REPO / ".test-tools" / "devcontainers" / "node_modules" / ".bin")) \
        or shutil.which("devcontainer")
    if not found:
        pytest.fail("the Dev Containers CLI is missing: scripts/test.sh installs @devcontainers/cli (needs Node >= 20)")
    return found


@pytest.fixture(scope="module")
def built_project(tmp_path_factory, standins, engine):
    standins.provide("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_UID="4321", CUDAENV_GID="4321")
    name = f"devc-{uuid.uuid4().hex[:6]}"
    project = make_project(tmp_path_factory.mktemp("devc") / "proj", name, standins.host, "from devcontainer")
    built = cudaenv("build", project, env=env)
    assert built.returncode == 0, built.stderr[-2000:]
    yield project, env, name
    for image in engine.client.images.list(name=f"cudaenv/{name}"):
        for tag in image.tags:
            engine.remove_image(tag, force=True)


def test_the_generated_devcontainer_comes_up_and_runs_in_the_project(built_project, engine):
    project, env, name = built_project
    exported = cudaenv("export", "devcontainer", project, "--gpus", "none", env=env)
    assert exported.returncode == 0, exported.stderr
    config = json.loads((project / ".devcontainer" / "devcontainer.json").read_text())
    assert config["image"].startswith(f"cudaenv/{name}:") and config["workspaceFolder"] == "/workspace"
    assert config["containerUser"] == "4321:4321" and "--shm-size" in config["runArgs"]
    assert config["customizations"]["vscode"]["settings"]["python.defaultInterpreterPath"] == "/opt/venv/bin/python"
    assert "hostRequirements" not in config and "--gpus" not in config["runArgs"]  # --gpus none
    cli = devcontainer_cli()
    up = subprocess.run([cli, "up", "--workspace-folder", str(project)], capture_output=True, text=True, timeout=600)
    result = json.loads(up.stdout.strip().splitlines()[-1])
    try:
        assert up.returncode == 0 and result["outcome"] == "success", up.stderr[-2000:]
        ran = subprocess.run([cli, "exec", "--workspace-folder", str(project), "sh", "-c",
                              "pwd; id -u; echo $NVIDIA_VISIBLE_DEVICES; /opt/venv/bin/python -c 'import sys; print(sys.prefix)'"],
                             capture_output=True, text=True, timeout=120)
        assert ran.stdout.split() == ["/workspace", "4321", "void", "/opt/venv"], ran.stdout + ran.stderr
    finally:
        if result.get("containerId"):
            engine.client.containers.get(result["containerId"]).remove(force=True)


def test_a_gpu_devcontainer_asks_for_gpus_the_spec_way(built_project):
    project, env, name = built_project
    proc = cudaenv("export", "devcontainer", project, "--gpus", "0,1", "--stdout", env=env)
    config = json.loads(proc.stdout)
    assert config["hostRequirements"] == {"gpu": True}
    assert config["runArgs"][:2] == ["--gpus", '"device=0,1"'] and "NVIDIA_VISIBLE_DEVICES" not in config["containerEnv"]


def test_an_existing_devcontainer_is_never_overwritten_without_force(built_project):
    project, env, name = built_project
    path = project / ".devcontainer" / "devcontainer.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"name": "mine"}\n')
    proc = cudaenv("export", "devcontainer", project, env=env)
    assert proc.returncode == 2 and "--force" in proc.stderr and path.read_text() == '{"name": "mine"}\n'
    assert cudaenv("export", "devcontainer", project, "--force", env=env).returncode == 0
    assert json.loads(path.read_text())["name"] == name
