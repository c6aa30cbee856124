"""`cudaenv run`, `exec`, `ps` and `stop` against the real Docker engine, driven through the CLI.

The projects are plain CUDA runtime stacks (no framework, Python 3.11) whose `nvidia/cuda` base
images are stand-ins served by the suite's local registry. No GPU and no NVIDIA container runtime
exist here, so: ordinary runs use `--gpus none`; what a GPU run would ask Docker for is read back
from created (never started) containers' HostConfig.DeviceRequests; the GPU inventory is declared
(CUDAENV_GPUS) or comes from a fake `nvidia-smi`; and the missing-runtime error is the real one.
This daemon cannot raise memlock above 8 MiB, so the projects set [run] ulimits.memlock to that.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudaenv.run.containers import (LABEL_DIR, LABEL_GPUS, LABEL_MANAGED, LABEL_PROJECT, GpuChoice, build_spec,
                                choose_gpus)
from cudaenv.project import load_project
from cudaenv.project.runopts import parse_ports
from tests.support.cli import CUDAENV, cudaenv as run_cli

pytestmark = [pytest.mark.docker, pytest.mark.registry]

CUDA_12 = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
CUDA_11 = "nvidia/cuda:11.8.0-runtime-ubuntu22.04"
RUN_UID, RUN_GID = 4321, 4322
PREFIX = f"runtest-{uuid.uuid4().hex[:6]}"  # every project (and so every container and image) of this module
NO_RUNTIME = "no NVIDIA container runtime"


# --- helpers ------------------------------------------------------------------------------------


def cli_env(**extra: str) -> dict[str, str]:
    """The caller's environment without host declarations, plus the container user and ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS", "CUDAENV_UID", "CUDAENV_GID")}
    env.update(CUDAENV_UID=str(RUN_UID), CUDAENV_GID=str(RUN_GID))
    env.update(extra)
    return env


def cudaenv(*args: str, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess:
    return run_cli(*args, env=cli_env(**extra_env), timeout=timeout)


def run_in(project: ProjectDir, *command: str, options: tuple[str, ...] = ("--gpus", "none"), **extra_env: str):
    return cudaenv("run", str(project.root), *options, "--", *command, **extra_env)


def write_config(root: Path, name: str, cuda: str, registry_host: str, run_extra: str = "") -> None:
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\n\n'
        f'[cuda]\nversion = "{cuda}"\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{registry_host}"\n\n'
        f'[run]\nulimits = {{ memlock = 8388608 }}\n{run_extra}'
    )


@dataclass
class ProjectDir:
    root: Path
    name: str
    cuda: str

    @property
    def tag(self) -> str:
        """The image tag `cudaenv run` would use now (a current lock and its image)."""
        from cudaenv.engine.builders import find_cli_builder
        from cudaenv.images.plan import plan_image
        from cudaenv.matrix import load_matrix
        from cudaenv.project.lock import read_lock

        project = load_project(self.root)
        return plan_image(project, load_matrix(), read_lock(project.lock_path),
                          buildkit=find_cli_builder() is not None).default_tag


def new_project(tmp_path_factory, standins, label: str, base: str, cuda: str, run_extra: str = "") -> ProjectDir:
    standins.provide(base)
    root = tmp_path_factory.mktemp(label)
    root.chmod(0o777)  # the container user (RUN_UID) writes here, as a developer's own UID would
    name = f"{PREFIX}-{label}"
    write_config(root, name, cuda, standins.host, run_extra)
    return ProjectDir(root, name, cuda)


def containers_of(engine, project: ProjectDir) -> list:
    # a container that cudaenv removes between the listing and its inspection is gone, not an error
    return engine.client.containers.list(all=True, filters={"label": f"{LABEL_DIR}={project.root.resolve()}"},
                                         ignore_removed=True)


def remove_images(engine, name: str) -> None:
    for image in engine.client.images.list(name=f"cudaenv/{name}"):
        for tag in image.tags:
            engine.remove_image(tag, force=True)


def wait_until(predicate, timeout: float = 60, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def ps_json(*options: str) -> dict:
    result = cudaenv("ps", "--json", *options)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def rows_for(listing: dict, project: ProjectDir) -> list[dict]:
    return [row for row in listing["containers"] if row["project"] == project.name]


def built(tmp_path_factory, standins, label: str, base: str, cuda: str, run_extra: str = ""):
    project = new_project(tmp_path_factory, standins, label, base, cuda, run_extra)
    result = cudaenv("build", str(project.root))
    assert result.returncode == 0, result.stdout + result.stderr
    return project


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cuda12(tmp_path_factory, standins, engine):
    project = built(tmp_path_factory, standins, "cuda12", CUDA_12, "12.4",
                    'shm_size = "192m"\nenv = { FROM_CONFIG = "from-cudaenv-toml" }\n')
    yield project
    for container in containers_of(engine, project):
        container.remove(force=True)
    remove_images(engine, project.name)


@pytest.fixture(scope="module")
def cuda11(tmp_path_factory, standins, engine):
    project = built(tmp_path_factory, standins, "cuda11", CUDA_11, "11.8")
    yield project
    for container in containers_of(engine, project):
        container.remove(force=True)
    remove_images(engine, project.name)


@pytest.fixture(autouse=True)
def sweep_containers(engine):
    """Whatever a test leaves behind (a failed assertion mid-way) goes before the next one."""
    yield
    for container in engine.client.containers.list(all=True, filters={"label": LABEL_MANAGED}):
        if container.labels.get(LABEL_PROJECT, "").startswith(PREFIX):
            container.remove(force=True)


@pytest.fixture
def detached(cuda12):
    """The name of a running detached container of the CUDA 12 project."""
    result = run_in(cuda12, "sleep", "300", options=("--gpus", "none", "--detach"))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def holder(engine, project: ProjectDir, gpus: str, *, command=("sleep", "300"), start: bool = True) -> str:
    """A container of ``project`` labelled as holding ``gpus``, as `--gpus <ids>` would label it.

    No GPU exists here, so it carries the label without the device request (which could not start)."""
    loaded = load_project(project.root)
    spec = build_spec(loaded, project.tag, engine.image_labels(project.tag), command=command,
                      gpus=GpuChoice(None, gpus), env={}, ports={}, shm_size=None, ipc=None,
                      name=f"{project.name}-holder-{uuid.uuid4().hex[:6]}", tty=False, interactive=False)
    container_id = engine.create(spec)
    if start:
        engine.start(container_id)
    return container_id


def create_for(engine, project: ProjectDir, gpus: str, *, ports: tuple[str, ...] = ()) -> dict:
    """What `cudaenv run --gpus <gpus> -p <ports>` creates for ``project``, inspected before it would start."""
    loaded = load_project(project.root)
    spec = build_spec(loaded, project.tag, engine.image_labels(project.tag), command=("true",),
                      gpus=choose_gpus(gpus, engine), env={}, ports=parse_ports(ports), shm_size=None, ipc=None,
                      name=f"{project.name}-gpu-{uuid.uuid4().hex[:6]}", tty=False, interactive=False)
    return engine.inspect(engine.create(spec))


@pytest.fixture
def fake_nvidia_smi(tmp_path):
    """PATH with an nvidia-smi that describes two A100s on the given driver: a GPU host as cudaenv
    detects it (the GPUs themselves cannot exist here)."""

    def make(driver: str = "550.54.15") -> str:
        bin_dir = tmp_path / f"bin-{driver}"
        bin_dir.mkdir()
        smi = bin_dir / "nvidia-smi"
        smi.write_text(
            "#!/bin/sh\n"
            'case "$1" in\n'
            "  --query-gpu=*)\n"
            f'    echo "0, NVIDIA A100-SXM4-80GB, 8.0, 81920, GPU-11111111-2222-3333-4444-555555555555, {driver}"\n'
            f'    echo "1, NVIDIA A100-SXM4-80GB, 8.0, 81920, GPU-66666666-7777-8888-9999-000000000000, {driver}" ;;\n'
            f'  *) echo "| NVIDIA-SMI {driver}   Driver Version: {driver}   CUDA Version: 12.4 |" ;;\n'
            "esac\n"
        )
        smi.chmod(0o755)
        return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"

    return make


# --- exit codes, mount, user --------------------------------------------------------------------


@pytest.mark.parametrize("code", [0, 7, 42])
def test_the_commands_exit_code_becomes_cudaenvs(cuda12, code):
    result = run_in(cuda12, "sh", "-c", f"echo before-exit; exit {code}")
    assert result.returncode == code, result.stderr
    assert "before-exit" in result.stdout


def test_foreground_run_leaves_no_container_behind(cuda12, engine):
    result = run_in(cuda12, "sh", "-c", "exit 3")
    assert result.returncode == 3
    assert containers_of(engine, cuda12) == []


def test_project_directory_is_mounted_at_workspace_as_the_working_directory(cuda12):
    token = uuid.uuid4().hex
    (cuda12.root / "written-after-build.txt").write_text(token)
    try:
        result = run_in(cuda12, "sh", "-c", "pwd; cat written-after-build.txt")
    finally:
        (cuda12.root / "written-after-build.txt").unlink()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["/workspace", token]


def test_files_the_container_creates_belong_to_the_run_user_on_the_host(cuda12):
    created = cuda12.root / f"created-{uuid.uuid4().hex[:6]}"
    result = run_in(cuda12, "sh", "-c", f"echo data > /workspace/{created.name}")
    try:
        assert result.returncode == 0, result.stderr
        info = created.stat()
        assert (info.st_uid, info.st_gid) == (RUN_UID, RUN_GID)
    finally:
        created.unlink(missing_ok=True)


# --- environment, shared memory, ulimits ----------------------------------------------------------


def test_env_from_the_flag_and_from_cudaenv_toml_reach_the_container(cuda12):
    result = run_in(cuda12, "sh", "-c", 'echo "$FROM_FLAG|$FROM_CONFIG"',
                    options=("--gpus", "none", "-e", "FROM_FLAG=flag value; $(not expanded)"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "flag value; $(not expanded)|from-cudaenv-toml"


def test_env_flag_overrides_the_value_in_cudaenv_toml(cuda12):
    result = run_in(cuda12, "sh", "-c", 'echo "$FROM_CONFIG"', options=("--gpus", "none", "-e", "FROM_CONFIG=override"))
    assert result.stdout.strip() == "override"


def test_env_flag_without_a_value_passes_the_callers_value_through(cuda12):
    result = run_in(cuda12, "sh", "-c", 'echo "$PASSED_THROUGH"', options=("--gpus", "none", "-e", "PASSED_THROUGH"),
                    PASSED_THROUGH="from-the-caller")
    assert result.stdout.strip() == "from-the-caller"


SHM_BYTES = "python3 -c \"import os; s = os.statvfs('/dev/shm'); print(s.f_blocks * s.f_frsize)\""


def test_shm_size_from_cudaenv_toml_sizes_dev_shm(cuda12):
    result = run_in(cuda12, "sh", "-c", SHM_BYTES)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 192 * 1024 * 1024


def test_shm_size_flag_overrides_cudaenv_toml(cuda12):
    result = run_in(cuda12, "sh", "-c", SHM_BYTES, options=("--gpus", "none", "--shm-size", "320m"))
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 320 * 1024 * 1024


ULIMITS = ("python3 -c \"import resource as r; print(*r.getrlimit(r.RLIMIT_MEMLOCK), *r.getrlimit(r.RLIMIT_STACK), "
           "*r.getrlimit(r.RLIMIT_NOFILE))\"")


def test_ulimits_from_cudaenv_toml_and_the_stack_default_reach_the_container(cuda12):
    result = run_in(cuda12, "sh", "-c", ULIMITS)
    assert result.returncode == 0, result.stderr
    memlock_soft, memlock_hard, stack_soft, stack_hard, *_ = map(int, result.stdout.split())
    assert (memlock_soft, memlock_hard) == (8388608, 8388608)
    assert (stack_soft, stack_hard) == (64 * 1024 * 1024, 64 * 1024 * 1024)


def test_ulimit_flag_sets_soft_and_hard_limits(cuda12):
    result = run_in(cuda12, "sh", "-c", ULIMITS, options=("--gpus", "none", "--ulimit", "nofile=1024:2048"))
    assert result.returncode == 0, result.stderr
    *_, nofile_soft, nofile_hard = map(int, result.stdout.split())
    assert (nofile_soft, nofile_hard) == (1024, 2048)


def test_memlock_the_daemon_cannot_grant_is_a_clear_error(cuda12, engine):
    """NVIDIA's default memlock=-1 (unlimited) is above this daemon's own limit."""
    result = run_in(cuda12, "true", options=("--gpus", "none", "--ulimit", "memlock=-1"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "ulimit memlock=unlimited" in result.stderr
    assert "daemon's own hard limit" in result.stderr
    assert "ulimits.memlock" in result.stderr  # how to fix it in cudaenv.toml
    assert containers_of(engine, cuda12) == []


def test_the_default_memlock_falls_back_to_the_daemons_limit_with_one_warning(tmp_path_factory, standins, engine):
    """NVIDIA's memlock=unlimited default is more than this daemon can grant: `run` must still work,
    with the daemon's limit and a one-line warning, while the 64 MiB stack default still applies."""
    project = new_project(tmp_path_factory, standins, f"deflim{uuid.uuid4().hex[:4]}", CUDA_12, "12.4")
    config = project.root / "cudaenv.toml"
    config.write_text(config.read_text().replace("ulimits = { memlock = 8388608 }\n", ""))
    try:
        result = run_in(project, "sh", "-c", ULIMITS)
        assert result.returncode == 0, result.stderr
        memlock_soft, memlock_hard, stack_soft, stack_hard, *_ = map(int, result.stdout.split())
        assert (memlock_soft, memlock_hard) == (8388608, 8388608)  # what this daemon has
        assert (stack_soft, stack_hard) == (64 * 1024 * 1024, 64 * 1024 * 1024)
        warnings = [line for line in result.stderr.splitlines() if "cannot grant ulimit memlock=unlimited" in line]
        assert len(warnings) == 1
        again = run_in(project, "true")  # the daemon's answer is remembered: still works, still says so
        assert again.returncode == 0 and "cannot grant ulimit memlock" in again.stderr
    finally:
        remove_images(engine, project.name)


def test_the_tour_form_runs_the_command_after_dashes_in_the_project_here(cuda12):
    """`cudaenv run -- python train.py`, as the README's tour types it, from the project directory."""
    result = run_cli("run", "--gpus", "none", "--", "python", "-c", "import os; print('ran in', os.getcwd())", cwd=cuda12.root, timeout=600, env=cli_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ran in /workspace"


@pytest.mark.parametrize("form", [("{root}", "--gpus", "none", "--"), ("--gpus=none", "{root}", "--")],
                         ids=["dir-first", "gpus-first"])
def test_run_on_a_current_image_ends_with_the_containers_code_and_output(cuda12, engine, form):
    """`cudaenv run DIR --gpus none -- CMD` on a recorded current image, through the console
    entry point (click): the container's exit code and its output, whatever the option order."""
    args = ["run", *(a.format(root=cuda12.root) for a in form), "sh", "-c", "echo out; echo err >&2; exit 5"]
    assert run_in(cuda12, "true").returncode == 0  # records the image as current
    proc = run_cli(*args, timeout=600, env=cli_env())
    # the container's two streams reach its log through separate pipes: their order may differ
    assert proc.returncode == 5, proc.stderr
    assert sorted(proc.stdout.splitlines(keepends=True)) == ["err\n", "out\n"]
    assert "Traceback" not in proc.stderr
    assert containers_of(engine, cuda12) == []


def test_a_relative_project_directory_relocks_and_runs(tmp_path_factory, standins, engine):
    project = new_project(tmp_path_factory, standins, f"rel{uuid.uuid4().hex[:4]}", CUDA_12, "12.4")
    (project.root / "requirements.txt").write_text("-r base.txt\n")
    (project.root / "base.txt").write_text("# nothing yet\n")
    config = project.root / "cudaenv.toml"
    config.write_text(config.read_text().replace('python = "3.11"', 'python = "3.11"\nrequirements = ["requirements.txt"]'))
    try:
        result = run_cli("run", project.root.name, "--gpus", "none", "--", "true", cwd=project.root.parent, timeout=600, env=cli_env())
        assert result.returncode == 0, result.stderr
        assert "File not found" not in result.stderr and "locking first" in result.stderr
        check = run_cli("lock", project.root.name, "--check", cwd=project.root.parent, timeout=600, env=cli_env())
        assert check.returncode == 0, check.stdout + check.stderr  # the relock wrote a current lock
        # an included file changes: run relocks (naming it) and does not run the old image
        (project.root / "base.txt").write_text("# still nothing, but another file\n")
        result = run_cli("run", project.root.name, "--gpus", "none", "--", "true", cwd=project.root.parent, timeout=600, env=cli_env())
        assert result.returncode == 0, result.stderr
        assert "base.txt changed since the lock was written; locking first" in result.stderr
    finally:
        remove_images(engine, project.name)


# --- detach, exec, ps, stop ---------------------------------------------------------------------


def test_detached_run_prints_the_container_name_and_keeps_it_running(cuda12, detached, engine):
    assert detached.startswith(f"cudaenv-{cuda12.name}-")
    (container,) = containers_of(engine, cuda12)
    assert container.name == detached
    assert container.status == "running"


def test_exec_runs_in_the_detached_container_and_returns_its_exit_code(detached):
    result = cudaenv("exec", detached, "sh", "-c", "echo exec-as-$(id -u) in $PWD; exit 5")
    assert result.returncode == 5
    assert result.stdout.strip() == f"exec-as-{RUN_UID} in /workspace"


def test_exec_in_an_unknown_container_is_bad_usage(cuda12):
    result = cudaenv("exec", f"{PREFIX}-no-such-container", "true")
    assert result.returncode == 2
    assert "no cudaenv container named" in result.stderr


def test_ps_json_is_one_object_listing_the_running_container(cuda12, detached):
    result = cudaenv("ps", "--json")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)  # the whole of stdout is one JSON document
    assert isinstance(listing, dict)
    (row,) = rows_for(listing, cuda12)
    assert row["name"] == detached
    assert row["status"] == "running"
    assert row["cuda"] == "12.4" and row["python"] == "3.11"
    assert row["gpus"] == "none"
    assert row["project_dir"] == str(cuda12.root.resolve())


def test_ps_lists_exited_containers_only_with_all(cuda12, engine):
    result = run_in(cuda12, "sh", "-c", "exit 4", options=("--gpus", "none", "--detach"))
    assert result.returncode == 0, result.stderr
    name = result.stdout.strip()
    wait_until(lambda: engine.client.containers.get(name).status == "exited", what=f"{name} to exit")
    assert rows_for(ps_json(), cuda12) == []
    (row,) = rows_for(ps_json("--all"), cuda12)
    assert (row["name"], row["status"], row["exit_code"]) == (name, "exited", 4)


def test_stop_directory_stops_and_removes_the_running_container(cuda12, detached, engine):
    result = cudaenv("stop", str(cuda12.root), "--timeout", "5")
    assert result.returncode == 0, result.stderr
    assert detached in result.stdout
    assert containers_of(engine, cuda12) == []


def test_stop_directory_removes_exited_containers_of_the_project_too(cuda12, engine):
    result = run_in(cuda12, "true", options=("--gpus", "none", "--detach"))
    name = result.stdout.strip()
    wait_until(lambda: engine.client.containers.get(name).status == "exited", what=f"{name} to exit")
    result = cudaenv("stop", str(cuda12.root))
    assert result.returncode == 0, result.stderr
    assert containers_of(engine, cuda12) == []


def test_stop_directory_leaves_other_projects_running(cuda12, cuda11, detached, engine):
    other = run_in(cuda11, "sleep", "300", options=("--gpus", "none", "--detach"))
    assert other.returncode == 0, other.stderr
    assert cudaenv("stop", str(cuda12.root), "--timeout", "5").returncode == 0
    assert [c.status for c in containers_of(engine, cuda11)] == ["running"]


def test_stop_by_container_name_stops_only_that_container(cuda12, detached, engine):
    second = run_in(cuda12, "sleep", "300", options=("--gpus", "none", "--detach")).stdout.strip()
    result = cudaenv("stop", detached, "--timeout", "5", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"stopped": [detached]}
    assert [c.name for c in containers_of(engine, cuda12)] == [second]


def test_two_projects_with_different_stacks_run_at_the_same_time(cuda12, cuda11):
    names = {}
    for project in (cuda12, cuda11):
        result = run_in(project, "sleep", "300", options=("--gpus", "none", "--detach"))
        assert result.returncode == 0, result.stderr
        names[project.name] = result.stdout.strip()
    listing = ps_json()
    (row12,), (row11,) = rows_for(listing, cuda12), rows_for(listing, cuda11)
    assert (row12["status"], row11["status"]) == ("running", "running")
    assert (row12["cuda"], row11["cuda"]) == ("12.4", "11.8")
    assert row12["image"] != row11["image"]
    inside = {name: cudaenv("exec", names[name], "sh", "-c", "echo $NVIDIA_REQUIRE_CUDA").stdout
              for name in names}
    assert "cuda>=12.4" in inside[cuda12.name]
    assert "cuda>=11.8" in inside[cuda11.name]


# --- building on demand -------------------------------------------------------------------------


@pytest.fixture
def unbuilt(tmp_path_factory, standins, engine):
    project = new_project(tmp_path_factory, standins, f"fresh{uuid.uuid4().hex[:4]}", CUDA_12, "12.4")
    standins.provide(CUDA_11)  # for the test that edits the project to CUDA 11.8
    yield project
    remove_images(engine, project.name)


def image_tags(engine, project: ProjectDir) -> set[str]:
    return {tag for image in engine.client.images.list(name=f"cudaenv/{project.name}") for tag in image.tags}


def test_run_builds_the_image_first_when_it_is_missing(unbuilt, engine):
    assert image_tags(engine, unbuilt) == set()
    result = run_in(unbuilt, "true")
    assert result.returncode == 0, result.stderr
    assert "building the image" in result.stderr
    assert unbuilt.tag in image_tags(engine, unbuilt)


def test_run_reuses_a_current_image_without_building(unbuilt):
    assert run_in(unbuilt, "true").returncode == 0
    again = run_in(unbuilt, "true")
    assert again.returncode == 0, again.stderr
    assert "building the image" not in again.stderr


def test_run_rebuilds_under_a_new_tag_after_the_lock_inputs_change(unbuilt, engine):
    assert run_in(unbuilt, "true").returncode == 0
    first_tag = unbuilt.tag
    config = unbuilt.root / "cudaenv.toml"
    config.write_text(config.read_text().replace('version = "12.4"', 'version = "11.8"'))
    result = run_in(unbuilt, "sh", "-c", "echo $NVIDIA_REQUIRE_CUDA")
    assert result.returncode == 0, result.stderr
    assert "building the image" in result.stderr
    assert unbuilt.tag != first_tag
    assert {first_tag, unbuilt.tag} <= image_tags(engine, unbuilt)
    assert "cuda>=11.8" in result.stdout  # the container ran from the new image


def test_a_current_image_is_found_from_its_recorded_inputs_without_rendering(unbuilt):
    assert run_in(unbuilt, "true").returncode == 0  # locks and builds (the lock it writes is a new input)
    assert run_in(unbuilt, "true").returncode == 0  # checks in full, and records the tag for these inputs
    code = ("import sys\nfrom cudaenv.cli.run_cmd import _current_image\nfrom cudaenv.engine import get_engine\n"
            "from cudaenv.project import load_project\n"
            "tag, labels = _current_image(load_project(sys.argv[1]), get_engine(), rebuild=False)\n"
            "print(tag)\n"
            "for heavy in ('cudaenv.images.build', 'cudaenv.images.render', 'jinja2', 'docker', 'cudaenv.matrix.model'):\n"
            "    assert heavy not in sys.modules, heavy + ' imported'\n")
    proc = subprocess.run([sys.executable, "-c", code, str(unbuilt.root)], capture_output=True, text=True, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == unbuilt.tag


def test_a_changed_dockerignore_makes_the_recorded_image_stale_and_run_builds(unbuilt, engine):
    assert run_in(unbuilt, "true").returncode == 0
    first_tag = unbuilt.tag
    assert "building the image" not in run_in(unbuilt, "true").stderr  # recorded and current
    (unbuilt.root / ".dockerignore").write_text("scratch/\n")
    result = run_in(unbuilt, "true")
    assert result.returncode == 0, result.stderr
    assert "building the image" in result.stderr
    assert unbuilt.tag != first_tag and unbuilt.tag in image_tags(engine, unbuilt)


def test_a_recorded_image_that_was_removed_is_built_again(unbuilt, engine):
    assert run_in(unbuilt, "true").returncode == 0
    remove_images(engine, unbuilt.name)
    result = run_in(unbuilt, "true")
    assert result.returncode == 0, result.stderr
    assert "building the image" in result.stderr


def test_rebuild_flag_builds_even_a_current_image(unbuilt):
    assert run_in(unbuilt, "true").returncode == 0
    result = run_in(unbuilt, "true", options=("--gpus", "none", "--rebuild"))
    assert result.returncode == 0, result.stderr
    assert "building the image" in result.stderr


# --- signals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_a_foreground_run_stops_the_container_and_leaves_nothing(cuda12, engine, signum):
    # SIGINT as a terminal delivers it, whatever this pytest inherited (a background job ignores it)
    process = subprocess.Popen([*CUDAENV, "run", str(cuda12.root), "--gpus", "none", "--",
                                "sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=cli_env(),
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until(lambda: [c for c in containers_of(engine, cuda12) if c.status == "running"],
                   what="the foreground container to start")
        sent = time.monotonic()
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
        assert time.monotonic() - sent < 30, "cudaenv waited for the command instead of stopping it"
        assert process.returncode != 0, stderr
        assert containers_of(engine, cuda12) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


# --- GPUs: what Docker is asked for, and the host checks ---------------------------------------------


def test_gpus_all_asks_docker_for_every_nvidia_gpu(cuda12, engine):
    attrs = create_for(engine, cuda12, "all")
    (request,) = attrs["HostConfig"]["DeviceRequests"]
    assert request["Driver"] == "nvidia"
    assert request["Count"] == -1
    assert request["Capabilities"] == [["gpu", "compute", "utility"]]
    assert attrs["Config"]["Labels"][LABEL_GPUS] == "all"


def test_gpu_ids_ask_docker_for_exactly_those_devices(cuda12, engine):
    attrs = create_for(engine, cuda12, "0,2")
    (request,) = attrs["HostConfig"]["DeviceRequests"]
    assert request["DeviceIDs"] == ["0", "2"]
    assert attrs["Config"]["Labels"][LABEL_GPUS] == "0,2"


def test_gpu_count_asks_docker_for_that_many_gpus(cuda12, engine):
    (request,) = create_for(engine, cuda12, "2")["HostConfig"]["DeviceRequests"]
    assert request["Count"] == 2
    assert not request["DeviceIDs"]


def test_gpus_none_asks_docker_for_no_device(cuda12, engine):
    created = create_for(engine, cuda12, "none")
    assert not created["HostConfig"]["DeviceRequests"]
    # and the base image's NVIDIA_VISIBLE_DEVICES=all cannot bring GPUs back through the runtime hook
    assert "NVIDIA_VISIBLE_DEVICES=void" in created["Config"]["Env"]


def test_a_port_with_an_address_is_published_on_that_address_only(cuda12, engine):
    created = create_for(engine, cuda12, "none", ports=("127.0.0.1:18888:8888", "6006"))
    bindings = created["HostConfig"]["PortBindings"]
    assert bindings["8888/tcp"] == [{"HostIp": "127.0.0.1", "HostPort": "18888"}]
    assert bindings["6006/tcp"][0]["HostPort"] == ""  # docker picks a free port


def test_gpus_auto_skips_the_gpu_another_projects_running_container_holds(cuda12, cuda11, engine, monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "A100,A100")
    holder(engine, cuda11, "0")
    attrs = create_for(engine, cuda12, "auto")
    (request,) = attrs["HostConfig"]["DeviceRequests"]
    assert request["DeviceIDs"] == ["1"]
    assert attrs["Config"]["Labels"][LABEL_GPUS] == "1"


def test_gpus_auto_reuses_a_gpu_once_its_holder_has_exited(cuda12, cuda11, engine, monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "A100")
    exited = holder(engine, cuda11, "0", command=("true",))
    wait_until(lambda: engine.inspect(exited)["State"]["Status"] == "exited", what="the holder to exit")
    (request,) = create_for(engine, cuda12, "auto")["HostConfig"]["DeviceRequests"]
    assert request["DeviceIDs"] == ["0"]


def test_gpus_auto_refuses_when_no_gpu_is_free(cuda12, cuda11, engine):
    held = engine.inspect(holder(engine, cuda11, "0"))["Name"].lstrip("/")
    result = run_in(cuda12, "true", options=("--gpus", "auto"), CUDAENV_GPUS="A100")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "free GPU" in result.stderr
    assert held in result.stderr  # who holds it
    assert containers_of(engine, cuda12) == []


def test_gpus_auto_in_the_cli_picks_a_gpu_nvidia_smi_reports_and_no_one_holds(cuda12, cuda11, engine, fake_nvidia_smi):
    """The run itself cannot start (no NVIDIA runtime here): Docker's create event shows what it held."""
    holder(engine, cuda11, "0")
    name = f"{cuda12.name}-auto-{uuid.uuid4().hex[:6]}"
    since = int(time.time()) - 1
    result = run_in(cuda12, "true", options=("--gpus", "auto", "--name", name), PATH=fake_nvidia_smi())
    until = int(time.time()) + 1
    assert result.returncode == 1
    assert NO_RUNTIME in result.stderr
    created = [event["Actor"]["Attributes"] for event in engine.client.events(
        since=since, until=until, decode=True, filters={"type": "container", "event": "create"})
        if event["Actor"]["Attributes"].get("name") == name]
    assert [attributes[LABEL_GPUS] for attributes in created] == ["1"]


def test_missing_nvidia_runtime_is_a_clear_error_and_leaves_nothing(cuda12, engine):
    result = run_in(cuda12, "true", options=("--gpus", "all"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert NO_RUNTIME in result.stderr
    assert "NVIDIA Container Toolkit" in result.stderr
    assert "--gpus none" in result.stderr  # the way to run without a GPU on purpose
    assert containers_of(engine, cuda12) == []


def test_missing_nvidia_runtime_fails_a_detached_run_too(cuda12, engine):
    result = run_in(cuda12, "sleep", "300", options=("--gpus", "all", "--detach"))
    assert result.returncode == 1
    assert NO_RUNTIME in result.stderr
    assert result.stdout.strip() == ""  # no container name: nothing is running
    assert containers_of(engine, cuda12) == []


def test_the_default_gpus_of_a_project_request_a_gpu(cuda12):
    """No silent CPU fallback: without --gpus, a project asks for its GPUs (and here there is no runtime)."""
    result = run_in(cuda12, "true", options=())
    assert result.returncode == 1
    assert NO_RUNTIME in result.stderr


def test_driver_too_old_for_the_images_cuda_is_refused_before_starting(cuda12, engine, fake_nvidia_smi):
    result = run_in(cuda12, "true", options=("--gpus", "all"), PATH=fake_nvidia_smi("470.82.01"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "driver 470.82.01 cannot run the image's CUDA 12.4" in result.stderr
    assert "upgrade the driver" in result.stderr
    assert NO_RUNTIME not in result.stderr  # refused before Docker was asked to start anything
    assert containers_of(engine, cuda12) == []


def test_declared_driver_too_old_for_the_image_is_refused_by_the_host_check(unbuilt):
    assert run_in(unbuilt, "true").returncode == 0  # the image exists and is current
    result = run_in(unbuilt, "true", options=("--gpus", "all"), CUDAENV_DRIVER_VERSION="470.82.01")
    assert "building the image" not in result.stderr
    assert result.returncode == 1
    assert "driver 470.82.01 cannot run the image's CUDA 12.4" in result.stderr


def test_declaring_a_fitting_host_driver_neither_relocks_nor_rebuilds(unbuilt):
    assert run_in(unbuilt, "true").returncode == 0
    lock = (unbuilt.root / "cudaenv.lock").read_text()
    result = run_in(unbuilt, "true", options=("--gpus", "none"), CUDAENV_DRIVER_VERSION="550.54.15")
    assert result.returncode == 0, result.stderr
    assert "building the image" not in result.stderr
    assert (unbuilt.root / "cudaenv.lock").read_text() == lock


def test_an_old_driver_is_not_refused_for_a_cuda_it_runs(cuda11, fake_nvidia_smi):
    """470 runs CUDA 11.8 through minor-version compatibility: the run goes on to Docker."""
    result = run_in(cuda11, "true", options=("--gpus", "all"), PATH=fake_nvidia_smi("470.82.01"))
    assert result.returncode == 1
    assert "cannot run the image's CUDA" not in result.stderr
    assert NO_RUNTIME in result.stderr


def test_driver_check_is_skipped_for_a_run_without_gpus(cuda12, fake_nvidia_smi):
    result = run_in(cuda12, "true", options=("--gpus", "none"), PATH=fake_nvidia_smi("470.82.01"))
    assert result.returncode == 0, result.stderr


# --- a real terminal ------------------------------------------------------------------------------


def run_in_a_terminal(argv: list[str], keystrokes: bytes, env: dict, timeout: float = 120) -> tuple[int, bytes]:
    """Run ``argv`` on a pseudo-terminal (as a person at a shell would), type ``keystrokes``,
    and return (exit code, everything the terminal showed)."""
    import os
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: a process whose stdin and stdout are a TTY
        os.execvpe(argv[0], argv, env)
    shown, typed, deadline = b"", False, time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            shown += chunk
        if not typed and (b"$ " in shown or b"# " in shown or time.monotonic() > deadline - timeout + 15):
            os.write(fd, keystrokes)
            typed = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), shown


def test_shell_on_a_terminal_is_interactive_and_passes_the_exit_code_on(cuda12, engine):
    code, shown = run_in_a_terminal(
        [*CUDAENV, "shell", str(cuda12.root), "--gpus", "none"],
        b"echo inside-$((6*7)) && test -t 0 && echo stdin-is-a-tty; exit 5\r", cli_env())
    assert b"inside-42" in shown
    assert b"stdin-is-a-tty" in shown
    assert code == 5
    assert containers_of(engine, cuda12) == []  # an interactive session leaves nothing behind
