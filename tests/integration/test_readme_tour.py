"""The README's tour, driven as a user types it, on the suite's stand-ins: init, build, run (after
`--`), a detached run, ps and stop, in the project directory. Where this machine differs from a
user's, the test does what such a user would: requirements and the framework come from a mirror
(the loopback index, CUDAENV_PYTHON_INDEX / CUDAENV_FRAMEWORK_INDEX), base images from a mirror
registry ([build] base_registry), and the build uses --network host to reach that loopback index."""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

from tests.integration.test_init_lock import publish
from tests.support.cli import cudaenv as run_cli

pytestmark = [pytest.mark.docker, pytest.mark.registry, pytest.mark.network]


def test_the_tour_runs_as_written(tmp_path, package_index, standins, engine):
    index = publish(package_index)
    project = tmp_path / f"tour-{uuid.uuid4().hex[:6]}"
    project.mkdir()
    (project / "requirements.txt").write_text("torch>=2.4,<2.6\n")  # the releases the loopback index serves
    (project / ".python-version").write_text("3.11\n")  # the stand-in base image's Python
    (project / "train.py").write_text("import torch\nprint('training with torch', torch.__version__)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_")) or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_PYTHON_INDEX=index.url, CUDAENV_FRAMEWORK_INDEX=index.url, CUDAENV_MATRIX_PATH="",
               UV_CACHE_DIR=str(tmp_path / "uv-cache"))

    def cudaenv(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
        return run_cli(*args, cwd=project, env=env, timeout=timeout)

    init = cudaenv("init", "--driver", "550.54.15", "--gpu", "A100")
    assert init.returncode == 0, init.stdout + init.stderr
    assert "wrote" in init.stdout and "next: cudaenv build" in init.stdout
    config = project / "cudaenv.toml"
    config.write_text(config.read_text().replace("[build]\n", f'[build]\nbase_registry = "{standins.host}"\n', 1))
    lock = cudaenv("lock")
    assert lock.returncode == 0, lock.stderr
    from cudaenv.project.lock import read_lock

    standins.provide(read_lock(project / "cudaenv.lock").stack["base_image"])
    name = project.name
    try:
        build = cudaenv("build", "--network", "host")
        assert build.returncode == 0, build.stderr[-3000:]
        images = json.loads(cudaenv("images", "--json").stdout)  # the tour's next line
        [stack] = [s for s in images["stacks"] if any(p["project"] == name for p in s["projects"])]
        assert stack["bytes"] > 0 and stack["base"].startswith("cudaenv-base:")
        run = cudaenv("run", "--gpus", "none", "--", "python", "train.py")  # the tour's own form
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.startswith("training with torch 2.")
        detached = cudaenv("run", "--detach", "--gpus", "none", "--", "sleep", "300")
        assert detached.returncode == 0, detached.stderr
        listed = json.loads(cudaenv("ps", "--json").stdout)
        assert detached.stdout.strip() in [c["name"] for c in listed["containers"]]
        stopped = cudaenv("stop")
        assert stopped.returncode == 0, stopped.stderr
        listed = json.loads(cudaenv("ps", "--json").stdout)
        assert detached.stdout.strip() not in [c["name"] for c in listed["containers"]]
    finally:
        for image in engine.client.images.list(name=f"cudaenv/{name}"):
            for tag in image.tags:
                engine.remove_image(tag, force=True)
