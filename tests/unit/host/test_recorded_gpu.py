"""cudaenv held against what a real H100 on driver 580.159.04 said (bench/gpu_check.py, 2026-11-26).

The oracle in each test is another of the driver's own answers from the same run: nvidia-smi and
/proc are read by cudaenv's parsers and must agree with NVML; NVML replayed through the stand-in
must give what cudaenv printed on the real machine; the matrix rows must agree with what the
installed torch and JAX wheels reported about themselves. See the recording's SOURCES.md.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from cudaenv.hosts.detect import QUERY_FIELDS, _CUDA_VERSION, DetectedGpu, from_kernel, from_nvml, parse_proc_version, parse_smi_csv
from cudaenv.matrix import load_matrix
from cudaenv.hosts import nvml
from cudaenv.monitor.sample import take_sample, to_json
from tests.support.cli import cudaenv, without_target_overrides
from tests.support.nvml_recordings import fake_nvml_env

RECORDING = Path(__file__).resolve().parents[2] / "fixtures" / "gpu-recorded" / "h100-r580"


def recorded(name: str):
    text = (RECORDING / name).read_text()
    return json.loads(text) if name.endswith(".json") else text


NVML_IDLE = recorded("nvml-idle.json")
NVML_BUSY = recorded("nvml-busy.json")


def nvml_cuda(encoded: int) -> str:
    """NVML encodes CUDA 13.0 as 13000."""
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def nvml_gpus(recording: dict) -> tuple[DetectedGpu, ...]:
    return tuple(DetectedGpu(index=i, name=g["name"], compute_capability="{}.{}".format(*g["cuda_compute_capability"]),
                             memory_mib=g["memory"]["total"] // (1024 * 1024), uuid=g["uuid"])
                 for i, g in enumerate(recording["gpus"]))


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


@pytest.fixture
def replay(monkeypatch):
    def use(name: str) -> None:
        for key, value in fake_nvml_env(RECORDING / name).items():
            monkeypatch.setenv(key, value)
    return use


# --- detection: the driver's three voices agree as cudaenv reads them ------------------------------


def test_the_recorded_nvidia_smi_query_reads_as_nvml_reported():
    driver, gpus = parse_smi_csv(recorded("smi-query.csv"), QUERY_FIELDS)
    assert driver == NVML_IDLE["driver_version"]
    assert gpus == nvml_gpus(NVML_IDLE)


def test_the_recorded_nvidia_smi_header_names_the_cuda_nvml_reports():
    assert _CUDA_VERSION.search(recorded("smi-header.txt")).group(1) == nvml_cuda(NVML_IDLE["cuda_driver_version"])


def test_the_recorded_proc_file_reads_as_the_nvml_driver_on_the_open_module():
    assert parse_proc_version(recorded("proc-version.txt")) == (NVML_IDLE["driver_version"], "open")


def test_the_recorded_sysfs_file_reads_as_the_nvml_driver(tmp_path):
    target = tmp_path / "sys" / "module" / "nvidia" / "version"
    target.parent.mkdir(parents=True)
    shutil.copyfile(RECORDING / "sys-module-version.txt", target)
    assert from_kernel(tmp_path).driver == NVML_IDLE["driver_version"]


def test_nvml_replayed_gives_the_host_cudaenv_printed_on_the_real_machine(replay):
    replay("nvml-idle.json")
    info = from_nvml()
    printed = recorded("cudaenv-doctor.json")["json"]["host"]

    assert (info.driver, info.source, info.cuda_driver_version) == (
        printed["driver"], printed["source"], printed["cuda_driver_version"])
    assert [vars(g) for g in info.gpus] == printed["gpus"]
    assert info.gpus == nvml_gpus(NVML_IDLE)


def test_resolve_on_replayed_nvml_describes_the_host_as_it_did_on_the_real_machine(tmp_path):
    env = {**without_target_overrides(), **fake_nvml_env(RECORDING / "nvml-idle.json")}
    proc = cudaenv("resolve", "--json", "--torch", "2.9.0", cwd=tmp_path, env=env, timeout=120)
    printed = recorded("cudaenv-resolve.json")["json"]

    # the recording predates the host's "arch" (issue 35): a detected host is this machine's CPU
    from cudaenv.hosts.target import machine_arch

    assert json.loads(proc.stdout)["host"] == {**printed["host"], "arch": machine_arch()}


# --- top: the workload is seen -----------------------------------------------------------------------


def test_top_on_the_replayed_workload_shows_its_pid_load_power_and_temperature(replay, tmp_path):
    replay("nvml-busy.json")
    with nvml.session() as handle:
        sample = take_sample(handle, None, proc=tmp_path)  # no /proc entry: the PID is a host process
    (gpu,) = to_json(sample)["gpus"]
    real = NVML_BUSY["gpus"][0]
    workload = recorded("workload.json")["pid"]

    assert gpu["utilization_percent"] == real["utilization"]["gpu"] > 0
    assert gpu["memory_used_mib"] == real["memory"]["used"] // (1024 * 1024) > 0
    assert gpu["power_watts"] == real["power_usage_mw"] / 1000
    assert gpu["temperature_c"] == real["temperature_c"]
    assert [p["pid"] for group in gpu["groups"] for p in group["processes"]] == [workload]


def test_top_on_the_real_machine_printed_what_the_replay_prints(replay, tmp_path):
    replay("nvml-busy.json")
    with nvml.session() as handle:
        replayed = to_json(take_sample(handle, None, proc=tmp_path))
    printed = recorded("cudaenv-top.json")["json"]
    keys = ("index", "name", "uuid", "memory_total_mib", "power_limit_watts")
    # utilization, memory and power were read a moment apart on the machine: only the fixed fields compare
    assert [{k: g[k] for k in keys} for g in replayed["gpus"]] == [{k: g[k] for k in keys} for g in printed["gpus"]]
    assert printed["driver"] == replayed["driver"]
    listed = [p["pid"] for g in printed["gpus"] for group in g["groups"] for p in group["processes"]]
    assert recorded("workload.json")["pid"] in listed


# --- the matrix against what the wheels and the driver said --------------------------------------------


def arch_entries(kind: str) -> list[str]:
    """``sm_90`` entries (kind "sm") or ``compute_90`` (PTX) as x.y compute capabilities."""
    return [f"{e.split('_')[1][:-1]}.{e.split('_')[1][-1]}" for e in recorded("torch.json")["arch_list"]
            if e.startswith(kind + "_")]


def test_the_torch_builds_matrix_row_lists_the_architectures_the_wheel_was_built_for(matrix):
    torch = recorded("torch.json")
    release = next(r for r in matrix.torch if r.version == torch["version"].split("+")[0])
    variant = next(v for v in release.variants if v.cuda == torch["cuda"])

    assert list(variant.compute_capabilities) == arch_entries("sm")
    assert list(variant.ptx) == arch_entries("compute")


def test_the_torch_builds_matrix_cudnn_is_the_one_the_wheel_loaded(matrix):
    torch = recorded("torch.json")
    release = next(r for r in matrix.torch if r.version == torch["version"].split("+")[0])
    variant = next(v for v in release.variants if v.cuda == torch["cuda"])
    loaded = torch["cudnn"]  # 91900 for 9.19.0

    assert variant.cudnn.split(".")[:2] == [str(loaded // 10000), str((loaded % 10000) // 100)]


def test_the_jax_release_row_names_the_installed_jaxlib(matrix):
    jax = recorded("jax.json")
    assert next(r for r in matrix.jax if r.version == jax["version"]).jaxlib == jax["jaxlib"]


@pytest.mark.parametrize("extra", ["cuda13", "cuda13-local"])
def test_the_jax_cuda13_variants_need_the_cudnn_minor_the_plugin_was_built_with(matrix, extra):
    jax = recorded("jax.json")
    built = jax["cuda_versions"]["cudnn_build_version"]  # 91200: XLA refuses a runtime of a lower minor
    release = next(r for r in matrix.jax if r.version == jax["version"])
    variant = next(v for v in release.variants if v.extra == extra)
    floor = Version(f"{built // 10000}.{(built % 10000) // 100}")

    assert variant.cudnn.contains(str(floor))
    assert not variant.cudnn.contains(f"{floor.major}.{floor.minor - 1}.99")


def test_the_driver_branch_row_tops_out_at_the_cuda_the_driver_reports(matrix):
    branch = matrix.driver_branch(int(NVML_IDLE["driver_version"].split(".")[0]))
    assert branch.max_cuda == nvml_cuda(NVML_IDLE["cuda_driver_version"])


def test_the_gpu_name_nvml_prints_is_in_the_matrix_with_its_compute_capability(matrix):
    for gpu in NVML_IDLE["gpus"]:
        row = matrix.find_gpu(gpu["name"])
        assert row is not None, gpu["name"]
        assert row.compute_capability == "{}.{}".format(*gpu["cuda_compute_capability"])
        assert row.architecture in matrix.driver_branch(int(NVML_IDLE["driver_version"].split(".")[0])).architectures
