"""``cudaenv export compose``: several projects as one Compose file, one service each."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.params import target_name_option


@click.command("compose")
@click.argument("directories", nargs=-1, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the file here instead of printing it (never over an existing file without --force).")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists.")
@click.option("--name", default="cudaenv", show_default=True, help="The Compose project name.")
@click.option("--gpus", default=None,
              help="For every service: all, none, a count, ids like 0,1, or auto (disjoint GPUs per project, "
                   "in the order given). Default: each project's [run] gpus.")
@click.option("--gpu-count", type=click.IntRange(1, 4096), default=None,
              help="How many GPUs the host has, for --gpus auto when they cannot be detected here.")
@click.option("--gpu-access", type=click.Choice(["auto", "cdi", "legacy"]), default="auto", show_default=True,
              help="How the GPUs are asked for: cdi (device names nvidia.com/gpu=N from CDI specs: Podman, Docker 25+ "
                   "with CDI enabled), legacy (the NVIDIA runtime hook), or auto (what this machine's engine does).")
@click.option("-e", "--env", "env", multiple=True,
              help="Set NAME=value in every service (on top of [run] env); -e NAME: taken from the shell that runs "
                   "`docker compose up`, never written into the file.")
@target_name_option(what="every project of several targets")
def compose(directories, output, force, name, gpus, gpu_count, gpu_access, env, target_name) -> None:
    """Print a compose.yaml that runs each project DIRECTORY (default: this one) as a service.

    Each service uses the image `cudaenv build` made for the project's lock (build first), its
    [run] settings (env, ports, shm_size/ipc, ulimits, command), the project mounted at
    /workspace, your UID:GID, and GPUs as Compose device reservations (driver nvidia, or driver cdi
    with nvidia.com/gpu=N names on a CDI host: --gpu-access):

    \b
        cudaenv export compose ./detector ./segmenter --gpus auto -o compose.yaml
        docker compose -f compose.yaml up

    A project that names several targets is exported for --target NAME's stack; a CPU-only
    target's service reserves no GPU, whatever --gpus says for the others.
    """
    from cudaenv.images.build import buildkit_available
    from cudaenv.hosts.user import run_user
    from cudaenv.errors import UserError
    from cudaenv.export.compose import ServiceInput, assign_auto, compose_document, render, service_gpus
    from cudaenv.export.environment import parse_export_env
    from cudaenv.images.plan import plan_image
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.cli.export_lock import locked_target
    from cudaenv.project.runopts import parse_gpus

    values, passed = parse_export_env(env)
    projects = [load_project(d) for d in (directories or (Path("."),))]
    if gpus is not None:
        parse_gpus(gpus)
    asked = [parse_gpus(gpus or p.run.gpus) for p in projects]
    matrix = load_matrix()
    # --target serves the projects of several targets; a project of one target has nothing to choose
    locks = [locked_target(project, matrix, target_name if project.several_targets else None,
                           first=f"cudaenv build {project.root}", why=" (it locks, then builds the image compose runs)")
             for project in projects]
    requests = [service_gpus(lock.resolved_stack(), request) for lock, request in zip(locks, asked)]
    if gpu_count is None and any(kind == "auto" for kind, _ in requests):
        from cudaenv.matrix import load_matrix as _load
        from cudaenv.hosts.target import resolve_target

        host = resolve_target(_load(), driver=None, gpus=(), compute_capabilities=()).host
        gpu_count = len(host.gpus) or None
    requests = assign_auto(requests, gpu_count)
    inputs = []
    for project, lock, request in zip(projects, locks, requests):
        plan = plan_image(project, matrix, lock, buildkit=buildkit_available(False))
        inputs.append(ServiceInput(project, plan.default_tag, request))
    user, user_env = run_user()
    from cudaenv.export.gpu_access import cdi_specs_for

    cdi_specs = cdi_specs_for(gpu_access, any(kind != "none" for kind, _ in requests))
    text = render(compose_document(inputs, name=name, user=user, user_env=user_env, env=values, passed=passed,
                                   cdi_specs=cdi_specs))
    if output is None:
        click.echo(text, nl=False)
        return
    if output.exists() and not force:
        raise UserError(f"{output} exists; pass --force to overwrite it")
    from cudaenv.project.lock import write_atomically

    write_atomically(output, text)
    click.echo(f"wrote {output}", err=True)
