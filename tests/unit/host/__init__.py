"""Host detection, driven through the real code paths with recorded driver-tool outputs.

No GPU, driver or NVML exists on the machines the suite runs on, so the tests put a stand-in
``nvidia-smi`` first on ``PATH`` — a small shell script that prints the recorded outputs of
tests/fixtures/host/ (see SOURCES.md there) — and point ``from_kernel(root)`` at a directory tree
holding recorded ``/proc`` and ``/sys`` files. The helpers here are shared with the CLI and
integration tests.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

HOST_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "host"
EXTRA_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "host-extra"

# The field lists the recorded CSV files answer (SOURCES.md): the full one, and R470's, which has
# no compute_cap field.
FULL_QUERY = "--query-gpu=index,name,compute_cap,memory.total,uuid,driver_version --format=csv,noheader,nounits"
R470_QUERY = "--query-gpu=index,name,memory.total,uuid,driver_version --format=csv,noheader,nounits"


def fixture(name: str) -> Path:
    path = HOST_FIXTURES / name
    if not path.is_file():
        path = EXTRA_FIXTURES / name
    assert path.is_file(), f"missing host fixture {name}"
    return path


@dataclass(frozen=True)
class FakeSmi:
    """A stand-in nvidia-smi in ``bin_dir``; every invocation's arguments go to ``log``."""

    bin_dir: Path
    log: Path

    @property
    def path(self) -> Path:
        return self.bin_dir / "nvidia-smi"

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def env_path(self, base: str | None = None) -> str:
        """PATH with the stand-in first."""
        return os.pathsep.join([str(self.bin_dir), base if base is not None else os.environ.get("PATH", "")])


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def install_fake_nvidia_smi(directory: Path, *, query: str | None = None, header: str | None = None,
                            rejects_compute_cap: bool = False, error_stream: str = "stdout",
                            no_driver: bool = False) -> FakeSmi:
    """Write ``directory/bin/nvidia-smi``.

    * ``query``/``header``: fixture files printed for the ``--query-gpu`` call and for a bare
      ``nvidia-smi``. The query file is printed only for the exact field list it was recorded
      for, so a change in what cudaenv asks shows up as an error, not as silently matching data.
    * ``rejects_compute_cap``: behave like an R470 nvidia-smi — any query naming ``compute_cap``
      prints the recorded error (on ``error_stream``) and exits 2; the query without it answers.
    * ``no_driver``: every call prints the recorded "couldn't communicate with the NVIDIA driver"
      message and exits 9 (nvidia-smi(1), RETURN VALUE: "9 NVIDIA driver is not loaded";
      2 is "invalid or malformed argument", what R470 answers a query naming compute_cap).
    """
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = directory / "nvidia-smi.calls"
    redirect = " >&2" if error_stream == "stderr" else ""
    lines = ["#!/bin/sh", "# stand-in nvidia-smi: prints outputs recorded from real drivers (tests/fixtures/host)",
             f'printf "%s\\n" "$*" >> {_q(log)}']
    if no_driver:
        lines += [f"cat {_q(fixture('smi-no-driver.txt'))}", "exit 9"]
    else:
        lines.append('case "$*" in')
        if header is not None:
            lines.append(f'  "") cat {_q(fixture(header))}; exit 0 ;;')
        if rejects_compute_cap:
            lines.append(f"  *--query-gpu=*compute_cap*) cat {_q(fixture('smi-error-r470-compute-cap.txt'))}{redirect}; exit 2 ;;")
            if query is not None:
                lines.append(f'  {shlex.quote(R470_QUERY)}) cat {_q(fixture(query))}; exit 0 ;;')
        elif query is not None:
            lines.append(f'  {shlex.quote(FULL_QUERY)}) cat {_q(fixture(query))}; exit 0 ;;')
        lines += ["esac", 'echo "stand-in nvidia-smi: no recorded output for: $*" >&2', "exit 2"]
    script = bin_dir / "nvidia-smi"
    script.write_text("\n".join(lines) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return FakeSmi(bin_dir, log)


# Recorded machines, as keyword arguments of install_fake_nvidia_smi (query and header of one
# machine or one cluster where SOURCES.md has both; the R535 header is another R535 machine's).
RECORDED_HOSTS = {
    "r580-h100": {"query": "smi-query-r580-h100.csv", "header": "smi-header-r580-h100.txt"},
    "r535-a100x2": {"query": "smi-query-r535-a100x2.csv", "header": "smi-header-r535.txt"},
    "r470-k80": {"query": "smi-query-r470-k80.csv", "header": "smi-header-r470.txt", "rejects_compute_cap": True},
    "malformed": {"query": "smi-query-malformed.csv", "header": "smi-header-r535.txt"},
}


def kernel_tree(root: Path, *, proc: str | None = None, sysfs: str | None = None) -> Path:
    """A directory laid out like / with the recorded /proc and /sys files copied in."""
    if proc is not None:
        target = root / "proc" / "driver" / "nvidia" / "version"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixture(proc), target)
    if sysfs is not None:
        target = root / "sys" / "module" / "nvidia" / "version"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixture(sysfs), target)
    return root


def hide_nvml(directory: Path) -> Path:
    """A directory to put first on PYTHONPATH so that ``import pynvml`` fails in a subprocess, as
    it does without nvidia-ml-py: a GPU host with NVML must not answer instead of the stand-in."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pynvml.py").write_text('raise ImportError("nvidia-ml-py hidden by the test suite")\n')
    return directory


def path_without_nvidia_smi(path: str | None = None) -> str:
    """PATH minus every directory that holds a real nvidia-smi (a GPU host's own must not answer)."""
    path = os.environ.get("PATH", "") if path is None else path
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not (Path(d) / "nvidia-smi").exists())


def cli_env(no_nvml: Path, *, smi: FakeSmi | None = None, overlay: Path | None = None, **extra: str) -> dict:
    """The environment for ``python -m cudaenv`` in a subprocess: no CUDAENV_* from the caller but the
    suite's matrix cache, no matrix overlays unless given, NVML hidden, and on PATH no nvidia-smi but
    the stand-in (when given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
    if "CUDAENV_CACHE_DIR" in os.environ:
        env["CUDAENV_CACHE_DIR"] = os.environ["CUDAENV_CACHE_DIR"]
    env["CUDAENV_MATRIX_PATH"] = str(overlay) if overlay else ""
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(no_nvml), env.get("PYTHONPATH", "")) if p)
    env["PATH"] = smi.env_path(path_without_nvidia_smi()) if smi else path_without_nvidia_smi()
    env.update(extra)
    return env
