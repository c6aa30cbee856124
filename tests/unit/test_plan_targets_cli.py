"""`cudaenv plan` with projects of several targets (issue #37): one entry per target (PROJECT:TARGET),
grouped by target name — on one host, each target planned for the host it declares with the same
target of the other projects; with --nodes, each target on the nodes that run it by the rule `check
--nodes` names them with. Projects of one target are planned as before."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.support.targets import THREE_TARGET_TABLES, THREE_TARGETS
from tests.unit.cluster.helpers import as_list, node

HOST = ("--driver", "550.54.15", "--gpu", "A100")


def cudaenv(*args) -> subprocess.CompletedProcess:
    return run_cli(*args, env=isolated_env(), timeout=180)


def write(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True)
    (directory / "cudaenv.toml").write_text(text)
    return directory


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """demo (laptop, a100, h100), other (laptop, a100) and a one-target CUDA-only project."""
    root = tmp_path_factory.mktemp("plan-targets")
    demo = write(root / "demo", THREE_TARGETS)
    other = write(root / "other", '[project]\nname = "other"\n\n' + THREE_TARGET_TABLES.split("[targets.h100]")[0])
    single = write(root / "single", '[project]\nname = "kernels"\npython = "3.12"\n\n[cuda]\nversion = "12.4"\n\n'
                                    '[build]\nflavor = "runtime"\n')
    return demo, other, single


@pytest.fixture(scope="module")
def planned(projects):
    proc = cudaenv("plan", *projects, *HOST, "--json")
    return proc, json.loads(proc.stdout)


def test_each_target_is_an_entry_grouped_by_target_name(planned):
    proc, payload = planned
    assert proc.returncode == 0, proc.stderr
    sections = {t["target"]: t for t in payload["targets"]}
    assert list(sections) == ["laptop", "a100", "h100"]
    assert [p["name"] for p in sections["laptop"]["projects"]] == ["demo:laptop", "other:laptop"]
    assert [p["name"] for p in sections["a100"]["projects"]] == ["demo:a100", "other:a100"]
    assert [p["name"] for p in sections["h100"]["projects"]] == ["demo:h100"]
    assert all((p["project"], p["target"]) == (p["name"].split(":")[0], name)
               for name, section in sections.items() for p in section["projects"])


def test_each_target_is_planned_for_the_host_it_declares(planned):
    _, payload = planned
    sections = {t["target"]: t for t in payload["targets"]}
    assert sections["laptop"]["host"]["gpus"] == "none"
    assert sections["a100"]["host"]["driver"] == "535.104.05" and sections["h100"]["host"]["driver"] == "580.65.06"
    laptop, a100, h100 = (sections[n]["projects"][0]["stack"] for n in ("laptop", "a100", "h100"))
    assert (laptop["device"], a100["cuda"], h100["cuda"]) == ("cpu", "12.6", "13.0")


def test_the_same_target_of_two_projects_shares_one_base(planned):
    _, payload = planned
    a100 = next(t for t in payload["targets"] if t["target"] == "a100")
    assert a100["distinct_bases"] == 1 and a100["stack_bases"] == 1
    assert a100["groups"] == [{"base_image": "python:3.14-slim", "projects": ["demo:a100", "other:a100"]}]


def test_one_target_projects_are_planned_for_this_host_as_before(planned):
    _, payload = planned
    assert [p["name"] for p in payload["projects"]] == ["kernels"]
    assert payload["host"]["driver"] == "550.54.15"
    assert set(payload["projects"][0]) == {"name", "ok", "stack", "valid_cuda", "problems", "stack_base",
                                           "lock_differs"}


def test_without_projects_of_several_targets_the_output_is_unchanged(projects):
    proc = cudaenv("plan", projects[2], *HOST, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and "targets" not in payload
    text = cudaenv("plan", projects[2], *HOST).stdout
    assert text.startswith("target: driver 550.54.15; A100 (sm_80) (declared)\n") and "target laptop" not in text


def test_the_text_has_a_section_per_target(projects):
    proc = cudaenv("plan", *projects, *HOST)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\ntarget laptop: no GPU; CPU builds only (declared)\n1 upstream base image(s)" in out
    assert "\n  demo:laptop: torch 2.9.1; CPU only, Python 3.14; stack base " in out
    assert "\ntarget h100: driver 580.65.06; H100 (sm_90) (declared)\n" in out
    assert out.index("\ntarget laptop:") < out.index("\ntarget a100:") < out.index("\ntarget h100:")


def test_a_target_no_stack_runs_on_fails_the_plan(tmp_path, projects):
    old = write(tmp_path / "old", '[project]\nname = "old"\n\n[frameworks]\ntorch = ">=2.9"\n\n'
                                  '[targets.laptop]\ngpus = "none"\n\n[targets.r470]\ndriver = "470.82.01"\n'
                                  'gpus = ["T4"]\n')
    proc = cudaenv("plan", old, projects[0], *HOST, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1 and payload["ok"] is False
    r470 = next(t for t in payload["targets"] if t["target"] == "r470")
    assert r470["ok"] is False and r470["projects"][0]["name"] == "old:r470" and r470["projects"][0]["stack"] is None
    text = cudaenv("plan", old, *HOST).stdout
    assert "\ncannot run on this target's host:\n  old:r470: " in text


def test_one_name_declared_for_two_hosts_is_two_plans(tmp_path, projects):
    newer = write(tmp_path / "newer", '[project]\nname = "newer"\n\n[frameworks]\ntorch = ">=2.6"\n\n'
                                      '[targets.laptop]\ngpus = "none"\n\n[targets.a100]\ndriver = "580.65.06"\n'
                                      'gpus = ["A100"]\n')
    payload = json.loads(cudaenv("plan", projects[0], newer, *HOST, "--json").stdout)
    a100 = [t for t in payload["targets"] if t["target"] == "a100"]
    assert [(t["host"]["driver"], [p["name"] for p in t["projects"]]) for t in a100] == [
        ("535.104.05", ["demo:a100"]), ("580.65.06", ["newer:a100"])]


# --- plan --nodes ----------------------------------------------------------------------------------


def h100_on_r580() -> dict:
    item = node("h100-r535")
    item["metadata"]["name"] = "h100-r580"
    item["metadata"]["labels"].update({
        "nvidia.com/cuda.driver-version.full": "580.65.06", "nvidia.com/cuda.driver-version.major": "580",
        "nvidia.com/cuda.driver-version.minor": "65", "nvidia.com/cuda.driver-version.revision": "06"})
    return item


@pytest.fixture(scope="module")
def nodes(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nodes") / "nodes.json"
    path.write_text(json.dumps(as_list(node("a100-r535"), h100_on_r580(), node("rtx4090-r580"), node("cpu-0"))))
    return path


def test_each_target_runs_on_the_nodes_that_pick_it(projects, nodes):
    proc = cudaenv("plan", projects[0], projects[2], "--nodes", nodes, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert [(g.get("target"), g["nodes"], g["projects"]) for g in payload["groups"]] == [
        (None, ["a100-r535", "h100-r580", "rtx4090-r580"], ["kernels"]),
        ("laptop", ["cpu-0"], ["demo:laptop"]),
        ("a100", ["a100-r535", "rtx4090-r580"], ["demo:a100"]),  # the RTX 4090 runs both: a100 comes first
        ("h100", ["h100-r580"], ["demo:h100"])]
    h100 = next(p for p in payload["projects"] if p["name"] == "demo:h100")
    assert h100["refused"]["rtx4090-r580"] == ["runs target a100 of demo instead"]
    assert h100["refused"]["cpu-0"][0].startswith("no NVIDIA GPU on this node")


def test_plan_nodes_text_names_the_target_of_each_group(projects, nodes):
    proc = cudaenv("plan", projects[0], "--nodes", nodes)
    assert proc.returncode == 0, proc.stderr
    assert "\ncpu-0 (target laptop)\n  demo:laptop: torch 2.9.1; CPU only, Python 3.14\n" in proc.stdout
    assert "\nh100-r580 (target h100)\n  demo:h100: torch 2.15.0; CUDA 13.0, Python 3.15\n" in proc.stdout


def test_a_project_runs_when_one_of_its_targets_runs_somewhere(projects, tmp_path):
    only_old = tmp_path / "t4.json"
    only_old.write_text(json.dumps(as_list(node("t4-r470"), node("a100-r535"))))
    proc = cudaenv("plan", projects[0], "--nodes", only_old, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and payload["ok"] is True  # a100 runs on a100-r535; laptop and h100 nowhere
    assert {p["name"]: p["ok"] for p in payload["projects"]} == {"demo:laptop": False, "demo:a100": True,
                                                                "demo:h100": False}
    nowhere = tmp_path / "t4-only.json"
    nowhere.write_text(json.dumps(as_list(node("t4-r470"))))
    proc = cudaenv("plan", projects[0], "--nodes", nowhere)
    assert proc.returncode == 1
    assert "\nno node can run:\n  demo:laptop:\n  demo:a100:\n    t4-r470 (driver 470.129.06, T4 (sm_75)): " in proc.stdout
