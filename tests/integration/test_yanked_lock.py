"""Issue 34, item 4: a yanked release (PEP 592) locks for an exact pin, with a warning quoting PyPI's
reason, and a range never takes it: the resolver's rule, and uv's, against a real loopback index
whose page marks the wheel data-yanked, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_init_lock import run_cli

pytestmark = [pytest.mark.network]  # uv resolves against the loopback index

OVERLAY = """
[[release]]
version = "2.97.0"
python = ["3.11", "3.12", "3.13"]
yanked = "Broken wheel metadata (test fixture)"
source = "test fixture ; read 2026-11-28"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]

[[release]]
version = "2.98.0"
python = ["3.11", "3.12", "3.13"]
source = "test fixture ; read 2026-11-28"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
"""
WARNING = ("cudaenv: warning: torch 2.97.0 was yanked from PyPI ('Broken wheel metadata (test fixture)'); "
           "the exact pin installs it anyway (PEP 592)")


@pytest.fixture
def overlay(tmp_path) -> Path:
    directory = tmp_path / "overlay"
    directory.mkdir()
    (directory / "torch.toml").write_text(OVERLAY)
    return directory


@pytest.fixture
def index(package_index):
    package_index.add("torch", "2.97.0", yanked="Broken wheel metadata (test fixture)")
    package_index.add("torch", "2.98.0")
    return package_index


def project(tmp_path: Path, torch: str) -> Path:
    directory = tmp_path / "yanked"
    directory.mkdir()
    (directory / "requirements.txt").write_text("")
    (directory / "cudaenv.toml").write_text(
        f'[project]\nname = "yanked"\nrequirements = ["requirements.txt"]\n\n[frameworks]\ntorch = "{torch}"\n\n'
        '[target]\ndriver = "570.124.06"\ngpus = ["A100"]\n\n[build]\nflavor = "wheels"\n')
    return directory


def test_an_exact_pin_of_a_yanked_release_locks_with_a_warning_quoting_the_reason(tmp_path, index, overlay):
    directory = project(tmp_path, "==2.97.0")
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert WARNING in proc.stderr.splitlines()
    assert "torch==2.97.0" in (directory / "cudaenv.lock").read_text()
    as_json = run_cli("lock", directory, "--json", index=index, overlay=overlay)
    warnings = json.loads(as_json.stdout)["warnings"]
    assert {"code": "build-caveat", "message": WARNING.removeprefix("cudaenv: warning: ")} in warnings


def test_a_range_locks_the_release_that_was_not_yanked(tmp_path, index, overlay):
    directory = project(tmp_path, ">=2.97,<2.99")
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torch==2.98.0" in (directory / "cudaenv.lock").read_text() and "was yanked" not in proc.stderr


def test_a_range_only_the_yanked_release_satisfies_is_refused_naming_the_exact_pin(tmp_path, index, overlay):
    directory = project(tmp_path, ">=2.97,<2.98")
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 2
    assert "matches only releases yanked from PyPI: torch 2.97.0 was yanked from PyPI" in proc.stderr
    assert "pin torch==2.97.0 to use it anyway" in proc.stderr
    assert not (directory / "cudaenv.lock").exists()
