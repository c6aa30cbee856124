"""`cudaenv top` and `cudaenv ps` attribute GPU processes to real running containers.

The containers are real (the shared Docker engine, the stand-in image); NVML is the recorded
stand-in (tests/support/fake_nvml.py, through CUDAENV_NVML_MODULE), told that the containers'
real host PIDs are using GPU memory. The mapping — /proc/PID/cgroup, the engine's labels — is the
code path a GPU host runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from cudaenv.run.containers import LABEL_DIR, LABEL_GPUS, LABEL_MANAGED, LABEL_PROJECT, LABEL_STACK
from cudaenv.engine import ContainerSpec
from tests.support.cli import CUDAENV, cudaenv as run_cli
from tests.support.nvml_recordings import fake_nvml_env, write_recording
from tests.support.terminal import Tmux

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
STACK = {"python": "3.11", "cuda": "12.6", "cudnn": "9.5.1.17", "frameworks": {"torch": "2.6.0"}}


def workload_pid(init_pid: int) -> int:
    """The container's command (``sleep``) under its init (docker-init, as ``cudaenv run`` uses):
    the process that would hold GPU memory."""
    children = Path(f"/proc/{init_pid}/task/{init_pid}/children")
    deadline = time.monotonic() + 30
    while not children.read_text().split():
        assert time.monotonic() < deadline, f"docker-init {init_pid} never started its command"
        time.sleep(0.1)
    return int(children.read_text().split()[0])


@pytest.fixture
def running(engine, standin_image, tmp_path):
    """A cudaenv-labelled container and an unlabelled one, both sleeping: (ids, host PIDs, project)."""
    tag = uuid.uuid4().hex[:6]
    project = f"toptest-{tag}"
    specs = {
        "cudaenv": ContainerSpec(image=standin_image, command=("sleep", "600"), name=f"cudaenv-{project}-a1b2c3",
                                 labels={LABEL_MANAGED: "true", LABEL_PROJECT: project, LABEL_DIR: str(tmp_path),
                                         LABEL_STACK: json.dumps(STACK), LABEL_GPUS: "0"}),
        "other": ContainerSpec(image=standin_image, command=("sleep", "600"), name=f"toptest-other-{tag}"),
    }
    ids = {}
    try:
        for key, spec in specs.items():
            ids[key] = engine.create(spec)
            engine.start(ids[key])
        pids = {key: workload_pid(engine.inspect(cid)["State"]["Pid"]) for key, cid in ids.items()}
        yield ids, pids, project
    finally:
        for cid in ids.values():
            engine.remove(cid)


def cudaenv(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_NVML")} | env
    return run_cli(*args, env=full, cwd=REPO, timeout=120)


def test_top_attributes_each_gpu_process_to_its_container_and_project(running, tmp_path):
    ids, pids, project = running
    me = os.getpid()
    recording = write_recording(tmp_path, "rtx3090-r525.json",
                                compute=[(pids["cudaenv"], 1500), (pids["other"], 300), (me, 100)])
    proc = cudaenv("top", "--once", "--json", env=fake_nvml_env(recording))
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(proc.stdout)["gpus"][0]["groups"]
    by_pid = {p["pid"]: g for g in groups for p in g["processes"]}

    mine = by_pid[pids["cudaenv"]]
    assert (mine["kind"], mine["project"], mine["name"], mine["id"]) == (
        "cudaenv", project, f"cudaenv-{project}-a1b2c3", ids["cudaenv"][:12])
    assert (mine["stack"], mine["runtime"], mine["used_memory_mib"]) == ("torch 2.6.0 | CUDA 12.6", "docker", 1500)
    assert mine["processes"][0]["command"] == "sleep"

    other = by_pid[pids["other"]]
    assert (other["kind"], other["id"], other["runtime"], other["used_memory_mib"]) == (
        "container", ids["other"][:12], "docker", 300)
    # the test process itself: not one of these containers (the host, or CI's own container)
    assert by_pid[me]["kind"] != "cudaenv" and by_pid[me]["id"] not in (ids["cudaenv"][:12], ids["other"][:12])


def test_ps_shows_gpu_memory_per_container_when_nvml_answers(running, tmp_path):
    ids, pids, project = running
    recording = write_recording(tmp_path, "rtx3090-r525.json", compute=[(pids["cudaenv"], 1500)])
    as_json = cudaenv("ps", "--json", env=fake_nvml_env(recording))
    assert as_json.returncode == 0, as_json.stderr
    (row,) = [r for r in json.loads(as_json.stdout)["containers"] if r["project"] == project]
    assert row["gpu_memory_mib"] == {"0": 1500}

    text = cudaenv("ps", env=fake_nvml_env(recording))
    header, *rows = text.stdout.splitlines()
    assert header.rstrip().endswith("GPU MEM")
    (line,) = [r for r in rows if project in r]
    assert line.rstrip().endswith("GPU 0: 1500 MiB")


def test_ps_without_nvml_has_no_gpu_column(running):
    if Path("/proc/driver/nvidia/version").exists():
        pytest.skip("this host has an NVIDIA driver")
    proc = cudaenv("ps", "--json", env={})
    (row,) = [r for r in json.loads(proc.stdout)["containers"] if r["project"] == running[2]]
    assert "gpu_memory_mib" not in row


def test_the_live_screen_names_the_project_and_stack(running, tmp_path):
    ids, pids, project = running
    recording = write_recording(tmp_path, "rtx3090-r525.json", compute=[(pids["cudaenv"], 1500)])
    session = Tmux([*CUDAENV, "top", "--interval", "0.5"],
                   {"PYTHONPATH": str(REPO), **fake_nvml_env(recording)}, width=120, height=20)
    try:
        screen = session.wait_for("q quits")
        assert f"    1500 MiB  cudaenv {project}  cudaenv-{project}-a1b2c3  torch 2.6.0 | CUDA 12.6" in screen
        assert f"    1500 MiB    pid {pids['cudaenv']:<8} sleep" in screen
        session.send("q")
        assert "exited 0" in session.wait_for("exited ")
    finally:
        session.close()
