"""`cudaenv export slurm --runtime docker` for real: a project's image built from the stand-in base,
its sbatch script submitted to a one-node Slurm cluster (tests/support/slurm_cluster.py) with
``--gres=gpu:1`` over stand-in GPU devices, and the job's result file read back.

This engine has no GPU, so the job that must finish is exported with ``--docker-gpus none``; the
default (``allocated``) is submitted too and must hand the job's GPU to ``docker run --gpus``,
which this GPU-less engine then refuses — the same script a GPU node would run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from functools import partial
from pathlib import Path

import pytest
from tests.support.cli import cudaenv as run_cli
from tests.support.lockfile import lock_view

pytestmark = [pytest.mark.docker, pytest.mark.registry, pytest.mark.slurm]

RUN_ID = uuid.uuid4().hex[:8]
OVERRIDES = ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS",
             "CUDAENV_UID", "CUDAENV_GID")
WRITE_RESULT = ("import os, sys; open('slurm-result.txt', 'w').write("
                "'%s %d.%d %s %s' % (os.getcwd(), *sys.version_info[:2], os.environ['RESULT_TAG'], "
                "os.environ.get('NVIDIA_VISIBLE_DEVICES')))")


cudaenv = partial(run_cli, timeout=900)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    overlays = tmp_path_factory.mktemp("no-overlays")
    return dict({k: v for k, v in os.environ.items() if k not in OVERRIDES}, CUDAENV_MATRIX_PATH=str(overlays))


@pytest.fixture(scope="module")
def project(tmp_path_factory, engine, standins, env) -> Path:
    """A plain CUDA 12.4 runtime project (no requirements: it locks offline), built for real."""
    directory = tmp_path_factory.mktemp("slurm-project") / "project"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text("\n".join([
        "[project]", f'name = "slurmtest-{RUN_ID}"', 'python = "3.11"', "",
        "[cuda]", 'version = "12.4"', "",
        "[target]", 'driver = "550.54.15"', 'gpus = ["A100"]', "",
        "[build]", 'flavor = "runtime"', f'base_registry = "{standins.host}"', "",
        "[run]", 'gpus = "1"', 'shm_size = "256m"', 'env = { RESULT_TAG = "from-cudaenv-toml" }',
        "",  # no [run] ulimits: NVIDIA's default memlock=-1 is probed by the job (this engine refuses it)
    ]))
    locked = cudaenv("lock", directory, env=env)
    assert locked.returncode == 0, locked.stderr
    import tomllib

    standins.provide(lock_view(directory / "cudaenv.lock")["stack"]["base_image"])
    built = cudaenv("build", directory, "--network", "host", "--json", env=env)
    assert built.returncode == 0, built.stderr[-4000:]
    yield directory
    for tag in json.loads(built.stdout)["tags"]:
        engine.remove_image(tag, force=True)


def export(project: Path, env: dict[str, str], *args: str) -> Path:
    proc = cudaenv("export", "slurm", project, "--runtime", "docker", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    script = project / f"job-{uuid.uuid4().hex[:6]}.sbatch"
    script.write_text(proc.stdout)
    return script


def test_exported_docker_job_runs_the_image_on_the_cluster(slurm_cluster, project, env):
    script = export(project, env, "--docker-gpus", "none", "--job-name", f"cudaenv-{RUN_ID}", "--time", "10",
                    "--", "python", "-c", WRITE_RESULT)
    assert "#SBATCH --gres=gpu:1\n" in script.read_text()
    job = slurm_cluster.submit(script, cwd=project)
    state = slurm_cluster.wait_job(job)
    log = project / f"cudaenv-{RUN_ID}-{job}.out"
    assert state == "COMPLETED", f"job {job} ended {state}: {log.read_text() if log.exists() else 'no log'}"
    # the image's Python ran in the mounted project, with [run] env, and no GPU handed to Docker
    assert (project / "slurm-result.txt").read_text() == "/workspace 3.11 from-cudaenv-toml void"
    # this sandbox's daemon cannot grant an unlimited memlock: the job said so and ran with the daemon's limit
    assert "cannot grant ulimit memlock=-1:-1" in log.read_text()


def test_job_was_scheduled_on_a_gres_gpu(slurm_cluster, project, env):
    script = export(project, env, "--docker-gpus", "none", "--", "python", "-c", "print('ok')")
    job = slurm_cluster.submit(script, cwd=project)
    record = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True,
                            env=slurm_cluster.env).stdout
    assert re.search(r"TresPerNode=\S*gres:gpu:1", record), record
    assert slurm_cluster.wait_job(job) == "COMPLETED"


def test_allocated_gpus_reach_docker_run_by_index(slurm_cluster, project, env):
    """The default script passes SLURM_JOB_GPUS to `docker run --gpus`: on this GPU-less engine
    Docker refuses the GPU request, which shows the allocation reached it."""
    script = export(project, env, "--job-name", f"gpus-{RUN_ID}", "--", "python", "-c", "print('never')")
    job = slurm_cluster.submit(script, cwd=project)
    state = slurm_cluster.wait_job(job)
    log = (project / f"gpus-{RUN_ID}-{job}.out").read_text()
    assert state == "FAILED", log
    assert "capabilities: [[gpu]]" in log, log
    assert "never" not in log
