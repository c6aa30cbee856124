"""Recorded NVML answers (tests/fixtures/nvml) with the processes a test puts on the GPUs, and the
environment that makes ``cudaenv`` read them through ``tests/support/fake_nvml.py``."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
FAKE_NVML = Path(__file__).resolve().with_name("fake_nvml.py")
MIB = 1024 * 1024


def write_recording(directory: Path, fixture: str, compute: list[tuple[int, int | None]] = (),
                    graphics: list[tuple[int, int | None]] = (), gpu: int = 0) -> Path:
    """A copy of ``fixture`` whose GPU ``gpu`` runs these (pid, MiB or None) processes."""
    recording = json.loads((FIXTURES / fixture).read_text())
    recording["gpus"][gpu]["compute_processes"] = [
        {"pid": pid, "usedGpuMemory": None if mib is None else mib * MIB} for pid, mib in compute]
    recording["gpus"][gpu]["graphics_processes"] = [
        {"pid": pid, "usedGpuMemory": None if mib is None else mib * MIB} for pid, mib in graphics]
    path = directory / f"nvml-{fixture}"
    path.write_text(json.dumps(recording))
    return path


def fake_nvml_env(recording: Path) -> dict[str, str]:
    return {"CUDAENV_NVML_MODULE": str(FAKE_NVML), "CUDAENV_FAKE_NVML_RECORDING": str(recording)}
