"""The issue's two examples against the real PyPI (issue 24, "Done when"): a project that pins
NumPy 1.x and pandas 2.2 locks a Python their wheels cover, and a torch release with no Python in
common with an old NumPy pin is a clean "no" naming NumPy and both ranges.

PyTorch's own index (download.pytorch.org) is not reachable from CI, so the framework index is
PyPI too (CUDAENV_FRAMEWORK_INDEX): PyPI's torch is the build for the CUDA the resolver picks on
this host (driver 595.45.04, H100). uv reads PyPI's pages and PEP 658 metadata; no wheel is
downloaded.
"""

from __future__ import annotations

import os
import subprocess
import tomllib

import pytest

from tests.support.cli import cudaenv as run_cli
from tests.support.lockfile import lock_view

pytestmark = [pytest.mark.network]

HOST = ("--driver", "595.45.04", "--gpu", "H100", "--no-detect")


def cudaenv(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_", "PIP_"))}
    if "CUDAENV_CACHE_DIR" in os.environ:
        env["CUDAENV_CACHE_DIR"] = os.environ["CUDAENV_CACHE_DIR"]
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_FRAMEWORK_INDEX="https://pypi.org/simple")
    return run_cli(*args, env=env, timeout=600, cwd=cwd)


def test_numpy_1_26_and_pandas_2_2_lock_a_python_their_wheels_cover(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.4\nnumpy==1.26.4\npandas==2.2.2\n")
    proc = cudaenv("init", tmp_path, *HOST)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_view(tmp_path / "cudaenv.lock")
    python = tuple(int(p) for p in lock["stack"]["python"].split("."))
    assert (3, 9) <= python <= (3, 12)  # numpy 1.26.4 and pandas 2.2.2 publish cp39-cp312 wheels
    pinned = lock["requirements"]["pinned"]
    assert "numpy==1.26.4" in pinned and "pandas==2.2.2" in pinned
    assert any(p.startswith("torch==") for p in pinned)
    assert cudaenv("lock", "--check", tmp_path).returncode == 0
    dockerfile = cudaenv("dockerfile", tmp_path)
    assert dockerfile.returncode == 0, dockerfile.stderr
    installs = [line for line in dockerfile.stdout.splitlines() if "uv pip install" in line]
    assert installs and all("--no-build" in line for line in installs)


def test_torch_2_15_with_numpy_1_21_is_a_no_naming_numpy_and_both_ranges(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.15.0\nnumpy==1.21.0\n")
    proc = cudaenv("init", tmp_path, *HOST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "numpy==1.21.0 has wheels for Python 3.7–3.9; torch 2.15.0 for 3.11–3.15" in proc.stdout
    assert "or torch to ≤ 2.8.0" in proc.stdout
    assert not (tmp_path / "cudaenv.toml").exists()
    assert "Traceback" not in proc.stderr
