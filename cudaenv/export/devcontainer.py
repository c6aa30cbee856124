"""`.devcontainer/devcontainer.json` for a project: VS Code (or any Dev Containers tool) opens the
project in the image cudaenv built for its lock, with the same GPUs, shared memory, ulimits,
environment and user that `cudaenv run` gives it.

Plain data serialized as JSON (the spec's file is JSON with comments; JSON is a subset), with the
fields of the Dev Containers specification (containers.dev/implementors/json_reference):
`image`, `workspaceMount`/`workspaceFolder`, `runArgs`, `containerEnv`, `containerUser`,
`updateRemoteUserUID`, `hostRequirements.gpu`, `customizations.vscode`.

**GPU-optional** (a project whose targets include a CPU-only one and a GPU one, issue #37 §4): one
committed devcontainer.json must open on the laptop without a GPU and on the GPU workstation.
``--gpus all`` in ``runArgs`` fails where the NVIDIA runtime is missing ("could not select device
driver"; devcontainers/spec#469, loft-sh/devpod#1197), so the file then carries no GPU flag at all
and says ``hostRequirements.gpu: "optional"``: the Dev Containers CLI adds ``--gpus all`` itself
where ``docker info`` shows the NVIDIA runtime (or ``--gpu-availability all``) and nothing
elsewhere, without the warning a required GPU gives. Which GPUs (``[run] gpus`` ids or a count) and
CDI device names cannot be said that way: the tool hands over all of them, through the runtime.

**Which image then.** The GPU target's: the one image cudaenv builds for the project, so every
developer works in the same packages. CUDA's user-space libraries load without a GPU (a framework
reports no device and runs on the CPU), so the laptop opens it as it is; it is the larger image, and
the CPU target's own stack (CPU wheels, no CUDA) is what its lock keeps for CPU-only hosts, for which
cudaenv builds no image yet. Where the project has several GPU targets, ``--target`` says whose.
A CPU target of another CPU architecture than the image's (an arm64 laptop, an x86_64 cluster) would
run it emulated, if at all: the export says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ImageChoice:
    """Whose image a project of several targets opens, and who opens it without a GPU."""

    target: str  # the GPU target whose image the dev container uses
    cpu_targets: tuple[str, ...]  # CPU-only targets: their hosts open the same image without a GPU
    notes: tuple[str, ...] = ()  # what the user should know (another CPU architecture)

    def said(self, gpus: tuple) -> tuple[str, ...]:
        """The notes an export prints for a file that asks for ``gpus`` (none: not GPU-optional)."""
        if gpus[0] == "none" or not self.cpu_targets:
            return (f"the dev container opens target {self.target}'s image", *self.notes)
        several = len(self.cpu_targets) > 1
        return (f"the dev container opens target {self.target}'s image; GPU optional, so target{'s' if several else ''} "
                f"{', '.join(self.cpu_targets)} open{'' if several else 's'} it without a GPU",
                *self.notes, *optional_gpu_notes(*gpus))


def choose_image_target(targets, chosen: str | None, where: str) -> ImageChoice:
    """``targets``: (name, CPU-only, CPU architecture) of each, in the configuration's order.
    The image is ``chosen``'s (a CPU target's own image: CPU builds, no GPU asked for), else the
    only GPU target's, which CPU-only hosts open without a GPU (CUDA's libraries load there and the
    framework runs on the CPU, so every developer works in the same packages); several GPU targets
    and none chosen: exit 2; CPU targets only: the only one, else exit 2."""
    gpu = [name for name, cpu, _ in targets if not cpu]
    cpu_only = [name for name, cpu, _ in targets if cpu]
    if chosen is not None and chosen not in gpu:  # a CPU target's own image: nothing GPU-optional about it
        return ImageChoice(chosen, (), ())
    if chosen is not None:
        target = chosen
    elif len(gpu) == 1:
        (target,) = gpu
    elif gpu:
        raise UserError(f"{where}: names several GPU targets ({', '.join(gpu)}); pass --target NAME for the image "
                        "the dev container opens")
    elif len(cpu_only) == 1:
        return ImageChoice(cpu_only[0], (), ())
    else:
        raise UserError(f"{where}: names several targets, none with a GPU ({', '.join(cpu_only)}); pass --target NAME "
                        "for the image the dev container opens")
    arch = next(a for name, _, a in targets if name == target)
    cpu_targets = tuple(name for name, cpu, _ in targets if cpu)
    notes = tuple(f"target {name} is {a} and target {target}'s image is {arch}: there the dev container runs "
                  "emulated, if at all" for name, cpu, a in targets if cpu and a != arch)
    return ImageChoice(target, cpu_targets, notes)


def optional_gpu_notes(kind: str, value) -> tuple[str, ...]:
    """What a GPU-optional file cannot carry of ``[run] gpus`` / ``--gpus``: the tool gives all GPUs."""
    if kind == "count" or kind == "ids" or (kind == "auto" and isinstance(value, int)):
        asked = ",".join(str(v) for v in value) if kind == "ids" else str(int(value))
        return (f"GPUs {asked}: a GPU-optional dev container gets the GPUs from the Dev Containers tool, which "
                "hands over all of them where the NVIDIA runtime is found",)
    return ()


def devcontainer_document(project, image: str, gpus: tuple, user: str, cdi_specs: dict | None = None, *,
                          gpu_optional: bool = False) -> dict:
    """``cdi_specs``: None for the legacy ``--gpus``; else the GPUs go as CDI devices, checked
    against these (empty: nvidia-ctk's default names). ``gpu_optional``: no GPU flag in the file,
    ``hostRequirements.gpu: "optional"`` (the tool adds GPUs where it finds the NVIDIA runtime)."""
    kind, value = gpus
    run = project.run
    if gpu_optional and cdi_specs is not None:
        raise UserError("--gpu-access cdi: a GPU-optional dev container gets its GPUs from the Dev Containers tool "
                        "(--gpus all, where it finds the NVIDIA runtime); CDI names in runArgs fail on a host "
                        "without them")
    if kind == "none":
        gpu_optional = False
    if gpu_optional:
        args = []
    elif cdi_specs is not None:
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
        document["hostRequirements"] = {"gpu": "optional" if gpu_optional else True}
    if run.ports:
        from cudaenv.project.runopts import parse_ports

        document["forwardPorts"] = sorted({int(key.split("/")[0]) for key in parse_ports(tuple(run.ports))})
    return document


def render(document: dict) -> str:
    return json.dumps(document, indent=2) + "\n"


def target_path(root: Path) -> Path:
    return root / ".devcontainer" / "devcontainer.json"
