"""What the local machine has: NVIDIA driver, GPUs, and the highest CUDA the driver runs.

Sources, most to least informative: NVML (``nvidia-ml-py``, when ``libnvidia-ml`` loads), then
``nvidia-smi --query-gpu`` (drivers before ~R510 have no ``compute_cap`` field: the capability then
comes from the matrix by GPU name), then ``/sys/module/nvidia/version`` or
``/proc/driver/nvidia/version`` (driver version only; the proprietary and the open kernel modules
word that line differently). No driver at all is a normal answer, not an error.

Declared values (``--driver``, ``--gpu``, ``CUDAENV_DRIVER_VERSION``, ``CUDAENV_GPUS``) override
detection: CI runners describe the fleet they deploy to (see ``cudaenv.hosts.target``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from cudaenv.errors import CudaenvError
from cudaenv.versions import is_numeric, numeric_key


class HostDetectionError(CudaenvError):
    """A driver tool answered with something we cannot read (exit 1, with what it said)."""

    code = "host-detection"


@dataclass(frozen=True)
class DetectedGpu:
    index: int
    name: str
    compute_capability: str | None  # None when the driver cannot report it
    memory_mib: int | None = None
    uuid: str | None = None


@dataclass(frozen=True)
class HostInfo:
    driver: str | None
    source: str | None  # "nvml", "nvidia-smi", "proc", "sysfs", "declared", or None (nothing found)
    cuda_driver_version: str | None = None  # the highest CUDA the driver runs natively, as it reports
    kernel_module: str | None = None  # "open" or "proprietary" when /proc says so
    gpus: tuple[DetectedGpu, ...] = ()
    notes: tuple[str, ...] = field(default=())


# --- /proc and /sys ----------------------------------------------------------------------------

_PROC_LINE = re.compile(r"NVRM version: NVIDIA UNIX (?P<kind>.*?)Kernel Module(?: for \S+)?\s+(?P<version>[0-9]+\.[0-9]+(?:\.[0-9]+)?)\s")


def parse_proc_version(text: str) -> tuple[str, str]:
    """(driver version, "open"|"proprietary") from /proc/driver/nvidia/version."""
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            match = _PROC_LINE.search(line + " ")
            if not match:
                raise HostDetectionError(f"/proc/driver/nvidia/version: cannot read the driver version from {line.strip()!r}")
            kind = "open" if "Open" in match.group("kind") else "proprietary"
            return match.group("version"), kind
    raise HostDetectionError("/proc/driver/nvidia/version: no 'NVRM version:' line")


def from_kernel(root: Path = Path("/")) -> HostInfo | None:
    sysfs = root / "sys" / "module" / "nvidia" / "version"
    proc = root / "proc" / "driver" / "nvidia" / "version"
    if proc.is_file():
        version, kernel_module = parse_proc_version(proc.read_text(errors="replace"))
        return HostInfo(driver=version, source="proc", kernel_module=kernel_module)
    if sysfs.is_file():
        version = sysfs.read_text(errors="replace").strip()
        if not is_numeric(version, min_parts=2):
            raise HostDetectionError(f"{sysfs}: expected a driver version like 535.104.05, got {version!r}")
        return HostInfo(driver=version, source="sysfs")
    return None


# --- nvidia-smi --------------------------------------------------------------------------------

QUERY_FIELDS = ("index", "name", "compute_cap", "memory.total", "uuid", "driver_version")


def _smi(binary: str, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([binary, *args], capture_output=True, text=True, errors="replace", timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostDetectionError(f"nvidia-smi failed to run: {exc}") from exc


def parse_smi_csv(text: str, fields: tuple[str, ...]) -> tuple[str | None, tuple[DetectedGpu, ...]]:
    """(driver version, GPUs) from ``--query-gpu=<fields> --format=csv,noheader,nounits`` output."""
    gpus, drivers = [], set()
    for number, line in enumerate(l for l in text.splitlines() if l.strip()):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields):
            raise HostDetectionError(f"nvidia-smi printed an unexpected line (wanted {len(fields)} fields "
                                     f"{', '.join(fields)}): {line.strip()!r}")
        row = dict(zip(fields, cells))
        driver = row.get("driver_version")
        if driver is None or not is_numeric(driver, min_parts=2):
            raise HostDetectionError(f"nvidia-smi reported driver version {driver!r}, expected one like 535.104.05")
        drivers.add(driver)
        cc = row.get("compute_cap")
        if cc is not None and not is_numeric(cc, 2):
            cc = None  # "[N/A]" on some boards
        memory = row.get("memory.total")
        gpus.append(DetectedGpu(
            index=int(row["index"]) if row.get("index", "").isdigit() else number,
            name=row.get("name", "?"), compute_capability=cc,
            memory_mib=int(float(memory)) if memory and re.match(r"^[0-9]+(\.[0-9]+)?$", memory) else None,
            uuid=row.get("uuid") or None,
        ))
    return (min(drivers, key=numeric_key) if drivers else None), tuple(gpus)


# "CUDA Version: 12.2"; drivers from R610 print "CUDA UMD Version: 13.3"
_CUDA_VERSION = re.compile(r"CUDA (?:UMD )?Version:\s*([0-9]+\.[0-9]+)")


def from_nvidia_smi(binary: str | None = None) -> HostInfo | None:
    binary = binary or shutil.which("nvidia-smi")
    if binary is None:
        return None
    fields = QUERY_FIELDS
    proc = _smi(binary, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")
    notes = []
    if proc.returncode != 0 and "compute_cap" in (proc.stdout + proc.stderr):
        # drivers older than ~R510 do not know the compute_cap field
        fields = tuple(f for f in QUERY_FIELDS if f != "compute_cap")
        proc = _smi(binary, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")
        notes.append("this driver's nvidia-smi cannot report compute capability; taken from the GPU name")
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        if any("couldn't communicate with the NVIDIA driver" in line for line in detail):
            return None  # tools installed, no driver loaded: nothing to report
        raise HostDetectionError(f"nvidia-smi exited {proc.returncode}: {detail[-1] if detail else 'no output'}")
    driver, gpus = parse_smi_csv(proc.stdout, fields)
    header = _smi(binary)
    match = _CUDA_VERSION.search(header.stdout) if header.returncode == 0 else None
    return HostInfo(driver=driver, source="nvidia-smi", cuda_driver_version=match.group(1) if match else None,
                    gpus=gpus, notes=tuple(notes))


# --- NVML --------------------------------------------------------------------------------------


def from_nvml() -> HostInfo | None:
    from cudaenv.hosts.nvml import load_module, text

    pynvml = load_module()  # nvidia-ml-py, or the test stand-in CUDAENV_NVML_MODULE names
    if pynvml is None:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # libnvidia-ml missing or no driver: NVML's own error types vary by version
        return None
    try:
        driver = text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            gpus.append(DetectedGpu(
                index=index, name=text(pynvml.nvmlDeviceGetName(handle)), compute_capability=f"{major}.{minor}",
                memory_mib=pynvml.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024),
                uuid=text(pynvml.nvmlDeviceGetUUID(handle)),
            ))
        return HostInfo(driver=driver, source="nvml", cuda_driver_version=f"{cuda // 1000}.{(cuda % 1000) // 10}",
                        gpus=tuple(gpus))
    except Exception as exc:  # NVML errors after a successful init: a broken driver stack, said plainly
        raise HostDetectionError(f"NVML answered with an error: {exc}") from exc
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def detect(root: Path = Path("/")) -> HostInfo:
    """The local host, from the best source available; an empty HostInfo when there is no driver."""
    for probe in (from_nvml, from_nvidia_smi):
        info = probe()
        if info is not None and info.driver:
            return info
    kernel = from_kernel(root)
    return kernel or HostInfo(driver=None, source=None)
