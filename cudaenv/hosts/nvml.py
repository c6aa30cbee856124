"""The NVML calls ``cudaenv top`` and ``cudaenv ps`` use, through nvidia-ml-py (``import pynvml``).

Every value crosses this module as plain Python numbers and strings, so nothing else in cudaenv
touches ctypes structures or NVML error codes. Calls made (nvidia-ml-py's names and shapes):

- ``nvmlInit()`` / ``nvmlShutdown()``; ``nvmlSystemGetDriverVersion() -> str``
- ``nvmlDeviceGetCount() -> int``, ``nvmlDeviceGetHandleByIndex(i) -> handle``
- ``nvmlDeviceGetName(h) -> str``, ``nvmlDeviceGetUUID(h) -> str`` (bytes in releases before 11.515)
- ``nvmlDeviceGetUtilizationRates(h) -> c_nvmlUtilization_t`` (``.gpu``, ``.memory``: percent over
  the driver's last sample period)
- ``nvmlDeviceGetMemoryInfo(h) -> c_nvmlMemory_t`` (``.total``, ``.free``, ``.used``: bytes)
- ``nvmlDeviceGetPowerUsage(h)``, ``nvmlDeviceGetEnforcedPowerLimit(h) -> int`` milliwatts
- ``nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU) -> int`` degrees C
- ``nvmlDeviceGetComputeRunningProcesses(h)``, ``nvmlDeviceGetGraphicsRunningProcesses(h) ->
  list`` of objects with ``.pid`` (a host PID) and ``.usedGpuMemory`` (bytes; ``None`` when
  the driver cannot tell)

A metric a board does not report (utilization under MIG, power on some boards) raises
``NVMLError_NotSupported``; it becomes ``None`` here, never a failure of the whole sample.

Test hook: ``CUDAENV_NVML_MODULE=/path/to/module.py`` loads that file instead of ``pynvml``. The
test suite points it at a stand-in that answers from recorded NVML readings
(``tests/support/fake_nvml.py``), because no NVIDIA driver exists on CI machines.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

from cudaenv.errors import CudaenvError
from cudaenv.hosts.nvml_probe import MODULE_HOOK, probably_available  # noqa: F401 - re-exported

MIB = 1024 * 1024


class NvmlUnavailable(CudaenvError):
    """No NVML on this host (no nvidia-ml-py, no libnvidia-ml, or no driver loaded): exit 1."""

    code = "nvml-unavailable"


@dataclass(frozen=True)
class GpuProcessReading:
    pid: int
    used_memory_mib: int | None
    kind: str  # "compute" or "graphics"


@dataclass(frozen=True)
class GpuReading:
    index: int
    name: str
    uuid: str | None
    utilization_percent: int | None
    memory_utilization_percent: int | None
    memory_used_mib: int | None
    memory_total_mib: int | None
    power_watts: float | None
    power_limit_watts: float | None
    temperature_c: int | None
    processes: tuple[GpuProcessReading, ...]


def load_module() -> ModuleType | None:
    """pynvml (or the module the test hook names); None when nvidia-ml-py is not installed."""
    hook = os.environ.get(MODULE_HOOK)
    if hook:
        import importlib.util
        from pathlib import Path

        path = Path(hook)
        spec = importlib.util.spec_from_file_location("cudaenv_nvml_hook", path)
        if not path.is_file() or spec is None or spec.loader is None:
            raise NvmlUnavailable(f"{MODULE_HOOK}={hook}: expected the path of a Python file standing in for pynvml")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


@contextlib.contextmanager
def session() -> Iterator[ModuleType]:
    """An initialised NVML, shut down afterwards; NvmlUnavailable with one line saying why not."""
    nvml = load_module()
    if nvml is None:
        raise NvmlUnavailable("NVML is not available: nvidia-ml-py is not installed "
                              "(pip install nvidia-ml-py, or reinstall cudaenv)")
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...: their classes vary by release
        raise NvmlUnavailable(f"NVML is not available on this host ({text(exc) or exc.__class__.__name__}): "
                              "no NVIDIA driver is loaded, or libnvidia-ml.so.1 is missing") from exc
    try:
        yield nvml
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def text(value) -> str:
    """NVML strings: str from nvidia-ml-py 11.515 on, bytes before."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def _optional(nvml: ModuleType, call, *args):
    """The call's answer, or None where this board or driver does not report it."""
    try:
        return call(*args)
    except nvml.NVMLError as exc:
        not_reported = tuple(getattr(nvml, name) for name in (
            "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_FUNCTION_NOT_FOUND",
        ) if hasattr(nvml, name))
        if getattr(exc, "value", None) in not_reported:
            return None
        raise NvmlUnavailable(f"NVML answered with an error: {text(exc)}") from exc


def driver_version(nvml: ModuleType) -> str | None:
    version = _optional(nvml, nvml.nvmlSystemGetDriverVersion)
    return text(version) if version is not None else None


def _processes(nvml: ModuleType, handle) -> tuple[GpuProcessReading, ...]:
    seen: dict[int, GpuProcessReading] = {}
    for kind, call in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                       ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
        function = getattr(nvml, call, None)
        for info in (_optional(nvml, function, handle) if function else None) or ():
            used = info.usedGpuMemory
            reading = GpuProcessReading(pid=int(info.pid), used_memory_mib=None if used is None else int(used) // MIB,
                                        kind=kind)
            seen.setdefault(reading.pid, reading)  # a process doing both is listed once, as compute
    return tuple(seen.values())


def read_gpu(nvml: ModuleType, index: int) -> GpuReading:
    """One GPU's metrics and processes, each metric None where the board does not report it."""
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(f"NVML cannot open GPU {index}: {text(exc)}") from exc
    utilization = _optional(nvml, nvml.nvmlDeviceGetUtilizationRates, handle)
    memory = _optional(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
    power = _optional(nvml, nvml.nvmlDeviceGetPowerUsage, handle)
    limit = _optional(nvml, nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    uuid = _optional(nvml, nvml.nvmlDeviceGetUUID, handle)
    return GpuReading(
        index=index,
        name=text(_optional(nvml, nvml.nvmlDeviceGetName, handle) or "?"),
        uuid=text(uuid) if uuid is not None else None,
        utilization_percent=int(utilization.gpu) if utilization is not None else None,
        memory_utilization_percent=int(utilization.memory) if utilization is not None else None,
        memory_used_mib=int(memory.used) // MIB if memory is not None else None,
        memory_total_mib=int(memory.total) // MIB if memory is not None else None,
        power_watts=power / 1000 if power is not None else None,
        power_limit_watts=limit / 1000 if limit is not None else None,
        temperature_c=_optional(nvml, nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
        processes=_processes(nvml, handle),
    )


def read_all(nvml: ModuleType) -> tuple[str | None, tuple[GpuReading, ...]]:
    """(driver version, every GPU's reading) from an initialised NVML."""
    try:
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(f"NVML cannot count the GPUs: {text(exc)}") from exc
    return driver_version(nvml), tuple(read_gpu(nvml, index) for index in range(count))
