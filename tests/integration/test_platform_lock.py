"""Issue 35, item 4: the lock pins wheels for the target's platform, not the locking machine's. A
requirement whose wheels differ per platform (an x86_64 wheel that requires one package, an
aarch64 wheel that requires another, as torch's nvidia-* pins did) is locked on this x86_64
machine for a GH200 target (a Grace CPU: aarch64) with the aarch64 wheel's requirements, and the
lock's own wheel check (`lock --check`) reads it for the same platform. Real uv, a real loopback
PEP 503 index, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_init_lock import pins, read_toml, run_cli
from tests.support.lockfile import lock_view

pytestmark = [pytest.mark.network]  # uv resolves against the loopback index

OVERLAY = """
[[release]]
version = "2.96.0"
python = ["3.12"]
source = "test fixture ; read 2026-11-28"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
platforms = ["x86_64", "aarch64"]
"""


@pytest.fixture
def overlay(tmp_path) -> Path:
    directory = tmp_path / "overlay"
    directory.mkdir()
    (directory / "torch.toml").write_text(OVERLAY)
    return directory


@pytest.fixture
def index(package_index):
    package_index.add("torch", "2.96.0")
    package_index.add("platdemo", "1.0", requires=["x86only"], tag="py3-none-manylinux_2_28_x86_64")
    package_index.add("platdemo", "1.0", requires=["armonly"], tag="py3-none-manylinux_2_28_aarch64")
    package_index.add("x86only", "1.0")
    package_index.add("armonly", "1.0")
    return package_index


def project(tmp_path: Path, target: str) -> Path:
    directory = tmp_path / "grace"
    directory.mkdir()
    (directory / "requirements.txt").write_text("platdemo==1.0\n")
    (directory / "cudaenv.toml").write_text(
        '[project]\nname = "grace"\nrequirements = ["requirements.txt"]\npython = "3.12"\n\n'
        '[frameworks]\ntorch = "==2.96.0"\n\n' + target + '\n[build]\nflavor = "wheels"\n')
    return directory


def test_a_grace_target_locks_the_aarch64_wheels_requirements_on_an_x86_64_machine(tmp_path, index, overlay):
    directory = project(tmp_path, '[target]\ndriver = "580.65.06"\ngpus = ["GH200"]\n')
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_view(directory / "cudaenv.lock")
    assert lock["stack"]["arch"] == "aarch64"
    assert lock["requirements"]["platform"] == "aarch64-manylinux_2_28"
    pinned = pins(lock)
    assert pinned["armonly"] == "1.0" and "x86only" not in pinned
    check = run_cli("lock", directory, "--check", "--json", index=index, overlay=overlay)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["ok"] is True


def test_the_same_project_for_an_x86_64_host_locks_the_other_wheel(tmp_path, index, overlay):
    directory = project(tmp_path, '[target]\ndriver = "580.65.06"\ngpus = ["H100"]\n')
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_view(directory / "cudaenv.lock")
    assert "arch" not in lock["stack"] and lock["requirements"]["platform"] == "x86_64-manylinux_2_28"
    pinned = pins(lock)
    assert pinned["x86only"] == "1.0" and "armonly" not in pinned


def test_declaring_the_arch_of_an_arm_server_with_a_pcie_gpu(tmp_path, index, overlay):
    directory = project(tmp_path, '[target]\ndriver = "580.65.06"\ngpus = ["H100"]\narch = "arm64"\n')
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_view(directory / "cudaenv.lock")
    assert lock["stack"]["arch"] == "aarch64" and lock["target"]["arch"] == "aarch64"
    assert "armonly" in pins(lock)
