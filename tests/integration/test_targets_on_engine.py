"""Several targets on the real engine and registry: `build`, `run`, `shell` and `images` serve the
target this host runs or the one --target names; a CPU target's image has no CUDA in it.

The package index on loopback plays PyTorch's indexes: torch 2.9.1+cpu (the CPU index's build, no
dependencies) and 2.9.1+cu130 (a CUDA build), as a mirror of both would serve them. This machine
has no GPU, so "this host" is either itself (no GPU: the CPU target) or declared through
CUDAENV_DRIVER_VERSION / CUDAENV_GPUS, as the rest of the suite declares GPU hosts.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.support.cli import CUDAENV
from tests.support.lockfile import lock_view
from tests.support.package_index import serve_index
from tests.integration.test_run_containers import cli_env, run_in_a_terminal
from tests.support.cli import cudaenv as run_cli

pytestmark = [pytest.mark.docker, pytest.mark.registry]

NAME = f"targets-{uuid.uuid4().hex[:6]}"
PRINT_TORCH = "import torch, os; print('torch', torch.__version__, 'cuda', torch.version.cuda)"


def cli(*args, timeout: float = 1200, **env):
    return run_cli(*args, env=cli_env(**env), timeout=timeout)


@pytest.fixture(scope="module")
def project(tmp_path_factory, standins, engine):
    """A CPU laptop and an A100 on 580.65.06, locked against the loopback index, with every base
    the two stacks start FROM served by the local registry."""
    served, stop = serve_index(tmp_path_factory.mktemp("targets-index"))
    served.add("torch", "2.9.1+cpu", files={"torch/__init__.py": 'from . import version\n__version__ = "2.9.1+cpu"\n',
                                            "torch/version.py": "cuda = None\n"})
    served.add("torch", "2.9.1+cu130", files={"torch/__init__.py": 'from . import version\n__version__ = "2.9.1+cu130"\n',
                                              "torch/version.py": 'cuda = "13.0"\n'})
    served.add("fixture-leaf", "2.0.1")
    root = tmp_path_factory.mktemp("targets") / "project"
    root.mkdir()
    (root / "requirements.txt").write_text("fixture-leaf==2.0.1\n")
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "{NAME}"\npython = "3.11"\nrequirements = ["requirements.txt"]\n\n'
        '[frameworks]\ntorch = "==2.9.1"\n\n[targets.laptop]\ngpus = "none"\n\n'
        '[targets.a100]\ndriver = "580.65.06"\ngpus = ["A100"]\n\n'
        f'[build]\nbase_registry = "{standins.host}"\n\n[run]\ncommand = ["python", "-c", "{PRINT_TORCH}"]\n')
    env = {"CUDAENV_PYTHON_INDEX": served.url, "CUDAENV_FRAMEWORK_INDEX": served.url}
    locked = cli("lock", root, **env)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    for target in ("laptop", "a100"):
        standins.provide(lock_view(root / "cudaenv.lock", target)["stack"]["base_image"])
    yield root, env
    for tag in (f"cudaenv/{NAME}:latest-laptop", f"cudaenv/{NAME}:latest-a100"):
        engine.remove_image(tag, force=True)
    stop()


def labels_of(engine, tag: str) -> dict:
    labels = engine.image_labels(tag)
    assert labels is not None, f"no image {tag}"
    return labels


def test_the_lock_holds_a_cpu_build_for_the_laptop_and_a_cuda_build_for_the_a100(project):
    root, _ = project
    assert "torch==2.9.1+cpu" in lock_view(root / "cudaenv.lock", "laptop")["requirements"]["pinned"]
    assert "torch==2.9.1+cu130" in lock_view(root / "cudaenv.lock", "a100")["requirements"]["pinned"]


def test_build_on_a_host_without_a_gpu_makes_the_laptops_image_without_cuda(project, engine):
    root, env = project
    proc = cli("build", root, "--network", "host", "--json", **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["target"] == "laptop" and result["stack"]["device"] == "cpu"
    assert "target laptop: the one this host (no NVIDIA driver, no GPU" in proc.stderr
    tag = f"cudaenv/{NAME}:latest-laptop"
    assert tag in result["tags"]
    labels = labels_of(engine, tag)
    assert labels["io.cudaenv.target"] == "laptop" and labels["io.cudaenv.cuda"] == "none"
    info = engine.client.images.get(tag).attrs["Config"]
    assert not [e for e in info["Env"] if e.startswith("NVIDIA_")]  # the NVIDIA runtime is asked for nothing
    from cudaenv.engine import ContainerSpec

    look = engine.run(ContainerSpec(image=tag, init=False, command=(
        "bash", "-c", "python -c \"import torch; print(torch.__version__)\"; ls /usr/local/cuda 2>&1; "
                      "uv pip list --python /opt/venv/bin/python 2>/dev/null | grep -ci '^nvidia-' || true")), timeout=120)
    lines = look.output.split()
    assert look.exit_code == 0 and lines[0] == "2.9.1+cpu", look.output
    assert "No such file or directory" in look.output and lines[-1] == "0"  # no CUDA toolkit, no nvidia-* wheel


def test_run_and_shell_serve_the_same_target_and_take_another_by_name(project, engine):
    root, env = project
    ran = cli("run", root, **env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == "torch 2.9.1+cpu cuda None"
    named = cli("run", root, "--target", "laptop", "--gpus", "all", "--", "python", "-c", PRINT_TORCH, **env)
    assert named.returncode == 0 and named.stdout.strip().splitlines()[-1] == "torch 2.9.1+cpu cuda None"
    assert "CPU only; it runs without GPUs" in named.stderr  # --gpus all asks nothing of a CPU image
    code, shown = run_in_a_terminal([*CUDAENV, "shell", str(root), "--target", "laptop"],
                                    b"python -c 'import torch; print(torch.__version__)'; exit 4\r", cli_env(**env))
    assert code == 4 and b"2.9.1+cpu" in shown


def test_build_on_a_host_no_target_fits_says_why_for_each_and_builds_nothing(project, engine):
    root, env = project
    before = {i.id for i in engine.images(f"io.cudaenv.project={NAME}")}
    proc = cli("build", root, "--json", CUDAENV_DRIVER_VERSION="470.57.02", CUDAENV_GPUS="A100", **env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["ok"] is False and "no target fits this host (driver 470.57.02, A100" in error["error"]["message"]
    assert "laptop: a CPU target, and this host has a GPU" in error["error"]["message"]
    assert "a100: driver 470.57.02 runs CUDA" in error["error"]["message"]
    assert {i.id for i in engine.images(f"io.cudaenv.project={NAME}")} == before


def test_build_on_an_a100_host_makes_the_a100_image_and_images_shows_both_targets(project, engine):
    root, env = project
    proc = cli("build", root, "--network", "host", "--json", CUDAENV_DRIVER_VERSION="580.65.06", CUDAENV_GPUS="A100",
               **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["target"] == "a100"
    tag = f"cudaenv/{NAME}:latest-a100"
    labels = labels_of(engine, tag)
    assert labels["io.cudaenv.target"] == "a100" and labels["io.cudaenv.cuda"] == "13.0"
    env_vars = engine.client.images.get(tag).attrs["Config"]["Env"]
    assert any(e.startswith("NVIDIA_REQUIRE_CUDA=cuda>=13.0") for e in env_vars)
    listing = cli("images", "--json")
    assert listing.returncode == 0, listing.stderr
    report = json.loads(listing.stdout)
    uses = [p for s in report["stacks"] for p in s["projects"]] + report["unattached"]
    assert {(u["project"], u["target"]) for u in uses if u["project"] == NAME} == {(NAME, "laptop"), (NAME, "a100")}
    shown = cli("images").stdout
    assert f"{NAME}:laptop" in shown and f"{NAME}:a100" in shown
