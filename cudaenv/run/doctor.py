"""``cudaenv doctor``: what this host can and cannot do, one check at a time, each ✗ with a fix."""

from __future__ import annotations

import datetime
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from cudaenv.hosts.detect import HostDetectionError, HostInfo, detect
from cudaenv.matrix import Matrix
from cudaenv.resolver.driver import driver_support
from cudaenv.resolver.gpu import driver_supports_architecture
from cudaenv.hosts.target import identify_gpu
from cudaenv.versions import driver_branch

CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))  # cudaenv.hosts.cdi.SPEC_DIRS, as paths
TOOLKIT_BINARIES = ("nvidia-container-runtime-hook", "nvidia-container-toolkit", "nvidia-ctk", "nvidia-container-cli")
TOOLKIT_HELP = ("install the NVIDIA Container Toolkit "
                "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html), "
                "then `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


BUILD_ONLY_HELP = ("install the NVIDIA driver for your GPU (https://www.nvidia.com/Download/index.aspx); or, when "
                   "this machine only builds images, declare the target host: CUDAENV_DRIVER_VERSION / CUDAENV_GPUS, "
                   "or [target] driver/gpus in the project's cudaenv.toml")


def declared_target() -> str | None:
    """Where the target host is declared when this machine is not it (a build machine, a CI runner)."""
    if os.environ.get("CUDAENV_DRIVER_VERSION") or os.environ.get("CUDAENV_GPUS"):
        return "CUDAENV_DRIVER_VERSION / CUDAENV_GPUS"
    try:
        from cudaenv.project import load_project
        from cudaenv.project.config import find_config

        if find_config(Path(".")) is not None:
            target = load_project(".").target
            if target.driver or target.gpus or target.compute_capabilities:
                return f"[target] in {find_config(Path('.'))}"
    except Exception:  # a broken project is other commands' business: doctor reports the host
        return None
    return None


def _driver_checks(matrix: Matrix, info: HostInfo) -> list[Check]:
    if info.driver is None:
        declared = declared_target()
        if declared:  # a build-only host is a supported role, not a failure
            return [Check("NVIDIA driver", True, f"none on this machine: a build-only host (the target is declared "
                                                 f"by {declared})")]
        return [Check("NVIDIA driver", False, "no NVIDIA driver found (NVML, nvidia-smi, /proc/driver/nvidia/version)",
                      BUILD_ONLY_HELP)]
    checks = []
    module = f", {info.kernel_module} kernel module" if info.kernel_module else ""
    support = driver_support(matrix, info.driver)
    checks.append(Check("NVIDIA driver", True, f"{info.driver} (via {info.source}{module})"))
    reported = f"; the driver reports CUDA {info.cuda_driver_version}" if info.cuda_driver_version else ""
    checks.append(Check("CUDA supported", support.max_native_cuda is not None, f"{support.cuda_text}{reported}",
                        None if support.max_native_cuda else "upgrade the driver: the matrix knows no CUDA it runs"))
    branch = matrix.driver_branch(driver_branch(info.driver))
    if branch is None:
        checks.append(Check("driver branch", True, f"R{driver_branch(info.driver)} is not in the matrix (newer than "
                                                   "cudaenv's data?): architecture support and end of life unknown"))
    else:
        eol = branch.eol
        expired = eol is not None and eol < datetime.date.today().isoformat()[: len(eol)]
        detail = f"R{branch.branch}" + (f" ({branch.type})" if branch.type else "") + (f", end of life {eol}" if eol else "")
        checks.append(Check("driver branch", not expired, detail + (" — past end of life" if expired else ""),
                            "move to a supported driver branch (LTSB or production)" if expired else None))
    for found in info.gpus:
        gpu = identify_gpu(matrix, found)
        label = f"GPU {found.index}"
        if gpu is None:
            checks.append(Check(label, False, f"{found.name}: compute capability unknown",
                                "add the GPU to a matrix overlay (gpus.toml) or pass --compute-capability"))
            continue
        supported = driver_supports_architecture(matrix, info.driver, gpu) is not False
        memory = f", {found.memory_mib // 1024} GiB" if found.memory_mib else ""
        checks.append(Check(label, supported, f"{found.name}, sm_{gpu.compute_capability.replace('.', '')}"
                            + (f" ({gpu.architecture})" if gpu.architecture else "") + memory
                            + (f", {found.uuid}" if found.uuid else ""),
                            None if supported else f"driver branch R{branch.branch} no longer supports "
                                                   f"{gpu.architecture} GPUs; install an older branch that does"))
    return checks


def _docker_checks() -> tuple[list[Check], dict | None]:
    from cudaenv.engine.docker_engine import connect, daemon_is_rootless

    try:
        client = connect()
        version = client.version()
        info = client.info()
    except ImportError as exc:  # not the daemon: this installation lacks the Docker client library
        return [Check("Docker engine", False, f"cudaenv cannot talk to Docker: {exc}"[:200],
                      "reinstall cudaenv with its dependencies (`pip install --force-reinstall cudaenv`), "
                      "which include the `docker` Python package")], None
    except Exception as exc:  # EngineError carries the fix; anything else is reported as is
        return [Check("Docker engine", False, str(exc).split(": ", 1)[-1][:200],
                      "start the Docker daemon (`sudo systemctl start docker`) or set DOCKER_HOST")], None
    rootless = (", rootless: your containers run as their root, which is the daemon's user on the host, so "
                "files written in /workspace belong to that user") if daemon_is_rootless(info) else ""
    return [Check("Docker engine", True, f"Docker {version.get('Version')} (API {version.get('ApiVersion')}){rootless}")], info


def _runtime_check(docker_info: dict | None, specs=None) -> Check:
    """``specs``: the CDI specs read once for the whole report (read here when not given)."""
    found = []
    runtimes = (docker_info or {}).get("Runtimes") or {}
    if "nvidia" in runtimes:
        found.append("Docker runtime 'nvidia'")
    found += [b for b in TOOLKIT_BINARIES if shutil.which(b)]
    from cudaenv.hosts import cdi

    specs = cdi.read_specs(CDI_DIRS) if specs is None else specs
    found += [f"CDI spec {spec}" for spec in sorted({d.spec for d in specs.of_kind().values()})]
    if found:
        return Check("NVIDIA container runtime", True, ", ".join(found))
    return Check("NVIDIA container runtime", False, "not configured: containers cannot be given GPUs", TOOLKIT_HELP)


CDI_DOCKER_HELP = ("sudo nvidia-ctk runtime configure --runtime=docker --cdi.enabled && sudo systemctl restart docker "
                   "(Docker 25 or newer; it sets \"features\": {\"cdi\": true} in /etc/docker/daemon.json)")


def printable(text: str) -> str:
    """A path as one line shows it: control characters escaped, so a file name cannot forge a line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def cdi_check(gpus, docker_info: dict | None, dirs=None, specs=None) -> Check:
    """The Container Device Interface, NVIDIA's recommended way to give containers GPUs: which
    specs offer which GPUs, whether they still match the driver's GPUs (a spec generated before a
    GPU or driver change names devices the host no longer has, and containers fail to start), and
    whether the Docker daemon injects them. ``gpus`` are the driver's GPUs (empty on a build-only
    host, which needs no spec). ``specs``: the specs of ``dirs`` when the caller has read them."""
    from cudaenv.hosts import cdi

    specs = cdi.read_specs(cdi.SPEC_DIRS if dirs is None else dirs) if specs is None else specs
    where = " and ".join(str(d) for d in (cdi.SPEC_DIRS if dirs is None else dirs))
    name = "CDI specs"
    if specs.problems:
        return Check(name, False, f"{specs.problems[0]}" + (f" (and {len(specs.problems) - 1} more)"
                                                            if len(specs.problems) > 1 else ""),
                     f"fix or remove the file; to write a fresh one: `{cdi.GENERATE_HELP}`")
    devices = specs.of_kind()
    if not devices:
        if not gpus:
            return Check(name, True, f"no NVIDIA GPU spec in {where}; none needed on a host without GPUs")
        return Check(name, False, f"no NVIDIA GPU spec in {where}: Podman, and Docker with CDI, cannot give "
                                  "containers GPUs (only Docker's legacy NVIDIA hook can)",
                     f"`{cdi.GENERATE_HELP}` (NVIDIA Container Toolkit 1.14 or newer)")
    stale = [f"{device.qualified} ({', '.join(printable(m) for m in missing)} missing)"
             for device, missing in cdi.stale_devices(devices)]
    if gpus:
        known = {str(g.index) for g in gpus} | {g.uuid for g in gpus if g.uuid}
        stale += [f"{device.qualified} (the driver has no such GPU)" for device in devices.values()
                  if (device.name.isdigit() or device.name.startswith("GPU-")) and device.name not in known]
    files = ", ".join(printable(f) for f in sorted({d.spec for d in devices.values()}))
    if stale:
        return Check(name, False, f"stale: {'; '.join(dict.fromkeys(stale))} in {files}: containers asking for "
                                  "them fail to start",
                     f"regenerate the spec: `{cdi.GENERATE_HELP}`")
    listed = ", ".join(sorted(devices, key=lambda n: (not n.isdigit(), len(n) if n.isdigit() else 0, n)))
    detail = f"{files} offer {listed}"
    if docker_info is not None:
        if cdi.daemon_cdi_dirs(docker_info):
            detail += "; Docker injects them (CDI enabled)"
        else:
            detail += "; Docker does not read them (CDI not enabled) and uses the legacy NVIDIA hook"
    return Check(name, True, detail)


def reload_safety_check(docker_info: dict | None, gpus) -> Check | None:
    """The setup that loses GPUs: Docker with the systemd cgroup driver and the legacy NVIDIA hook.
    A ``systemctl daemon-reload`` rewrites the containers' device cgroups and running containers
    lose their GPUs ("Failed to initialize NVML: Unknown Error", NVIDIA/nvidia-container-toolkit
    #1227); CDI-injected devices survive it. Only said where containers get GPUs."""
    from cudaenv.hosts import cdi

    dirs = cdi.daemon_cdi_dirs(docker_info)
    if not gpus or docker_info is None or (dirs and cdi.read_specs(dirs).of_kind()):
        return None  # no GPUs, no Docker, or Docker injects the GPUs through CDI
    if docker_info.get("CgroupDriver") != "systemd":
        return None
    return Check("GPUs across daemon-reload", False,
                 "Docker uses the systemd cgroup driver with the legacy NVIDIA hook: running containers lose "
                 "their GPUs after `systemctl daemon-reload` (\"Failed to initialize NVML: Unknown Error\")",
                 f"switch to CDI: `{cdi.GENERATE_HELP}`, then `{CDI_DOCKER_HELP}`")


def _buildkit_check() -> Check:
    from cudaenv.engine.builders import find_cli_builder

    builder = find_cli_builder()
    if builder is None:
        return Check("BuildKit", False, "no docker CLI with BuildKit found: builds fall back to the classic builder "
                                        "(no cache mounts; build.ca_cert unavailable)",
                     "install the docker buildx plugin (package docker-buildx or docker-buildx-plugin)")
    how = "docker buildx" if builder.mode == "buildx" else "DOCKER_BUILDKIT=1 docker build"
    return Check("BuildKit", True, f"{how} ({builder.cli})")


BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")  # where the kernel lists its registered interpreters
EMULATION_SETUP = ("sudo apt-get install qemu-user-static binfmt-support && "
                   "sudo update-binfmts --enable qemu-aarch64")


def emulation_check(machine: str | None = None, binfmt: Path = BINFMT_DIR) -> Check:
    """Whether this machine can build (and run) aarch64 images for a Grace/Arm target: natively on
    an aarch64 machine, else through qemu-user-static registered with binfmt_misc. Not a failure
    when missing: only a project for an Arm target needs it, and this says how to set it up."""
    from cudaenv.hosts.target import machine_arch

    machine = machine if machine is not None else machine_arch()
    name = "aarch64 images"
    if machine == "aarch64":
        return Check(name, True, "native: this machine builds and runs them without emulation")
    try:
        entry = (binfmt / "qemu-aarch64").read_text()
    except OSError:
        return Check(name, True, f"no emulation registered: aarch64 images (Grace/Arm targets) cannot be built here; "
                                 f"to build them: {EMULATION_SETUP} (binfmt_misc mounted at {binfmt})")
    lines = entry.splitlines()
    enabled = bool(lines) and lines[0].strip() == "enabled"
    flags = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("flags:")), "")
    if not enabled:
        return Check(name, True, f"qemu-aarch64 is registered but disabled: `sudo update-binfmts --enable qemu-aarch64` "
                                 "to build aarch64 images here")
    if "F" not in flags:
        return Check(name, True, "qemu-aarch64 is registered without the F flag: builds inside containers cannot find "
                                 "the interpreter; Debian's qemu-user-static registers it with F")
    return Check(name, True, "qemu-aarch64 registered with binfmt_misc (F flag): aarch64 images build and run here, "
                             "emulated (slower than native)")


def run_checks(matrix: Matrix) -> tuple[list[Check], dict]:
    try:
        info = detect()
        checks = _driver_checks(matrix, info)
    except HostDetectionError as exc:
        info = HostInfo(driver=None, source=None)
        checks = [Check("NVIDIA driver", False, str(exc), "check the driver installation (`nvidia-smi`)")]
    choice, engine_checks = engine_check()
    checks += engine_checks
    if choice is None or choice.name == "docker":
        docker_checks, docker_info = _docker_checks()
        checks += docker_checks
    else:
        docker_info = None  # Podman: no daemon, no BuildKit; GPUs come through CDI (checked below)
    from cudaenv.hosts import cdi

    specs = cdi.read_specs()  # once: the runtime line and the CDI line both report them
    runtime = _runtime_check(docker_info, specs)
    if not runtime.ok and info.driver is None and declared_target():
        runtime = Check(runtime.name, True, "not configured; not needed here (a build-only host runs no GPU containers)")
    checks.append(runtime)
    checks.append(cdi_check(info.gpus, docker_info, specs=specs))
    reload_check = reload_safety_check(docker_info, info.gpus)
    if reload_check is not None:
        checks.append(reload_check)
    if choice is None or choice.name == "docker":
        checks.append(_buildkit_check())
    checks.append(emulation_check())
    overlays = [f for f in matrix.files if not f.startswith(str(Path(matrix.files[0]).parent))] if matrix.files else []
    checks.append(Check("compatibility matrix", True, f"revision {matrix.revision}"
                        + (f", overlays: {', '.join(overlays)}" if overlays else "")))
    support = driver_support(matrix, info.driver) if info.driver else None
    host = {
        "driver": info.driver, "source": info.source, "kernel_module": info.kernel_module,
        "cuda_driver_version": info.cuda_driver_version,
        "max_cuda_native": support.max_native_cuda if support else None,
        "max_cuda_minor_version": support.max_minor_version_cuda if support else None,
        "gpus": [{"index": g.index, "name": g.name, "compute_capability": g.compute_capability,
                  "memory_mib": g.memory_mib, "uuid": g.uuid} for g in info.gpus],
        "docker_host": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
        "engine": choice.name if choice else None,
        "engine_reason": choice.reason if choice else None,
    }
    return checks, host


def engine_check():
    """Which container engine cudaenv uses and why (``--engine``, ``CUDAENV_ENGINE``, or the
    automatic choice); for Podman also whether it answers. (Choice or None, checks)."""
    from cudaenv.engine import choose_engine, engine_named
    from cudaenv.errors import CudaenvError

    try:
        choice = choose_engine()
    except CudaenvError as exc:
        return None, [Check("container engine", False, str(exc), "set CUDAENV_ENGINE to docker or podman, or unset it")]
    checks = [Check("container engine", True, f"{choice.name}: {choice.reason}")]
    if choice.name == "podman":
        try:
            checks.append(Check("Podman engine", True, engine_named("podman").describe()))
        except CudaenvError as exc:
            checks.append(Check("Podman engine", False, str(exc)[:300],
                                "install podman (Debian/Ubuntu: `sudo apt-get install podman uidmap`) or choose "
                                "Docker (--engine docker)"))
    return choice, checks
