"""The forward-compatibility entrypoint puts cuda-compat first only on an older host driver."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cudaenv.core.resources import templates_dir

SCRIPT = templates_dir() / "compat-entrypoint.sh"
R535_PROC = Path(__file__).resolve().parents[2] / "fixtures" / "host" / "proc-version-r535.txt"
R580_OPEN_PROC = Path(__file__).resolve().parents[2] / "fixtures" / "host" / "proc-version-r580-open.txt"


def library_path(tmp_path: Path, proc: Path | None, compat_version: str | None) -> str:
    compat = tmp_path / "compat"
    compat.mkdir(exist_ok=True)
    if compat_version:
        (compat / f"libcuda.so.{compat_version}").write_text("")
    env = {"PATH": "/usr/bin:/bin", "CUDAENV_COMPAT_DIR": str(compat),
           "CUDAENV_PROC_VERSION": str(proc) if proc else str(tmp_path / "absent"), "LD_LIBRARY_PATH": "/usr/lib/x"}
    out = subprocess.run(["sh", str(SCRIPT), "sh", "-c", 'printf %s "$LD_LIBRARY_PATH"'], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.replace(str(compat), "COMPAT")


@pytest.mark.skipif(shutil.which("sort") is None, reason="needs coreutils sort")
def test_an_older_host_driver_gets_the_compat_libraries_first(tmp_path):
    # a 13.x compat package (R580-era libcuda) on an R535 host: forward compatibility is needed
    assert library_path(tmp_path, R535_PROC, "580.95.05") == "COMPAT:/usr/lib/x"


def test_a_newer_host_driver_keeps_its_own_libcuda(tmp_path):
    assert library_path(tmp_path, R580_OPEN_PROC, "575.51.03") == "/usr/lib/x"


def test_the_same_driver_keeps_its_own_libcuda(tmp_path):
    assert library_path(tmp_path, R580_OPEN_PROC, "580.95.05") == "/usr/lib/x"


def test_no_driver_visible_changes_nothing(tmp_path):
    assert library_path(tmp_path, None, "580.95.05") == "/usr/lib/x"


def test_no_compat_package_changes_nothing(tmp_path):
    assert library_path(tmp_path, R535_PROC, None) == "/usr/lib/x"


def test_the_command_runs_with_its_arguments_and_exit_code(tmp_path):
    proc = subprocess.run(["sh", str(SCRIPT), "sh", "-c", "exit 7"], capture_output=True)
    assert proc.returncode == 7
