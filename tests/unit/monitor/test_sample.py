"""Sampling and attribution on recorded NVML answers (tests/support/fake_nvml.py stands in for
nvidia-ml-py; no driver exists here) and real /proc/PID/cgroup texts placed under a proc tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaenv.engine import ContainerInfo
from cudaenv.hosts import nvml
from cudaenv.monitor.render import render
from cudaenv.monitor.sample import memory_by_container, take_sample, to_json
from tests.support.nvml_recordings import fake_nvml_env, write_recording

CGROUPS = Path(__file__).resolve().parents[2] / "fixtures" / "cgroup"
DOCKER_ID = "a26d607d1aff889c0307d662a9eac9677baac58757edbb100a0d61573d3a9b70"  # in v1-hybrid-docker-cgroupfs.txt
PODMAN_ID = "cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb"  # in v2-podman-crun.txt
STACK = json.dumps({"python": "3.11", "cuda": "12.6", "frameworks": {"torch": "2.6.0"}})


def proc_tree(root: Path, processes: dict[int, tuple[str, str]]) -> Path:
    """A /proc-shaped directory: pid -> (cgroup fixture, comm)."""
    for pid, (fixture, comm) in processes.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "cgroup").write_text((CGROUPS / fixture).read_text())
        (root / str(pid) / "comm").write_text(comm + "\n")
    return root


def cudaenv_container(container_id: str, name: str, project: str) -> ContainerInfo:
    return ContainerInfo(id=container_id, name=name, image=f"cudaenv/{project}:abc", status="running",
                         labels={"io.cudaenv.managed": "true", "io.cudaenv.project": project, "io.cudaenv.stack": STACK},
                         started_at="2026-11-24T00:00:00Z")


@pytest.fixture
def fake_nvml(monkeypatch, tmp_path):
    def use(fixture: str, **processes) -> None:
        for key, value in fake_nvml_env(write_recording(tmp_path, fixture, **processes)).items():
            monkeypatch.setenv(key, value)
    return use


def sample_of(proc: Path, containers=None):
    calls = []

    def lookup():
        calls.append(1)
        return containers or {}

    with nvml.session() as handle:
        return take_sample(handle, lookup, proc=proc), calls


def test_gpu_metrics_come_through_in_their_units(fake_nvml, tmp_path):
    fake_nvml("rtx3090-r525.json")
    sample, calls = sample_of(tmp_path)
    assert sample.driver == "525.147.05"
    gpu = sample.gpus[0].reading
    assert (gpu.name, gpu.utilization_percent, gpu.memory_used_mib, gpu.memory_total_mib) == (
        "NVIDIA GeForce RTX 3090", 0, 318, 24576)
    assert (gpu.power_watts, gpu.power_limit_watts, gpu.temperature_c) == (27.23, 200.0, 37)
    assert sample.gpus[0].groups == ()
    assert calls == []  # no process in a container: the engine is not asked


def test_processes_are_grouped_by_cudaenv_container_other_container_and_host(fake_nvml, tmp_path):
    fake_nvml("rtx3090-r525.json", compute=[(101, 1000), (102, 200), (201, 300), (301, 50)], graphics=[(302, None)])
    proc = proc_tree(tmp_path / "proc", {
        101: ("v1-hybrid-docker-cgroupfs.txt", "python"), 102: ("v1-hybrid-docker-cgroupfs.txt", "python"),
        201: ("v2-podman-crun.txt", "llama-server"), 301: ("v1-hybrid-host-process.txt", "jupyter"),
        302: ("v1-hybrid-host-process.txt", "Xorg")})
    sample, calls = sample_of(proc, {DOCKER_ID: cudaenv_container(DOCKER_ID, "cudaenv-detector-1a2b3c", "detector")})
    groups = sample.gpus[0].groups
    assert calls == [1]
    assert [g.owner.kind for g in groups] == ["cudaenv", "container", "host"]
    mine, other, host = groups
    assert (mine.owner.project, mine.owner.name, mine.owner.stack, mine.used_memory_mib) == (
        "detector", "cudaenv-detector-1a2b3c", "torch 2.6.0 | CUDA 12.6", 1200)
    assert [p.pid for p in mine.processes] == [101, 102]
    assert (other.owner.runtime, other.owner.id, other.used_memory_mib) == ("podman", PODMAN_ID[:12], 300)
    assert [(p.command, p.kind, p.used_memory_mib) for p in host.processes] == [
        ("jupyter", "compute", 50), ("Xorg", "graphics", None)]
    assert memory_by_container(sample) == {DOCKER_ID[:12]: {0: 1200}, PODMAN_ID[:12]: {0: 300}}


def test_an_unreachable_engine_still_gives_the_sample_with_a_note(fake_nvml, tmp_path):
    fake_nvml("rtx3090-r525.json", compute=[(101, 1000)])
    proc = proc_tree(tmp_path / "proc", {101: ("v1-hybrid-docker-cgroupfs.txt", "python")})

    def unreachable():
        from cudaenv.errors import EngineError
        raise EngineError("cannot reach the Docker engine (is the daemon running?)")

    with nvml.session() as handle:
        sample = take_sample(handle, unreachable, proc=proc)
    (group,) = sample.gpus[0].groups
    assert (group.owner.kind, group.owner.id, group.owner.runtime) == ("container", DOCKER_ID[:12], "docker")
    assert "container engine not reachable" in sample.notes[0]


def test_a_metric_the_board_does_not_report_is_null_not_a_failure(fake_nvml, tmp_path):
    fake_nvml("a100-sxm4-mig-r535.json")  # MIG mode: nvidia-smi printed utilization N/A
    sample, _ = sample_of(tmp_path)
    payload = to_json(sample)["gpus"][0]
    assert payload["utilization_percent"] is None and payload["memory_utilization_percent"] is None
    assert (payload["memory_used_mib"], payload["power_watts"], payload["temperature_c"]) == (921, 67.03, 27)
    assert "util [          ]  n/a" in "\n".join(render(sample))


def test_the_json_sample_has_groups_with_their_processes(fake_nvml, tmp_path):
    fake_nvml("rtx3090-r525.json", compute=[(101, 1000)])
    proc = proc_tree(tmp_path / "proc", {101: ("v1-hybrid-docker-cgroupfs.txt", "python")})
    sample, _ = sample_of(proc, {DOCKER_ID: cudaenv_container(DOCKER_ID, "cudaenv-detector-1a2b3c", "detector")})
    payload = json.loads(json.dumps(to_json(sample)))
    (group,) = payload["gpus"][0]["groups"]
    assert group["kind"] == "cudaenv" and group["project"] == "detector"
    assert group["processes"] == [{"pid": 101, "command": "python", "used_memory_mib": 1000, "kind": "compute"}]


def test_the_screen_shows_gpu_line_owners_and_processes(fake_nvml, tmp_path):
    fake_nvml("rtx3090-r525.json", compute=[(101, 1000), (301, 50)])
    proc = proc_tree(tmp_path / "proc", {101: ("v1-hybrid-docker-cgroupfs.txt", "python"),
                                         301: ("v1-hybrid-host-process.txt", "jupyter")})
    sample, _ = sample_of(proc, {DOCKER_ID: cudaenv_container(DOCKER_ID, "cudaenv-detector-1a2b3c", "detector")})
    lines = render(sample, width=80)
    assert "GPU 0  NVIDIA GeForce RTX 3090  temp 37 C  power 27 W / 200 W" in lines
    assert "    1000 MiB  cudaenv detector  cudaenv-detector-1a2b3c  torch 2.6.0 | CUDA 12.6" in lines
    assert "    1000 MiB    pid 101      python" in lines
    assert "      50 MiB  host (not in a container)" in lines
    assert all(len(line) <= 80 for line in lines)


def test_host_detection_reads_the_same_nvml_answers(fake_nvml):
    from cudaenv.hosts.detect import from_nvml

    fake_nvml("rtx3090-r525.json")
    info = from_nvml()
    assert (info.source, info.driver, info.cuda_driver_version) == ("nvml", "525.147.05", "12.0")
    assert [(g.name, g.compute_capability, g.memory_mib) for g in info.gpus] == [("NVIDIA GeForce RTX 3090", "8.6", 24576)]


def test_nvml_without_a_driver_is_one_clear_error(fake_nvml, tmp_path, monkeypatch):
    recording = tmp_path / "no-driver.json"
    recording.write_text(json.dumps({"init_error": "NVML_ERROR_DRIVER_NOT_LOADED"}))
    for key, value in fake_nvml_env(recording).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(nvml.NvmlUnavailable, match=r"NVML is not available on this host \(Driver Not Loaded\)"):
        with nvml.session():
            pass


def test_the_cheap_check_needs_a_loaded_driver(monkeypatch):
    monkeypatch.delenv(nvml.MODULE_HOOK, raising=False)
    assert nvml.probably_available() is Path("/proc/driver/nvidia/version").exists()
