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
from pathlib import Path


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
    return ["--gpus", "all"]  # auto: the whole host, as an editor session has it to itself


def devcontainer_document(project, image: str, gpus: tuple, user: str) -> dict:
    kind, value = gpus
    run = project.run
    args = [*gpu_run_args(kind, value)]
    if run.ipc == "host":
        args += ["--ipc", "host"]
    else:
        args += ["--shm-size", run.shm_size]
        if run.ipc:
            args += ["--ipc", run.ipc]
    for name, soft, hard in run.ulimits:
        args += ["--ulimit", f"{name}={soft}:{hard}"]
    env = dict(run.env)
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
        from cudaenv.runopts import parse_ports

        document["forwardPorts"] = sorted({int(key.split("/")[0]) for key in parse_ports(tuple(run.ports))})
    return document


def render(document: dict) -> str:
    return json.dumps(document, indent=2) + "\n"


def target_path(root: Path) -> Path:
    return root / ".devcontainer" / "devcontainer.json"
