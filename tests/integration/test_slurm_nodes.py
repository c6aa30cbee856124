"""`cudaenv check --nodes` on what a real Slurm prints: the suite's one-node cluster
(tests/support/slurm_cluster.py: Debian 12's slurm-wlm, two GRES GPUs, features
cuda-driver-550,sm_80,sm_90). Debian 12's scontrol (22.05) has no --json: its `scontrol show node`
text and `sinfo --json` are read; where a newer scontrol answers `scontrol show node --json`, that too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.support.cli import cudaenv as run_cli, isolated_env

pytestmark = [pytest.mark.slurm]

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "projects" / "configured-torch"  # torch >=2.4,<2.6, CUDA 12.4


def cudaenv(*args) -> subprocess.CompletedProcess:
    return run_cli(*args, env=isolated_env(), timeout=120)


def project_with(tmp_path: Path, features: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    with open(project / "cudaenv.toml", "a") as config:
        config.write(f"\n[cluster.slurm.features]\n{features}\n")
    return project


@pytest.fixture
def node_json(slurm_cluster, tmp_path) -> list[Path]:
    """What this Slurm says of its nodes: `scontrol show node` as text and `sinfo --json` always,
    `scontrol show node --json` where it exists."""
    files = []
    text = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True, env=slurm_cluster.env,
                          check=True)
    (tmp_path / "scontrol.txt").write_text(text.stdout)
    files.append(tmp_path / "scontrol.txt")
    sinfo = subprocess.run(["sinfo", "--json"], capture_output=True, text=True, env=slurm_cluster.env, check=True)
    (tmp_path / "sinfo.json").write_text(sinfo.stdout)
    files.append(tmp_path / "sinfo.json")
    scontrol = subprocess.run(["scontrol", "show", "node", "--json"], capture_output=True, text=True,
                              env=slurm_cluster.env)
    if scontrol.returncode == 0:
        (tmp_path / "scontrol.json").write_text(scontrol.stdout)
        files.append(tmp_path / "scontrol.json")
    return files


def test_a_mapped_feature_makes_the_real_node_runnable(slurm_cluster, node_json, tmp_path):
    project = project_with(tmp_path, 'cuda-driver-550 = { gpu = "A100", driver = "550.54.15" }')
    for path in node_json:
        proc = cudaenv("check", project, "--nodes", path, "--json")
        payload = json.loads(proc.stdout)
        assert proc.returncode == 0, (path.name, proc.stderr, proc.stdout)
        (node,) = payload["nodes"]
        assert node["name"] == slurm_cluster.node and node["compatible"] and node["mode"] == "native"
        facts = node["facts"]
        assert facts["gpu_count"] == slurm_cluster.gpus and facts["mapped_feature"] == "cuda-driver-550"
        assert "cuda-driver-550" in facts["features"] and facts["gres"].startswith("gpu:")


def test_without_a_mapping_the_driver_cannot_be_known(slurm_cluster, node_json, tmp_path):
    project = project_with(tmp_path, 'other-feature = { gpu = "T4", driver = "535.154.05" }')
    proc = cudaenv("check", project, "--nodes", node_json[0])
    assert proc.returncode == 1, proc.stderr
    assert f"  ✗ {slurm_cluster.node} (driver unknown, GPU unknown x{slurm_cluster.gpus}):" in proc.stdout
    assert "cannot be known: driver: Slurm records no driver version" in proc.stdout
    assert "cannot be known: GPU model: the GRES names no type (gpu:N)" in proc.stdout


def test_a_mapping_to_a_driver_too_old_for_the_stack_is_refused(slurm_cluster, node_json, tmp_path):
    project = project_with(tmp_path, 'cuda-driver-550 = { gpu = "T4", driver = "470.129.06" }')
    proc = cudaenv("check", project, "--nodes", node_json[0], "--json")
    (node,) = json.loads(proc.stdout)["nodes"]
    assert proc.returncode == 1 and not node["compatible"]
    assert any(r.startswith("driver 470.129.06 runs CUDA <= 11.4") for r in node["reasons"])
