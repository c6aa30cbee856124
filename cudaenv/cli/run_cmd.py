"""``cudaenv run``, ``shell``, ``exec``, ``ps``, ``stop``: project containers with GPU access."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cudaenv.run import session as running
from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.params import CommandAfterDashes, ProjectDirectory, target_name_option
from cudaenv.run.session import check_run_options, within_daemon_limits  # noqa: F401 (their old home)

DIRECTORY = click.argument("directory", required=False, default=".", type=ProjectDirectory())


def run_options(func):
    func = target_name_option(what="the container")(func)
    func = click.option("--ulimit", "ulimits", multiple=True, metavar="NAME=SOFT[:HARD]",
                        help="Override a ulimit (default memlock=-1, stack=64 MiB as NVIDIA recommends).")(func)
    func = click.option("--rebuild", is_flag=True, help="Build the image again even when it is current.")(func)
    func = click.option("--ipc", type=click.Choice(["host", "private", "shareable"]), default=None,
                        help="IPC namespace ('host' instead of a sized /dev/shm).")(func)
    func = click.option("--shm-size", default=None, help="Shared memory size, e.g. 16g (default from cudaenv.toml, 8g).")(func)
    func = click.option("-p", "--port", "ports", multiple=True, help="Publish a port: CONTAINER, HOST:CONTAINER, or ADDRESS:HOST:CONTAINER (e.g. 127.0.0.1:8888:8888 for this machine only).")(func)
    func = click.option("-e", "--env", "env", multiple=True, help="Set NAME=value (or pass NAME through).")(func)
    func = click.option("--name", default=None, help="Container name (default cudaenv-PROJECT-xxxxxx).")(func)
    func = click.option("--gpus", default=None,
                        help="all, none, auto (GPUs no other cudaenv container holds), auto:N, a count, or ids like 0,1.")(func)
    return func


# The work itself lives below the CLI (``cudaenv.run.session``).
_start = running.start
_current_image = running.current_image
_foreground = running.foreground
_interactive = running.interactive


@click.command("run", cls=CommandAfterDashes, context_settings={"ignore_unknown_options": True})
@DIRECTORY
@run_options
@click.option("-d", "--detach", is_flag=True, help="Run in the background; see `cudaenv ps`, stop with `cudaenv stop`.")
@click.option("--jupyter", is_flag=True,
              help="Start JupyterLab in the project's image (added as a layer of its own) on 127.0.0.1 and print "
                   "its URL with the token; stop it with `cudaenv stop`.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run(directory, gpus, name, env, ports, shm_size, ipc, rebuild, ulimits, target_name, detach, jupyter,
        command) -> None:
    """Run COMMAND (default: the configured command) in the project's image with GPUs.

    Builds first when the image is missing or stale. The project is mounted at /workspace and
    files created there belong to you. The container's exit code becomes cudaenv's; Ctrl-C stops
    it and leaves nothing running. Put the command after `--`:

    \b
        cudaenv run . --gpus auto -- python train.py --epochs 3
    """
    url = None
    if jupyter:
        from cudaenv.cli.jupyter import jupyter_launch

        command, env, ports, url = jupyter_launch(command, env, ports)
        detach = True
    if not detach:
        click.get_current_context().exit(running.run_attached(
            directory, gpus=gpus, name=name, env=env, ports=ports, shm_size=shm_size, ipc=ipc, rebuild=rebuild,
            ulimits=ulimits, command=command, jupyter=jupyter, target_name=target_name))
    engine, container_id, cname = _start(directory, gpus=gpus, name=name, env=env, ports=ports, shm_size=shm_size,
                                         ipc=ipc, rebuild=rebuild, command=command, tty=False, interactive=False,
                                         ulimits=ulimits, jupyter=jupyter, target_name=target_name)
    try:
        engine.start(container_id)
    except BaseException:
        engine.remove(container_id)
        raise
    if url:
        click.echo(f"JupyterLab in {cname} (stop it with `cudaenv stop {cname}`):", err=True)
        click.echo(url)
        return
    click.echo(cname)


@click.command("shell")
@DIRECTORY
@run_options
def shell(directory, gpus, name, env, ports, shm_size, ipc, rebuild, ulimits, target_name) -> None:
    """An interactive shell in the project's environment (a TTY when stdin is one)."""
    # bash, not a login shell: Debian's /etc/profile (python:X.Y-slim bases) resets PATH, which
    # would drop the image's /opt/venv/bin and leave `python` unfound
    tty = sys.stdin.isatty()
    engine, container_id, _ = _start(directory, gpus=gpus, name=name, env=env, ports=ports, shm_size=shm_size,
                                     ipc=ipc, rebuild=rebuild, command=("bash",), tty=tty, interactive=True,
                                     ulimits=ulimits, target_name=target_name)
    code = _interactive(engine, container_id) if tty else _foreground(engine, container_id)
    click.get_current_context().exit(code)


def _find_container(engine, name: str):
    from cudaenv.run.containers import find_container, project_containers

    return find_container(project_containers(engine), name)


@click.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_command(name, command) -> None:
    """Run COMMAND in the running cudaenv container NAME; its exit code becomes cudaenv's."""
    from cudaenv.engine import get_engine

    engine = get_engine()
    container = _find_container(engine, name)
    if sys.stdin.isatty() and sys.stdout.isatty():
        import subprocess

        code = subprocess.call(engine.interactive_argv(container.id, exec_command=list(command)))
    else:
        result = engine.exec(container.id, list(command))
        click.echo(result.output, nl=False)
        code = result.exit_code
    click.get_current_context().exit(code)


@click.command("ps")
@click.option("-a", "--all", "show_all", is_flag=True, help="Include exited containers.")
@json_option
def ps(show_all: bool, as_json: bool) -> None:
    """Every cudaenv container on this host: project, stack, GPUs held, status, uptime."""
    from cudaenv.cli.listing import run_ps

    click.get_current_context().exit(run_ps(show_all, as_json))


@click.command("stop")
@click.argument("target", required=False)
@click.option("--all", "stop_all", is_flag=True, help="Stop and remove every cudaenv container on this host.")
@click.option("-t", "--timeout", default=10, show_default=True, help="Seconds to wait before killing.")
@json_option
def stop(target, stop_all, timeout, as_json) -> None:
    """Stop and remove a project's containers (TARGET: project directory or container name).

    Exited containers of the project are removed too. With no TARGET, the project in the current
    directory.
    """
    from cudaenv.run.containers import project_containers
    from cudaenv.engine import get_engine
    from cudaenv.project import load_project

    engine = get_engine()
    if stop_all:
        chosen = project_containers(engine)
    elif target is None or Path(target).is_dir():
        chosen = project_containers(engine, load_project(target or "."))
    else:
        chosen = [_find_container(engine, target)]
    for container in chosen:
        if container.status == "running":
            engine.stop(container.id, timeout=timeout)
        engine.remove(container.id)
    if as_json:
        emit_json({"stopped": [c.name for c in chosen]})
        return
    click.echo("\n".join(f"stopped {c.name}" for c in chosen) if chosen else "nothing to stop")
