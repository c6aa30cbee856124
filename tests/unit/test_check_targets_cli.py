"""`cudaenv check` on a project of several targets (issue #37): with --nodes, the target each node runs
by which_target's rule (or every target's reason), --target NAME for one target, exit 0 only when
every node runs one; without --nodes, the same for this host, a declared one or a fleet."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cudaenv.hosts.target import project_target
from cudaenv.project import load_project
from cudaenv.project.config import resolve_project
from cudaenv.project.lock import LockFile, make_lock
from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.support.targets import THREE_TARGETS
from tests.unit.cluster.helpers import NODES, PROJECT, as_list, node
from tests.unit.resolver.helpers import matrix


def cudaenv(*args, **extra) -> subprocess.CompletedProcess:
    return run_cli(*args, env=isolated_env(**extra), timeout=120)


def h100_on_r580() -> dict:
    """GFD's labels of an H100 node whose driver is 580.65.06 (h100-r535's, upgraded)."""
    item = node("h100-r535")
    item["metadata"]["name"] = "h100-r580"
    labels = item["metadata"]["labels"]
    labels.update({"nvidia.com/cuda.driver-version.full": "580.65.06", "nvidia.com/cuda.driver-version.major": "580",
                   "nvidia.com/cuda.driver-version.minor": "65", "nvidia.com/cuda.driver-version.revision": "06"})
    return item


def locked_project(root: Path) -> Path:
    """The issue's three targets with a current lock (each target's stack as `cudaenv lock` resolves it)."""
    root.mkdir(parents=True)
    (root / "cudaenv.toml").write_text(THREE_TARGETS)
    project = load_project(root)
    views = []
    for declared in project.named_targets:
        target = project_target(matrix(), project, declared.name)
        stack = resolve_project(matrix(), project, target.host).stack
        views.append(make_lock(project, stack, matrix_revision=matrix().revision, target=target.as_dict(), pinned=[],
                               name=declared.name))
    project.lock_path.write_text(LockFile.of(views).as_toml())
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return locked_project(tmp_path_factory.mktemp("targets") / "demo")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nodes") / "nodes.json"
    path.write_text(json.dumps(as_list(node("a100-r535"), h100_on_r580(), node("cpu-0"), node("t4-r470"))))
    return path


@pytest.fixture(scope="module")
def runnable(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nodes") / "runnable.json"
    path.write_text(json.dumps(as_list(node("a100-r535"), h100_on_r580(), node("cpu-0"))))
    return path


@pytest.fixture(scope="module")
def judged(project, nodes):
    proc = cudaenv("check", project, "--nodes", nodes, "--json")
    return proc, json.loads(proc.stdout)


# --- check --nodes ----------------------------------------------------------------------------------


def test_each_node_is_named_with_the_target_it_runs(judged):
    proc, payload = judged
    by_name = {n["name"]: n for n in payload["nodes"]}
    assert {name: n["target"] for name, n in by_name.items()} == {
        "a100-r535": "a100", "h100-r580": "h100", "cpu-0": "laptop", "t4-r470": None}
    assert payload["by_target"] == {"laptop": ["cpu-0"], "a100": ["a100-r535"], "h100": ["h100-r580"]}
    assert payload["runnable"] == ["a100-r535", "h100-r580", "cpu-0"]
    assert by_name["a100-r535"]["mode"] == "minor-version" and by_name["h100-r580"]["mode"] == "native"


def test_every_node_lists_every_targets_fit(judged):
    _, payload = judged
    h100 = next(n for n in payload["nodes"] if n["name"] == "h100-r580")
    assert [(t["target"], t["fits"], t["cpu"]) for t in h100["targets"]] == [
        ("laptop", False, True), ("a100", True, False), ("h100", True, False)]
    assert h100["targets"][0]["reasons"] == ["a CPU target, and this node has a GPU (H100 (sm_90)): it is picked only "
                                             "with --target laptop"]


def test_a_node_no_target_fits_makes_the_exit_1_with_each_targets_reason(judged):
    proc, payload = judged
    assert proc.returncode == 1 and payload["compatible"] is False
    t4 = next(n for n in payload["nodes"] if n["name"] == "t4-r470")
    assert not t4["compatible"] and [r.split(": ")[0] for r in t4["reasons"]] == ["laptop", "a100", "h100"]


def test_the_targets_stacks_come_from_the_lock(judged, project):
    _, payload = judged
    assert [(t["target"], t["stack"]["cuda"], t["source"]) for t in payload["targets"]] == [
        ("laptop", None, str(project / "cudaenv.lock")), ("a100", "12.6", str(project / "cudaenv.lock")),
        ("h100", "13.0", str(project / "cudaenv.lock"))]
    assert payload["target"] is None


def test_exit_0_when_every_node_runs_a_target(project, runnable):
    proc = cudaenv("check", project, "--nodes", runnable)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == ("3 of 3 node(s) run a target: a100-r535 (a100), h100-r580 (h100), "
                                            "cpu-0 (laptop)")


def test_text_names_the_target_per_node_or_every_targets_reason(project, nodes):
    proc = cudaenv("check", project, "--nodes", nodes)
    lines = proc.stdout.splitlines()
    assert lines[:3] == [f"target laptop: torch 2.9.1 | CPU only | Python 3.14 ({project / 'cudaenv.lock'})",
                         f"target a100: torch 2.14.1 | CUDA 12.6 | Python 3.14 ({project / 'cudaenv.lock'})",
                         f"target h100: torch 2.15.0 | CUDA 13.0 | Python 3.15 ({project / 'cudaenv.lock'})"]
    assert "  ✓ h100-r580 (driver 580.65.06, H100 (sm_90) x8): runs h100 (native)" in lines
    assert "  ✓ cpu-0 (no GPU): runs laptop (CPU only)" in lines
    refused = lines.index("  ✗ t4-r470 (driver 470.129.06, T4 (sm_75)): no target fits")
    assert [line.strip().split(": ")[0] for line in lines[refused + 1:refused + 4]] == ["laptop", "a100", "h100"]
    assert proc.returncode == 1


def test_target_judges_one_target_only(project, nodes):
    proc = cudaenv("check", project, "--nodes", nodes, "--target", "a100", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1 and payload["target"] == "a100"
    assert [t["target"] for t in payload["targets"]] == ["a100"]
    assert {n["name"]: n["target"] for n in payload["nodes"]} == {
        "a100-r535": "a100", "h100-r580": "a100", "cpu-0": None, "t4-r470": None}
    cpu = next(n for n in payload["nodes"] if n["name"] == "cpu-0")
    assert cpu["reasons"] == ["a100: no NVIDIA GPU on this node (no nvidia.com/gpu capacity, no GPU Feature "
                              "Discovery labels)"]


def test_a_cpu_target_asked_for_by_name_runs_on_every_node_of_its_cpu(project, nodes):
    proc = cudaenv("check", project, "--nodes", nodes, "--target", "laptop")
    assert proc.returncode == 0, proc.stdout
    assert "  ✓ t4-r470 (driver 470.129.06, T4 (sm_75)): runs laptop (CPU only)" in proc.stdout.splitlines()
    assert "      ! a CPU target on a node with a GPU (T4 (sm_75)): the GPU goes unused" in proc.stdout.splitlines()
    assert proc.stdout.splitlines()[-1].startswith("4 of 4 node(s) run target laptop: ")


@pytest.mark.parametrize("as_json", [False, True])
def test_an_unknown_target_is_bad_input_naming_the_targets(project, nodes, as_json):
    proc = cudaenv("check", project, "--nodes", nodes, "--target", "b200", *(["--json"] if as_json else []))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    message = f"--target: no target 'b200' in {project / 'cudaenv.toml'} (targets: laptop, a100, h100)"
    if as_json:
        error = json.loads(proc.stdout)["error"]
        assert error == {"code": "bad-input", "message": message, "file": str(project / "cudaenv.toml"),
                         "field": "targets"}
    else:
        assert proc.stdout == "" and proc.stderr == f"cudaenv: error: {message}\n"


def test_target_needs_a_project(nodes):
    proc = cudaenv("check", "--cuda", "12.4", "--python", "3.11", "--nodes", nodes, "--target", "a100")
    assert proc.returncode == 2
    assert proc.stderr == ("cudaenv: error: --target names one of a project's targets: give the project DIRECTORY, "
                           "not --image or stack flags\n")


def test_github_format_annotates_each_targets_reason_on_a_node_none_fits(project, nodes):
    proc = cudaenv("check", project, "--nodes", nodes, "--format", "github")
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    prefix = f"::error file={project / 'cudaenv.lock'},title=cudaenv check::node t4-r470: "
    assert [line[len(prefix):].split(": ")[0] for line in errors] == ["laptop", "a100", "h100"]
    assert all(line.startswith(prefix) for line in errors)


def test_a_target_missing_from_the_lock_is_judged_as_lock_would_pin_it_with_a_warning(tmp_path, runnable):
    root = locked_project(tmp_path / "demo")
    with open(root / "cudaenv.toml", "a") as config:
        config.write('\n[targets.l4]\ndriver = "570.133.20"\ngpus = ["L4"]\n')
    proc = cudaenv("check", root, "--nodes", runnable, "--json")
    payload = json.loads(proc.stdout)
    assert proc.stderr.startswith("cudaenv: warning: cudaenv.lock is stale (")
    assert "target l4: not in the lock (a target added since it was written)" in proc.stderr
    assert [t["target"] for t in payload["targets"]] == ["laptop", "a100", "h100", "l4"]
    assert payload["targets"][3]["source"] == (f"{root / 'cudaenv.toml'} (cudaenv.lock is stale: judging what "
                                               "`cudaenv build` would lock)")


def test_without_a_lock_each_target_is_judged_as_lock_would_pin_it(tmp_path, runnable):
    root = tmp_path / "demo"
    root.mkdir()
    (root / "cudaenv.toml").write_text(THREE_TARGETS)
    proc = cudaenv("check", root, "--nodes", runnable, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and proc.stderr == ""
    assert {t["source"] for t in payload["targets"]} == {f"{root / 'cudaenv.toml'} (no lock yet)"}
    assert payload["by_target"] == {"laptop": ["cpu-0"], "a100": ["a100-r535"], "h100": ["h100-r580"]}


def test_a_one_target_project_keeps_its_shape():
    proc = cudaenv("check", PROJECT, "--nodes", NODES, "--json")
    payload = json.loads(proc.stdout)
    assert set(payload) == {"compatible", "stack", "source", "nodes_file", "scheduler", "runnable", "nodes"}
    assert set(payload["nodes"][0]) == {"name", "compatible", "mode", "reasons", "caveats", "host", "facts"}


# --- check DIRECTORY (this host, a declared one, a fleet) ----------------------------------------------


def test_each_declared_host_runs_the_target_the_rule_picks(project):
    proc = cudaenv("check", project, "--driver", "550.54.15", "--driver", "580.65.06", "--gpu", "H100", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert [(r["host"]["driver"], r["target"], r["mode"]) for r in payload["results"]] == [
        ("550.54.15", "a100", "minor-version"), ("580.65.06", "h100", "native")]
    assert payload["wheels"] == [] and payload["results"][1]["stack"]["cuda"] == "13.0"


def test_a_host_no_target_fits_exits_1_with_each_targets_reason(project):
    proc = cudaenv("check", project, "--driver", "470.129.06", "--gpu", "T4")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1
    assert "  ✗ driver 470.129.06, T4 (sm_75): no target fits" in lines
    assert lines[-1] == "1 of 1 host(s) run no target"


def test_a_declared_host_without_a_gpu_runs_the_cpu_target_of_its_cpu(project):
    ok = cudaenv("check", project, "--arch", "x86_64", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["results"][0]["target"] == "laptop"
    arm = cudaenv("check", project, "--arch", "aarch64")
    assert arm.returncode == 1 and "      laptop: built for x86_64 and this host's CPU is aarch64" in arm.stdout


def test_the_environments_declared_host_picks_too(project):
    proc = cudaenv("check", project, "--json", CUDAENV_DRIVER_VERSION="580.65.06", CUDAENV_GPUS="H100")
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"][0]["target"] == "h100"


def test_target_alone_checks_that_targets_declared_host(project):
    proc = cudaenv("check", project, "--target", "h100", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert [t["target"] for t in payload["targets"]] == ["h100"]
    assert payload["results"][0]["host"] == {"driver": "580.65.06", "gpus": ["H100 (sm_90)"], "arch": "x86_64"}


def test_target_on_a_host_whose_driver_is_too_old_is_a_clean_no(project):
    proc = cudaenv("check", project, "--target", "h100", "--driver", "550.54.15", "--gpu", "H100")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "1 of 1 host(s) cannot run target h100"


def test_no_detect_with_nothing_declared_asks_for_a_host_or_a_target(project):
    proc = cudaenv("check", project, "--no-detect", "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["file"] == str(project / "cudaenv.toml")
    assert "names several targets (laptop, a100, h100)" in error["message"]
    assert "pass --target NAME" in error["message"]


def test_the_docs_three_target_fixture_is_the_suites_constant():
    """docs/several-targets.md's examples run on tests/fixtures/projects/three-targets: the same
    project the tests judge, and without a lock (its examples say 'no lock yet')."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "three-targets"
    assert (fixture / "cudaenv.toml").read_text() == THREE_TARGETS
    assert not (fixture / "cudaenv.lock").exists()
