"""``cudaenv dockerfile`` and ``cudaenv build``: the project's image."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.params import DIRECTORY, target_name_option
from cudaenv.errors import BuildError, UserError
from cudaenv.images.build import BuildProgress, build_project, buildkit_available, report_build_error
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project


@click.command("dockerfile")
@DIRECTORY
@click.option("--no-buildkit", is_flag=True, help="Render for the classic builder (no cache mounts or secrets).")
@click.option("--base", "show_base", is_flag=True, help="Print the stack base's Dockerfile (the image the project's starts FROM).")
@click.option("--standalone", is_flag=True,
              help="One self-contained file with the base's layers inline (for builders that cannot see local images).")
@target_name_option(what="the Dockerfile")
def dockerfile(directory: Path, no_buildkit: bool, show_base: bool, standalone: bool, target_name) -> None:
    """Print the Dockerfile that `cudaenv build` would use for DIRECTORY.

    It is rendered from cudaenv.lock; when the lock is missing or stale, run `cudaenv lock`
    first (`cudaenv build` does that by itself). The project's Dockerfile starts FROM its stack
    base (cudaenv-base:hash-…), which `--base` prints.
    """
    from cudaenv.images.build import served_lock
    from cudaenv.images.plan import plan_image
    from cudaenv.project.lock import current_locks

    if show_base and standalone:
        raise UserError("--base and --standalone: choose one (the base is always a file of its own)")
    project = load_project(directory)
    matrix = load_matrix()
    lock = served_lock(project, matrix, target_name, relock=False)
    if lock is None:
        _, stale = current_locks(project, matrix)
        raise UserError(f"{project.lock_path}: {stale[0]}; run `cudaenv lock {directory}` first")
    plan = plan_image(project, matrix, lock, buildkit=buildkit_available(no_buildkit), standalone=standalone)
    click.echo(plan.base.dockerfile() if show_base else plan.dockerfile, nl=False)


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
@target_name_option(what="the image")
@json_option
def build(directory: Path, tags, no_cache, rebuild_base, pull, network, no_buildkit, verbose, target_name,
          as_json) -> None:
    """Build DIRECTORY's image from its cudaenv.lock (locking first when it is missing or stale).

    The image starts FROM the stack base cudaenv-base:hash-<content hash>, which every project on
    the same stack shares; it is built (or pulled from base_registry when published there) only
    when missing, or with --rebuild-base. Tags default to cudaenv/NAME:<inputs hash> and
    cudaenv/NAME:latest. A failed build shows the failing step and the last lines of its output
    and exits 1.

    A project with several targets ([targets.NAME]) builds the one this host runs (a GPU target
    whose stack runs on this driver and GPU; on a machine without a GPU, a CPU target), or the one
    --target names; its image is labelled io.cudaenv.target and tagged :latest-NAME.
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
                                     rebuild_base=rebuild_base, on_base=bases.append, target_name=target_name)
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
                   "target": plan.lock.name,
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


