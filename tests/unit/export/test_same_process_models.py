"""Every export starts the process `cudaenv run` starts: the same argv and environment, whatever
the engine's own quoting and expansion rules. Commands and env values are generated with ``$``,
``$$``, ``$(VAR)``, ``${X:-y}``, quotes, a leading ``=``, commas, spaces, newlines (where the file
can hold them) and non-ASCII, and what the container would see is worked out by the engine's
documented rules (tests/support/engine_models.py cites them) for the engines that cannot run here:
Kubernetes, pyxis/enroot and Apptainer. The Slurm scripts are run by real bash with a recording
stand-in for srun/apptainer/docker; Docker Compose, Dev Containers and the Slurm Docker runtime
are run for real in tests/integration/test_export_same_process.py.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudaenv.errors import UserError
from tests.support.engine_models import (Unmodelled, apptainer_container, docker_gpus, kubernetes_container,
                                         kubernetes_expand, pflag_string_to_string, pyxis_container)
from tests.unit.export.test_kubernetes_export import CONFIG, cudaenv
from tests.unit.host import cli_env, hide_nvml

IMAGE = "registry.example.com:5000/ml/detector@sha256:" + "0123456789abcdef" * 4
SNIPPETS = ("$", "$$", "$$$", "$(X)", "$(SEED)", "$(NOPE)", "${X:-y}", "$X", "`id`", "'", '"', "\\", "=",
            "==mlx5_0:1", ",", "a,b=c", " ", "é", "日本", "🙂", "(", ")", "$(", "--x")
PLAIN = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e) | st.sampled_from("éü日"), max_size=4)
NAMES = ("X", "SEED", "NCCL_IB_HCA", "OUT", "PATH", "project_dir", "LD_PRELOAD_X", "A_1")


def values(newlines: bool) -> st.SearchStrategy[str]:
    part = st.one_of(st.sampled_from(SNIPPETS + (("\n",) if newlines else ())), PLAIN)
    return st.lists(part, max_size=6).map("".join)


def environments(newlines: bool) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(NAMES), values(newlines), max_size=4)


def commands(newlines: bool) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(values(newlines), min_size=0, max_size=4).map(lambda words: ("probe", *words))


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    """(project, matrix, stack) for a project locked offline: the exports are built through their
    own functions, so a generated example costs no process start."""
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.project.lock import current_lock

    directory = tmp_path_factory.mktemp("same-process") / "detector"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(CONFIG)
    env = cli_env(hide_nvml(tmp_path_factory.mktemp("no-nvml")))
    proc = cudaenv("lock", directory, env=env)
    assert proc.returncode == 0, proc.stderr
    project = load_project(directory)
    matrix = load_matrix()
    lock, _ = current_lock(project, matrix)
    return project, matrix, lock.resolved_stack()


def expected_env(project, env: dict[str, str]) -> dict[str, str]:
    """What `cudaenv run -e NAME=value ...` gives the container for the generated names."""
    return {**dict(project.run.env), **env}


# --- Kubernetes -------------------------------------------------------------------------------------


def test_the_model_expands_as_the_kubernetes_documents_say():
    """The examples of "Define Dependent Environment Variables": a known name expands, an unknown
    one stays, ``$$`` is one ``$``; an unclosed reference and a lone ``$`` are kept."""
    mapping = {"PROTOCOL": "https", "SERVICE_IP": "172.17.0.1", "SERVICE_PORT": "80"}
    assert kubernetes_expand("$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)", mapping) == "https://172.17.0.1:80"
    assert kubernetes_expand("$$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)", mapping) == "$(PROTOCOL)://172.17.0.1:80"
    assert kubernetes_expand("$(UNDEFINED)", mapping) == "$(UNDEFINED)"
    assert kubernetes_expand("echo $$ $( $x $", mapping) == "echo $ $( $x $"


def kubernetes_view(locked, command, env, passed=(), secrets=None):
    from cudaenv.export.kubernetes import build_workload, header, manifest, render

    project, matrix, stack = locked
    workload = build_workload(project, matrix, stack, image=IMAGE, command=command, env=env, passthrough=passed)
    document = yaml.safe_load(render(manifest(workload), header(workload)))
    container = document["spec"]["template"]["spec"]["containers"][0]
    return kubernetes_container(container, secrets or {})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=commands(newlines=True), env=environments(newlines=True))
def test_a_kubernetes_pod_sees_the_argv_and_env_cudaenv_run_gives(locked, command, env):
    args, seen = kubernetes_view(locked, command, env)
    assert args == list(command)
    for name, value in expected_env(locked[0], env).items():
        assert seen[name] == value


def test_kubernetes_no_longer_turns_a_double_dollar_into_one(locked):
    """The defect: ``bash -c 'echo $$'`` ran as ``echo $``, and ``OUT=/out/$(X)`` expanded."""
    args, seen = kubernetes_view(locked, ("bash", "-c", "echo $$"), {"X": "x", "OUT": "/out/$(X)"})
    assert args == ["bash", "-c", "echo $$"] and seen["OUT"] == "/out/$(X)"


def test_a_passed_through_variable_is_a_secret_reference_in_the_manifest(locked):
    from cudaenv.export.kubernetes import build_workload, manifest

    project, matrix, stack = locked
    workload = build_workload(project, matrix, stack, image=IMAGE, command=("python",), passthrough=("HF_TOKEN",))
    container = manifest(workload)["spec"]["template"]["spec"]["containers"][0]
    entry = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert entry == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "detector-env", "key": "HF_TOKEN"}}}
    args, seen = kubernetes_view(locked, ("python",), {}, ("HF_TOKEN",), {"detector-env": {"HF_TOKEN": "s$(X)"}})
    assert seen["HF_TOKEN"] == "s$(X)"  # a Secret's value is not expanded


# --- Slurm: the scripts run by bash, the launcher recorded --------------------------------------------


def recorder(directory: Path, tool: str) -> Path:
    """A stand-in launcher: its argv and environment, NUL-separated, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / tool
    path.write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" > "{directory}/argv"\n/usr/bin/env -0 > "{directory}/env"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory


def run_script(text: str, tool: str, tmp: Path, extra_env: dict[str, str] | None = None):
    """Run the sbatch script as the batch shell would; (the launcher's argv, its environment)."""
    bin_dir = recorder(tmp / "bin", tool)
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    script = tmp / "job.sbatch"
    script.write_text(text)
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    run_env = dict(base, PATH=f"{bin_dir}:{base['PATH']}", SLURM_SUBMIT_DIR=str(work), SLURM_JOB_ID="7",
                   **(extra_env or {}))
    proc = subprocess.run(["bash", str(script)], cwd=work, env=run_env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    argv = [w.decode() for w in (bin_dir / "argv").read_bytes().split(b"\0")[:-1]]
    env = dict(item.decode().split("=", 1) for item in (bin_dir / "env").read_bytes().split(b"\0")[:-1])
    return argv, env, work


def slurm_script(locked, runtime, command, env, passed=()):
    from cudaenv.export.slurm import build_job, render_script

    project, matrix, stack = locked
    return render_script(build_job(project, matrix, stack, runtime=runtime, image=IMAGE, command=command, env=env,
                                   passthrough=passed, use_features=False,
                                   docker_gpus="none" if runtime == "docker" else "allocated"))


IMAGE_ENV = {"PATH": "/opt/venv/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES": "all", "X": "from-image"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=commands(newlines=False), env=environments(newlines=False))
def test_a_pyxis_task_sees_the_argv_and_env_cudaenv_run_gives(locked, tmp_path_factory, command, env):
    tmp = tmp_path_factory.mktemp("pyxis")
    argv, srun_env, work = run_script(slurm_script(locked, "pyxis", command, env), "srun", tmp)
    seen_command, seen = pyxis_container(argv, srun_env, IMAGE_ENV)
    assert seen_command == list(command)
    for name, value in expected_env(locked[0], env).items():
        assert seen[name] == value
    assert f"--container-mounts={work}:/workspace" in argv  # a variable named project_dir changes nothing


def test_pyxis_env_never_reaches_the_batch_shell(locked, tmp_path):
    """The defect: a container PATH hid srun (exit 127), and project_dir moved the mount."""
    text = slurm_script(locked, "pyxis", ("python",), {"PATH": "/opt/venv/bin", "project_dir": "/elsewhere"})
    assert not re.search(r"^export ", text, re.M)
    argv, srun_env, work = run_script(text, "srun", tmp_path)
    assert f"--container-mounts={work}:/workspace" in argv
    command, seen = pyxis_container(argv, srun_env, IMAGE_ENV)
    assert command == ["python"] and seen["PATH"] == "/opt/venv/bin" and seen["project_dir"] == "/elsewhere"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=commands(newlines=False), env=environments(newlines=False))
def test_an_apptainer_container_sees_the_argv_and_env_cudaenv_run_gives(locked, tmp_path_factory, command, env):
    tmp = tmp_path_factory.mktemp("apptainer")
    argv, host_env, _ = run_script(slurm_script(locked, "apptainer", command, env), "apptainer", tmp)
    seen_command, seen = apptainer_container(argv, host_env, IMAGE_ENV)
    assert seen_command == list(command)
    for name, value in expected_env(locked[0], env).items():
        assert seen[name] == value


def test_apptainer_env_as_a_csv_flag_would_split_values():
    """Why the script sets APPTAINERENV_NAME instead of --env: pflag reads ``--env`` as CSV when the
    text has more than one ``=``, and trims quotes when it has one."""
    assert pflag_string_to_string("A=x,y") == {"A": "x,y"}
    assert pflag_string_to_string('A="quoted"') == {"A": '"quoted'}  # Go's strings.Trim: the last quote is lost
    with pytest.raises(Unmodelled):
        pflag_string_to_string("NCCL_IB_HCA==mlx5_0:1,mlx5_1:1")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=commands(newlines=False), env=environments(newlines=False))
def test_a_slurm_docker_run_gets_the_argv_and_env_cudaenv_run_gives(locked, tmp_path_factory, command, env):
    """The Docker runtime's words as docker reads them: ``--env NAME=VALUE`` split at the first
    ``=``, the command after the image (run for real in the integration test)."""
    tmp = tmp_path_factory.mktemp("docker")
    argv, _, _ = run_script(slurm_script(locked, "docker", command, env), "docker", tmp)
    image_at = argv.index(IMAGE)
    seen = dict(argv[i + 1].split("=", 1) for i in range(image_at) if argv[i] == "--env")
    assert argv[image_at + 1:] == list(command)
    for name, value in expected_env(locked[0], env).items():
        assert seen[name] == value


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer", "docker"])
def test_a_passed_through_variable_comes_from_the_submitting_environment(locked, tmp_path, runtime):
    tool = {"pyxis": "srun", "apptainer": "apptainer", "docker": "docker"}[runtime]
    secret = "tok$(X)`id`\\'\"=,"
    text = slurm_script(locked, runtime, ("python",), {}, ("HF_TOKEN",))
    assert secret not in text and "HF_TOKEN" in text
    argv, launcher_env, _ = run_script(text, tool, tmp_path, {"HF_TOKEN": secret})
    if runtime == "pyxis":
        assert pyxis_container(argv, launcher_env, IMAGE_ENV)[1]["HF_TOKEN"] == secret
    elif runtime == "apptainer":
        assert apptainer_container(argv, launcher_env, IMAGE_ENV)[1]["HF_TOKEN"] == secret
    else:
        assert f"HF_TOKEN={secret}" in argv


def test_an_unset_passed_through_variable_is_said_and_arrives_empty(locked, tmp_path):
    text = slurm_script(locked, "docker", ("python",), {}, ("HF_TOKEN",))
    work = tmp_path / "work"
    bin_dir = recorder(tmp_path / "bin", "docker")
    work.mkdir()
    (tmp_path / "job.sbatch").write_text(text)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_SUBMIT_DIR": str(work)}
    proc = subprocess.run(["bash", str(tmp_path / "job.sbatch")], cwd=work, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "HF_TOKEN is not set in the environment sbatch was submitted from" in proc.stderr
    assert "HF_TOKEN=" in (bin_dir / "argv").read_bytes().decode().split("\0")


def test_a_name_the_script_sets_itself_cannot_be_passed_through(locked):
    with pytest.raises(UserError, match="-e project_dir: the batch script cannot read"):
        slurm_script(locked, "docker", ("python",), {}, ("project_dir",))


@pytest.mark.skipif(shutil.which("shellcheck") is None and os.environ.get("CI") != "true",
                    reason="shellcheck not installed (scripts/test.sh installs it)")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runtime=st.sampled_from(["pyxis", "apptainer", "docker"]), command=commands(newlines=False),
       env=environments(newlines=False), passed=st.lists(st.sampled_from(["HF_TOKEN", "WANDB_API_KEY"]), max_size=2))
def test_every_generated_script_passes_shellcheck(locked, tmp_path_factory, runtime, command, env, passed):
    """A leading ``=`` (NCCL_IB_HCA="=mlx5_0:1") was ``export NAME==…``: shellcheck's SC1097."""
    path = tmp_path_factory.mktemp("shellcheck") / "job.sbatch"
    path.write_text(slurm_script(locked, runtime, command, env, tuple(dict.fromkeys(passed))))
    proc = subprocess.run(["shellcheck", "--shell=bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_a_value_starting_with_equals_is_quoted(locked):
    text = slurm_script(locked, "docker", ("python",), {"NCCL_IB_HCA": "=mlx5_0:1"})
    assert "--env NCCL_IB_HCA='=mlx5_0:1'" in text and "==" not in text


def test_a_newline_in_a_slurm_value_is_refused_in_one_line(locked):
    with pytest.raises(UserError, match="environment variable X: refusing .* control character"):
        slurm_script(locked, "pyxis", ("python",), {"X": "a\nb"})


# --- Dev Containers and Compose -----------------------------------------------------------------------


def test_devcontainer_device_ids_are_one_gpus_field():
    """The defect: ``--gpus device=0,1`` is device 0 plus a count of 1 to Docker's CSV reader."""
    from cudaenv.export.devcontainer import gpu_run_args

    flag, value = gpu_run_args("ids", ("0", "1"))
    assert flag == "--gpus" and docker_gpus(value) == (0, ("0", "1"))
    assert docker_gpus("device=0,1") == (1, ("0",))  # what the old file asked for
    assert docker_gpus(gpu_run_args("ids", ("GPU-1a2b",))[1]) == (0, ("GPU-1a2b",))


def test_compose_auto_skips_the_gpus_other_projects_name():
    from cudaenv.export.compose import assign_auto

    assert assign_auto([("ids", ("0",)), ("auto", None)], 2) == [("ids", ("0",)), ("ids", ("1",))]
    assert assign_auto([("auto", 2), ("count", 1), ("ids", ("3",))], 6) == [
        ("ids", ("1", "2")), ("count", 1), ("ids", ("3",))]


@pytest.mark.parametrize("others, message", [
    ([("all", None)], "asks for all GPUs"),
    ([("ids", ("0", "1"))], "not enough"),
    ([("ids", ("GPU-1a2b",))], "cannot tell which GPUs"),
])
def test_compose_auto_refuses_an_overlap_it_cannot_avoid(others, message):
    from cudaenv.export.compose import assign_auto

    with pytest.raises(UserError, match=message):
        assign_auto([*others, ("auto", None)], 2)


def compose_env(document: dict, service: str) -> dict:
    return document["services"][service]["environment"]


@settings(max_examples=60, deadline=None)
@given(env=environments(newlines=True))
def test_compose_values_are_escaped_for_interpolation_and_passed_names_have_none(env):
    """Compose interpolates ``$`` in every value; ``$$`` is a literal ``$`` (the Compose
    specification, "Interpolation"): undoing exactly that gives the value back. A passed name is
    written as null, which Compose fills from the shell that runs ``docker compose up``."""
    from types import SimpleNamespace

    from cudaenv.export.compose import ServiceInput, compose_document, render

    run = SimpleNamespace(env=(), command=(), ipc=None, shm_size="1g", ulimits=(), ports=())
    project = SimpleNamespace(name="svc", root=Path("/tmp/svc"), run=run)
    document = yaml.safe_load(render(compose_document([ServiceInput(project, "img", ("none", None))], name="n",
                                                      user="1:1", user_env={"HOME": "/tmp"}, env=env,
                                                      passed=("HF_TOKEN",))))
    written = compose_env(document, "svc")
    assert written["HF_TOKEN"] is None
    for name, value in env.items():
        assert written[name].replace("$$", "$") == value and "$" not in written[name].replace("$$", "")



@pytest.mark.parametrize("value", ["${localEnv:HOME}", "a ${containerEnv:PATH} b", "${localWorkspaceFolder}",
                                   "${devcontainerId}", "${env:HF_TOKEN}", "$${localEnv:X}"])
def test_a_dev_container_value_its_tools_would_substitute_is_refused(value):
    """The Dev Containers tools replace ``${localEnv:X}`` and the like in every string, with no
    escape: `cudaenv run` passes the text as written, so the export refuses it (exit 2)."""
    from types import SimpleNamespace

    from cudaenv.export.devcontainer import devcontainer_document

    run = SimpleNamespace(env=(("X", value),), ipc=None, shm_size="1g", ulimits=(), ports=())
    project = SimpleNamespace(name="p", root=Path("/tmp/p"), config_path=Path("/tmp/p/cudaenv.toml"), run=run)
    with pytest.raises(UserError, match=r"/tmp/p/cudaenv.toml: run.env.X: .* would be substituted"):
        devcontainer_document(project, "img", ("none", None), "1:1")


@pytest.mark.parametrize("value", ["${X:-y}", "${HOME}", "$HOME", "${localEnv", "$(localEnv:X)"])
def test_other_dollar_braces_reach_a_dev_container_as_written(value):
    from types import SimpleNamespace

    from cudaenv.export.devcontainer import devcontainer_document

    run = SimpleNamespace(env=(("X", value),), ipc=None, shm_size="1g", ulimits=(), ports=())
    project = SimpleNamespace(name="p", root=Path("/tmp/p"), config_path=None, run=run)
    assert devcontainer_document(project, "img", ("none", None), "1:1")["containerEnv"]["X"] == value
