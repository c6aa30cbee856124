"""`cudaenv check`: the JSON contract, exit codes, verdicts that say why, fleets, GitHub annotations,
where the stack comes from (lock, else configuration), and how the host is found (declared values
override detection; detection reads a stand-in nvidia-smi printing recorded outputs).

Every call runs ``python -m cudaenv`` in a subprocess with a clean environment: no CUDAENV_* from the
caller, no matrix overlays unless a test adds one, NVML hidden, and no real nvidia-smi on PATH.
Locks are written by ``cudaenv lock`` itself (projects without requirements lock offline).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from functools import partial
from pathlib import Path

import pytest

from cudaenv.cli.check_cmd import annotation, annotation_escape
from tests.support.cli import cudaenv as run_cli
from tests.unit.host import RECORDED_HOSTS, cli_env, hide_nvml, install_fake_nvidia_smi
from tests.support.lockfile import lock_view

PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "projects"
STACK_12_4 = ("--cuda", "12.4", "--python", "3.11", "--flavor", "runtime")

# A CUDA 13.1 runtime stack locked for R535 + A100: R535 runs 13.x only through forward
# compatibility, so the lock records "forward" (cuda-compat in the image).
FORWARD_PROJECT = """\
[project]
name = "fleet-service"
python = "3.11"

[cuda]
version = "13.1"

[target]
driver = "535.104.05"
gpus = ["A100"]

[build]
flavor = "runtime"
"""

# One driver per verdict for the locked CUDA 13.1 stack on A100s.
FLEET = {
    "590.48.01": "native",          # R590 is 13.1's own branch
    "580.95.05": "minor-version",   # 13.x minor-version floor is the R580 branch
    "535.104.05": "forward",        # R535 is in 13.1's cuda-compat branches; A100 is a data-center GPU
    "470.82.01": None,              # too old for any of the three
}

# A torch build for CUDA 11.8 without Kepler, like the real cu121 builds from 2.1 on: CUDA 11.8
# itself still targets sm_37, so only the build's SM list rules a K80 out.
TORCH_WITHOUT_KEPLER = """\
[[release]]
version = "2.4.99"
python = ["3.11"]
source = "test fixture ; read 2026-11-21"

[[release.variant]]
cuda = "11.8"
index_url = "https://download.pytorch.org/whl/cu118"
cudnn = "9.1.0.70"
compute_capabilities = ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]
"""


@pytest.fixture(scope="session")
def no_nvml(tmp_path_factory) -> Path:
    return hide_nvml(tmp_path_factory.mktemp("no-nvml"))


cudaenv = partial(run_cli, timeout=120)


def lock(project: Path, env: dict) -> dict:
    proc = cudaenv("lock", project, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return lock_view(project / "cudaenv.lock")


def one_json_object(proc: subprocess.CompletedProcess) -> dict:
    payload = json.loads(proc.stdout)  # the whole of stdout, nothing else
    assert isinstance(payload, dict)
    return payload


def fleet_args(drivers) -> list[str]:
    return [arg for driver in drivers for arg in ("--driver", driver)]


@pytest.fixture
def env(no_nvml) -> dict:
    return cli_env(no_nvml)


@pytest.fixture
def fake_smi(tmp_path, no_nvml):
    """install(host) -> (FakeSmi, env with it first on PATH)."""

    def install(host: str, **kwargs):
        fake = install_fake_nvidia_smi(tmp_path / "smi", **{**RECORDED_HOSTS.get(host, {}), **kwargs})
        return fake, cli_env(no_nvml, smi=fake)

    return install


@pytest.fixture(scope="module")
def module_env(tmp_path_factory):
    return cli_env(hide_nvml(tmp_path_factory.mktemp("no-nvml-module")))


@pytest.fixture(scope="module")
def forward_project(tmp_path_factory, module_env) -> Path:
    project = tmp_path_factory.mktemp("forward") / "fleet-service"
    project.mkdir()
    (project / "cudaenv.toml").write_text(FORWARD_PROJECT)
    locked = lock(project, module_env)
    assert locked["stack"]["driver_compatibility"] == "forward", locked["stack"]
    return project


@pytest.fixture(scope="module")
def fleet_json(forward_project, module_env):
    proc = cudaenv("check", forward_project, *fleet_args(FLEET), "--gpu", "A100", "--no-detect", "--json",
                   env=module_env)
    return proc, one_json_object(proc)


def result_for(payload: dict, driver: str) -> dict:
    (result,) = [r for r in payload["results"] if r["host"]["driver"] == driver]
    return result


# --- the JSON contract ---------------------------------------------------------------------------


def test_json_is_one_object_with_compatible_and_results(fleet_json):
    _, payload = fleet_json
    # the stack is the project's lock: whether its pins install from wheels is part of the answer
    assert set(payload) == {"compatible", "results", "wheels", "wheels_unchecked"}
    assert payload["wheels"] == []
    assert isinstance(payload["compatible"], bool)


def test_json_has_one_result_per_host_in_fleet_order(fleet_json):
    _, payload = fleet_json
    assert [r["host"]["driver"] for r in payload["results"]] == list(FLEET)


def test_each_json_result_carries_stack_host_and_verdict(fleet_json):
    _, payload = fleet_json
    for result in payload["results"]:
        assert {"stack", "source", "host", "compatible", "mode", "reasons", "caveats"} <= set(result)
        assert result["stack"]["cuda"] == "13.1"
        assert result["host"]["gpus"] == ["A100 (sm_80)"]


def test_json_compatible_is_false_when_any_host_is_not(fleet_json):
    _, payload = fleet_json
    assert payload["compatible"] is False
    assert any(r["compatible"] for r in payload["results"])


# --- a fleet with mixed verdicts: each says why --------------------------------------------------


def test_mixed_fleet_exits_1(fleet_json):
    proc, _ = fleet_json
    assert proc.returncode == 1, proc.stderr


@pytest.mark.parametrize("driver", [d for d, mode in FLEET.items() if mode])
def test_each_compatible_host_names_how_it_runs_the_stack(fleet_json, driver):
    result = result_for(fleet_json[1], driver)
    assert (result["compatible"], result["mode"], result["reasons"]) == (True, FLEET[driver], [])


def test_native_host_has_no_caveat(fleet_json):
    assert result_for(fleet_json[1], "590.48.01")["caveats"] == []


def test_minor_version_host_carries_the_ptx_caveat(fleet_json):
    (caveat,) = result_for(fleet_json[1], "580.95.05")["caveats"]
    assert "minor-version compatibility" in caveat
    assert "PTX" in caveat


def test_forward_compatible_host_carries_the_cuda_compat_caveat(fleet_json):
    (caveat,) = result_for(fleet_json[1], "535.104.05")["caveats"]
    assert "forward compatibility" in caveat
    assert "cuda-compat" in caveat


def test_too_old_driver_says_which_driver_the_stack_needs(fleet_json):
    result = result_for(fleet_json[1], "470.82.01")
    assert (result["compatible"], result["mode"]) == (False, None)
    (reason,) = result["reasons"]
    assert "driver 470.82.01 runs CUDA <= 11.4 natively and <= 11.8 through minor-version compatibility" in reason
    assert "CUDA 13.1" in reason
    assert ">= 590.44.01" in reason and ">= 580" in reason


def test_forward_compatibility_does_not_reach_a_non_datacenter_gpu(forward_project, env):
    proc = cudaenv("check", forward_project, "--driver", "535.104.05", "--gpu", "RTX 3090", "--no-detect", "--json",
                   env=env)
    (result,) = one_json_object(proc)["results"]

    assert proc.returncode == 1
    assert result["compatible"] is False
    assert any("535.104.05" in reason for reason in result["reasons"])


def test_gpu_missing_from_the_framework_builds_sm_list_is_named(tmp_path, no_nvml):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "torch.toml").write_text(TORCH_WITHOUT_KEPLER)
    proc = cudaenv("check", "--torch", "2.4.99", "--cuda", "11.8", "--python", "3.11",
                   "--driver", "470.82.01", "--gpu", "K80", "--json", env=cli_env(no_nvml, overlay=overlay))
    (result,) = one_json_object(proc)["results"]

    assert proc.returncode == 1
    (reason,) = result["reasons"]  # R470 still drives Kepler, CUDA 11.8 still targets sm_37: only the build fails
    assert "K80 (sm_37) is not in the torch 2.4.99 build's SM list" in reason
    assert "sm_50" in reason


def test_kepler_gpu_on_a_driver_branch_past_kepler_is_named(env):
    proc = cudaenv("check", *STACK_12_4, "--driver", "550.54.15", "--gpu", "K80", "--json", env=env)
    (result,) = one_json_object(proc)["results"]
    assert proc.returncode == 1
    assert any("no longer supports Kepler" in reason and "R470" in reason for reason in result["reasons"])


def test_whole_fleet_compatible_exits_0(env):
    proc = cudaenv("check", *STACK_12_4, "--driver", "550.54.15", "--driver", "570.124.06", "--gpu", "A100",
                   "--json", env=env)
    payload = one_json_object(proc)
    assert proc.returncode == 0, proc.stderr
    assert payload["compatible"] is True
    assert [r["mode"] for r in payload["results"]] == ["native", "native"]


def test_text_output_gives_one_line_per_host_and_a_summary(forward_project, env):
    proc = cudaenv("check", forward_project, *fleet_args(FLEET), "--gpu", "A100", "--no-detect", env=env)
    assert proc.returncode == 1
    for driver in FLEET:
        assert re.search(rf"^  [✓✗] driver {re.escape(driver)}, A100 \(sm_80\)", proc.stdout, re.M), proc.stdout
    assert "1 of 4 host(s) cannot run this stack" in proc.stdout


# --- GitHub annotations --------------------------------------------------------------------------


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """Decode ``::cmd k=v,k=v::data`` the way the GitHub Actions runner does (ActionCommand.cs):
    properties are split on ',' and '=', then %0D %0A %3A %2C and finally %25 are unescaped; the
    data unescapes %0D %0A and %25 only."""
    match = re.fullmatch(r"::(?P<command>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)", line)
    assert match, f"not a workflow command: {line!r}"

    def unescape(text: str, pairs) -> str:
        for escaped, char in pairs:
            text = text.replace(escaped, char)
        return text

    data_pairs = [("%0D", "\r"), ("%0A", "\n"), ("%25", "%")]
    prop_pairs = [("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")]
    props = {}
    for item in (match["props"] or "").split(","):
        key, _, value = item.partition("=")
        props[key] = unescape(value, prop_pairs)
    return match["command"], props, unescape(match["data"], data_pairs)


@pytest.mark.parametrize(("text", "escaped"), [
    ("100% done", "100%25 done"),
    ("two\nlines", "two%0Alines"),
    ("cr\rlf", "cr%0Dlf"),
    ("driver 470.82.01, A100: too old", "driver 470.82.01, A100: too old"),  # data keeps ':' and ','
])
def test_annotation_data_is_escaped_like_github_expects(text, escaped):
    assert annotation_escape(text) == escaped


def test_annotation_property_also_escapes_colon_and_comma():
    assert annotation_escape("a,b:c%d\ne", property_value=True) == "a%2Cb%3Ac%25d%0Ae"


def test_annotation_round_trips_through_githubs_parser():
    file, message = "deploy,eu:1/50%/cudaenv.lock", "driver 470.82.01, A100 (sm_80): 100% too old\nupgrade"
    line = annotation("error", file, message)

    assert "\n" not in line
    assert parse_workflow_command(line) == ("error", {"file": file, "title": "cudaenv check"}, message)


def test_annotation_without_a_file_has_only_a_title():
    assert parse_workflow_command(annotation("warning", None, "m")) == ("warning", {"title": "cudaenv check"}, "m")


@pytest.fixture(scope="module")
def github_run(tmp_path_factory, module_env):
    """The forward-locked project in a directory whose name needs escaping, checked from its parent."""
    parent = tmp_path_factory.mktemp("gh")
    project = parent / "fleet,prod:eu"
    project.mkdir()
    (project / "cudaenv.toml").write_text(FORWARD_PROJECT)
    lock(project, module_env)
    proc = cudaenv("check", project.name, *fleet_args(FLEET), "--gpu", "A100", "--no-detect", "--format", "github",
                   env=module_env, cwd=parent)
    commands = [parse_workflow_command(line) for line in proc.stdout.splitlines() if line.startswith("::")]
    return proc, commands


def test_github_format_exits_like_text(github_run):
    proc, _ = github_run
    assert proc.returncode == 1


def test_github_format_adds_an_error_per_reason_on_the_lock_file(github_run):
    _, commands = github_run
    errors = [c for c in commands if c[0] == "error"]
    assert len(errors) == 1
    _, props, data = errors[0]
    assert props["file"] == "fleet,prod:eu/cudaenv.lock"
    assert data.startswith("driver 470.82.01, A100 (sm_80): ")


def test_github_format_adds_a_warning_per_caveat(github_run):
    _, commands = github_run
    warnings = sorted(data.split(",")[0] for command, _, data in commands if command == "warning")
    assert warnings == ["driver 535.104.05", "driver 580.95.05"]


def test_github_format_annotates_nothing_for_a_clean_native_fleet(forward_project, env):
    proc = cudaenv("check", forward_project, "--driver", "590.48.01", "--gpu", "A100", "--no-detect",
                   "--format", "github", env=env)
    assert proc.returncode == 0
    assert not [line for line in proc.stdout.splitlines() if line.startswith("::")]


def test_github_format_points_an_unlocked_project_at_its_config(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    (project / "cudaenv.toml").write_text(FORWARD_PROJECT.replace('version = "13.1"', 'version = "12.4"'))
    proc = cudaenv("check", "p", "--driver", "470.82.01", "--gpu", "A100", "--no-detect", "--format", "github",
                   env=env, cwd=tmp_path)
    (error,) = [parse_workflow_command(line) for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert error[1]["file"] == "p/cudaenv.toml"


# --- where the stack comes from ------------------------------------------------------------------


def plain_project(tmp_path: Path, cuda: str) -> Path:
    project = tmp_path / "plain"
    project.mkdir(exist_ok=True)
    (project / "cudaenv.toml").write_text(FORWARD_PROJECT.replace('version = "13.1"', f'version = "{cuda}"')
                                          .replace('driver = "535.104.05"', 'driver = "550.54.15"'))
    return project


def test_directory_without_a_lock_is_checked_from_its_configuration(tmp_path, env):
    project = plain_project(tmp_path, "12.4")
    proc = cudaenv("check", project, "--driver", "550.54.15", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert result["source"] == f"{project / 'cudaenv.toml'} (no lock yet)"
    assert result["stack"]["cuda"] == "12.4"


def test_directory_with_a_current_lock_is_checked_from_the_lock(tmp_path, env):
    project = plain_project(tmp_path, "12.4")
    lock(project, env)
    proc = cudaenv("check", project, "--driver", "550.54.15", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert result["source"] == str(project / "cudaenv.lock")
    assert result["stack"]["cuda"] == "12.4" and proc.stderr == ""


def test_a_stale_lock_is_not_judged_what_build_would_build_is_and_it_says_so(tmp_path, env):
    """`build` relocks a stale lock first: a ✓ for the old lock's stack would answer another question."""
    project = plain_project(tmp_path, "12.4")
    lock(project, env)
    plain_project(tmp_path, "12.6")  # the configuration moves on; the lock still says 12.4
    proc = cudaenv("check", project, "--driver", "550.54.15", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert result["stack"]["cuda"] == "12.6"
    assert result["source"] == f"{project / 'cudaenv.toml'} (cudaenv.lock is stale: judging what `cudaenv build` would lock)"
    assert proc.stderr.startswith("cudaenv: warning: cudaenv.lock is stale (the configuration in cudaenv.toml changed")


def test_unlocked_directory_is_checked_with_the_stack_its_lock_will_pin(tmp_path, env):
    project = tmp_path / "open-range"
    project.mkdir()
    (project / "cudaenv.toml").write_text(FORWARD_PROJECT.replace('version = "13.1"', 'version = ">=12.0"')
                                          .replace('gpus = ["A100"]', 'gpus = ["T4"]'))
    before = cudaenv("check", project, "--driver", "535.104.05", "--gpu", "T4", "--json", env=env)
    pinned = lock(project, env)["stack"]["cuda"]

    (result,) = one_json_object(before)["results"]
    assert result["stack"]["cuda"] == pinned


def test_directory_and_stack_flags_together_are_bad_usage(tmp_path, env):
    project = plain_project(tmp_path, "12.4")
    proc = cudaenv("check", project, "--cuda", "12.4", "--driver", "550.54.15", env=env)
    assert proc.returncode == 2
    assert "one stack source" in proc.stderr


def test_invalid_project_configuration_exits_2_with_one_line(tmp_path, env):
    project = shutil.copytree(PROJECTS / "bad-invalid-toml", tmp_path / "bad")
    proc = cudaenv("check", project, "--driver", "550.54.15", env=env)

    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_stack_flags_that_admit_no_stack_exit_2(env):
    proc = cudaenv("check", "--torch", "2.4.1", "--cuda", "13.0", "--driver", "580.95.05", env=env)
    assert proc.returncode == 2
    assert "the stack flags admit no stack" in proc.stderr


# --- bad declared values: exit 2, one line ------------------------------------------------------


@pytest.mark.parametrize(("args", "extra_env", "named"), [
    (("--driver", "latest"), {}, "'latest'"),
    (("--driver", "550.54.15", "--driver", "latest"), {}, "'latest'"),
    ((), {"CUDAENV_DRIVER_VERSION": "latest"}, "CUDAENV_DRIVER_VERSION"),
    (("--gpu", "Voodoo 9000"), {}, "'Voodoo 9000'"),
    ((), {"CUDAENV_GPUS": "A100,Voodoo 9000"}, "CUDAENV_GPUS"),
    (("--compute-capability", "8.3"), {}, "8.3"),
], ids=["driver-latest", "fleet-driver-latest", "env-driver", "gpu-unknown", "env-gpus", "cc-8.3"])
def test_bad_declared_value_exits_2_with_one_line(no_nvml, args, extra_env, named):
    proc = cudaenv("check", *STACK_12_4, *args, "--json", env=cli_env(no_nvml, **extra_env))

    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]  # --json: the one error object, and nothing else
    assert error["code"] == "bad-input" and named in error["message"]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("cudaenv: error: ")
    assert named in line


# --- declared values override detection; otherwise the host is detected ---------------------------


def test_declared_driver_overrides_a_detectable_host(fake_smi):
    fake, env = fake_smi("r580-h100")
    proc = cudaenv("check", *STACK_12_4, "--driver", "535.104.05", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert result["host"] == {"driver": "535.104.05", "gpus": [], "arch": "x86_64"}
    assert fake.calls() == []


@pytest.mark.parametrize(("variable", "value", "host"), [
    ("CUDAENV_DRIVER_VERSION", "535.104.05", {"driver": "535.104.05", "gpus": [], "arch": "x86_64"}),
    ("CUDAENV_GPUS", "T4", {"driver": None, "gpus": ["T4 (sm_75)"], "arch": "x86_64"}),
])
def test_environment_overrides_a_detectable_host(fake_smi, no_nvml, variable, value, host):
    fake, env = fake_smi("r580-h100")
    proc = cudaenv("check", *STACK_12_4, "--json", env={**env, variable: value})
    (result,) = one_json_object(proc)["results"]

    assert result["host"] == host
    assert fake.calls() == []


def test_undeclared_host_is_detected_from_nvidia_smi(fake_smi):
    _, env = fake_smi("r580-h100")
    proc = cudaenv("check", *STACK_12_4, "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert proc.returncode == 0, proc.stderr
    assert result["host"] == {"driver": "580.159.04", "gpus": ["H100 (sm_90)"], "arch": "x86_64"}
    assert result["mode"] == "native"


def test_detected_r470_host_fails_a_cuda_12_stack_for_driver_and_gpu(fake_smi):
    _, env = fake_smi("r470-k80")
    proc = cudaenv("check", *STACK_12_4, "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert proc.returncode == 1
    assert result["host"] == {"driver": "470.42.01", "gpus": ["K80 (sm_37)", "K80 (sm_37)"], "arch": "x86_64"}
    assert any("driver 470.42.01" in reason for reason in result["reasons"])
    assert any("cannot run the libraries of CUDA 12.4" in reason for reason in result["reasons"])  # Kepler left 12.0


def test_no_detect_never_runs_nvidia_smi(fake_smi):
    fake, env = fake_smi("r580-h100")
    proc = cudaenv("check", *STACK_12_4, "--no-detect", "--json", env=env)
    (result,) = one_json_object(proc)["results"]

    assert result["host"] == {"driver": None, "gpus": [], "arch": "x86_64"}
    assert fake.calls() == []


def test_no_driver_is_not_compatible_and_names_the_drivers_the_stack_needs(fake_smi):
    """A CI step that forgets --driver must fail, not pass on a host nothing vouches for."""
    _, env = fake_smi("none", no_driver=True)
    proc = cudaenv("check", *STACK_12_4, "--json", env=env)
    payload = one_json_object(proc)
    (result,) = payload["results"]

    assert proc.returncode == 1 and payload["compatible"] is False
    assert (result["host"]["driver"], result["mode"]) == (None, None)
    (reason,) = result["reasons"]
    assert "no NVIDIA driver" in reason and "--driver" in reason
    assert ">= 550.54.14" in reason and ">= 525.60.13" in reason


def test_malformed_nvidia_smi_output_is_one_error_line_and_one_json_error_object(fake_smi):
    _, env = fake_smi("malformed")
    proc = cudaenv("check", *STACK_12_4, "--json", env=env)

    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "host-detection" and error["message"].startswith("nvidia-smi printed an unexpected line")
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("cudaenv: error: nvidia-smi printed an unexpected line")
