"""``cudaenv export devcontainer``: the project's stack for VS Code / Dev Containers."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.params import target_name_option


@click.command("devcontainer")
@click.argument("directory", required=False, default=".",
                type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite an existing .devcontainer/devcontainer.json.")
@click.option("--gpus", default=None, help="all, none, a count or ids like 0,1 (default: [run] gpus).")
@click.option("--gpu-access", type=click.Choice(["auto", "cdi", "legacy"]), default="auto", show_default=True,
              help="How the GPUs are asked for: cdi (device names nvidia.com/gpu=N from CDI specs: Podman, Docker 25+ "
                   "with CDI enabled), legacy (the NVIDIA runtime hook), or auto (what this machine's engine does).")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the file instead of writing it.")
@target_name_option(what="the dev container's image")
def devcontainer(directory, force, gpus, gpu_access, to_stdout, target_name) -> None:
    """Write .devcontainer/devcontainer.json: open DIRECTORY in its cudaenv image.

    The container is the image `cudaenv build` made for the project's lock (build first), with
    the project at /workspace, your UID:GID, GPUs (`hostRequirements.gpu`, and `--gpus` or, on a CDI host, `--device nvidia.com/gpu=N`), the
    [run] shared memory, ulimits and env, and VS Code's Python interpreter set to /opt/venv.
    Never overwrites an existing file without --force.

    A project with a CPU-only target and a GPU target gets one file for both: the GPU target's image
    (--target NAME where there are several), `hostRequirements.gpu: "optional"` and no GPU flag, so
    it opens on a host without a GPU and the Dev Containers tool adds the GPUs where it finds them.
    """
    from cudaenv.images.build import buildkit_available
    from cudaenv.hosts.user import run_user
    from cudaenv.errors import UserError
    from cudaenv.export.devcontainer import devcontainer_document, render, target_path
    from cudaenv.images.plan import plan_image
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.cli.export_lock import locked_target
    from cudaenv.project.lock import write_atomically
    from cudaenv.project.runopts import parse_gpus

    project = load_project(directory)
    request = parse_gpus(gpus or project.run.gpus)
    matrix = load_matrix()
    choice = None
    if project.several_targets:
        from cudaenv.export.devcontainer import choose_image_target
        from cudaenv.hosts.target import project_targets

        declared = [(name, t.host.cpu, t.host.platform) for name, t in project_targets(matrix, project)]
        if target_name is not None:
            project.target_named(target_name)  # a name the project does not have: the error lists those it has
        choice = choose_image_target(declared, target_name, str(project.config_path))
        lock = locked_target(project, matrix, choice.target, first=f"cudaenv lock {directory}")
    else:
        lock = locked_target(project, matrix, target_name, first=f"cudaenv build {directory}")
    if lock.resolved_stack().cpu:  # a CPU target's image: it asks for no GPU, whatever [run] gpus says
        if request[0] != "none":
            click.echo(f"cudaenv: note: target {lock.name} is CPU-only: its dev container asks for no GPU "
                       f"(--gpus / [run] gpus {gpus or project.run.gpus} left out)", err=True)
        request = parse_gpus("none")
    plan = plan_image(project, matrix, lock, buildkit=buildkit_available(False))
    user, _ = run_user()
    from cudaenv.export.gpu_access import cdi_specs_for

    wants_gpus = request[0] != "none"
    optional = choice is not None and bool(choice.cpu_targets) and wants_gpus
    cdi_specs = cdi_specs_for(gpu_access, wants_gpus) if not optional or gpu_access == "cdi" else None
    text = render(devcontainer_document(project, plan.default_tag, request, user, cdi_specs, gpu_optional=optional))
    for note in choice.said(request) if choice is not None else ():
        click.echo(f"cudaenv: note: {note}", err=True)
    if to_stdout:
        click.echo(text, nl=False)
        return
    path = target_path(project.root)
    if path.exists() and not force:
        raise UserError(f"{path} exists; pass --force to overwrite it")
    path.parent.mkdir(exist_ok=True)
    write_atomically(path, text)
    click.echo(f"wrote {path}", err=True)
