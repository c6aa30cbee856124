"""`.devcontainer/devcontainer.json` for a project: VS Code (or any Dev Containers tool) opens the
project in the image cudaenv built for its lock, with the same GPUs, shared memory, ulimits,
environment and user that `cudaenv run` gives it.

Plain data serialized as JSON (the spec's file is JSON with comments; JSON is a subset), with the
fields of the Dev Containers specification (containers.dev/implementors/json_reference):
`image`, `workspaceMount`/`workspaceFolder`, `runArgs`, `containerEnv`, `containerUser`,
`updateRemoteUserUID`, `hostRequirements.gpu`, `customizations.vscode`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from cudaenv.errors import UserError

# What the Dev Containers tools substitute in every string of devcontainer.json: ``${NAME}`` or
# ``${NAME:ARG...}`` for these names (containers.dev/implementors/json_reference, "Variables in
# devcontainer.json"; @devcontainers/cli's substitution, a ``/\$\{(.*?)\}/g`` replace whose text
# before the first ``:`` picks the variable). Other ``${...}`` stay as written; there is no escape.
SUBSTITUTED = ("env", "localEnv", "containerEnv", "localWorkspaceFolder", "localWorkspaceFolderBasename",
               "containerWorkspaceFolder", "containerWorkspaceFolderBasename", "devcontainerId")
_VARIABLE = re.compile("\\$\\{([^}\n\r\u2028\u2029]*?)\\}")  # JavaScript's "." stops at these line ends


def literal_value(name: str, value: str, where: str) -> str:
    """``value`` when the Dev Containers tools would hand it over unchanged; else exit 2: no escape
    exists, and `cudaenv run` would pass ``${localEnv:X}`` on literally."""
    for match in _VARIABLE.finditer(value):
        if match.group(1).split(":")[0] in SUBSTITUTED:
            raise UserError(f"{where}: run.env.{name}: {match.group(0)!r} would be substituted by the Dev Containers "
                            "tool (devcontainer.json has no escape for it), while `cudaenv run` passes it as written")
    return value


def gpu_run_args(kind: str, value) -> list[str]:
    """`docker run --gpus` as `cudaenv run` would pass it (the spec has no field for which GPUs)."""
    if kind == "none":
        return []
    if kind == "all":
        return ["--gpus", "all"]
    if kind == "count":
        return ["--gpus", str(int(value))]
    if kind == "ids":
        # Docker reads --gpus as CSV: device=0,1 is "device=0" plus a count of 1. The quotes make
        # the list one field, as `docker run --gpus '"device=0,1"'` (Docker's GPU documentation).
        return ["--gpus", f'"device={",".join(str(i) for i in value)}"']
    if isinstance(value, int):  # auto:N: N GPUs (Docker's count takes the first N; a container cannot re-pick)
        return ["--gpus", str(value)]
    return ["--gpus", "all"]  # auto: the whole host, as an editor session has it to itself


def cdi_run_args(names: tuple[str, ...]) -> list[str]:
    """`--device nvidia.com/gpu=0` per CDI name: how Podman and Docker 25+ with CDI take GPUs."""
    return [word for name in names for word in ("--device", name)]


def devcontainer_document(project, image: str, gpus: tuple, user: str, cdi_specs: dict | None = None) -> dict:
    """``cdi_specs``: None for the legacy ``--gpus``; else the GPUs go as CDI devices, checked
    against these (empty: nvidia-ctk's default names)."""
    kind, value = gpus
    run = project.run
    if cdi_specs is not None:
        from cudaenv.hosts.cdi import request_names

        args = cdi_run_args(request_names(kind, value, cdi_specs))
    else:
        args = [*gpu_run_args(kind, value)]
    if run.ipc == "host":
        args += ["--ipc", "host"]
    else:
        args += ["--shm-size", run.shm_size]
        if run.ipc:
            args += ["--ipc", run.ipc]
    for name, soft, hard in run.ulimits:
        args += ["--ulimit", f"{name}={soft}:{hard}"]
    where = str(getattr(project, "config_path", None) or project.root)
    env = {name: literal_value(name, value, where) for name, value in run.env}
    env["HOME"] = "/tmp"  # the container user may have no home in the image, as under `cudaenv run`
    if kind == "none":
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
    document: dict = {
        "name": project.name,
        "image": image,
        "workspaceMount": "source=${localWorkspaceFolder},target=/workspace,type=bind",
        "workspaceFolder": "/workspace",
        "containerUser": user,
        "updateRemoteUserUID": False,  # the image already runs as your numeric UID:GID
        "runArgs": args,
        "containerEnv": env,
        "customizations": {"vscode": {
            "settings": {"python.defaultInterpreterPath": "/opt/venv/bin/python"},
            "extensions": ["ms-python.python"],
        }},
    }
    if kind != "none":
        document["hostRequirements"] = {"gpu": True}
    if run.ports:
        from cudaenv.project.runopts import parse_ports

        document["forwardPorts"] = sorted({int(key.split("/")[0]) for key in parse_ports(tuple(run.ports))})
    return document


def render(document: dict) -> str:
    return json.dumps(document, indent=2) + "\n"


def target_path(root: Path) -> Path:
    return root / ".devcontainer" / "devcontainer.json"
