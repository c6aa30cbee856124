"""The GPU-optional dev container (issue #37 §4) brought up for real by the Dev Containers reference
CLI (@devcontainers/cli) on this GPU-less engine: the file cudaenv writes for a project with a CPU
laptop and an A100 target comes up here, with no GPU requested of Docker; the same file makes the
CLI ask for every GPU where it believes the NVIDIA runtime is (``--gpu-availability all``), which
this engine refuses with Docker's own error, so the GPUs are the tool's to add and not missing; and
the file a GPU-only project gets (``--gpus all`` in runArgs) fails here, which is why the optional
file carries no GPU flag (devcontainers/spec#469, loft-sh/devpod#1197).

cudaenv builds the A100 target's image where its build serves a named target; here the stand-in
Debian + python3 image is tagged with the name the file opens, since what is under test is how the
container is started, not what is in the image.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.integration.test_devcontainer_up import devcontainer_cli
from tests.support.cli import cudaenv
from tests.support.targets import THREE_TARGETS, lock_offline

pytestmark = [pytest.mark.docker]

RUN = '\n[run]\ncommand = ["python3", "-c", "print(1)"]\ngpus = "all"\nshm_size = "256m"\nulimits = { memlock = 8388608 }\n'


def env() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    environ.update(CUDAENV_MATRIX_PATH="", CUDAENV_UID="4321", CUDAENV_GID="4321")
    return environ


def exported(root: Path, *args: str) -> dict:
    proc = cudaenv("export", "devcontainer", root, *args, env=env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / ".devcontainer" / "devcontainer.json").read_text())


def up(cli: str, root: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run([cli, "up", "--workspace-folder", str(root), *args], capture_output=True, text=True,
                          timeout=600)
    lines = proc.stdout.strip().splitlines()
    return proc, json.loads(lines[-1]) if lines else {}


@pytest.fixture
def tagged(engine, standin_image):
    """Tag the stand-in under the names the exported files open; removed afterwards, with the
    containers the CLI started for the project folders."""
    tags, folders = [], []

    def tag(image: str, folder: Path) -> None:
        engine.client.images.get(standin_image).tag(image)
        tags.append(image)
        folders.append(folder)

    yield tag
    for folder in folders:
        for container in engine.client.containers.list(all=True, filters={"label": f"devcontainer.local_folder={folder}"}):
            container.remove(force=True)
    for image in tags:
        engine.remove_image(image, force=True)


def project(tmp_path: Path, text: str) -> Path:
    root = tmp_path / f"devc-{uuid.uuid4().hex[:6]}"
    lock_offline(root, text.replace('name = "demo"', f'name = "{root.name}"'))
    root.chmod(0o777)
    return root


def test_the_gpu_optional_file_comes_up_without_a_gpu(tmp_path, engine, tagged):
    root = project(tmp_path, THREE_TARGETS.split("[targets.h100]")[0] + RUN)
    config = exported(root)
    assert config["hostRequirements"] == {"gpu": "optional"} and "--gpus" not in config["runArgs"]
    tagged(config["image"], root)
    cli = devcontainer_cli()
    proc, result = up(cli, root)
    assert proc.returncode == 0 and result.get("outcome") == "success", proc.stdout[-2000:] + proc.stderr[-2000:]
    container = engine.client.containers.get(result["containerId"])
    assert not container.attrs["HostConfig"].get("DeviceRequests")  # no GPU asked of Docker
    assert container.attrs["HostConfig"]["ShmSize"] == 256 * 1024**2  # the [run] flags still reach docker run
    ran = subprocess.run([cli, "exec", "--workspace-folder", str(root), "sh", "-c", "pwd; id -u"],
                         capture_output=True, text=True, timeout=120)
    assert ran.stdout.split() == ["/workspace", "4321"], ran.stdout + ran.stderr
    assert "No GPU support found yet a GPU was required" not in proc.stdout + proc.stderr


def test_where_the_tool_finds_the_nvidia_runtime_it_adds_the_gpus_itself(tmp_path, tagged):
    """``--gpu-availability all`` is how the CLI behaves on a host whose `docker info` shows the
    NVIDIA runtime: it adds `--gpus all`, which this GPU-less engine refuses."""
    root = project(tmp_path, THREE_TARGETS.split("[targets.h100]")[0] + RUN)
    config = exported(root)
    tagged(config["image"], root)
    proc, result = up(devcontainer_cli(), root, "--gpu-availability", "all")
    assert proc.returncode != 0 and result.get("outcome") == "error"
    assert "could not select device driver" in proc.stdout + proc.stderr


def test_a_file_with_gpus_in_run_args_fails_on_a_host_without_the_runtime(tmp_path, tagged):
    """The file a project of GPU targets only gets (unchanged): a GPU is required, so here it fails."""
    root = project(tmp_path, THREE_TARGETS.replace('[targets.laptop]\ngpus = "none"\n', "") + RUN)
    config = exported(root, "--target", "a100")
    assert config["hostRequirements"] == {"gpu": True} and config["runArgs"][:2] == ["--gpus", "all"]
    tagged(config["image"], root)
    proc, result = up(devcontainer_cli(), root)
    assert proc.returncode != 0 and result.get("outcome") == "error"
    assert "could not select device driver" in proc.stdout + proc.stderr
