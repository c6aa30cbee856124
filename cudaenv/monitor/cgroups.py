"""Which container a host process belongs to, read from ``/proc/PID/cgroup``.

NVML names GPU processes by host PID; the container runtimes name the cgroup they put a
container in after the container's 64-hex-digit ID, in one of these shapes (one line per
hierarchy under cgroup v1, the single ``0::`` line under v2; ``tests/fixtures/cgroup/SOURCES.md``
has a real example of each):

- Docker, cgroupfs driver: ``/docker/<id>``; systemd driver: ``/system.slice/docker-<id>.scope``
- containerd: ``/<namespace>/<id>`` (ctr, nerdctl); Kubernetes ``/kubepods/.../pod<uid>/<id>`` or
  ``.../cri-containerd-<id>.scope``
- CRI-O: ``.../crio-<id>.scope``; Podman: ``.../libpod-<id>.scope`` (``/container`` under it with crun)

The innermost ID wins (Docker in Docker nests them). Cgroups of the runtimes' own helpers
(``crio-conmon-…``, ``libpod-conmon-…``) are not containers. A hybrid host may show the container
only in its v1 lines (the ``0::`` line naming ``containerd.service``), so every line is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_ID = r"[0-9a-f]{64}"
# path component -> runtime, most specific first
_COMPONENT = (
    (re.compile(rf"^docker-({_ID})\.scope$"), "docker"),
    (re.compile(rf"^cri-containerd-({_ID})\.scope$"), "containerd"),
    (re.compile(rf"^crio-({_ID})\.scope$"), "cri-o"),
    (re.compile(rf"^libpod-({_ID})\.scope$"), "podman"),
    (re.compile(rf"^nerdctl-({_ID})\.scope$"), "containerd"),
    (re.compile(rf"^({_ID})$"), None),  # bare ID: the runtime is named by the component before it
)
_PARENT_RUNTIME = {"docker": "docker", "libpod_parent": "podman", "machine.slice": "podman"}


@dataclass(frozen=True)
class ContainerRef:
    id: str  # the full 64-hex-digit ID
    runtime: str  # docker, containerd, cri-o, podman; "container" when the path does not say


def _from_path(path: str) -> ContainerRef | None:
    parts = [p for p in path.split("/") if p]
    found = None
    for position, part in enumerate(parts):
        for pattern, runtime in _COMPONENT:
            match = pattern.match(part)
            if match:
                if runtime is None:
                    parent = parts[position - 1] if position else ""
                    if parent.startswith("pod") or parent.startswith("kubepods"):
                        runtime = "kubernetes"
                    else:
                        runtime = _PARENT_RUNTIME.get(parent, "containerd" if parent else "container")
                found = ContainerRef(id=match.group(1), runtime=runtime)
                break
    return found


def parse_cgroup(text: str) -> ContainerRef | None:
    """The container named by a ``/proc/PID/cgroup`` text, or None for a process on the host."""
    best: ContainerRef | None = None
    best_depth = -1
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        ref = _from_path(fields[2])
        if ref is None:
            continue
        depth = len(fields[2].split(ref.id)[0])
        if depth > best_depth:  # nested containers: the line whose innermost ID sits deepest
            best, best_depth = ref, depth
    return best


def container_of(pid: int, proc: Path = Path("/proc")) -> ContainerRef | None:
    """The container process ``pid`` runs in; None on the host, or when the process has gone."""
    try:
        text = (proc / str(pid) / "cgroup").read_text(errors="replace")
    except OSError:
        return None
    return parse_cgroup(text)


def command_of(pid: int, proc: Path = Path("/proc")) -> str | None:
    """The process's short name (``comm``), None when it has gone or is not ours to read."""
    try:
        return (proc / str(pid) / "comm").read_text(errors="replace").strip() or None
    except OSError:
        return None
