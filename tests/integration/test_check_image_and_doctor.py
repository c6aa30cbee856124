"""`cudaenv check --image` on an image the suite builds with `cudaenv build`, and `cudaenv doctor`
on this machine (no NVIDIA driver, no NVIDIA container runtime) and with a stand-in nvidia-smi
printing recorded outputs of real drivers.

The image is a plain CUDA runtime project built once per module from the stand-in base served by
the local registry; its io.cudaenv.* labels are what `check --image` reads.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
import uuid
from functools import partial
from pathlib import Path

import pytest

from cudaenv.run.doctor import CDI_DIRS, TOOLKIT_BINARIES
from cudaenv.engine import BuildRequest
from tests.support.cli import cudaenv as run_cli
from tests.unit.host import RECORDED_HOSTS, cli_env, hide_nvml, install_fake_nvidia_smi
from tests.support.lockfile import lock_view

FLEET = ("550.54.15", "535.104.05", "470.82.01")  # native, minor-version, too old for CUDA 12.4


def project_config(registry_host: str) -> str:
    return f"""\
[project]
name = "check-image"
python = "3.11"

[cuda]
version = "12.4"

[target]
driver = "550.54.15"
gpus = ["A100"]

[build]
flavor = "runtime"
base_registry = "{registry_host}"
"""


cudaenv = partial(run_cli, timeout=120)


def one_json_object(proc: subprocess.CompletedProcess) -> dict:
    payload = json.loads(proc.stdout)
    assert isinstance(payload, dict)
    return payload


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("cudaenv: error: ")
    return line


def fleet_args(drivers) -> list[str]:
    return [arg for driver in drivers for arg in ("--driver", driver)]


@pytest.fixture(scope="module")
def no_nvml(tmp_path_factory) -> Path:
    return hide_nvml(tmp_path_factory.mktemp("no-nvml"))


@pytest.fixture(scope="module")
def env(no_nvml) -> dict:
    return cli_env(no_nvml)


# --- check --image -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory, standins, engine, env):
    """(project dir, its lock, image tag): a CUDA 12.4 runtime project built by `cudaenv build`."""
    project = tmp_path_factory.mktemp("check-image") / "check-image"
    project.mkdir()
    (project / "cudaenv.toml").write_text(project_config(standins.host))
    (project / "main.py").write_text("print('hello from the image')\n")
    proc = cudaenv("lock", project, env=env)
    assert proc.returncode == 0, proc.stderr
    locked = lock_view(project / "cudaenv.lock")
    standins.provide(locked["stack"]["base_image"])

    tag = f"cudaenv-test/check-image-{uuid.uuid4().hex[:12]}:1"
    proc = cudaenv("build", project, "--network", "host", "-t", tag, "--json", env=env, timeout=900)
    tags = set(json.loads(proc.stdout).get("tags", [])) if proc.returncode == 0 else set()
    try:
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield project, locked, tag
    finally:
        for name in tags | {tag}:
            engine.remove_image(name, force=True)


@pytest.fixture
def labelled_image(engine, standin_image, tmp_path):
    """labelled_image(labels) -> tag of a FROM-only image on the stand-in carrying those labels."""
    made = []

    def build(labels: dict[str, str]) -> str:
        tag = f"cudaenv-test/labelled-{uuid.uuid4().hex[:12]}:1"
        engine.build(BuildRequest(context=tmp_path, tags=(tag,), dockerfile_text=f"FROM {standin_image}\n",
                                  labels=labels))
        made.append(tag)
        return tag

    yield build
    for tag in made:
        engine.remove_image(tag, force=True)


@pytest.mark.docker
@pytest.mark.registry
def test_built_image_carries_the_locked_stack_in_its_labels(built, engine):
    _, locked, tag = built
    labels = engine.image_labels(tag)
    stack = json.loads(labels["io.cudaenv.stack"])
    assert (stack["cuda"], stack["python"], stack["min_driver"]) == (
        locked["stack"]["cuda"], locked["stack"]["python"], locked["stack"]["min_driver"])


@pytest.mark.docker
@pytest.mark.registry
def test_check_image_reads_the_stack_from_the_image(built, env):
    _, locked, tag = built
    proc = cudaenv("check", "--image", tag, "--driver", "550.54.15", "--gpu", "A100", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert proc.returncode == 0, proc.stderr
    assert result["source"] == f"image {tag}"
    assert result["stack"]["cuda"] == locked["stack"]["cuda"]
    assert result["stack"]["base_image"] == locked["stack"]["base_image"]
    assert result["mode"] == "native"


@pytest.mark.docker
@pytest.mark.registry
def test_check_image_gives_the_same_verdicts_as_the_lock_it_was_built_from(built, env):
    project, _, tag = built
    args = (*fleet_args(FLEET), "--gpu", "A100", "--no-detect", "--json")
    from_image = one_json_object(cudaenv("check", "--image", tag, *args, env=env))
    from_lock = one_json_object(cudaenv("check", project, *args, env=env))

    def verdicts(payload):
        return [{k: v for k, v in r.items() if k != "source"} for r in payload["results"]]

    assert verdicts(from_image) == verdicts(from_lock)
    assert [r["mode"] for r in from_image["results"]] == ["native", "minor-version", None]


@pytest.mark.docker
@pytest.mark.registry
def test_check_image_on_a_too_old_driver_exits_1_with_the_reason(built, env):
    _, _, tag = built
    proc = cudaenv("check", "--image", tag, "--driver", "470.82.01", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert proc.returncode == 1
    assert any("driver 470.82.01" in reason for reason in result["reasons"])


@pytest.mark.docker
@pytest.mark.registry
def test_check_image_annotations_have_no_file(built, env):
    _, _, tag = built
    proc = cudaenv("check", "--image", tag, "--driver", "470.82.01", "--format", "github", env=env)
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]

    assert errors and all(line.startswith("::error title=cudaenv check::driver 470.82.01") for line in errors)


@pytest.mark.docker
@pytest.mark.registry
def test_check_image_and_a_directory_together_are_bad_usage(built, env):
    project, _, tag = built
    proc = cudaenv("check", project, "--image", tag, "--driver", "550.54.15", env=env)
    assert proc.returncode == 2
    assert "one stack source" in one_error_line(proc)


@pytest.mark.docker
def test_check_image_that_does_not_exist_exits_2_with_one_line(env):
    missing = f"cudaenv-test/never-built-{uuid.uuid4().hex[:12]}:1"
    proc = cudaenv("check", "--image", missing, "--driver", "550.54.15", "--json", env=env)

    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]  # --json: the one error object, even here
    assert error["code"] == "bad-input" and error["file"] is None and "no such image" in error["message"]
    line = one_error_line(proc)
    assert missing in line and "no such image" in line


@pytest.mark.docker
def test_check_image_not_built_by_cudaenv_exits_2_with_one_line(standin_image, env):
    proc = cudaenv("check", "--image", standin_image, "--driver", "550.54.15", "--json", env=env)

    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "bad-input"
    assert "not built by cudaenv (no io.cudaenv.stack label)" in one_error_line(proc)


@pytest.mark.docker
@pytest.mark.parametrize("label", ["not json", "{}"], ids=["not-json", "empty-object"])
def test_check_image_with_an_unreadable_stack_label_exits_2_with_one_line(labelled_image, env, label):
    tag = labelled_image({"io.cudaenv.stack": label})
    proc = cudaenv("check", "--image", tag, "--driver", "550.54.15", env=env)

    assert proc.returncode == 2
    one_error_line(proc)


@pytest.mark.docker
def test_check_image_with_an_invalid_reference_exits_2_with_one_line(env):
    proc = cudaenv("check", "--image", "Not/A:Valid:Reference", "--driver", "550.54.15", env=env)

    assert proc.returncode == 2
    one_error_line(proc)


# --- doctor --------------------------------------------------------------------------------------


def has_nvidia_driver() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or Path("/sys/module/nvidia/version").exists()


def has_nvidia_runtime() -> bool:
    if any(shutil.which(b) for b in TOOLKIT_BINARIES) or any(d.is_dir() and any(d.iterdir()) for d in CDI_DIRS):
        return True
    if shutil.which("docker") is None:
        return False
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and "nvidia" in proc.stdout


def check_named(payload: dict, name: str) -> dict:
    (check,) = [c for c in payload["checks"] if c["name"] == name]
    return check


@pytest.fixture(scope="module")
def doctor_here(env):
    proc = cudaenv("doctor", "--json", env=env)
    return proc, one_json_object(proc)


@pytest.fixture
def doctor_with(tmp_path, no_nvml):
    """doctor_with(recorded host, overlay=None, **stand-in options) -> (process, JSON), with a stand-in
    nvidia-smi first on PATH and optionally a matrix overlay directory."""

    def run(host: str, overlay: Path | None = None, **kwargs):
        fake = install_fake_nvidia_smi(tmp_path / "smi", **{**RECORDED_HOSTS.get(host, {}), **kwargs})
        proc = cudaenv("doctor", "--json", env=cli_env(no_nvml, smi=fake, overlay=overlay))
        return proc, one_json_object(proc)

    return run


def r535_overlay(directory: Path, eol: str) -> Path:
    """A matrix overlay replacing the R535 branch row with one whose end of life is ``eol``."""
    directory.mkdir()
    (directory / "drivers.toml").write_text(f"""\
[[branch]]
branch = 535
type = "LTSB"
max_cuda = "12.2"
architectures = ["maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper"]
eol = "{eol}"
source = "test fixture ; read 2026-11-21"
""")
    return directory


def test_doctor_json_is_one_object_with_ok_checks_and_host(doctor_here):
    _, payload = doctor_here
    assert set(payload) == {"ok", "checks", "host"}
    assert payload["checks"] and all(set(c) == {"name", "ok", "detail", "fix"} for c in payload["checks"])
    assert {"driver", "source", "gpus", "docker_host"} <= set(payload["host"])


def test_doctor_ok_and_exit_status_follow_the_checks(doctor_here):
    proc, payload = doctor_here
    assert payload["ok"] is (proc.returncode == 0)
    assert payload["ok"] is all(c["ok"] for c in payload["checks"])


@pytest.mark.skipif(has_nvidia_driver(), reason="this machine has an NVIDIA driver")
def test_doctor_reports_the_missing_driver_with_a_fix(doctor_here):
    proc, payload = doctor_here
    check = check_named(payload, "NVIDIA driver")

    assert proc.returncode == 1
    assert check["ok"] is False
    assert "no NVIDIA driver found" in check["detail"]
    assert "CUDAENV_DRIVER_VERSION" in check["fix"] and "[target]" in check["fix"]  # what a build-only host declares
    assert "--driver" not in check["fix"]  # doctor has no such option: never suggest one
    assert (payload["host"]["driver"], payload["host"]["gpus"]) == (None, [])


@pytest.mark.docker
@pytest.mark.skipif(has_nvidia_driver(), reason="this machine has an NVIDIA driver")
def test_a_build_only_host_with_a_declared_target_is_healthy(env):
    proc = cudaenv("doctor", "--json", env=dict(env, CUDAENV_DRIVER_VERSION="550.54.15"))
    payload = one_json_object(proc)
    driver, runtime = check_named(payload, "NVIDIA driver"), check_named(payload, "NVIDIA container runtime")
    assert driver["ok"] and "build-only host" in driver["detail"] and "CUDAENV_DRIVER_VERSION" in driver["detail"]
    assert runtime["ok"] and "not needed" in runtime["detail"]
    assert proc.returncode == (0 if all(c["ok"] for c in payload["checks"]) else 1)
    assert all(c["ok"] for c in payload["checks"] if c["name"] in ("Docker engine", "BuildKit")) is (proc.returncode == 0)


@pytest.mark.skipif(has_nvidia_runtime(), reason="this machine has an NVIDIA container runtime")
def test_doctor_reports_the_missing_container_runtime_with_the_toolkit_fix(doctor_here):
    _, payload = doctor_here
    check = check_named(payload, "NVIDIA container runtime")

    assert check["ok"] is False
    assert "NVIDIA Container Toolkit" in check["fix"]
    assert "nvidia-ctk runtime configure" in check["fix"]


@pytest.mark.docker
def test_doctor_reports_the_docker_engine_it_reaches(doctor_here, engine):
    _, payload = doctor_here
    check = check_named(payload, "Docker engine")
    assert check["ok"] is True
    assert engine.client.version()["Version"] in check["detail"]


@pytest.mark.skipif(has_nvidia_driver(), reason="this machine has an NVIDIA driver")
def test_doctor_text_gives_a_fix_under_each_failed_check(env):
    proc = cudaenv("doctor", env=env)
    lines = proc.stdout.splitlines()
    failed = [i for i, line in enumerate(lines) if line.startswith("✗ ")]

    assert failed
    assert all(lines[i + 1].startswith("    → ") for i in failed)


def test_doctor_reports_the_driver_and_gpu_nvidia_smi_shows(doctor_with):
    _, payload = doctor_with("r580-h100")
    host = payload["host"]

    assert (host["driver"], host["source"], host["cuda_driver_version"]) == ("580.159.04", "nvidia-smi", "13.0")
    assert host["gpus"] == [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                             "memory_mib": 81559, "uuid": "GPU-4fada327-7bd1-c7ab-1946-201922c931dc"}]


def test_doctor_driver_check_passes_and_names_its_source(doctor_with):
    _, payload = doctor_with("r580-h100")
    check = check_named(payload, "NVIDIA driver")
    assert check["ok"] is True
    assert check["detail"].startswith("580.159.04 (via nvidia-smi")


def test_doctor_derives_the_highest_cuda_from_the_matrix(doctor_with):
    _, payload = doctor_with("r580-h100")
    assert payload["host"]["max_cuda_native"] == "13.0"  # 13.1 needs R590
    check = check_named(payload, "CUDA supported")
    assert check["ok"] is True
    assert check["detail"].startswith("CUDA <= 13.0 natively and <= 13.")  # 13.x through minor-version compatibility
    assert check["detail"].endswith("; the driver reports CUDA 13.0")


def test_doctor_has_one_check_per_gpu_with_its_architecture(doctor_with):
    _, payload = doctor_with("r535-a100x2")
    gpu_checks = [c for c in payload["checks"] if c["name"].startswith("GPU ")]

    assert [c["name"] for c in gpu_checks] == ["GPU 0", "GPU 1"]
    assert all(c["ok"] and "sm_80 (ampere)" in c["detail"] for c in gpu_checks)


@pytest.mark.parametrize(("eol", "past"), [("2020-01", True), ("2099-12", False)])
def test_doctor_flags_a_driver_branch_past_its_end_of_life_with_a_fix(doctor_with, tmp_path, eol, past):
    _, payload = doctor_with("r535-a100x2", overlay=r535_overlay(tmp_path / "overlay", eol))
    check = check_named(payload, "driver branch")

    assert f"R535 (LTSB), end of life {eol}" in check["detail"]
    assert check["ok"] is not past
    assert ("past end of life" in check["detail"]) is past
    assert bool(check["fix"]) is past


def test_doctor_names_kepler_gpus_of_an_r470_nvidia_smi_from_the_matrix(doctor_with):
    _, payload = doctor_with("r470-k80")
    gpu_checks = [c for c in payload["checks"] if c["name"].startswith("GPU ")]

    assert len(gpu_checks) == 2
    assert all(c["ok"] and "sm_37 (kepler)" in c["detail"] for c in gpu_checks)
    assert [g["compute_capability"] for g in payload["host"]["gpus"]] == [None, None]  # as nvidia-smi reported


def test_doctor_reports_malformed_nvidia_smi_output_as_a_failed_driver_check(doctor_with):
    proc, payload = doctor_with("malformed")
    check = check_named(payload, "NVIDIA driver")

    assert proc.returncode == 1
    assert check["ok"] is False
    assert "nvidia-smi printed an unexpected line" in check["detail"]
    assert "nvidia-smi" in check["fix"]
    assert payload["host"]["driver"] is None


@pytest.mark.skipif(has_nvidia_driver(), reason="this machine has an NVIDIA driver")
def test_doctor_treats_nvidia_smi_without_a_driver_as_no_driver(doctor_with):
    _, payload = doctor_with("none", no_driver=True)
    check = check_named(payload, "NVIDIA driver")
    assert check["ok"] is False
    assert "no NVIDIA driver found" in check["detail"]
