"""``cudaenv run``, ``shell``, ``exec``, ``ps``, ``stop``: project containers with GPU access."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.errors import BuildError, CudaenvError

DIRECTORY = click.argument("directory", required=False, default=".",
                           type=click.Path(file_okay=False, exists=True, path_type=Path))


def run_options(func):
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


def _start(directory: Path, *, gpus, name, env, ports, shm_size, ipc, rebuild, command, tty, interactive, ulimits=(),
           jupyter: bool = False):
    """Ensure a current image, check the host, create the container. (engine, container id, name)."""
    from cudaenv.containers import allocation_lock, build_spec, check_host_driver, choose_gpus, container_name
    from cudaenv.runopts import parse_env, parse_ports
    from cudaenv.engine import get_engine
    from cudaenv.project import load_project

    project = load_project(directory)
    if jupyter and not project.run.jupyter:  # the image with JupyterLab's layer (a tag of its own)
        from dataclasses import replace

        project = replace(project, run=replace(project.run, jupyter=True))
    engine = get_engine()
    gpu_spec = gpus or project.run.gpus
    # every option is checked before anything is built: a typo must not cost a build first
    env_values, port_values = parse_env(env), parse_ports(tuple(ports) + project.run.ports)
    check_run_options(project, gpu_spec, shm_size, ulimits)

    image_tag, labels = _current_image(project, engine, rebuild=rebuild)

    if gpu_spec != "none":
        from cudaenv.matrix import load_matrix
        from cudaenv.target import resolve_target

        matrix = load_matrix()

        host = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=()).host  # CUDAENV_* or detected
        stack = json.loads(labels.get("io.cudaenv.stack") or "{}")
        problem = check_host_driver(matrix, stack, host.driver, datacenter=host.all_datacenter)
        if problem:
            from cudaenv.containers import IncompatibleHost

            raise IncompatibleHost(problem)
    with allocation_lock():
        choice = choose_gpus(gpu_spec, engine)
        spec = build_spec(project, image_tag, labels, command=tuple(command) or project.run.command, gpus=choice,
                          env=env_values, ports=port_values, shm_size=shm_size, ipc=ipc,
                          name=name or container_name(project), tty=tty, interactive=interactive, ulimits=ulimits)
        spec = within_daemon_limits(engine, project, spec, ulimits)
        container_id = engine.create(spec)
    return engine, container_id, spec.name


def _current_image(project, engine, *, rebuild: bool) -> tuple[str, dict]:
    """The tag and labels of the project's current image, built first when there is none.

    When every input of the image is as it was the last time its tag was worked out
    (``cudaenv.image_key``), the recorded tag is used as it is: no lock check, no BuildKit probe,
    no render, and the build command is not even imported. Otherwise the full check runs (and
    builds when needed), and its answer is recorded for the next run."""
    from cudaenv import image_key

    key = image_key.inputs_key(project, jupyter=project.run.jupyter)
    recorded = None if rebuild else image_key.recall(project, key)
    if recorded is not None:
        labels = engine.image_labels(recorded)
        if labels is not None:
            return recorded, labels
    from cudaenv.matrix import load_matrix

    image_tag, labels = _checked_image(project, load_matrix(), engine, rebuild=rebuild)
    if image_key.inputs_key(project, jupyter=project.run.jupyter) == key:  # nothing changed while checking (a relock changes the lock)
        image_key.remember(project, key, image_tag)
    return image_tag, labels


def _checked_image(project, matrix, engine, *, rebuild: bool) -> tuple[str, dict]:
    from cudaenv.cli.build_cmd import BuildProgress, build_project, report_build_error
    from cudaenv.image import plan_image
    from cudaenv.project.lock import current_lock

    lock, stale = current_lock(project, matrix)
    image_tag, labels = None, None
    if lock is not None and not stale and not rebuild:
        from cudaenv.cli.build_cmd import buildkit_available

        plan = plan_image(project, matrix, lock, buildkit=buildkit_available(False))
        image_tag, labels = plan.default_tag, engine.image_labels(plan.default_tag)
    if labels is None:
        click.echo(f"building the image for {project.name} first", err=True)
        try:
            plan, _result = build_project(project, matrix, engine, progress=BuildProgress(False), no_cache=False)
        except BuildError as exc:
            report_build_error(exc)
            raise SystemExit(1) from exc
        image_tag, labels = plan.default_tag, engine.image_labels(plan.default_tag)
    return image_tag, labels


def check_run_options(project, gpu_spec: str, shm_size: str | None, ulimits) -> None:
    from cudaenv.containers import merged_ulimits
    from cudaenv.errors import UserError
    from cudaenv.project.config import SHM_SIZE
    from cudaenv.runopts import parse_gpus

    parse_gpus(gpu_spec)
    if shm_size is not None and not SHM_SIZE.fullmatch(shm_size):
        raise UserError(f"--shm-size {shm_size!r}: expected a size like 8g or 512m")
    merged_ulimits(project, tuple(ulimits))


def within_daemon_limits(engine, project, spec, overrides):
    """NVIDIA's NCCL recommendation (memlock unlimited, 64 MiB stack) where the daemon can grant it;
    otherwise the daemon's own limit, with a warning. A default never makes `run` fail; a limit the
    user asked for ([run] ulimits, --ulimit) is kept and refused loudly if the daemon cannot."""
    from dataclasses import replace

    from cudaenv.project.config import DEFAULT_ULIMITS

    chosen = {name for name, _, _ in DEFAULT_ULIMITS} - {item.partition("=")[0].strip() for item in overrides}
    chosen -= {name for name, soft, hard in project.run.ulimits
               if (name, soft, hard) not in DEFAULT_ULIMITS}
    defaults = {name: value for name, value in spec.ulimits.items() if name in chosen}
    if not defaults:
        return spec
    refused = engine.refused_ulimits(spec.image, defaults)
    for name in refused:
        soft, hard = defaults[name]
        shown = "unlimited" if hard == -1 else str(hard)
        click.echo(f"cudaenv: warning: the Docker daemon cannot grant ulimit {name}={shown} (NVIDIA's recommendation "
                   f"for NCCL); the container gets the daemon's limit instead", err=True)
    return replace(spec, ulimits={n: v for n, v in spec.ulimits.items() if n not in refused}) if refused else spec


# How long a finished container's remaining output may take to arrive before it is removed (a busy
# daemon can take seconds to serve the last log lines; removing first would lose them silently).
OUTPUT_DRAIN_SECONDS = 60.0


def _foreground(engine, container_id: str) -> int:
    """Start, stream output, propagate signals, and remove the container whatever happens."""
    import signal
    import threading

    interrupts = 0

    def forward(signum, _frame):
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            engine.kill(container_id, "SIGINT" if signum == signal.SIGINT else "SIGTERM")
        else:
            engine.remove(container_id)  # a second Ctrl-C: stop now, leave nothing running

    out = sys.stdout.buffer
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        engine.start(container_id)
        streamer = threading.Thread(target=_stream, args=(engine, container_id, out), daemon=True)
        streamer.start()
        while True:
            try:
                code = engine.wait(container_id, timeout=1)
                break
            except TimeoutError:
                continue
            except CudaenvError:
                if interrupts > 1:
                    return 130
                raise
        streamer.join(timeout=OUTPUT_DRAIN_SECONDS)  # the log stream ends when the container has exited
        if streamer.is_alive():
            click.echo(f"cudaenv: warning: the container's output was still streaming after "
                       f"{OUTPUT_DRAIN_SECONDS:g} s; what is shown may be incomplete", err=True)
        return code
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        engine.remove(container_id)


def _stream(engine, container_id: str, out) -> None:
    try:
        engine.stream_output(container_id, lambda chunk: (out.write(chunk), out.flush()))
    except Exception:  # the container was removed under us (second Ctrl-C): nothing left to show
        pass


def _interactive(engine, container_id: str) -> int:
    import subprocess

    try:
        return subprocess.call(engine.interactive_argv(container_id))
    finally:
        engine.remove(container_id)


class CommandAfterDashes(click.Command):
    """Everything after the first ``--`` is the container's command, whole: the optional DIRECTORY
    must never take its first word (``cudaenv run -- python train.py`` runs python in the project
    in the current directory)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            return super().parse_args(ctx, args)
        cut = args.index("--")
        rest = super().parse_args(ctx, args[:cut])
        ctx.params["command"] = tuple(ctx.params.get("command") or ()) + tuple(args[cut + 1:])
        return rest


@click.command("run", cls=CommandAfterDashes, context_settings={"ignore_unknown_options": True})
@DIRECTORY
@run_options
@click.option("-d", "--detach", is_flag=True, help="Run in the background; see `cudaenv ps`, stop with `cudaenv stop`.")
@click.option("--jupyter", is_flag=True,
              help="Start JupyterLab in the project's image (added as a layer of its own) on 127.0.0.1 and print "
                   "its URL with the token; stop it with `cudaenv stop`.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run(directory, gpus, name, env, ports, shm_size, ipc, rebuild, ulimits, detach, jupyter, command) -> None:
    """Run COMMAND (default: the configured command) in the project's image with GPUs.

    Builds first when the image is missing or stale. The project is mounted at /workspace and
    files created there belong to you. The container's exit code becomes cudaenv's; Ctrl-C stops
    it and leaves nothing running. Put the command after `--`:

        cudaenv run . --gpus auto -- python train.py --epochs 3
    """
    url = None
    if jupyter:
        from cudaenv.cli.jupyter import jupyter_launch

        command, env, ports, url = jupyter_launch(command, env, ports)
        detach = True
    tty = sys.stdin.isatty() and sys.stdout.isatty() and not detach
    engine, container_id, cname = _start(directory, gpus=gpus, name=name, env=env, ports=ports, shm_size=shm_size,
                                         ipc=ipc, rebuild=rebuild, command=command, tty=tty, interactive=tty,
                                         ulimits=ulimits, jupyter=jupyter)
    if detach:
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
        return
    code = _interactive(engine, container_id) if tty else _foreground(engine, container_id)
    click.get_current_context().exit(code)


@click.command("shell")
@DIRECTORY
@run_options
def shell(directory, gpus, name, env, ports, shm_size, ipc, rebuild, ulimits) -> None:
    """An interactive shell in the project's environment (a TTY when stdin is one)."""
    tty = sys.stdin.isatty()
    engine, container_id, _ = _start(directory, gpus=gpus, name=name, env=env, ports=ports, shm_size=shm_size,
                                     ipc=ipc, rebuild=rebuild, command=("bash", "-l"), tty=tty, interactive=True,
                                     ulimits=ulimits)
    code = _interactive(engine, container_id) if tty else _foreground(engine, container_id)
    click.get_current_context().exit(code)


def _find_container(engine, name: str):
    from cudaenv.containers import find_container, project_containers

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
    from cudaenv.containers import project_containers
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
