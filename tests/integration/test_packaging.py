"""A wheel built from the repository works on its own: installed into a fresh virtualenv and run
outside the repository, it finds the matrix and templates it carries."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def installed_wheel(repo_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(repo_root)],
                   check=True, capture_output=True, text=True)
    (wheel,) = out.glob("cudaenv-*.whl")
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                   check=True, capture_output=True, text=True)
    return env_dir


def run_outside_repo(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(env_dir / "bin" / "cudaenv"), *args], capture_output=True, text=True, cwd=cwd)


def test_installed_wheel_reports_its_version(installed_wheel, tmp_path):
    import cudaenv

    proc = run_outside_repo(installed_wheel, "--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"cudaenv {cudaenv.__version__}"


def test_installed_wheel_carries_matrix_and_templates(installed_wheel, repo_root, tmp_path):
    proc = run_outside_repo(installed_wheel, "info", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    for key in ("matrix_dir", "templates_dir"):
        assert Path(info[key]).is_relative_to(installed_wheel), f"{key} points outside the venv: {info[key]}"
    shipped_matrix = sorted(p.name for p in (repo_root / "matrix").iterdir() if p.is_file())
    shipped_templates = sorted(p.name for p in (repo_root / "templates").iterdir() if p.is_file())
    assert info["matrix_files"] == shipped_matrix
    assert info["templates"] == shipped_templates
