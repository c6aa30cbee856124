"""`cudaenv export slurm --target NAME --runtime docker` for a project of several targets, submitted
to the real one-node Slurm cluster (tests/support/slurm_cluster.py: two stand-in GPUs as GRES): the
CPU-only target's job asks Slurm for no GPU, so it runs while another job holds every GPU, and
hands its container none; the A100 target's job asks Slurm for its GPUs.

cudaenv builds a target's image where its build serves a named target; the jobs here run the
stand-in Debian + python3 image (``--image``), since what is under test is what the script asks of
Slurm and Docker.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import cudaenv
from tests.support.targets import THREE_TARGETS, lock_offline

pytestmark = [pytest.mark.docker, pytest.mark.slurm]

RUN_ID = uuid.uuid4().hex[:8]
WRITE_RESULT = ("import os; open('result-%s.txt' % os.environ['WHICH'], 'w').write("
                "'%s %s' % (os.getcwd(), os.environ.get('NVIDIA_VISIBLE_DEVICES')))")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("slurm-targets") / "demo"
    lock_offline(root, THREE_TARGETS + '\n[run]\nshm_size = "64m"\nulimits = { memlock = 8388608 }\n')
    root.chmod(0o777)
    return root


def env() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    environ["CUDAENV_MATRIX_PATH"] = ""
    return environ


def show_job(cluster, job: str) -> str:
    return subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, env=cluster.env).stdout


def state_of(cluster, job: str) -> tuple[str, str]:
    record = show_job(cluster, job)
    return re.search(r"JobState=(\S+)", record).group(1), re.search(r"Reason=(\S+)", record).group(1)


def wait_for(cluster, job: str, wanted: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while state_of(cluster, job)[0] != wanted:
        assert time.monotonic() < deadline, f"job {job} never {wanted}: {show_job(cluster, job)}"
        time.sleep(0.5)


def submit(cluster, project: Path, image: str, target: str, *args: str, command: str = WRITE_RESULT) -> tuple[str, str]:
    proc = cudaenv("export", "slurm", project, "--target", target, "--runtime", "docker", "--image", image,
                   "--job-name", f"{target}-{RUN_ID}", "--time", "10", "-e", f"WHICH={target}", *args,
                   "--", "python3", "-c", command, env=env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    script = project / f"{target}-{uuid.uuid4().hex[:6]}.sbatch"
    script.write_text(proc.stdout)
    job = cluster.submit(script, cwd=project)
    return job, show_job(cluster, job)


def test_a_cpu_targets_job_runs_while_a_gpu_job_holds_every_gpu(slurm_cluster, project, standin_image):
    """The node's two GPUs are held by an A100 job: the laptop's job asks for none, runs beside it and
    hands its container no GPU, while a job that asks for a GPU waits for them (Reason=Resources)."""
    holder, _ = submit(slurm_cluster, project, standin_image, "a100", "--gpus", "2", "--docker-gpus", "none",
                       command="import time; time.sleep(60)")
    waiting = None
    try:
        wait_for(slurm_cluster, holder, "RUNNING")
        job, record = submit(slurm_cluster, project, standin_image, "laptop")
        assert not re.search(r"gres[:/]gpu", record), record
        state = slurm_cluster.wait_job(job)
        log = project / f"laptop-{RUN_ID}-{job}.out"
        assert state == "COMPLETED", f"job {job} ended {state}: {log.read_text() if log.exists() else 'no log'}"
        assert (project / "result-laptop.txt").read_text() == "/workspace void"
        assert state_of(slurm_cluster, holder)[0] == "RUNNING"
        # the GPUs really are held: a job that asks for one waits for them
        waiting, _ = submit(slurm_cluster, project, standin_image, "h100", "--gpus", "1", "--docker-gpus", "none")
        deadline = time.monotonic() + 30
        while state_of(slurm_cluster, waiting) != ("PENDING", "Resources") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert state_of(slurm_cluster, waiting) == ("PENDING", "Resources"), show_job(slurm_cluster, waiting)
        assert state_of(slurm_cluster, holder)[0] == "RUNNING"
    finally:
        jobs = [j for j in (holder, waiting) if j]
        subprocess.run(["scancel", *jobs], env=slurm_cluster.env, check=False)
        for j in jobs:
            slurm_cluster.wait_job(j)


def test_a_gpu_targets_job_asks_slurm_for_its_gpus(slurm_cluster, project, standin_image):
    """This engine has no GPU: the job hands none to Docker (--docker-gpus none), so it completes."""
    job, record = submit(slurm_cluster, project, standin_image, "a100", "--gpus", "2", "--docker-gpus", "none")
    assert re.search(r"TresPerNode=\S*gres[:/]gpu:2", record), record
    assert slurm_cluster.wait_job(job) == "COMPLETED"
    assert (project / "result-a100.txt").read_text() == "/workspace void"
