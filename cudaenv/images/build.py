"""Building a project's image: lock when needed, render, make sure the stack base is here, build.

The one build orchestration: ``cudaenv build``, ``cudaenv run`` (when the image is missing or
stale), ``cudaenv push`` and the exports call it; the CLI only parses and prints the result.
Progress and warnings go to stderr as they happen (``BuildProgress``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from cudaenv.errors import BuildError


def _say(text: str, nl: bool = True) -> None:
    """A line (or, with ``nl=False``, a fragment) on stderr, as ``click.echo(err=True)`` writes it."""
    import click

    click.echo(text, nl=nl, err=True)


def buildkit_available(no_buildkit: bool) -> bool:
    if no_buildkit:
        return False
    from cudaenv.engine import buildkit_probe

    remembered = buildkit_probe.recall(buildkit_probe.probe_key())  # without loading the builders
    if remembered is not buildkit_probe.MISS:
        return remembered is not None
    from cudaenv.engine.builders import find_cli_builder

    return find_cli_builder() is not None


class BuildProgress:
    """Live build progress: one updating line on a terminal, plain step lines otherwise."""

    def __init__(self, verbose: bool) -> None:
        self.tty = sys.stderr.isatty() and not verbose
        self.verbose = verbose
        self.started = time.monotonic()
        self.last = ""
        self.seen: set[str] = set()

    def __call__(self, line: str) -> None:
        if self.verbose:
            _say(line)
            return
        from cudaenv.engine.builders import STEP_HEADER, SDK_STEP

        m = STEP_HEADER.match(line)
        header = m.group(2) if m and not m.group(2).startswith("[internal]") else (line if SDK_STEP.match(line) else None)
        if header is None or header in self.seen:
            return
        self.seen.add(header)
        self.last = header
        elapsed = time.monotonic() - self.started
        text = " ".join(f"[{elapsed:6.1f}s] {header}".split())
        if self.tty:
            _say("\r\033[K" + text[:100], nl=False)
        else:
            _say(text[:160])

    def close(self) -> None:
        if self.tty and self.last:
            _say("\r\033[K", nl=False)


# How a builder words "could not fetch the base image" (BuildKit and the classic builder).
_PULL_FAILED = ("failed to resolve source metadata", "pull access denied", "failed to do request",
                "manifest unknown", "not found: manifest", "registry-1.docker.io", "toomanyrequests",
                "error pulling image", "failed to authorize")


def pull_hint(text: str) -> str | None:
    """When a base image could not be pulled, say how to use a mirror instead."""
    import re

    if re.search(r"cudaenv-base:hash-[0-9a-f]+", text) and (
            re.search(r"ERROR: \S+:\S+: not found", text) or any(marker in text for marker in _PULL_FAILED)):
        return ("the builder could not see the local stack base image: a buildx builder with the "
                "docker-container driver has no access to the engine's images; switch to the engine's own "
                "builder (`docker buildx use default`) or build `cudaenv dockerfile --standalone`")
    missing_image = re.search(r"ERROR: \S+:\S+: not found", text)  # BuildKit: the reference has no manifest
    if missing_image or any(marker in text for marker in _PULL_FAILED):
        return ("the base image could not be pulled: if Docker Hub is unreachable or rate-limited here, set "
                "[build] base_registry in cudaenv.toml to a mirror or private registry that has it (e.g. "
                "base_registry = \"registry.example.com/dockerhub\"), or `cudaenv publish` the bases there")
    return None


def report_build_error(exc: BuildError) -> None:
    _say(f"✗ {exc}")
    if exc.log_tail:
        _say("--- last lines of the failing step ---")
        _say(exc.log_tail)
    hint = pull_hint(f"{exc}\n{exc.log_tail}")
    if hint:
        _say(f"→ {hint}")


def build_project(project, matrix, engine, *, progress, tags=(), no_cache=False, pull=False, network=None,
                  no_buildkit=False, rebuild_base=False, on_base=None, target_name=None):
    """Lock when needed, render, make sure the stack base is here, build; (ImagePlan, BuildResult).
    ``on_base`` receives the stack base's ``BaseOutcome``; ``target_name``: the project's target to
    build (None: its only one, or the one this host runs). Raises BuildError on failure."""
    from cudaenv.images.plan import plan_image
    from cudaenv.images.stackbase import ensure_base

    lock = served_lock(project, matrix, target_name)
    plan = plan_image(project, matrix, lock, buildkit=buildkit_available(no_buildkit))
    warn_secret_looking_files(project)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cudaenv-secrets-") as secrets_dir:  # 0700, removed after the build
        base = ensure_base(engine, matrix, plan.base, rebuild=rebuild_base, pull=pull, network=network,
                           secrets_dir=Path(secrets_dir), progress=lambda line: _base_progress(progress, line),
                           build_output=progress, classic=no_buildkit)
        if on_base is not None:
            on_base(base)
        request = plan.request(tags=tuple(tags), no_cache=no_cache, pull=pull, network=network,
                               secrets_dir=Path(secrets_dir), base_id=base.image_id)
        result = engine.build(request, progress, classic=no_buildkit)
    progress.close()
    return plan, result


def _base_progress(progress, line: str) -> None:
    """A stack-base message on a line of its own, whatever the build's progress line shows."""
    if getattr(progress, "tty", False) and getattr(progress, "last", ""):
        _say("\r\033[K", nl=False)
    _say(line)


def warn_secret_looking_files(project) -> None:
    """One warning line per context file that looks like a secret and would still be copied."""
    from cudaenv.secrets.context import secret_looking_files

    ignore = project.root / ".dockerignore"
    try:
        user_text = ignore.read_text(encoding="utf-8") if ignore.is_file() else None
    except (OSError, UnicodeDecodeError):
        user_text = None
    for relative in secret_looking_files(project.root, user_text):
        _say(f"warning: {relative} looks like a secret and will be copied into the image; "
                   "add it to .dockerignore if it is one")


def served_lock(project, matrix, target_name: str | None = None, *, relock: bool = True):
    """The lock view of the target a build or run serves: ``target_name``, else the project's only
    target, else the one this host runs (``cudaenv.project.which_target``; none fits: exit 1 with
    each target's reason). A missing or stale lock is written first (``relock``; else None)."""
    from cudaenv.project.lock import current_lock, current_locks

    if target_name is not None:
        project.target_named(target_name)  # an unknown name is bad input, naming the targets
    if not project.several_targets:
        lock, stale = current_lock(project, matrix)
        if lock is None or stale:
            if not relock:
                return None
            _say(f"{project.lock_path}: {stale[0]}; locking first")
            lock = _relock(project, matrix)
        return lock
    whole, stale = current_locks(project, matrix)
    if whole is None or stale:
        if not relock:
            return None
        _say(f"{project.lock_path}: {stale[0]}; locking every target first")
        whole = _relock_targets(project, matrix)
    return whole.target(target_name or host_target_name(project, matrix, whole))


def host_target_name(project, matrix, whole) -> str:
    """The target this host runs, said on stderr with why; none: exit 1 naming each target's reason."""
    from cudaenv.errors import NoStackError
    from cudaenv.hosts.target import resolve_target
    from cudaenv.project.which_target import choose_fit, describe_host, judge_targets, no_fit_message

    host = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=()).host  # CUDAENV_* or detected
    fits = judge_targets(matrix, project, whole, host)
    chosen = choose_fit(fits)
    if chosen is None:
        raise NoStackError(no_fit_message(str(project.config_path), describe_host(host), fits))
    _say(f"target {chosen.name}: the one {describe_host(host)} runs (--target NAME picks another)")
    return chosen.name


def _relock_targets(project, matrix):
    from cudaenv.errors import NoStackError
    from cudaenv.project.lock import lock_targets, read_lock_file, write_atomically

    _say(f"locking {project.name}: resolving each target's stack and pinning requirements with uv …")
    results, whole = lock_targets(project, matrix)
    if whole is None:
        reasons = "; ".join(f"target {name}: {', '.join(r.reasons)}" for name, r in results.items() if not r.ok)
        raise NoStackError(f"{project.config_path}: a target has no stack: {reasons}")
    write_atomically(project.lock_path, whole.as_toml())
    return read_lock_file(project.lock_path)


def _relock(project, matrix):
    from cudaenv.project.lock import lock_project, read_lock, write_atomically

    _say(f"locking {project.name}: resolving the stack and pinning requirements with uv …")
    result, lock = lock_project(project, matrix)
    if lock is None:
        reasons = "; ".join(result.reasons)
        from cudaenv.errors import NoStackError

        raise NoStackError(f"{project.config_path}: no stack fits the configuration: {reasons}")
    write_atomically(project.lock_path, lock.as_toml())
    return read_lock(project.lock_path)
