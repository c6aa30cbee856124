"""``cudaenv plan``: several projects on one host, sharing base images where they can."""

from __future__ import annotations

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.target import resolve_target, target_options
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.resolver.plan import plan


@click.command("plan")
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@target_options()
@click.option("--no-detect", is_flag=True, help="Do not look at this machine's driver and GPUs.")
@json_option
def plan_command(directories, driver, gpus, compute_capabilities, no_detect, as_json) -> None:
    """Plan how several projects share one host.

    Resolves every project DIRECTORY for the same target host, prefers stacks that share base
    images, prints the plan grouped by base image, and for projects that cannot run here, the
    smallest driver upgrade after which every project fits. Exit 0 when all fit, 1 otherwise.
    """
    matrix = load_matrix()
    projects = [load_project(d) for d in directories]
    names = [p.name for p in projects]
    duplicates = {n for n in names if names.count(n) > 1}
    entries = [(p.name if p.name not in duplicates else f"{p.name} ({p.root})", p.constraints) for p in projects]
    target = resolve_target(matrix, driver=driver, gpus=gpus, compute_capabilities=compute_capabilities,
                            detect=not no_detect)
    result = plan(matrix, entries, target.host)
    if as_json:
        payload = result.as_dict()
        payload["host"] = target.report()
        emit_json(payload)
    else:
        click.echo(f"target: {target.describe()}")
        click.echo(f"{len(result.groups)} distinct base image(s) for {len(entries)} project(s)")
        for base, members in result.groups:
            click.echo(f"\n{base}")
            for project in result.projects:
                if project.name in members:
                    s = project.stack
                    frameworks = ", ".join(f"{n} {v}" for n, v in s.frameworks) or "CUDA runtime only"
                    click.echo(f"  {project.name}: {frameworks}; CUDA {s.cuda}, Python {s.python}"
                               + (f" ({s.driver_compatibility})" if s.driver_compatibility else ""))
        unfit = [p for p in result.projects if p.stack is None]
        if unfit:
            click.echo("\ncannot run on this host:")
            for project in unfit:
                reasons = [p.message for p in project.problems if not p.is_fix]
                click.echo(f"  {project.name}: {reasons[0] if reasons else 'no stack'}")
                for fix in (p for p in project.problems if p.is_fix):  # the fixes `resolve` offers
                    click.echo(f"    → {fix.message}")
            if result.driver_upgrade:
                click.echo(f"\nupgrade the driver to >= {result.driver_upgrade} and every project fits")
            else:
                click.echo("\nno driver upgrade alone makes every project fit")
    click.get_current_context().exit(0 if result.ok else 1)
