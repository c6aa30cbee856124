"""The target host: declared (``--driver``/``--gpu``/``--compute-capability``, the
``CUDAENV_DRIVER_VERSION`` / ``CUDAENV_GPUS`` environment, a project's [target]) or detected.

Declaring anything turns detection off, so a CI runner (or a laptop) never mixes its own GPUs
into the description of another machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cudaenv.errors import UserError
from cudaenv.matrix import Matrix
from cudaenv.resolver.model import ARCHES, Host, TargetGpu, arch_name
from cudaenv.versions import is_driver_version, is_numeric

if TYPE_CHECKING:  # detection (subprocess, NVML) is imported only when a command detects
    from cudaenv.hosts.detect import DetectedGpu, HostInfo


def check_driver_text(value: str, where: str) -> str:
    value = value.strip()
    if not is_driver_version(value):
        raise UserError(f"{where}: expected a driver version like 535.104.05, got {value!r}")
    return value


def check_arch_text(value: str, where: str) -> str:
    """``arm64`` -> ``aarch64``: the target's CPU architecture, in the kernel's spelling (uname -m)."""
    found = arch_name(value) if isinstance(value, str) else None
    if found is None:
        raise UserError(f"{where}: expected a CPU architecture, {' or '.join(ARCHES)} (arm64 and amd64 are "
                        f"read as aarch64 and x86_64), got {value!r}")
    return found


def machine_arch() -> str | None:
    """This machine's CPU architecture (uname -m), or None for one no framework wheel exists for."""
    import platform

    return arch_name(platform.machine())


def declared_gpu_names(value: str) -> list[str]:
    """``CUDAENV_GPUS="A100,A100,T4"`` -> names (commas or semicolons separate)."""
    return [part.strip() for part in re.split(r"[,;]", value) if part.strip()]


def environment_overrides(env: dict[str, str] | None = None) -> tuple[str | None, list[str]]:
    env = os.environ if env is None else env
    driver = env.get("CUDAENV_DRIVER_VERSION") or None
    if driver is not None:
        driver = check_driver_text(driver, "CUDAENV_DRIVER_VERSION")
    return driver, declared_gpu_names(env.get("CUDAENV_GPUS", ""))


@dataclass(frozen=True)
class Target:
    host: Host
    origin: str  # "declared", "detected", or "unknown"
    detected: HostInfo | None = None
    unknown_gpus: tuple[str, ...] = ()  # detected boards cudaenv could not identify (not checked)

    def as_dict(self) -> dict:
        """What a lock records: GPUs by name (or capability), so the target can be read back."""
        data = {"driver": self.host.driver, "gpus": [g.name or g.compute_capability for g in self.host.gpus],
                "origin": self.origin}
        if self.host.arch is not None:
            data["arch"] = self.host.arch
        if self.host.cpu:
            data["gpus"] = "none"
        return data

    def report(self) -> dict:
        """What --json output shows: GPUs with their SM, e.g. "A100 (sm_80)"."""
        return {"driver": self.host.driver, "gpus": "none" if self.host.cpu else [g.label for g in self.host.gpus],
                "origin": self.origin, "arch": self.host.platform, "unidentified_gpus": list(self.unknown_gpus)}

    def describe(self) -> str:
        driver = f"driver {self.host.driver}" if self.host.driver else "driver unknown"
        gpus = ", ".join(g.label for g in self.host.gpus) if self.host.gpus else "GPUs unknown"
        if self.host.cpu:
            driver, gpus = "no GPU", "CPU builds only"
        unknown = f"; not identified, so not checked: {', '.join(self.unknown_gpus)}" if self.unknown_gpus else ""
        origin = self.origin
        if self.host.platform != "x86_64":  # said only where it is not the usual one
            gpus += f" on {self.host.platform}"
        if origin == "unknown":  # say why, and how to describe the machine this is for
            looked = "no NVIDIA driver found on this machine" if self.detected is not None else "detection off"
            origin = f"unknown: {looked}; give --driver and --gpu for the machine this is for"
        return f"{driver}; {gpus} ({origin}){unknown}"


def _compute_capability_instead(where: str) -> str:
    """The way to give a compute capability in the place an unknown GPU name was given."""
    if where.endswith("target.gpus"):
        return 'target.compute_capabilities = ["X.Y"]'
    if where.endswith(".gpu"):  # a [cluster.slurm.features.NAME] table
        return 'compute_capability = "X.Y" in place of gpu'
    return "--compute-capability X.Y"


def gpu_by_name(matrix: Matrix, name: str, *, where: str = "--gpu") -> TargetGpu:
    """The table's row for a GPU name. A card the table lacks is bad input, and the one-line error
    says how to describe it by what decides a stack anyway, its compute capability (NVIDIA's CUDA
    GPUs page lists it), so an old or new card is never a dead end."""
    row = matrix.find_gpu(name)
    if row is None:
        raise UserError(f"{where}: unknown GPU {name!r}: give its compute capability instead, "
                        f"{_compute_capability_instead(where)} (https://developer.nvidia.com/cuda-gpus lists it; "
                        "`cudaenv matrix list gpu` lists the names cudaenv knows)")
    return TargetGpu(row.compute_capability, row.name, row.architecture, row.datacenter, row.host_arch, row.l4t)


def gpu_by_cc(matrix: Matrix, cc: str, *, where: str = "--compute-capability") -> TargetGpu:
    cc = cc.strip()
    if not is_numeric(cc, 2):
        raise UserError(f"{where}: expected a compute capability like 8.0, got {cc!r}")
    arch = matrix.architecture_of(cc)
    if arch is None:
        known = ", ".join(c for a in matrix.architectures for c in a.compute_capabilities)
        raise UserError(f"{where}: {cc} is not a known compute capability (known: {known})")
    jetson = matrix.jetson_only(cc)  # sm_87 is a Jetson Orin, and runs Jetson Linux's CUDA
    return TargetGpu(cc, None, arch.name, False, jetson.host_arch if jetson else None, jetson is not None)


def identify_gpu(matrix: Matrix, found: DetectedGpu) -> TargetGpu | None:
    """A detected board as the resolver sees it: the capability the driver reports, else the
    matrix's for its name; None when neither knows it."""
    row = matrix.find_gpu(found.name)
    cc = found.compute_capability or (row.compute_capability if row else None)
    if cc is None:
        return None
    arch = matrix.architecture_of(cc)
    name = row.name if row else found.name
    row = row or matrix.jetson_only(cc)  # a board the table does not name, with a capability only Jetson has
    return TargetGpu(cc, name, arch.name if arch else None, row.datacenter if row else False,
                     row.host_arch if row else None, row.l4t if row else False)


def host_from_detection(matrix: Matrix, info: HostInfo) -> tuple[Host, tuple[str, ...]]:
    """The detected host, and the GPUs that could not be identified (neither the driver nor the
    matrix knows their compute capability: they are left out of every check, and said so)."""
    gpus, unknown = [], []
    for found in info.gpus:
        gpu = identify_gpu(matrix, found)
        if gpu is None:
            unknown.append(found.name)
        else:
            gpus.append(gpu)
    return Host(info.driver, tuple(gpus)), tuple(unknown)


def resolve_target(matrix: Matrix, *, driver: str | None, gpus: Sequence[str], compute_capabilities: Sequence[str],
                   detect: bool = True, environment: bool = True, where: str | None = None,
                   arch: str | None = None, cpu: bool = False) -> Target:
    """Options first, then (``environment``) CUDAENV_DRIVER_VERSION / CUDAENV_GPUS, then detection.
    ``where`` names the file the values came from, for error messages ("cudaenv.toml: target").
    ``arch``: the target's CPU architecture as declared; a declared host without one is x86_64 unless
    a GPU says otherwise (a GH200 comes only with a Grace CPU), a detected host is this machine's.
    ``cpu``: a target declared without a GPU (gpus = "none"): CPU builds only."""
    if arch is not None:
        arch = check_arch_text(arch, f"{where}.arch" if where else "--arch")
    if cpu:
        return Target(Host(arch=arch, cpu=True), "declared")
    env_driver, env_gpus = (None, [])
    if environment and not (driver and (gpus or compute_capabilities)):
        env_driver, env_gpus = environment_overrides()  # read only when options leave something open
    if driver is not None and not driver.strip():
        raise UserError(f"{where + '.driver' if where else '--driver'}: expected a driver version like 535.104.05, got ''")
    declared_driver = check_driver_text(driver, f"{where}.driver" if where else "--driver") if driver else env_driver
    targets = ([gpu_by_name(matrix, n, where=f"{where}.gpus" if where else "--gpu") for n in gpus]
               + [gpu_by_cc(matrix, c, where=f"{where}.compute_capabilities" if where else "--compute-capability")
                  for c in compute_capabilities])
    if not targets and env_gpus:
        targets = [gpu_by_name(matrix, n, where="CUDAENV_GPUS") for n in env_gpus]
    if declared_driver or targets or arch is not None:
        return Target(Host(declared_driver, tuple(targets), arch), "declared")
    if not detect:
        return Target(Host(), "unknown")
    from cudaenv.hosts.detect import detect as detect_host

    info = detect_host()
    if info.driver is None:
        return Target(Host(), "unknown", info)
    host, unknown = host_from_detection(matrix, info)
    host = Host(host.driver, host.gpus, machine_arch())
    return Target(host, f"detected via {info.source}", info, unknown_gpus=unknown)


def project_target(matrix: Matrix, project, name: str | None = None) -> Target:
    """The host a lock is for: the configured [target] (or [targets.NAME] for ``name``) only, never
    this machine, so a lock written on a laptop and checked on a GPU-less CI runner agree."""
    declared = project.target if name is None else project.target_named(name)
    return declared_target(matrix, project, declared)


def declared_target(matrix: Matrix, project, declared) -> Target:
    """A project's target (a ``TargetConfig``) as the resolver's host; errors name its table."""
    section = f"targets.{declared.name}" if "targets" in project.raw else "target"
    return resolve_target(matrix, driver=declared.driver, gpus=declared.gpus,
                          compute_capabilities=declared.compute_capabilities, detect=False, environment=False,
                          where=f"{project.config_path}: {section}", arch=declared.arch, cpu=declared.cpu)


def project_targets(matrix: Matrix, project) -> tuple[tuple[str, Target], ...]:
    """Every target the project is locked for, by name, in the file's order."""
    return tuple((declared.name, declared_target(matrix, project, declared)) for declared in project.named_targets)
