"""The Container Device Interface on this host: which GPUs its CDI specs offer, by which names.

NVIDIA recommends CDI over the legacy ``--gpus`` hook (which loses GPUs after ``systemctl
daemon-reload``). ``nvidia-ctk cdi generate`` writes a spec (YAML or JSON) into ``/etc/cdi`` or
``/var/run/cdi``; an engine with CDI (Podman, Docker 25+ with the ``cdi`` feature) then gives a
container ``--device nvidia.com/gpu=0``: the spec's device nodes, mounts and environment.

This module reads those specs as the CDI specification defines them
(https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md): a file is one spec
with a ``kind`` (``vendor/class``) and ``devices``, each a ``name`` with ``containerEdits``; a device
is asked for by its qualified name ``kind=name``; when two directories hold the same device the
later directory wins (``/var/run/cdi`` over ``/etc/cdi``). It maps cudaenv's GPU requests (all, a
count, indices or UUIDs) onto those names, and finds devices whose nodes the host no longer has
(a spec generated before a GPU went away or the driver changed).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudaenv.errors import CudaenvError

SPEC_DIRS: tuple[str, ...] = ("/etc/cdi", "/var/run/cdi")  # the specification's defaults, lowest priority first
GPU_KIND = "nvidia.com/gpu"
GENERATE_HELP = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
SPEC_SUFFIXES = (".yaml", ".json")  # what the engines' CDI library reads (a .yml file is ignored there)
SPEC_FIELDS = ("cdiVersion", "kind", "devices", "containerEdits", "annotations")  # the library parses strictly
MAX_SPEC_BYTES = 4 * 1024 * 1024  # nvidia-ctk writes a few kB per GPU; anything far larger is not a spec

# The specification's grammar: a kind is vendor/class, a device name alphanumerics plus _ . : -
_VENDOR = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?\Z", re.ASCII)
_CLASS = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?\Z", re.ASCII)
_DEVICE_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?\Z", re.ASCII)
_INDEX = re.compile(r"[0-9]{1,9}\Z", re.ASCII)  # a GPU index as nvidia-ctk writes it (never 4300 digits)
_VERSION = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}\Z", re.ASCII)


def _described(value: object) -> str:
    """A value as an error line shows it: a string quoted and cut, anything else by its type only
    (``str()`` of a YAML structure built from aliases would expand it, a "billion laughs")."""
    return repr(value[:60]) if isinstance(value, str) else f"a {type(value).__name__}"


class CdiError(CudaenvError):
    """A GPU request that this host's CDI specs cannot serve (exit 1, like a missing NVIDIA runtime)."""


@dataclass(frozen=True)
class CdiDevice:
    kind: str
    name: str
    spec: str  # the file that declares it
    device_nodes: tuple[str, ...] = ()  # host paths of its device nodes

    @property
    def qualified(self) -> str:
        """The name an engine takes: ``nvidia.com/gpu=0``."""
        return f"{self.kind}={self.name}"


@dataclass(frozen=True)
class CdiSpecs:
    """What the spec directories hold: the devices by qualified name, the files read, and one line per
    file that is not a valid spec (reported by ``doctor``, never a crash)."""

    devices: tuple[CdiDevice, ...] = ()
    files: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def of_kind(self, kind: str = GPU_KIND) -> dict[str, CdiDevice]:
        """The devices of one kind by name; a later directory's device replaces an earlier one's."""
        return {device.name: device for device in self.devices if device.kind == kind}


def _valid_kind(kind: object) -> bool:
    if not isinstance(kind, str) or kind.count("/") != 1:
        return False
    vendor, device_class = kind.split("/")
    return bool(_VENDOR.match(vendor) and _CLASS.match(device_class))


def _node_paths(edits: object) -> tuple[str, ...]:
    nodes = edits.get("deviceNodes") if isinstance(edits, dict) else None
    paths = []
    for node in nodes if isinstance(nodes, list) else ():
        if isinstance(node, dict):
            path = node.get("hostPath") or node.get("path")
            if isinstance(path, str) and path:
                paths.append(path)
    return tuple(paths)


def parse_spec(text: str, path: str) -> tuple[list[CdiDevice], str | None]:
    """One spec file's devices, or a one-line problem naming the file and field. JSON is read as
    JSON, anything else as YAML (the specification allows both)."""
    try:
        if path.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except RecursionError:
        return [], f"{path}: nested too deeply to be a CDI spec"
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        return [], f"{path}: not valid JSON: {exc}"
    except Exception as exc:  # noqa: BLE001 - yaml.YAMLError and its kin: any unreadable spec is reported
        problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return [], f"{path}: not valid YAML: {problem or type(exc).__name__}{where}"
    if not isinstance(data, dict):
        return [], f"{path}: expected a CDI spec (a mapping with cdiVersion, kind and devices)"
    unknown = [str(key)[:40] for key in data if key not in SPEC_FIELDS]
    if unknown:
        return [], f"{path}: {unknown[0]}: not a CDI spec field (the engines refuse the whole file)"
    version = data.get("cdiVersion")
    if not isinstance(version, str) or not _VERSION.match(version):
        return [], f"{path}: cdiVersion: expected a version string such as \"0.5.0\", got {_described(version)}"
    kind = data.get("kind")
    if not _valid_kind(kind):
        return [], f"{path}: kind: expected vendor/class such as {GPU_KIND!r}, got {_described(kind)}"
    entries = data.get("devices")
    if not isinstance(entries, list) or not entries:
        return [], f"{path}: devices: expected a list of at least one device"
    devices, seen = [], set()
    for number, entry in enumerate(entries, 1):
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < 10 ** 9:
            name = str(name)  # `name: 7` unquoted: the engines' YAML reader makes it the string "7"
        if not isinstance(name, str) or not _DEVICE_NAME.match(name):
            return [], (f"{path}: devices[{number}].name: expected a name of letters, digits, '_', '.', ':' or "
                        f"'-', got {_described(name)}")
        edits = entry.get("containerEdits")
        if not isinstance(edits, dict) or not any(edits.get(k) for k in ("env", "deviceNodes", "mounts", "hooks")):
            return [], f"{path}: devices[{number}].containerEdits: expected device nodes, mounts, env or hooks (the engines refuse a device without any)"
        if name in seen:
            return [], f"{path}: devices: {name!r} is declared twice"
        seen.add(name)
        devices.append(CdiDevice(kind, name, path, _node_paths(edits)))
    return devices, None


def read_specs(dirs: Sequence[str | os.PathLike] = SPEC_DIRS) -> CdiSpecs:
    """Every spec in ``dirs`` (lowest priority first), as the engines read them: the files named
    ``*.yaml``/``*.yml``/``*.json`` directly in each directory, in name order."""
    devices: dict[str, CdiDevice] = {}
    files, problems = [], []
    for directory in dirs:
        try:
            entries = sorted(Path(directory).iterdir())
        except OSError:
            continue  # a missing directory is the common case, not a problem
        in_directory: dict[str, CdiDevice] = {}
        clashes: set[str] = set()
        for path in entries:
            if not path.name.endswith(SPEC_SUFFIXES) or not path.is_file():
                continue
            try:
                if path.stat().st_size > MAX_SPEC_BYTES:
                    problems.append(f"{path}: larger than {MAX_SPEC_BYTES // (1024 * 1024)} MiB: not a CDI spec")
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{path}: unreadable: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8'}")
                continue
            files.append(str(path))
            found, problem = parse_spec(text, str(path))
            if problem:
                problems.append(problem)
            for device in found:
                earlier = in_directory.get(device.qualified)
                if earlier is not None:  # the engines' cache drops a device two files of one directory declare
                    problems.append(f"{device.spec}: {device.qualified} is also declared in {earlier.spec}: the "
                                    "engines offer neither; keep one")
                    clashes.add(device.qualified)
                in_directory[device.qualified] = device
        for qualified, device in in_directory.items():
            if qualified in clashes:
                devices.pop(qualified, None)
            else:
                devices[qualified] = device
    return CdiSpecs(tuple(devices.values()), tuple(files), tuple(problems))


def _index_names(devices: Mapping[str, CdiDevice]) -> list[str]:
    """Whole-GPU devices named by index (``nvidia-ctk``'s default strategy), in index order; MIG
    devices (``0:1``) and the ``all`` device are not counted."""
    return sorted((name for name in devices if _INDEX.match(name)), key=lambda name: (len(name.lstrip("0")), name))


def device_names(devices: Mapping[str, CdiDevice], *, count: int | None = None,
                 device_ids: Iterable[str] = (), kind: str = GPU_KIND) -> tuple[str, ...]:
    """The qualified CDI names for a GPU request: ``count=-1`` (or no count) all GPUs, ``count=N``
    the first N by index, ``device_ids`` each by its name in the spec (an index, a UUID, a MIG
    ``0:1``). A request the specs cannot serve is a CdiError that names what they offer and how
    to regenerate them, never a container without its GPUs."""
    wanted = list(device_ids)
    offered = ", ".join(sorted(devices))
    where = f"the CDI specs ({', '.join(sorted({d.spec for d in devices.values()})) or ' and '.join(SPEC_DIRS)})"
    if not devices:
        raise CdiError(f"no {kind} devices in {where}: generate a spec with `{GENERATE_HELP}`")
    if wanted:
        missing = [name for name in wanted if name not in devices]
        if missing:
            raise CdiError(f"--gpus: {', '.join(repr(m) for m in missing)} is not a {kind} device in {where} "
                           f"(it offers: {offered}); name a GPU the spec has, or regenerate it with "
                           f"`{GENERATE_HELP} --device-name-strategy=index --device-name-strategy=uuid`")
        return tuple(devices[name].qualified for name in dict.fromkeys(wanted))
    if count is None or count < 0:
        if "all" in devices:
            return (devices["all"].qualified,)
        indexed = _index_names(devices)
        if not indexed:
            raise CdiError(f"--gpus all: {where} have no 'all' device and no GPU named by index (it offers: {offered})")
        return tuple(devices[name].qualified for name in indexed)
    indexed = _index_names(devices)
    if count > len(indexed):
        raise CdiError(f"--gpus {count}: {where} offer {len(indexed)} GPU{'s' if len(indexed) != 1 else ''} "
                       f"by index ({', '.join(indexed) or 'none'})")
    return tuple(devices[name].qualified for name in indexed[:count])


def request_names(kind: str, value, devices: Mapping[str, CdiDevice] | None = None) -> tuple[str, ...]:
    """CDI names for a ``--gpus``-style request (``all``, ``count`` N, ``ids``, ``auto`` [N]) as an
    export writes them for a CDI host. With ``devices`` (this host's specs) every name is checked
    against them; without, the names are the ones ``nvidia-ctk cdi generate`` writes by default
    (``all`` and one per index), for a host this machine cannot see."""
    if kind == "none":
        return ()
    if kind == "ids":
        # an index is a number: "01" is GPU 1, as nvidia-ctk names it ("nvidia.com/gpu=1")
        ids = tuple(str(int(i)) if str(i).isascii() and str(i).isdigit() else str(i) for i in value)
        bad = [i for i in ids if not _DEVICE_NAME.match(i)]
        if bad:
            from cudaenv.errors import UserError

            raise UserError(f"--gpus: {bad[0]!r} is not a CDI device name (letters, digits, '_', '.', ':' or '-')")
        return device_names(devices, device_ids=ids) if devices else tuple(f"{GPU_KIND}={i}" for i in dict.fromkeys(ids))
    count = int(value) if kind == "count" or (kind == "auto" and isinstance(value, int)) else -1
    if devices:
        return device_names(devices, count=count)
    return (f"{GPU_KIND}=all",) if count < 0 else tuple(f"{GPU_KIND}={i}" for i in range(count))


def stale_devices(devices: Mapping[str, CdiDevice],
                  exists: Callable[[str], bool] = os.path.exists) -> list[tuple[CdiDevice, tuple[str, ...]]]:
    """Devices whose device nodes this host no longer has: each with the missing paths. An engine
    fails to start a container with such a device, so ``doctor`` says to regenerate the spec."""
    stale = []
    for device in devices.values():
        missing = tuple(path for path in device.device_nodes if not exists(path))
        if missing:
            stale.append((device, missing))
    return stale


def daemon_cdi_dirs(docker_info: Mapping | None) -> tuple[str, ...]:
    """The CDI spec directories a Docker daemon reads, from its ``/info`` (``CDISpecDirs``, Docker
    27+; empty when the daemon's ``cdi`` feature is off or the daemon predates it)."""
    dirs = (docker_info or {}).get("CDISpecDirs")
    return tuple(d for d in dirs if isinstance(d, str) and d) if isinstance(dirs, list) else ()
