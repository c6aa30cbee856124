"""`cudaenv check --nodes` on a project of three targets (issue #37), read from what a real Slurm says
of three real nodes: one slurmd each on this machine (tests/support/slurm_cluster.py, ``nodes``) — an
A100 node (two GRES GPUs, feature cuda-driver-550), an H100 node (one, cuda-driver-580) and a node
without GPUs. Every node is registered by its own slurmd, so Arch=, Gres= and the features are what
slurmctld records, in Debian 12's `scontrol show node` text and `sinfo --json` (and `scontrol show
node --json` where a newer scontrol has it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cudaenv.hosts.target import project_target
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import resolve_project
from cudaenv.project.lock import LockFile, make_lock
from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.support.targets import THREE_TARGETS

pytestmark = [pytest.mark.slurm]

ROOT = Path(__file__).resolve().parents[2]
MAPPED = ('\n[cluster.slurm.features]\ncuda-driver-550 = { gpu = "A100", driver = "550.54.15" }\n'
          'cuda-driver-580 = { gpu = "H100", driver = "580.65.06" }\n')


def cudaenv(*args) -> subprocess.CompletedProcess:
    return run_cli(*args, env=isolated_env(), timeout=120)


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory):
    from tests.support.slurm_cluster import SlurmCluster, SlurmNode

    logs = Path(os.environ.get("CUDAENV_TEST_LOGS", ROOT / ".test-logs")) / "slurm-targets"
    cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm-targets"), logs, nodes=(
        SlurmNode("gpu-a100", 2, ("cuda-driver-550",)), SlurmNode("gpu-h100", 1, ("cuda-driver-580",)),
        SlurmNode("cpu-01")))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def node_files(three_nodes, tmp_path_factory) -> list[Path]:
    """What this Slurm says of its nodes, in every form it can say it."""
    where = tmp_path_factory.mktemp("node-files")
    files = []
    for name, argv, required in (("scontrol.txt", ["scontrol", "show", "node"], True),
                                 ("sinfo.json", ["sinfo", "--json"], True),
                                 ("scontrol.json", ["scontrol", "show", "node", "--json"], False)):
        proc = subprocess.run(argv, capture_output=True, text=True, env=three_nodes.env)
        if proc.returncode != 0 and not required:
            continue
        assert proc.returncode == 0, (argv, proc.stderr)
        (where / name).write_text(proc.stdout)
        files.append(where / name)
    return files


def project_with(root: Path, features: str = MAPPED, *, locked: bool = True) -> Path:
    """The issue's three targets, the site's feature mapping, and (``locked``) a current lock whose
    stacks are what `cudaenv lock` resolves for each target."""
    root.mkdir(parents=True)
    (root / "cudaenv.toml").write_text(THREE_TARGETS + features)
    if locked:
        matrix = load_matrix(overlays=[])
        project = load_project(root)
        views = []
        for declared in project.named_targets:
            target = project_target(matrix, project, declared.name)
            stack = resolve_project(matrix, project, target.host).stack
            views.append(make_lock(project, stack, matrix_revision=matrix.revision, target=target.as_dict(),
                                   pinned=[], name=declared.name))
        project.lock_path.write_text(LockFile.of(views).as_toml())
    return root


def test_the_cluster_is_three_registered_nodes(three_nodes, node_files):
    text = node_files[0].read_text()
    for name, gres in (("gpu-a100", "Gres=gpu:2"), ("gpu-h100", "Gres=gpu:1"), ("cpu-01", "Gres=(null)")):
        record = text.split(f"NodeName={name} ")[1].split("\n\n")[0]
        assert "Arch=x86_64" in record.splitlines()[0] and gres in record and "State=IDLE" in record


def test_each_real_node_is_named_with_the_target_it_runs(node_files, tmp_path):
    project = project_with(tmp_path / "demo")
    for path in node_files:
        proc = cudaenv("check", project, "--nodes", path, "--json")
        payload = json.loads(proc.stdout)
        assert proc.returncode == 0, (path.name, proc.stderr, proc.stdout)
        nodes = {n["name"]: n for n in payload["nodes"]}
        assert {name: n["target"] for name, n in nodes.items()} == {
            "gpu-a100": "a100", "gpu-h100": "h100", "cpu-01": "laptop"}, path.name
        assert payload["by_target"] == {"laptop": ["cpu-01"], "a100": ["gpu-a100"], "h100": ["gpu-h100"]}
        assert nodes["gpu-a100"]["mode"] == "minor-version" and nodes["gpu-h100"]["mode"] == "native"
        # the H100 node could run a100's CUDA 12.6 too: it runs h100, the target that declares its GPU
        assert [t["fits"] for t in nodes["gpu-h100"]["targets"]] == [False, True, True]
        assert nodes["gpu-a100"]["facts"]["gpu_count"] == 2 and nodes["gpu-a100"]["facts"]["arch"] == "x86_64"
        assert nodes["gpu-h100"]["facts"]["mapped_feature"] == "cuda-driver-580"
        assert nodes["cpu-01"]["facts"]["gres"] in (None, "")


def test_the_text_report_names_the_target_per_node(node_files, tmp_path):
    project = project_with(tmp_path / "demo")
    proc = cudaenv("check", project, "--nodes", node_files[0])
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert "  ✓ gpu-a100 (driver 550.54.15, A100 (sm_80) x2): runs a100 (minor-version compatibility)" in lines
    assert "  ✓ gpu-h100 (driver 580.65.06, H100 (sm_90)): runs h100 (native)" in lines
    assert "  ✓ cpu-01 (no GPU): runs laptop (CPU only)" in lines
    assert lines[-1] == "3 of 3 node(s) run a target: cpu-01 (laptop), gpu-a100 (a100), gpu-h100 (h100)"  # Slurm's order


def test_one_target_asked_for_by_name_runs_on_the_gpu_nodes_only(node_files, tmp_path):
    project = project_with(tmp_path / "demo")
    proc = cudaenv("check", project, "--nodes", node_files[0], "--target", "a100", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1 and payload["target"] == "a100"
    assert {n["name"]: n["target"] for n in payload["nodes"]} == {"gpu-a100": "a100", "gpu-h100": "a100",
                                                                  "cpu-01": None}
    assert next(n for n in payload["nodes"] if n["name"] == "cpu-01")["reasons"] == [
        "a100: no NVIDIA GPU on this node (no gpu GRES)"]


def test_a_gpu_node_whose_driver_cannot_be_known_runs_no_target_not_the_cpu_one(node_files, tmp_path):
    only_550 = '\n[cluster.slurm.features]\ncuda-driver-550 = { gpu = "A100", driver = "550.54.15" }\n'
    project = project_with(tmp_path / "demo", only_550, locked=False)
    proc = cudaenv("check", project, "--nodes", node_files[0])
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1
    refused = lines.index("  ✗ gpu-h100 (driver unknown, GPU unknown): no target fits")
    assert lines[refused + 1] == ("      laptop: a CPU target, and this node has a GPU (model unknown): it is picked "
                                  "only with --target laptop")
    assert lines[refused + 2].startswith("      a100: cannot be known: driver: Slurm records no driver version")
    assert lines[-1] == "2 of 3 node(s) run a target: cpu-01 (laptop), gpu-a100 (a100)"


def test_plan_groups_each_target_on_the_real_node_that_runs_it(node_files, tmp_path):
    """`cudaenv plan --nodes` on the same Slurm: the three-target project as demo:laptop, demo:a100 and
    demo:h100, each on the node that runs it, after a one-target project (CUDA 12.4, runs on both GPU
    nodes). The Slurm features come from the first project, the site's mapping."""
    demo = project_with(tmp_path / "demo")
    single = tmp_path / "kernels"
    single.mkdir()
    (single / "cudaenv.toml").write_text('[project]\nname = "kernels"\npython = "3.12"\n\n[cuda]\nversion = "12.4"\n\n'
                                         '[build]\nflavor = "runtime"\n')
    for path in node_files:
        proc = cudaenv("plan", demo, single, "--nodes", path, "--json")
        payload = json.loads(proc.stdout)
        assert proc.returncode == 0, (path.name, proc.stderr)
        assert [(g.get("target"), g["nodes"], g["projects"]) for g in payload["groups"]] == [
            (None, ["gpu-a100", "gpu-h100"], ["kernels"]), ("laptop", ["cpu-01"], ["demo:laptop"]),
            ("a100", ["gpu-a100"], ["demo:a100"]), ("h100", ["gpu-h100"], ["demo:h100"])], path.name
        a100 = next(p for p in payload["projects"] if p["name"] == "demo:a100")
        assert a100["refused"]["gpu-h100"] == ["runs target h100 of demo instead"]
    text = cudaenv("plan", demo, single, "--nodes", node_files[0]).stdout
    assert "\ngpu-h100 (target h100)\n  demo:h100: torch 2.15.0; CUDA 13.0, Python 3.15\n" in text
