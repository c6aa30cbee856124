"""One ``cudaenv top`` sample: every GPU's metrics and its processes, grouped by owner.

A GPU process belongs to a cudaenv container (project, stack and name from its ``io.cudaenv.*``
labels, through the engine), to some other container (shown by runtime and short ID), or to the
host. The engine is asked only when a process runs in a container; when it cannot be reached the
sample still comes back, with a note, and containers shown by ID.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

from cudaenv.run.containers import LABEL_MANAGED, LABEL_PROJECT, LABEL_STACK
from cudaenv.engine import ContainerInfo
from cudaenv.monitor import cgroups
from cudaenv.hosts.nvml import GpuReading, read_all


@dataclass(frozen=True)
class Process:
    pid: int
    command: str | None
    used_memory_mib: int | None
    kind: str  # compute | graphics


@dataclass(frozen=True)
class Owner:
    """Who a group of GPU processes belongs to."""

    kind: str  # "cudaenv" (a cudaenv container), "container" (any other), "host"
    name: str | None = None  # container name
    id: str | None = None  # container ID, 12 digits
    runtime: str | None = None
    project: str | None = None
    stack: str | None = None  # "torch 2.6.0 | CUDA 12.6"


@dataclass(frozen=True)
class Group:
    owner: Owner
    used_memory_mib: int | None  # sum over its processes; None when the driver reported none
    processes: tuple[Process, ...]


@dataclass(frozen=True)
class GpuSample:
    reading: GpuReading
    groups: tuple[Group, ...]


@dataclass(frozen=True)
class Sample:
    time: str  # ISO 8601, UTC
    driver: str | None
    gpus: tuple[GpuSample, ...]
    notes: tuple[str, ...] = ()


def stack_summary(stack_label: str | None) -> str | None:
    """``torch 2.6.0 | CUDA 12.6`` from an ``io.cudaenv.stack`` label (the same words as ``ps``)."""
    try:
        stack = json.loads(stack_label or "null")
    except ValueError:
        return None
    if not isinstance(stack, dict):
        return None
    frameworks = stack.get("frameworks") or {}
    words = ", ".join(f"{name} {version}" for name, version in frameworks.items()) if isinstance(frameworks, dict) else ""
    cuda = f"CUDA {stack['cuda']}" if stack.get("cuda") else ""
    return " | ".join(w for w in (words, cuda) if w) or None


def owner_of(ref: cgroups.ContainerRef | None, containers: Mapping[str, ContainerInfo]) -> Owner:
    if ref is None:
        return Owner(kind="host")
    info = containers.get(ref.id)
    if info is not None and info.labels.get(LABEL_MANAGED) == "true":
        return Owner(kind="cudaenv", name=info.name, id=ref.id[:12], runtime=ref.runtime,
                     project=info.labels.get(LABEL_PROJECT), stack=stack_summary(info.labels.get(LABEL_STACK)))
    return Owner(kind="container", name=info.name if info else None, id=ref.id[:12], runtime=ref.runtime)


def _group(processes: list[tuple[Owner, Process]]) -> tuple[Group, ...]:
    by_owner: dict[Owner, list[Process]] = {}
    for owner, process in processes:
        by_owner.setdefault(owner, []).append(process)
    groups = []
    for owner, members in by_owner.items():
        known = [p.used_memory_mib for p in members if p.used_memory_mib is not None]
        groups.append(Group(owner=owner, used_memory_mib=sum(known) if known else None,
                            processes=tuple(sorted(members, key=lambda p: -(p.used_memory_mib or 0)))))
    order = {"cudaenv": 0, "container": 1, "host": 2}
    return tuple(sorted(groups, key=lambda g: (order[g.owner.kind], -(g.used_memory_mib or 0), g.owner.name or "")))


ContainerLookup = Callable[[], Mapping[str, ContainerInfo]]


def take_sample(nvml: ModuleType, lookup_containers: ContainerLookup | None, proc: Path = Path("/proc")) -> Sample:
    """Read every GPU and attribute its processes. ``lookup_containers`` maps full container IDs to
    the engine's description; it is called once, and only when some process is in a container."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    driver, readings = read_all(nvml)
    refs = {p.pid: cgroups.container_of(p.pid, proc) for r in readings for p in r.processes}
    notes: list[str] = []
    containers: Mapping[str, ContainerInfo] = {}
    if lookup_containers is not None and any(refs.values()):
        try:
            containers = lookup_containers()
        except Exception as exc:  # EngineError or the SDK's own: top still shows the GPUs
            notes.append(f"container engine not reachable, containers shown by ID: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}")
    gpus = []
    for reading in readings:
        members = [(owner_of(refs.get(p.pid), containers),
                    Process(pid=p.pid, command=cgroups.command_of(p.pid, proc), used_memory_mib=p.used_memory_mib, kind=p.kind))
                   for p in reading.processes]
        gpus.append(GpuSample(reading=reading, groups=_group(members)))
    return Sample(time=now, driver=driver, gpus=tuple(gpus), notes=tuple(notes))


def to_json(sample: Sample) -> dict:
    """The ``--json`` object for one sample (one line of the JSON Lines stream)."""
    gpus = []
    for gpu in sample.gpus:
        reading = asdict(gpu.reading)
        reading.pop("processes")
        reading["groups"] = [{**{k: v for k, v in asdict(g.owner).items()},
                              "used_memory_mib": g.used_memory_mib,
                              "processes": [asdict(p) for p in g.processes]} for g in gpu.groups]
        gpus.append(reading)
    return {"ok": True, "time": sample.time, "driver": sample.driver, "gpus": gpus, "notes": list(sample.notes)}


def memory_by_container(sample: Sample) -> dict[str, dict[int, int]]:
    """12-digit container ID -> {GPU index: MiB used}: the GPU columns of ``cudaenv ps``."""
    usage: dict[str, dict[int, int]] = {}
    for gpu in sample.gpus:
        for group in gpu.groups:
            if group.owner.id and group.used_memory_mib is not None:
                usage.setdefault(group.owner.id, {})[gpu.reading.index] = group.used_memory_mib
    return usage
