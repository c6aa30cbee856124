"""A Compose file for several projects on one GPU host: one service per project, each with the
image cudaenv built for its stack and the run settings of its [run] table.

The file is plain data serialized by a YAML library (never text pasted into a template), so no
value from a project can break its structure; Compose's own `config` validates it in the tests.
GPUs use the Compose specification's device reservations (`deploy.resources.reservations.devices`,
driver nvidia, `count` or `device_ids`, capabilities [gpu]).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cudaenv.errors import UserError

# Compose project and service names: lower-case letters, digits, dashes and underscores
COMPOSE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}", re.ASCII)


@dataclass(frozen=True)
class ServiceInput:
    """What one project contributes: its configuration and the image built for its lock."""

    project: object  # cudaenv.project.config.Project
    image: str
    gpus: object  # ("all"|"none"|"count"|"ids", value) as runopts.parse_gpus returns


def service_name(name: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_") or "project"
    return cleaned[:63]


def gpu_reservation(kind: str, value, cdi_devices: tuple[str, ...] = ()) -> dict | None:
    """The Compose spec's GPU request for ``--gpus``-style values; None for no GPU. On a CDI host
    (``cdi_devices``, the request's CDI names) the reservation names them with driver ``cdi``,
    which Docker 25+ with CDI enabled and Podman inject, instead of the legacy nvidia driver."""
    if kind == "none":
        return None
    if cdi_devices:
        return {"resources": {"reservations": {"devices": [
            {"driver": "cdi", "device_ids": list(cdi_devices), "capabilities": ["gpu"]}]}}}
    device = {"driver": "nvidia", "capabilities": ["gpu"]}
    if kind == "all":
        device["count"] = "all"
    elif kind == "count":
        device["count"] = int(value)
    elif kind == "ids":
        device["device_ids"] = [str(i) for i in value]
    else:
        raise UserError(f"--gpus {kind}: not something a Compose file can express")
    return {"resources": {"reservations": {"devices": [device]}}}


def service_gpus(stack, request: tuple[str, object]) -> tuple[str, object]:
    """The GPUs a service reserves: ``request`` (--gpus, else [run] gpus), none for a CPU-only
    target's stack, which uses none (a reservation would also make the service fail on a host
    without the NVIDIA runtime)."""
    return ("none", None) if stack.cpu else request


def named_indices(kind: str, value) -> set[int] | None:
    """The GPU indices a non-auto request takes on the host (None: every GPU). A count takes the
    first N, as Docker's NVIDIA device driver hands them out (moby daemon/nvidia_linux.go
    ``countToDevices``); device ids are indices, or UUIDs whose index cannot be known here."""
    if kind == "all":
        return None
    if kind == "count":
        return set(range(int(value)))
    if kind == "ids":
        if not all(str(i).isdigit() for i in value):
            raise UserError(f"--gpus auto cannot tell which GPUs another project's device ids {','.join(value)} are: "
                            "give that project indices (0,1) or every project explicit ids")
        return {int(i) for i in value}
    return set()


def assign_auto(requests: list[tuple[str, object]], gpu_count: int | None) -> list[tuple[str, object]]:
    """``auto`` / ``auto:N`` become disjoint device ids, in project order, as `cudaenv run --gpus
    auto` would hand them out, skipping every GPU another project in the file names; without a GPU
    inventory that cannot be done, and is said so."""
    if not any(kind == "auto" for kind, _ in requests):
        return requests
    if gpu_count is None:
        raise UserError("--gpus auto needs the host's GPUs: give --gpu-count N (or declare them: CUDAENV_GPUS / "
                        "--gpu), or use a count or device ids instead")
    taken: set[int] = set()
    for kind, value in requests:
        if kind == "auto":
            continue
        indices = named_indices(kind, value)
        if indices is None:
            raise UserError("--gpus auto: another project in this file asks for all GPUs, so none is left for an "
                            "auto project; give that project a count or device ids")
        taken |= indices
    free = [i for i in range(gpu_count) if i not in taken]
    out = []
    for kind, value in requests:
        if kind != "auto":
            out.append((kind, value))
            continue
        wanted = value or 1
        if wanted > len(free):
            raise UserError(f"--gpus auto: {gpu_count} GPU(s), {len(taken)} named by other projects in this file: "
                            "not enough for every project to get its own")
        out.append(("ids", tuple(str(i) for i in free[:wanted])))
        free = free[wanted:]
    return out


def literal(value: str) -> str:
    """Compose interpolates ``$VAR`` / ``${VAR}`` in every value; ``$$`` is a literal ``$``."""
    return value.replace("$", "$$")


def _ulimits(limits) -> dict:
    return {name: {"soft": soft, "hard": hard} for name, soft, hard in limits}


def _ports(ports: tuple[str, ...]) -> list[str]:
    from cudaenv.project.runopts import parse_ports

    parse_ports(tuple(ports))  # the rules `cudaenv run` applies, so the file cannot say what run refuses
    # HOST:CONTAINER[/PROTOCOL]: a protocol goes after the container port only ("9000:9000/udp")
    return [str(p) if ":" in str(p) else f"{str(p).partition('/')[0]}:{p}" for p in ports]


def compose_document(services: list[ServiceInput], *, name: str, user: str, user_env: dict,
                     env: dict[str, str] | None = None, passed: tuple[str, ...] = (),
                     cdi_specs: dict | None = None) -> dict:
    """The Compose file as plain data. ``env``/``passed``: the -e flags, for every service, as
    `cudaenv run -e` orders them (over [run] env and the user's HOME). A passed name is written
    without a value (``NAME: null``), which Compose fills from the shell that runs ``docker compose
    up`` (the Compose specification, ``environment``), so no value of the caller's is written.
    ``cdi_specs``: None for the legacy NVIDIA hook; else GPUs go by CDI name, checked against
    these devices (empty: nvidia-ctk's default names)."""
    if not COMPOSE_NAME.fullmatch(name):
        raise UserError(f"--name {name!r}: expected a Compose project name (lower-case letters, digits, - and _)")
    document: dict = {"name": name, "services": {}}
    for item in services:
        project = item.project
        key = service_name(project.name)
        if key in document["services"]:
            raise UserError(f"two projects would both be service {key!r}: give one a different [project] name")
        kind, value = item.gpus
        merged = {**dict(project.run.env), **user_env, **(env or {})}
        service_env: dict = {key: literal(str(value)) for key, value in merged.items() if key not in passed}
        service_env.update({key: None for key in passed})
        if kind == "none":
            service_env["NVIDIA_VISIBLE_DEVICES"] = "void"  # as `cudaenv run --gpus none`: hidden from the runtime hook too
        service: dict = {
            "image": item.image,
            "working_dir": "/workspace",
            "user": user,
            "volumes": [{"type": "bind", "source": literal(str(Path(project.root).resolve())), "target": "/workspace"}],
            "environment": dict(sorted(service_env.items())),
            "ulimits": _ulimits(project.run.ulimits),
            "labels": {"io.cudaenv.project": project.name},
        }
        if project.run.command:
            service["command"] = [literal(word) for word in project.run.command]
        if project.run.ipc == "host":
            service["ipc"] = "host"
        else:
            service["shm_size"] = project.run.shm_size
            if project.run.ipc:
                service["ipc"] = project.run.ipc
        if project.run.ports:
            service["ports"] = _ports(project.run.ports)
        if cdi_specs is not None:
            from cudaenv.hosts.cdi import request_names

            deploy = gpu_reservation(kind, value, request_names(kind, value, cdi_specs))
        else:
            deploy = gpu_reservation(kind, value)
        if deploy:
            service["deploy"] = deploy
        document["services"][key] = service
    return document


# What a YAML 1.2 reader (Compose is Go) takes for a number, a boolean or null. PyYAML follows
# YAML 1.1 and leaves some of these bare (3e-4, 0o17), so such strings are quoted explicitly.
_YAML12_SCALAR = re.compile(
    r"[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|\.inf|\.Inf|\.INF)"
    r"|\.nan|\.NaN|\.NAN|true|True|TRUE|false|False|FALSE|null|Null|NULL|~|", re.ASCII)


def render(document: dict) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def string(dumper, value: str):
        style = "'" if _YAML12_SCALAR.fullmatch(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, string)

    header = ("# compose.yaml written by `cudaenv export compose`: one service per project, each on the image\n"
              "# cudaenv built for its locked stack. Regenerate after `cudaenv build`; `docker compose up` runs them.\n")
    return header + yaml.dump(document, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=False)
