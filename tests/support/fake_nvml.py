"""A stand-in for ``pynvml`` (nvidia-ml-py) that answers from a recorded NVML reading.

No NVIDIA driver exists on CI machines, so the NVML calls ``cudaenv.hosts.nvml`` makes are
answered here from a JSON recording (``tests/fixtures/nvml/*.json``; the file named by
``CUDAENV_FAKE_NVML_RECORDING``). Point ``CUDAENV_NVML_MODULE`` at this file to use it, in a test or
in a terminal: ``cudaenv top`` then runs its real code on these answers.

The answers have nvidia-ml-py's own shapes, built from nvidia-ml-py's own types (it is a
dependency of cudaenv, so its ctypes structures and error classes are importable without a
driver), following its API (``pynvml.py`` in nvidia-ml-py 13.x):

- ``nvmlDeviceGetUtilizationRates`` -> ``c_nvmlUtilization_t`` (``gpu``, ``memory`` in percent)
- ``nvmlDeviceGetMemoryInfo`` (no version) -> ``c_nvmlMemory_t`` (``total``, ``free``, ``used`` bytes)
- ``nvmlDeviceGetPowerUsage`` / ``nvmlDeviceGetEnforcedPowerLimit`` -> int milliwatts
- ``nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU)`` -> int degrees C
- ``nvmlDeviceGetName`` / ``nvmlDeviceGetUUID`` / ``nvmlSystemGetDriverVersion`` -> str
- ``nvmlSystemGetCudaDriverVersion`` -> int (12020 for 12.2); ``nvmlDeviceGetCudaComputeCapability``
  -> (major, minor): the calls ``cudaenv.hosts.detect.from_nvml`` makes
- ``nvmlDeviceGetComputeRunningProcesses`` / ``...GraphicsRunningProcesses`` -> list of
  ``nvmlFriendlyObject`` made from ``c_nvmlProcessInfo_t`` (``pid``, ``usedGpuMemory`` bytes or
  None, ``gpuInstanceId``, ``computeInstanceId``), as ``nvmlStructToFriendlyObject`` makes them
- a metric recorded as ``null`` raises ``NVMLError(NVML_ERROR_NOT_SUPPORTED)``, which NVML returns
  for what a board does not report (nvidia-smi prints those as ``N/A``)
- ``"init_error": "NVML_ERROR_DRIVER_NOT_LOADED"`` makes ``nvmlInit`` raise that error.
"""

from __future__ import annotations

import json
import os

import pynvml
from pynvml import NVML_TEMPERATURE_GPU, NVMLError  # noqa: F401  (callers use them through this module)

NVML_ERROR_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
NVML_ERROR_NO_PERMISSION = pynvml.NVML_ERROR_NO_PERMISSION
NVML_ERROR_FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND

_state: dict = {"recording": None}


def _recording() -> dict:
    if _state["recording"] is None:
        raise NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
    return _state["recording"]


def _gpu(handle) -> dict:
    return _recording()["gpus"][handle]


def _metric(handle, key):
    value = _gpu(handle)[key]
    if value is None:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return value


def nvmlInit() -> None:
    with open(os.environ["CUDAENV_FAKE_NVML_RECORDING"], encoding="utf-8") as handle:
        recording = json.load(handle)
    if recording.get("init_error"):
        raise NVMLError(getattr(pynvml, recording["init_error"]))
    _state["recording"] = recording


def nvmlShutdown() -> None:
    _state["recording"] = None


def nvmlSystemGetDriverVersion() -> str:
    return _recording()["driver_version"]


def nvmlSystemGetCudaDriverVersion() -> int:
    return _recording()["cuda_driver_version"]  # e.g. 12020 for 12.2, as NVML encodes it


def nvmlDeviceGetCount() -> int:
    return len(_recording()["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if not 0 <= index < nvmlDeviceGetCount():
        raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
    return index  # NVML's handle is an opaque pointer; callers only pass it back


def nvmlDeviceGetName(handle) -> str:
    return _gpu(handle)["name"]


def nvmlDeviceGetUUID(handle) -> str:
    return _gpu(handle)["uuid"]


def nvmlDeviceGetCudaComputeCapability(handle) -> tuple[int, int]:
    major, minor = _gpu(handle)["cuda_compute_capability"]
    return major, minor


def nvmlDeviceGetUtilizationRates(handle) -> pynvml.c_nvmlUtilization_t:
    value = _metric(handle, "utilization")
    return pynvml.c_nvmlUtilization_t(gpu=value["gpu"], memory=value["memory"])


def nvmlDeviceGetMemoryInfo(handle, version=None) -> pynvml.c_nvmlMemory_t:
    value = _metric(handle, "memory")
    return pynvml.c_nvmlMemory_t(total=value["total"], free=value["free"], used=value["used"])


def nvmlDeviceGetPowerUsage(handle) -> int:
    return _metric(handle, "power_usage_mw")


def nvmlDeviceGetEnforcedPowerLimit(handle) -> int:
    return _metric(handle, "enforced_power_limit_mw")


def nvmlDeviceGetTemperature(handle, sensor) -> int:
    assert sensor == NVML_TEMPERATURE_GPU, sensor
    return _metric(handle, "temperature_c")


def _processes(handle, key) -> list:
    out = []
    for entry in _gpu(handle).get(key, []):
        struct = pynvml.c_nvmlProcessInfo_t(pid=entry["pid"], usedGpuMemory=(
            pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if entry["usedGpuMemory"] is None else entry["usedGpuMemory"]),
            gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
        friendly = pynvml.nvmlStructToFriendlyObject(struct)
        if friendly.usedGpuMemory == pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value:
            friendly.usedGpuMemory = None  # what nvidia-ml-py does for "not available"
        out.append(friendly)
    return out


def nvmlDeviceGetComputeRunningProcesses(handle) -> list:
    return _processes(handle, "compute_processes")


def nvmlDeviceGetGraphicsRunningProcesses(handle) -> list:
    return _processes(handle, "graphics_processes")
