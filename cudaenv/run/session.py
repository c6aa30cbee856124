"""Running a project's container: a current image (built first when needed), the host checked,
the container created, then run in the foreground or interactively. The CLI's ``run``, ``shell``
and ``exec`` commands (``cudaenv.cli.run_cmd``) parse and call this.

While every input of the image is as it was (``cudaenv.images.key``), ``run`` reuses the recorded
image without relocking or rendering: a build-cache idea, not a start-up trick.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cudaenv.errors import BuildError, CudaenvError


def warn(message: str) -> None:
    """A line on stderr, flushed, as ``click.echo(message, err=True)`` writes it."""
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()


def start(directory: Path, *, gpus, name, env, ports, shm_size, ipc, rebuild, command, tty, interactive, ulimits=(),
           jupyter: bool = False, foreground: bool = False, target_name: str | None = None,
           trust_record: bool = False):
    """Ensure a current image, check the host, create the container. (engine, container id, name)."""
    from cudaenv.engine import get_engine

    engine = get_engine()
    engine.warm_up()  # the engine's own questions travel while the project is read and the image checked
    from cudaenv.run.containers import allocation_lock, build_spec, check_host_driver, choose_gpus, container_name
    from cudaenv.project import load_project
    from cudaenv.project.runopts import parse_env, parse_ports

    project = load_project(directory)
    if jupyter and not project.run.jupyter:  # the image with JupyterLab's layer (a tag of its own)
        from dataclasses import replace

        project = replace(project, run=replace(project.run, jupyter=True))
    gpu_spec = gpus or project.run.gpus
    # every option is checked before anything is built: a typo must not cost a build first
    env_values, port_values = parse_env(env), parse_ports(tuple(ports) + project.run.ports)
    check_run_options(project, gpu_spec, shm_size, ulimits)

    image_tag, labels = current_image(project, engine, rebuild=rebuild, target_name=target_name,
                                      trust_record=trust_record)
    stack_label = json.loads(labels.get("io.cudaenv.stack") or "{}")
    if stack_label.get("device") == "cpu":  # a CPU target's image: no GPU is asked for, none is checked
        if gpus not in (None, "none"):
            warn(f"cudaenv: warning: --gpus {gpus}: the image is target {labels.get('io.cudaenv.target')}'s, "
                 "CPU only; it runs without GPUs")
        gpu_spec = "none"
    if gpu_spec != "none":
        from cudaenv.matrix import load_matrix
        from cudaenv.hosts.target import resolve_target

        matrix = load_matrix()

        host = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=()).host  # CUDAENV_* or detected
        problem = check_host_driver(matrix, stack_label, host.driver, datacenter=host.all_datacenter)
        if problem:
            from cudaenv.run.containers import IncompatibleHost

            raise IncompatibleHost(problem)
    with allocation_lock():
        choice = choose_gpus(gpu_spec, engine)
        spec = build_spec(project, image_tag, labels, command=tuple(command) or project.run.command, gpus=choice,
                          env=env_values, ports=port_values, shm_size=shm_size, ipc=ipc,
                          name=name or container_name(project), tty=tty, interactive=interactive, ulimits=ulimits)
        spec = within_daemon_limits(engine, project, spec, ulimits)
        if foreground:  # removed when it exits, whatever happens to this process (the engine may do it itself)
            from dataclasses import replace

            spec = replace(spec, auto_remove=True)
        container_id = engine.create(spec)
    return engine, container_id, spec.name


def current_image(project, engine, *, rebuild: bool, target_name: str | None = None,
                  trust_record: bool = False) -> tuple[str, dict]:
    """The tag and labels of the project's current image, built first when there is none.

    When every input of the image is as it was the last time its tag was worked out
    (``cudaenv.images.key``), the recorded tag is used as it is: no lock check, no BuildKit probe,
    no render, and the build command is not even imported. Otherwise the full check runs (and
    builds when needed), and its answer is recorded for the next run."""
    from cudaenv.images import key as image_key

    # a project of several targets: the key is of the named target; without a name, the host decides
    # which target runs, so the recorded tag is not trusted and the full check picks again
    several = project.several_targets
    key = image_key.inputs_key(project, jupyter=project.run.jupyter, target=target_name)
    found = None if rebuild or (several and target_name is None) else image_key.recall_with_labels(project, key, target_name)
    if found is not None:
        recorded, labels = found
        if labels is not None and trust_record and getattr(engine, "trusts_recorded_images", False):
            return recorded, labels  # not asked again: a run of an image that is gone raises ImageNotHere
        labels = engine.image_labels(recorded)
        if labels is not None:
            return recorded, labels
    from cudaenv.matrix import load_matrix

    image_tag, labels = checked_image(project, load_matrix(), engine, rebuild=rebuild, target_name=target_name)
    if image_key.inputs_key(project, jupyter=project.run.jupyter, target=target_name) == key:  # nothing changed while checking (a relock changes the lock)
        image_key.remember(project, key, image_tag, target_name, labels)
    return image_tag, labels


def checked_image(project, matrix, engine, *, rebuild: bool, target_name: str | None = None) -> tuple[str, dict]:
    from cudaenv.images.build import BuildProgress, build_project, report_build_error, served_lock
    from cudaenv.images.plan import plan_image

    lock = served_lock(project, matrix, target_name, relock=False)
    image_tag, labels = None, None
    if lock is not None and not rebuild:
        from cudaenv.images.build import buildkit_available

        plan = plan_image(project, matrix, lock, buildkit=buildkit_available(False))
        image_tag, labels = plan.default_tag, engine.image_labels(plan.default_tag)
    if labels is None:
        warn(f"building the image for {project.name} first")
        try:
            plan, _result = build_project(project, matrix, engine, progress=BuildProgress(False), no_cache=False,
                                          target_name=lock.name if lock is not None else target_name)
        except BuildError as exc:
            report_build_error(exc)
            raise SystemExit(1) from exc
        image_tag, labels = plan.default_tag, engine.image_labels(plan.default_tag)
    return image_tag, labels


def check_run_options(project, gpu_spec: str, shm_size: str | None, ulimits) -> None:
    from cudaenv.run.containers import merged_ulimits
    from cudaenv.errors import UserError
    from cudaenv.project.config import SHM_SIZE
    from cudaenv.project.runopts import parse_gpus

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
        what = "the Docker daemon" if engine.name == "docker" else f"the {engine.name} engine"
        warn(f"cudaenv: warning: {what} cannot grant ulimit {name}={shown} (NVIDIA's recommendation "
             f"for NCCL); the container gets the {'daemon' if engine.name == 'docker' else 'engine'}'s limit instead")
    return replace(spec, ulimits={n: v for n, v in spec.ulimits.items() if n not in refused}) if refused else spec


# How long a finished container's remaining output may take to arrive before it is removed (a busy
# daemon can take seconds to serve the last log lines; removing first would lose them silently).
OUTPUT_DRAIN_SECONDS = 60.0


def foreground(engine, container_id: str) -> int:
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
        if getattr(engine, "attaches", False):  # one call starts, streams and waits (Podman: one `podman start --attach`)
            return engine.attach(container_id, lambda chunk: (out.write(chunk), out.flush()))
        engine.start(container_id)
        streamer = threading.Thread(target=stream, args=(engine, container_id, out), daemon=True)
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
            warn(f"cudaenv: warning: the container's output was still streaming after "
                 f"{OUTPUT_DRAIN_SECONDS:g} s; what is shown may be incomplete")
        return code
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        engine.remove(container_id)


def stream(engine, container_id: str, out) -> None:
    try:
        engine.stream_output(container_id, lambda chunk: (out.write(chunk), out.flush()))
    except Exception:  # the container was removed under us (second Ctrl-C): nothing left to show
        pass


def interactive(engine, container_id: str) -> int:
    import subprocess

    try:
        return subprocess.call(engine.interactive_argv(container_id))
    finally:
        engine.remove(container_id)


def run_attached(directory: Path, *, gpus=None, name=None, env=(), ports=(), shm_size=None, ipc=None, rebuild=False,
                 ulimits=(), command=(), jupyter: bool = False, target_name: str | None = None) -> int:
    """``cudaenv run`` without ``--detach``: the container's exit code (a TTY when both ends are one)."""
    from cudaenv.errors import ImageNotHere

    tty = sys.stdin.isatty() and sys.stdout.isatty()
    for trust_record in (not tty, False):  # a recorded image that is gone: checked (and built) the second time
        engine, container_id, _name = start(directory, gpus=gpus, name=name, env=env, ports=ports, shm_size=shm_size,
                                            ipc=ipc, rebuild=rebuild, command=command, tty=tty, interactive=tty,
                                            ulimits=ulimits, jupyter=jupyter, foreground=not tty,
                                            target_name=target_name, trust_record=trust_record)
        try:
            return interactive(engine, container_id) if tty else foreground(engine, container_id)
        except ImageNotHere:
            if not trust_record:
                raise
            warn("cudaenv: the recorded image is gone: checking the project's image again")
    raise AssertionError("unreachable")  # pragma: no cover
