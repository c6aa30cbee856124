"""Running project containers: GPU selection, host checks, and the container specification.

Containers carry labels that describe them (project, directory, stack, GPUs held), so ``ps`` and
``stop`` need no state of their own and ``--gpus auto`` can see which GPUs other cudaenv
containers hold. Everything engine-specific stays behind ``cudaenv.engine``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import namedtuple

from cudaenv.engine import ContainerInfo, Engine
from cudaenv.errors import CudaenvError, UserError
from cudaenv.hosts.user import run_user
from cudaenv.project.runopts import parse_gpus

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:  # `cudaenv ps` lists containers without loading the matrix, a project or dataclasses
    from pathlib import Path

    from cudaenv.engine.values import ContainerSpec
    from cudaenv.matrix import Matrix
    from cudaenv.project import Project

LABEL_MANAGED = "io.cudaenv.managed"
LABEL_PROJECT = "io.cudaenv.project"
LABEL_DIR = "io.cudaenv.project-dir"
LABEL_GPUS = "io.cudaenv.gpus"
LABEL_STACK = "io.cudaenv.stack"


class IncompatibleHost(CudaenvError):
    """The host's driver cannot run the image's CUDA (exit 1)."""


GpuChoice = namedtuple("GpuChoice", ["request", "held"])
GpuChoice.__doc__ = """The GPUs a container gets: ``request`` (a ``GpuRequest``, None for none) and ``held``, what
the container records as held: "all", "none", "0,1", or "count:2"."""


def inventory() -> list[tuple[str, str | None]]:
    """(index, UUID) of this host's GPUs: detected, else as many as CUDAENV_GPUS names (no UUIDs)."""
    from cudaenv.hosts.detect import detect
    from cudaenv.hosts.target import declared_gpu_names

    declared = declared_gpu_names(os.environ.get("CUDAENV_GPUS", ""))
    if declared:
        return [(str(i), None) for i in range(len(declared))]
    return [(str(g.index), g.uuid) for g in detect().gpus]


def held_gpus(engine: Engine, gpus: list[tuple[str, str | None]] | None = None) -> dict[str, str]:
    """GPU index -> the running cudaenv container holding it ("*" for one holding all).

    A ``count:N`` holder has the first N GPUs (the NVIDIA runtime hands out a count that way);
    holders recorded by UUID are mapped to indices through the inventory.
    """
    by_uuid = {uuid: index for index, uuid in (gpus or []) if uuid}
    held: dict[str, str] = {}
    for container in engine.containers(f"{LABEL_MANAGED}=true", running_only=True):
        value = container.labels.get(LABEL_GPUS, "none")
        if value == "all":
            held["*"] = container.name
        elif value.startswith("count:"):
            for index in range(int(value.split(":", 1)[1] or 0)):
                held[str(index)] = container.name
        elif value != "none":
            for gpu in value.split(","):
                held[by_uuid.get(gpu, gpu)] = container.name
    return held


@contextlib.contextmanager
def allocation_lock():
    """Serialise `--gpus auto` between concurrent cudaenv processes on this host."""
    from cudaenv.core.cache import cache_dir

    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "gpu-allocation.lock", "w") as handle:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def choose_gpus(spec: str, engine: Engine) -> GpuChoice:
    from cudaenv.engine.values import GpuRequest

    kind, value = parse_gpus(spec)
    if kind == "none":
        return GpuChoice(None, "none")
    if kind == "all":
        return GpuChoice(GpuRequest(count=-1), "all")
    if kind == "count":
        return GpuChoice(GpuRequest(count=value), f"count:{value}")
    if kind == "ids":
        return GpuChoice(GpuRequest(device_ids=value), ",".join(value))
    want = value or 1
    listed = inventory()
    gpus = [index for index, _uuid in listed]
    if not gpus:
        raise CudaenvError("--gpus auto: no GPU detected on this host (declare them with CUDAENV_GPUS, "
                           "or pass --gpus 0,1)")
    held = held_gpus(engine, listed)
    if "*" in held:
        raise CudaenvError(f"--gpus auto: container {held['*']} holds all GPUs; stop it or share on purpose "
                           "with --gpus all")
    free = [g for g in gpus if g not in held]
    if len(free) < want:
        holders = ", ".join(f"GPU {g}: {name}" for g, name in sorted(held.items()))
        raise CudaenvError(f"--gpus auto: {want} free GPU(s) needed, {len(free)} free of {len(gpus)} ({holders}); "
                           "stop a container or share on purpose with --gpus all")
    chosen = tuple(free[:want])
    return GpuChoice(GpuRequest(device_ids=chosen), ",".join(chosen))


def check_host_driver(matrix: Matrix, stack: dict, driver: str | None, *, datacenter: bool = False) -> str | None:
    """Why this host's driver cannot run the image's CUDA (None when it can, or is unknown).
    Forward compatibility counts only for an image that carries cuda-compat and a host whose GPUs
    are all data-center GPUs (``datacenter``), as in ``resolver.check``."""
    if driver is None:
        return None
    cuda = stack.get("cuda")
    from cudaenv.resolver import driver as drv

    forward = stack.get("driver_compatibility") == drv.FORWARD
    mode = drv.driver_mode(matrix, driver, cuda, all_datacenter=datacenter and forward)
    if mode is not None:
        return None
    needed = drv.requirement_text(stack.get("min_driver"), stack.get("min_driver_compat"))
    return (f"this host's driver {driver} cannot run the image's CUDA {cuda}: it needs a driver {needed}; "
            f"upgrade the driver, or rebuild for this host "
            f"(set [target] driver = \"{driver}\" and run `cudaenv lock`)")


def container_name(project: Project) -> str:
    import secrets

    return f"cudaenv-{project.name}-{secrets.token_hex(3)}"


def build_spec(project: Project, image: str, image_labels: dict, *, command: tuple[str, ...], gpus: GpuChoice,
               env: dict[str, str], ports: dict[str, int | tuple[str, int] | None], shm_size: str | None, ipc: str | None,
               name: str, tty: bool, interactive: bool, ulimits: tuple[str, ...] = ()) -> ContainerSpec:
    from pathlib import Path

    from cudaenv.engine.values import ContainerSpec, Mount

    user, user_env = run_user()
    stack = json.loads(image_labels.get(LABEL_STACK, "{}") or "{}")
    labels = {
        LABEL_MANAGED: "true",
        LABEL_PROJECT: project.name,
        LABEL_DIR: str(project.root.resolve()),
        LABEL_GPUS: gpus.held,
        LABEL_STACK: image_labels.get(LABEL_STACK, ""),
        "io.cudaenv.summary": ", ".join(f"{n} {v}" for n, v in (stack.get("frameworks") or {}).items())
        + (f" | CUDA {stack.get('cuda')}" if stack.get("cuda") else ""),
    }
    # The image says NVIDIA_VISIBLE_DEVICES=all; where nvidia is Docker's default runtime that would
    # expose every GPU to a container that asked for none.
    no_gpu = {"NVIDIA_VISIBLE_DEVICES": "void"} if gpus.request is None else {}
    return ContainerSpec(
        image=image, command=command, name=name,
        env={**dict(project.run.env), **user_env, **env, **no_gpu}, labels=labels,
        mounts=(Mount(Path(project.root).resolve(), "/workspace"),), working_dir="/workspace", user=user,
        gpus=gpus.request, shm_size=None if (ipc or project.run.ipc) == "host" else (shm_size or project.run.shm_size),
        ipc_mode=ipc or project.run.ipc, ulimits=merged_ulimits(project, ulimits), ports=ports, tty=tty, stdin_open=interactive,
        init=False,  # the image's ENTRYPOINT is tini
    )


def merged_ulimits(project: Project, overrides: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """[run] ulimits (NVIDIA's defaults unless changed), then --ulimit NAME=SOFT[:HARD] on top."""
    from cudaenv.project.config import parse_ulimit

    limits = {name: (soft, hard) for name, soft, hard in project.run.ulimits}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--ulimit {item!r}: expected NAME=SOFT[:HARD], e.g. memlock=-1")
        _, soft, hard = parse_ulimit(name.strip(), value, "--ulimit")
        limits[name.strip()] = (soft, hard)
    return limits


def project_containers(engine: Engine, project: Project | None = None) -> list[ContainerInfo]:
    label = f"{LABEL_DIR}={project.root.resolve()}" if project is not None else f"{LABEL_MANAGED}=true"
    return engine.containers(label)


def find_container(managed: list[ContainerInfo], name: str) -> ContainerInfo:
    """A cudaenv container by exact name or id, or by an id prefix of at least 4 characters that
    only one container has: never a guess that could stop or enter the wrong one."""
    exact = [c for c in managed if name in (c.name, c.id)]
    if exact:
        return exact[0]
    prefixed = [c for c in managed if len(name) >= 4 and c.id.startswith(name)]
    if len(prefixed) == 1:
        return prefixed[0]
    if len(prefixed) > 1:
        raise UserError(f"{name!r} is the start of several container ids ({', '.join(c.name for c in prefixed)}): "
                        "give more of it, or the name")
    raise UserError(f"no cudaenv container named {name!r} (see `cudaenv ps`)")
