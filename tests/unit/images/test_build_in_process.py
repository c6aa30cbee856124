"""`cudaenv build`'s orchestration in process: lock when needed, render, make sure the stack base is
here, build; and what the user reads meanwhile (progress lines, warnings, a failed build's hint).

The engine is a stand-in that implements ``cudaenv.engine.Engine`` for images (Docker is not
needed for the unit group); a docker CLI is a stand-in script only where the BuildKit probe must
run one. Everything cudaenv decides (the lock, the plan, the base, the requests) is the real code.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudaenv.engine import BuildResult, Engine, ImageInfo, buildkit_probe
from cudaenv.engine.builders import find_cli_builder
from cudaenv.errors import BuildError, NoStackError, UserError
from cudaenv.images import build
from cudaenv.images.build import (BuildProgress, build_project, buildkit_available, pull_hint, report_build_error,
                                  warn_secret_looking_files)
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import current_lock, lock_project, read_lock

CLEAR = "\r\033[K"


class Terminal(io.StringIO):
    """stderr as a terminal: BuildProgress redraws one line, and click keeps the escape codes."""

    def isatty(self) -> bool:
        return True


class Piped(io.StringIO):
    def isatty(self) -> bool:
        return False


def attach(monkeypatch, stream):
    """stderr for the rest of the test (called in the test itself: pytest sets its own capture
    when the test's call begins, after the fixtures)."""
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


@pytest.fixture
def clock(monkeypatch):
    """The build's clock: starts at 100.0 and moves only when a test says so."""
    now = SimpleNamespace(value=100.0)
    monkeypatch.setattr(build, "time", SimpleNamespace(monotonic=lambda: now.value))
    return now


# --- what the user reads ---------------------------------------------------------------------------------


def test_a_line_goes_to_stderr_whole_or_as_a_fragment(monkeypatch):
    stderr = attach(monkeypatch, Piped())
    stdout = Piped()
    monkeypatch.setattr(sys, "stdout", stdout)
    build._say("one")
    build._say("two", nl=False)
    build._say(" three")
    assert stderr.getvalue() == "one\ntwo three\n" and stdout.getvalue() == ""


def test_progress_on_a_pipe_is_one_line_per_new_step_with_its_time(clock, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    progress = BuildProgress(verbose=False)
    assert progress.tty is False and progress.verbose is False
    clock.value = 101.25
    progress("#1 [internal] load build definition from Dockerfile")
    progress("#4 [1/3] FROM docker.io/library/debian:bookworm")
    progress("#4 DONE 0.0s")
    clock.value = 112.34
    progress("#4 [1/3] FROM docker.io/library/debian:bookworm")  # the same step again: shown once
    progress("#5 [2/3] RUN  echo   preparing")
    progress("Step 3/5 : COPY requirements.txt /tmp/")  # the classic builder's step lines
    progress("#5 0.301 preparing")
    progress("#6 [3/3] RUN " + "x" * 200)
    progress.close()
    assert stderr.getvalue().splitlines() == [
        "[ 1.2s] [1/3] FROM docker.io/library/debian:bookworm",
        "[ 12.3s] [2/3] RUN echo preparing",
        "[ 12.3s] Step 3/5 : COPY requirements.txt /tmp/",
        ("[ 12.3s] [3/3] RUN " + "x" * 200)[:160],
    ]
    assert progress.last == "[3/3] RUN " + "x" * 200


def test_progress_on_a_terminal_redraws_one_line_and_clears_it_at_the_end(clock, monkeypatch):
    terminal = attach(monkeypatch, Terminal())
    progress = BuildProgress(verbose=False)
    assert progress.tty is True
    clock.value = 103.0
    progress("#4 [1/3] FROM docker.io/library/debian:bookworm")
    progress("#6 [2/3] RUN " + "y" * 200)
    assert terminal.getvalue() == (CLEAR + "[ 3.0s] [1/3] FROM docker.io/library/debian:bookworm"
                                   + CLEAR + ("[ 3.0s] [2/3] RUN " + "y" * 200)[:100])
    progress.close()
    assert terminal.getvalue().endswith(CLEAR) and "\n" not in terminal.getvalue()


def test_progress_that_showed_nothing_leaves_the_terminal_alone(monkeypatch):
    terminal = attach(monkeypatch, Terminal())
    progress = BuildProgress(verbose=False)
    progress("#1 [internal] load .dockerignore")
    progress("plain output of a step")
    progress.close()
    assert terminal.getvalue() == ""


def test_verbose_progress_passes_every_line_through(monkeypatch):
    terminal = attach(monkeypatch, Terminal())
    progress = BuildProgress(verbose=True)
    assert progress.tty is False and progress.verbose is True
    for line in ("#1 [internal] load build definition", "#5 0.301 preparing", "#5 [2/3] RUN x", "#5 [2/3] RUN x"):
        progress(line)
    progress.close()
    assert terminal.getvalue() == ("#1 [internal] load build definition\n#5 0.301 preparing\n"
                                   "#5 [2/3] RUN x\n#5 [2/3] RUN x\n")


def test_a_stack_base_message_gets_a_line_of_its_own(clock, monkeypatch):
    terminal = attach(monkeypatch, Terminal())
    progress = BuildProgress(verbose=False)
    build._base_progress(progress, "stack base is here")  # nothing drawn yet: nothing to clear
    assert terminal.getvalue() == "stack base is here\n"
    progress("#4 [1/3] FROM debian")
    terminal.truncate(0), terminal.seek(0)
    build._base_progress(progress, "building the stack base")
    assert terminal.getvalue() == CLEAR + "building the stack base\n"
    terminal.truncate(0), terminal.seek(0)
    build._base_progress(lambda line: None, "a plain callback")
    build._base_progress(BuildProgress(verbose=True), "verbose")
    assert terminal.getvalue() == "a plain callback\nverbose\n"


class Drawn:
    """A progress callback that says only some of what BuildProgress says about itself."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)

    def __call__(self, line):
        pass


def test_a_line_is_cleared_only_for_a_progress_that_is_on_a_terminal_and_drew_one(monkeypatch):
    terminal = attach(monkeypatch, Terminal())
    build._base_progress(Drawn(tty=True), "terminal, nothing drawn")
    build._base_progress(Drawn(last="[1/3] FROM debian"), "drawn, not said to be a terminal")
    build._base_progress(Drawn(tty=True, last="[1/3] FROM debian"), "both")
    assert terminal.getvalue() == ("terminal, nothing drawn\ndrawn, not said to be a terminal\n"
                                   + CLEAR + "both\n")


def test_a_piped_progress_line_is_never_cleared(clock, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    progress = BuildProgress(verbose=False)
    progress("#4 [1/3] FROM debian")
    build._base_progress(progress, "stack base is here")
    assert stderr.getvalue() == "[ 0.0s] [1/3] FROM debian\nstack base is here\n"


# --- a failed build: its step, its last lines, and what to do about a base that could not be pulled -----


LOCAL_BASE = "cudaenv-base:hash-0123456789abcdef"
MIRROR_HINT = ("the base image could not be pulled: if Docker Hub is unreachable or rate-limited here, set "
               "[build] base_registry in cudaenv.toml to a mirror or private registry that has it (e.g. "
               "base_registry = \"registry.example.com/dockerhub\"), or `cudaenv publish` the bases there")
BUILDER_HINT = ("the builder could not see the local stack base image: a buildx builder with the "
                "docker-container driver has no access to the engine's images; switch to the engine's own "
                "builder (`docker buildx use default`) or build `cudaenv dockerfile --standalone`")
PULL_FAILURES = ["failed to resolve source metadata", "pull access denied", "failed to do request",
                 "manifest unknown", "not found: manifest", "registry-1.docker.io", "toomanyrequests",
                 "error pulling image", "failed to authorize"]


@pytest.mark.parametrize("marker", PULL_FAILURES, ids=[m.replace(" ", "-").replace(":", "") for m in PULL_FAILURES])
def test_each_way_a_pull_fails_gets_the_mirror_hint(marker):
    assert pull_hint(f"ERROR: something went wrong: {marker} for nvidia/cuda:12.4.1-runtime") == MIRROR_HINT
    assert pull_hint(f"#3 [internal] load metadata for docker.io/{LOCAL_BASE}\n{marker}") == BUILDER_HINT


def test_a_reference_with_no_manifest_gets_the_mirror_hint_and_a_local_base_the_builder_hint():
    assert pull_hint("ERROR: docker.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04: not found") == MIRROR_HINT
    assert pull_hint(f"ERROR: docker.io/library/{LOCAL_BASE}: not found") == BUILDER_HINT


def test_other_failures_get_no_hint():
    assert pull_hint("executor failed running [/bin/sh -c exit 3]: exit code: 3") is None
    assert pull_hint(f"FROM {LOCAL_BASE}\nexecutor failed running: exit code: 1") is None  # the base is no failure
    assert pull_hint("ERROR: not found") is None  # no reference named
    assert pull_hint("cudaenv-base:hash-XYZ failed to do request") == MIRROR_HINT  # not a hash tag


def test_a_failed_build_is_reported_with_its_last_lines_and_a_hint(monkeypatch):
    stderr = attach(monkeypatch, Piped())
    report_build_error(BuildError("build failed at [2/3] RUN pip install", step="[2/3] RUN pip install",
                                  log_tail="ERROR: docker.io/nvidia/cuda:9.9: not found"))
    assert stderr.getvalue() == ("✗ build failed at [2/3] RUN pip install\n--- last lines of the failing step ---\n"
                                 "ERROR: docker.io/nvidia/cuda:9.9: not found\n" + f"→ {MIRROR_HINT}\n")


def test_a_failed_build_without_output_or_hint_is_one_line(monkeypatch):
    stderr = attach(monkeypatch, Piped())
    report_build_error(BuildError("build failed: exit code 3"))
    assert stderr.getvalue() == "✗ build failed: exit code 3\n"


def test_the_hint_reads_the_message_too(monkeypatch):
    stderr = attach(monkeypatch, Piped())
    report_build_error(BuildError("pull access denied for nvidia/cuda"))
    assert stderr.getvalue() == f"✗ pull access denied for nvidia/cuda\n→ {MIRROR_HINT}\n"


# --- files that look like secrets ------------------------------------------------------------------------


def test_a_secret_looking_file_is_warned_about_until_dockerignore_names_it(tmp_path, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    root = tmp_path / "proj"
    root.mkdir()
    (root / "api_token.txt").write_text("t0ken\n")
    (root / "train.py").write_text("print(1)\n")
    project = SimpleNamespace(root=root)
    warn_secret_looking_files(project)
    warning = ("warning: api_token.txt looks like a secret and will be copied into the image; "
               "add it to .dockerignore if it is one\n")
    assert stderr.getvalue() == warning
    (root / ".dockerignore").write_text("api_token.txt\n")
    stderr.truncate(0), stderr.seek(0)
    warn_secret_looking_files(project)
    assert stderr.getvalue() == ""
    (root / ".dockerignore").write_bytes(b"api_token.txt\n\xff\xfe\n")  # not UTF-8: read as no rules at all
    warn_secret_looking_files(project)
    assert stderr.getvalue() == warning
    (root / ".dockerignore").unlink()
    (root / ".dockerignore").mkdir()  # not a file: no rules
    stderr.truncate(0), stderr.seek(0)
    warn_secret_looking_files(project)
    assert stderr.getvalue() == warning


# --- whether BuildKit is there -------------------------------------------------------------------------


@pytest.fixture
def probe(monkeypatch, tmp_path):
    """A private cache, no docker CLI but what a test puts on PATH, and the probe's memo cleared."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDAENV_DOCKER_CLI", raising=False)
    for name in [n for n in os.environ if n.startswith("DOCKER_")]:
        monkeypatch.delenv(name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    find_cli_builder.cache_clear()
    yield bin_dir
    find_cli_builder.cache_clear()


def docker_cli(bin_dir: Path, *, buildx: bool) -> Path:
    """A stand-in docker CLI: `buildx version` succeeds or not; `--version` says 27.0."""
    cli = bin_dir / "docker"
    cli.write_text("#!/bin/sh\n"
                   f'if [ "$1" = buildx ]; then exit {0 if buildx else 1}; fi\n'
                   'echo "Docker version 27.0.3, build 7d4bcd8"\n')
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    return cli


def test_no_buildkit_is_asked_for(probe):
    buildkit_probe.remember(buildkit_probe.probe_key(), ("docker", "buildx"))
    assert buildkit_available(False) is True
    assert buildkit_available(True) is False


def test_the_remembered_answer_decides_without_running_a_cli(probe):
    docker_cli(probe, buildx=True)  # would say yes if it were asked
    buildkit_probe.remember(buildkit_probe.probe_key(), None)
    assert buildkit_available(False) is False


def test_with_nothing_remembered_the_clis_on_path_are_probed(probe):
    assert buildkit_available(False) is False  # no docker CLI at all
    find_cli_builder.cache_clear()
    docker_cli(probe, buildx=False)
    assert buildkit_available(False) is False  # docker 27 without buildx: no BuildKit
    find_cli_builder.cache_clear()
    docker_cli(probe, buildx=True)
    os.utime(probe / "docker", ns=(1, 1))  # another file: the probe's key changes
    assert buildkit_available(False) is True
    assert buildkit_probe.recall(buildkit_probe.probe_key()) == (str(probe / "docker"), "buildx")


# --- build_project ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


class ImageEngine(Engine):
    """An engine's images: inspect by ID or name, build (recording each request, and whether its
    secrets were there while it ran), tag. Containers are out of scope."""

    name = "stand-in"

    def __init__(self, images=()):
        self.store = {i.id: i for i in images}
        self.builds: list[SimpleNamespace] = []

    def image_info(self, image):
        for info in self.store.values():
            if image == info.id or image in info.tags:
                return info
        return None

    def build(self, request, on_output=None, *, classic=False):
        secrets = {name: (path, path.is_file() and path.read_text()) for name, path in request.secrets.items()}
        self.builds.append(SimpleNamespace(request=request, on_output=on_output, classic=classic, secrets=secrets))
        if on_output is not None:
            on_output(f"#5 [2/3] RUN step of build {len(self.builds)}")
        image_id = "sha256:" + hashlib.sha256(repr(request.tags).encode()).hexdigest()
        self.store[image_id] = ImageInfo(id=image_id, tags=tuple(request.tags), labels=dict(request.labels),
                                         diff_ids=(), size=0)
        return BuildResult(image_id, tuple(request.tags), "buildx", "#5 DONE 1.5s\n", 1.5)

    def _no(self, *args, **kwargs):
        raise AssertionError("a build neither runs containers nor pulls without a base_registry")

    run = image_labels = remove_image = create = start = stream_output = wait = kill = stop = remove = _no
    containers = inspect = exec = interactive_argv = pull = tag = _no


class Progress:
    """The build's progress callback, as the CLI passes one: lines and whether it was closed."""

    tty = False
    last = ""

    def __init__(self):
        self.lines: list[str] = []
        self.closed = 0

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def close(self) -> None:
        self.closed += 1


CONFIG = ('[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "{cuda}"\n\n'
          '[target]\ndriver = "{driver}"\ngpus = ["A100"]\n\n[build]\nflavor = "runtime"\n')


@pytest.fixture
def workspace(monkeypatch, tmp_path, probe):
    for name in ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_EXCLUDE_NEWER", "CUDAENV_DRIVER_VERSION",
                 "CUDAENV_GPUS", "CUDAENV_MATRIX_PATH", "CUDAENV_UID", "CUDAENV_GID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))
    buildkit_probe.remember(buildkit_probe.probe_key(), ("docker", "buildx"))
    return tmp_path


def new_project(root: Path, *, name="p1", cuda="12.4", driver="550.54.15"):
    root.mkdir(exist_ok=True)
    (root / "cudaenv.toml").write_text(CONFIG.format(name=name, cuda=cuda, driver=driver))
    (root / "train.py").write_text("print('hi')\n")
    return load_project(root)


def test_a_project_without_a_lock_is_locked_then_built_on_a_new_base(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1")
    engine, progress, bases = ImageEngine(), Progress(), []
    plan, result = build_project(project, matrix, engine, progress=progress, on_base=bases.append)
    assert read_lock(project.lock_path) == plan.lock
    base_build, project_build = engine.builds
    assert base_build.request.tags == plan.base.tags and base_build.on_output is progress
    assert project_build.on_output is progress and (base_build.classic, project_build.classic) == (False, False)
    [outcome] = bases
    assert (outcome.how, outcome.image_id) == ("built", engine.image_info(plan.base.reference).id)
    assert project_build.request.labels["io.cudaenv.base-id"] == outcome.image_id
    assert project_build.request.tags == (plan.default_tag, plan.latest_tag)
    assert (project_build.request.no_cache, project_build.request.pull, project_build.request.network) == (
        False, False, None)
    assert (base_build.request.no_cache, base_build.request.pull, base_build.request.network) == (False, False, None)
    assert plan.buildkit is True and result == BuildResult(engine.image_info(plan.default_tag).id,
                                                           project_build.request.tags, "buildx", "#5 DONE 1.5s\n", 1.5)
    assert progress.lines == ["#5 [2/3] RUN step of build 1", "#5 [2/3] RUN step of build 2"]
    assert progress.closed == 1
    lines = stderr.getvalue().splitlines()
    assert lines[:2] == [f"{project.lock_path}: there is no cudaenv.lock; locking first",
                         "locking p1: resolving the stack and pinning requirements with uv …"]
    assert lines[2].startswith(f"building the stack base {plan.base.name} ({plan.base.reference}): ")
    assert lines[3:] == [f"stack base {plan.base.name}: built in 1.5s"]


def test_on_a_terminal_the_base_messages_clear_the_build_line_first(workspace, matrix, monkeypatch, clock):
    terminal = attach(monkeypatch, Terminal())
    project = new_project(workspace / "p1")
    progress = BuildProgress(verbose=False)
    plan, _ = build_project(project, matrix, ImageEngine(), progress=progress)
    text = terminal.getvalue()
    built = f"stack base {plan.base.name}: built in 1.5s\n"
    assert CLEAR + "[ 0.0s] [2/3] RUN step of build 1" + CLEAR + built in text  # the step line, cleared
    assert text.endswith(CLEAR + "[ 0.0s] [2/3] RUN step of build 2" + CLEAR)  # closed at the end


def test_a_current_lock_is_used_and_a_base_that_is_here_is_not_built_again(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1")
    engine = ImageEngine()
    build_project(project, matrix, engine, progress=Progress())
    lock_text = project.lock_path.read_text()
    stderr.truncate(0), stderr.seek(0)
    progress = Progress()
    plan, _ = build_project(project, matrix, engine, progress=progress, tags=("mine:v1", "mine:latest"),
                            no_cache=True, pull=True, network="host")
    assert project.lock_path.read_text() == lock_text
    latest = engine.builds[-1]
    assert len(engine.builds) == 3 and latest.request.tags == ("mine:v1", "mine:latest")
    assert (latest.request.no_cache, latest.request.pull, latest.request.network) == (True, False, "host")
    assert stderr.getvalue() == (f"stack base {plan.base.name} is here ({plan.base.reference}, shared by this "
                                 "stack's projects)\n")
    assert latest.request.labels["io.cudaenv.base-id"] == engine.image_info(plan.base.reference).id


def test_the_base_is_rebuilt_when_asked_with_the_builds_options(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1")
    engine = ImageEngine()
    build_project(project, matrix, engine, progress=Progress())
    stderr.truncate(0), stderr.seek(0)
    bases = []
    plan, _ = build_project(project, matrix, engine, progress=Progress(), rebuild_base=True, pull=True,
                            network="host", on_base=bases.append)
    base_build = engine.builds[-2]
    assert base_build.request.tags == plan.base.tags
    assert (base_build.request.no_cache, base_build.request.pull, base_build.request.network) == (True, True, "host")
    assert bases[0].how == "built" and stderr.getvalue().startswith(f"rebuilding the stack base {plan.base.name}")


def test_without_buildkit_the_plan_and_both_builds_are_classic(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1")
    engine = ImageEngine()
    plan, _ = build_project(project, matrix, engine, progress=Progress(), no_buildkit=True)
    assert plan.buildkit is False
    assert [b.classic for b in engine.builds] == [True, True]
    with_buildkit, _ = build_project(project, matrix, ImageEngine(), progress=Progress())
    assert with_buildkit.buildkit is True


def test_index_credentials_without_buildkit_are_refused_before_anything_is_built(workspace, matrix, monkeypatch):
    attach(monkeypatch, Piped())
    netrc = workspace / "netrc"
    netrc.write_text("machine pypi.org login me password s3cret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    project = new_project(workspace / "p1")
    engine = ImageEngine()
    with pytest.raises(UserError, match="no BuildKit builder was found"):
        build_project(project, matrix, engine, progress=Progress(), no_buildkit=True)
    assert engine.builds == []


def test_a_stale_lock_is_locked_again_and_says_why(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1")
    engine = ImageEngine()
    build_project(project, matrix, engine, progress=Progress())
    project = new_project(workspace / "p1", cuda="12.6")
    _, stale = current_lock(project, matrix)
    assert stale
    stderr.truncate(0), stderr.seek(0)
    plan, _ = build_project(project, matrix, engine, progress=Progress())
    assert stderr.getvalue().splitlines()[0] == f"{project.lock_path}: {stale[0]}; locking first"
    assert plan.stack.cuda.startswith("12.6") and read_lock(project.lock_path).stack["cuda"].startswith("12.6")


def test_a_project_no_stack_fits_is_refused_with_every_reason(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1", cuda="12.8", driver="450.80.02")
    result, lock = lock_project(project, matrix)
    assert lock is None and len(result.reasons) >= 1
    engine = ImageEngine()
    with pytest.raises(NoStackError) as raised:
        build_project(project, matrix, engine, progress=Progress())
    assert str(raised.value) == f"{project.config_path}: no stack fits the configuration: {'; '.join(result.reasons)}"
    assert engine.builds == [] and not project.lock_path.exists()


def test_index_credentials_reach_both_builds_as_a_secret_that_is_gone_afterwards(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    netrc = workspace / "netrc"
    netrc.write_text("machine pypi.org login me password s3cret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    project = new_project(workspace / "p1")
    engine = ImageEngine()
    plan, _ = build_project(project, matrix, engine, progress=Progress())
    assert plan.netrc
    for made in engine.builds:
        path, text = made.secrets["cudaenv_netrc"]
        assert text == "machine pypi.org login me password s3cret\n"
        assert path.parent.name.startswith("cudaenv-secrets-") and not path.parent.exists()
    assert engine.builds[0].secrets["cudaenv_netrc"][0] == engine.builds[1].secrets["cudaenv_netrc"][0]


def test_warnings_about_secret_looking_files_come_before_the_build(workspace, matrix, monkeypatch):
    stderr = attach(monkeypatch, Piped())
    project = new_project(workspace / "p1")
    (project.root / "api_token.txt").write_text("t0ken\n")
    build_project(project, matrix, ImageEngine(), progress=Progress())
    lines = stderr.getvalue().splitlines()
    warning = [n for n, line in enumerate(lines) if line.startswith("warning: api_token.txt looks like a secret")]
    building = [n for n, line in enumerate(lines) if line.startswith("building the stack base")]
    assert len(warning) == 1 and warning[0] < building[0]
