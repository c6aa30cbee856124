"""`cudaenv top` as a command: exit codes, the one-line message without NVML, JSON Lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.nvml_recordings import fake_nvml_env, write_recording
from tests.support.cli import CUDAENV, cudaenv

REPO = Path(__file__).resolve().parents[3]


def env_with(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_NVML") and k != "CUDAENV_FAKE_NVML_RECORDING"}
    env.update(extra or {})
    return env


def top(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return cudaenv("top", *args, env=env_with(extra), cwd=REPO, timeout=60)


@pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(), reason="this host has an NVIDIA driver")
def test_a_host_without_a_driver_gets_one_line_and_exit_1():
    proc = top("--once")  # the real nvidia-ml-py, finding no libnvidia-ml.so.1
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cudaenv: error: NVML is not available on this host")


@pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(), reason="this host has an NVIDIA driver")
def test_json_without_a_driver_is_still_one_object():
    proc = top("--json")
    assert proc.returncode == 1
    (line,) = proc.stdout.splitlines()
    payload = json.loads(line)
    assert payload["ok"] is False and payload["error"]["code"] == "nvml-unavailable"
    assert "NVML is not available" in payload["error"]["message"]
    # the same object every command prints on failure, and the one line on stderr
    assert {"file", "field"} <= set(payload["error"]) and payload["exit_code"] == 1
    assert proc.stderr.startswith("cudaenv: error: NVML is not available") and proc.stderr.count("\n") == 1


def test_a_driver_that_is_not_loaded_reads_the_same(tmp_path: Path):
    recording = tmp_path / "no-driver.json"
    recording.write_text(json.dumps({"init_error": "NVML_ERROR_DRIVER_NOT_LOADED"}))
    proc = top("--once", extra=fake_nvml_env(recording))
    assert proc.returncode == 1
    assert "NVML is not available on this host (Driver Not Loaded)" in proc.stderr and "Traceback" not in proc.stderr


def test_a_bad_test_hook_path_is_one_line(tmp_path: Path):
    proc = top("--once", extra={"CUDAENV_NVML_MODULE": str(tmp_path / "missing.py")})
    assert proc.returncode == 1
    assert "CUDAENV_NVML_MODULE=" in proc.stderr and "Traceback" not in proc.stderr


def test_once_json_prints_exactly_one_object(tmp_path: Path):
    recording = write_recording(tmp_path, "rtx3090-r525.json", compute=[(os.getpid(), 700)])
    proc = top("--once", "--json", extra=fake_nvml_env(recording))
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    payload = json.loads(line)
    gpu = payload["gpus"][0]
    assert payload["ok"] is True and gpu["name"] == "NVIDIA GeForce RTX 3090"
    assert [p["pid"] for g in gpu["groups"] for p in g["processes"]] == [os.getpid()]


def test_json_streams_one_line_per_sample_until_interrupted(tmp_path: Path):
    recording = write_recording(tmp_path, "a100-sxm4-mig-r535.json")
    # SIGINT as a terminal delivers it, whatever this pytest inherited: a background job starts
    # with SIGINT ignored, and an ignored signal stays ignored across exec
    proc = subprocess.Popen([*CUDAENV, "top", "--json", "--interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env=env_with(fake_nvml_env(recording)),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        samples = [json.loads(proc.stdout.readline()) for _ in range(3)]
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert [s["gpus"][0]["name"] for s in samples] == ["NVIDIA A100-SXM4-80GB"] * 3
    assert proc.returncode == 0 and "Traceback" not in err


def test_interval_must_be_positive():
    proc = top("--interval", "0")
    assert proc.returncode == 2 and "--interval" in proc.stderr
