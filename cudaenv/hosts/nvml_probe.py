"""Whether NVML is worth asking, decided without importing it (or the rest of ``monitor``).

``cudaenv ps`` asks this first so that hosts without a GPU never pay for NVML, nor for loading
the readings' types in ``nvml``.
"""

from __future__ import annotations

import os

MODULE_HOOK = "CUDAENV_NVML_MODULE"  # a Python file standing in for pynvml (tests, recordings)


def probably_available() -> bool:
    """Cheap guess, without importing pynvml: is there a loaded NVIDIA driver (or the test hook)?"""
    if os.environ.get(MODULE_HOOK):
        return True
    if not os.path.exists("/proc/driver/nvidia/version"):
        return False
    import importlib.util

    return importlib.util.find_spec("pynvml") is not None
