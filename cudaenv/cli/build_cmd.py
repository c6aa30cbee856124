"""``cudaenv dockerfile`` and ``cudaenv build``: the project's image."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.errors import BuildError, UserError
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project

DIRECTORY = click.argument("directory", required=False, default=".",
                           type=click.Path(file_okay=False, exists=True, path_type=Path))


def buildkit_available(no_buildkit: bool) -> bool:
    if no_buildkit:
        return False
    from cudaenv.engine import buildkit_probe

    remembered = buildkit_probe.recall(buildkit_probe.probe_key())  # without loading the builders
    if remembered is not buildkit_probe.MISS:
        return remembered is not None
    from cudaenv.engine.builders import find_cli_builder

    return find_cli_builder() is not None


@click.command("dockerfile")
@DIRECTORY
@click.option("--no-buildkit", is_flag=True, help="Render for the classic builder (no cache mounts or secrets).")
@click.option("--base", "show_base", is_flag=True, help="Print the stack base's Dockerfile (the image the project's starts FROM).")
@click.option("--standalone", is_flag=True,
              help="One self-contained file with the base's layers inline (for builders that cannot see local images).")
def dockerfile(directory: Path, no_buildkit: bool, show_base: bool, standalone: bool) -> None:
    """Print the Dockerfile that `cudaenv build` would use for DIRECTORY.

    It is rendered from cudaenv.lock; when the lock is missing or stale, run `cudaenv lock`
    first (`cudaenv build` does that by itself). The project's Dockerfile starts FROM its stack
    base (cudaenv-base:hash-…), which `--base` prints.
    """
    from cudaenv.images.plan import plan_image
    from cudaenv.project.lock import current_lock

    if show_base and standalone:
        raise UserError("--base and --standalone: choose one (the base is always a file of its own)")
    project = load_project(directory)
    matrix = load_matrix()
    lock, stale = current_lock(project, matrix)
    if lock is None or stale:
        raise UserError(f"{project.lock_path}: {stale[0]}; run `cudaenv lock {directory}` first")
    plan = plan_image(project, matrix, lock, buildkit=buildkit_available(no_buildkit), standalone=standalone)
    click.echo(plan.base.dockerfile() if show_base else plan.dockerfile, nl=False)


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
            click.echo(line, err=True)
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
            click.echo("\r\033[K" + text[:100], nl=False, err=True)
        else:
            click.echo(text[:160], err=True)

    def close(self) -> None:
        if self.tty and self.last:
            click.echo("\r\033[K", nl=False, err=True)


@click.command("build")
@DIRECTORY
@click.option("-t", "--tag", "tags", multiple=True, help="Tag the image (repeatable; default cudaenv/NAME:<hash> and :latest).")
@click.option("--no-cache", is_flag=True, help="Build the project's layers again (never the shared stack base).")
@click.option("--rebuild-base", is_flag=True,
              help="Make the stack base again (build it without cache, or pull the published one).")
@click.option("--pull", is_flag=True, help="Pull a newer upstream image (nvidia/cuda, python) when the base is built.")
@click.option("--network", default=None, help="Network for RUN steps, e.g. 'host' to reach a mirror on this host.")
@click.option("--no-buildkit", is_flag=True, help="Use the classic builder through the Docker SDK.")
@click.option("-v", "--verbose", is_flag=True, help="Show the builder's full output.")
@json_option
def build(directory: Path, tags, no_cache, rebuild_base, pull, network, no_buildkit, verbose, as_json) -> None:
    """Build DIRECTORY's image from its cudaenv.lock (locking first when it is missing or stale).

    The image starts FROM the stack base cudaenv-base:hash-<content hash>, which every project on
    the same stack shares; it is built (or pulled from base_registry when published there) only
    when missing, or with --rebuild-base. Tags default to cudaenv/NAME:<inputs hash> and
    cudaenv/NAME:latest. A failed build shows the failing step and the last lines of its output
    and exits 1.
    """
    from cudaenv.engine import get_engine
    from cudaenv.engine.builders import step_timings

    from cudaenv.core.references import check_reference

    for tag in tags:
        check_reference(tag, "--tag")
    project = load_project(directory)
    matrix = load_matrix()
    progress = BuildProgress(verbose)
    bases = []
    try:
        plan, result = build_project(project, matrix, get_engine(), progress=progress, tags=tuple(tags),
                                     no_cache=no_cache, pull=pull, network=network, no_buildkit=no_buildkit,
                                     rebuild_base=rebuild_base, on_base=bases.append)
    except BuildError as exc:
        progress.close()
        report_build_error(exc)
        if as_json:
            from cudaenv.cli.output import error_object

            emit_json({**error_object(exc, code="build-failed"), "step": exc.step, "log_tail": exc.log_tail})
        click.get_current_context().exit(1)
    progress.close()
    timings = sorted(step_timings(result.log.splitlines()), key=lambda t: -t.seconds)
    if as_json:
        emit_json({"ok": True, "image_id": result.image_id, "tags": list(result.tags), "builder": result.builder,
                   "seconds": round(result.seconds, 1), "stack": plan.stack.as_dict(),
                   "base": bases[0].as_dict(plan.base) if bases else None,
                   "steps": [{"step": t.step, "seconds": t.seconds, "cached": t.cached} for t in timings]})
        return
    click.echo(f"✓ built {', '.join(result.tags)} ({result.image_id[:19]}) in {result.seconds:.1f}s with {result.builder}")
    if bases:
        click.echo(f"  FROM the stack base {plan.base.name} ({bases[0].image_id[:19]}, {bases[0].how}); "
                   "`cudaenv images` shows what it shares")
    if timings:
        cached = sum(t.cached for t in timings)
        click.echo(f"  where the time went ({cached} of {len(timings)} steps cached):")
        for timing in [t for t in timings if not t.cached and t.seconds >= 0.05][:5]:
            click.echo(f"    {timing.seconds:6.1f}s  {' '.join(timing.step.split())[:90]}")


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
    click.echo(f"✗ {exc}", err=True)
    if exc.log_tail:
        click.echo("--- last lines of the failing step ---", err=True)
        click.echo(exc.log_tail, err=True)
    hint = pull_hint(f"{exc}\n{exc.log_tail}")
    if hint:
        click.echo(f"→ {hint}", err=True)


def build_project(project, matrix, engine, *, progress, tags=(), no_cache=False, pull=False, network=None,
                  no_buildkit=False, rebuild_base=False, on_base=None):
    """Lock when needed, render, make sure the stack base is here, build; (ImagePlan, BuildResult).
    ``on_base`` receives the stack base's ``BaseOutcome``. Raises BuildError on failure."""
    from cudaenv.images.plan import plan_image
    from cudaenv.project.lock import current_lock
    from cudaenv.images.stackbase import ensure_base

    lock, stale = current_lock(project, matrix)
    if lock is None or stale:
        click.echo(f"{project.lock_path}: {stale[0]}; locking first", err=True)
        lock = _relock(project, matrix)
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
        click.echo("\r\033[K", nl=False, err=True)
    click.echo(line, err=True)


def warn_secret_looking_files(project) -> None:
    """One warning line per context file that looks like a secret and would still be copied."""
    from cudaenv.secrets.context import secret_looking_files

    ignore = project.root / ".dockerignore"
    try:
        user_text = ignore.read_text(encoding="utf-8") if ignore.is_file() else None
    except (OSError, UnicodeDecodeError):
        user_text = None
    for relative in secret_looking_files(project.root, user_text):
        click.echo(f"warning: {relative} looks like a secret and will be copied into the image; "
                   "add it to .dockerignore if it is one", err=True)


def _relock(project, matrix):
    from cudaenv.project.lock import lock_project, read_lock, write_atomically

    click.echo(f"locking {project.name}: resolving the stack and pinning requirements with uv …", err=True)
    result, lock = lock_project(project, matrix)
    if lock is None:
        reasons = "; ".join(result.reasons)
        from cudaenv.errors import NoStackError

        raise NoStackError(f"{project.config_path}: no stack fits the configuration: {reasons}")
    write_atomically(project.lock_path, lock.as_toml())
    return read_lock(project.lock_path)
