"""`cudaenv check --nodes FILE|-` and `cudaenv plan --nodes FILE`: text, --json, --format github, exit
codes (a fleet's: 0 only when every node can run the stack), and bad input as one line naming the file,
node and label (exit 2; with --json one error object)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.unit.cluster.helpers import NODES, PROJECT, SINGLE_NODE, SLURM, as_list, node

ROOT = Path(__file__).resolve().parents[2]


def cudaenv(*args, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, env=isolated_env(), input=stdin, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def checked_json():
    proc = cudaenv("check", PROJECT, "--nodes", NODES, "--json")
    return proc, json.loads(proc.stdout)


def test_json_is_one_object_with_a_verdict_per_node(checked_json):
    proc, payload = checked_json
    assert proc.returncode == 1  # like a fleet: some nodes cannot run it
    assert payload["compatible"] is False and payload["scheduler"] == "kubernetes"
    assert payload["runnable"] == ["a100-r535", "h100-r535", "p400-r550", "l4-r570", "rtx4090-r580"]
    by_name = {n["name"]: n for n in payload["nodes"]}
    assert set(by_name) == {"t4-r470", "a100-r535", "h100-r535", "p400-r550", "l4-r570", "rtx4090-r580",
                            "nvidia1", "cpu-0"}
    assert by_name["a100-r535"]["mode"] == "minor-version" and by_name["l4-r570"]["mode"] == "native"
    assert by_name["t4-r470"]["facts"]["driver"] == "470.129.06"
    assert by_name["t4-r470"]["facts"]["gfd_labels"] == "old"
    assert by_name["h100-r535"]["facts"]["gfd_labels"] == "new"
    assert by_name["t4-r470"]["reasons"] and not by_name["a100-r535"]["reasons"]


def test_text_names_every_node_with_its_verdict_and_a_count():
    proc = cudaenv("check", PROJECT, "--nodes", NODES)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[1] == f"nodes: {NODES} (Kubernetes, 8 node(s))"
    assert "  ✗ t4-r470 (driver 470.129.06, T4 (sm_75)):" in lines
    assert "  ✓ h100-r535 (driver 535.129.03, H100 (sm_90) x8): minor-version compatibility" in lines
    assert "  ✗ cpu-0 (no GPU):" in lines
    assert lines[-1] == ("5 of 8 node(s) can run this stack: a100-r535, h100-r535, p400-r550, l4-r570, "
                         "rtx4090-r580")


def test_exit_0_when_every_listed_node_can_run_it(tmp_path):
    runnable = tmp_path / "gpu-nodes.json"
    runnable.write_text(json.dumps(as_list(node("l4-r570"), node("rtx4090-r580"))))
    proc = cudaenv("check", PROJECT, "--nodes", runnable)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "2 of 2 node(s) can run this stack: l4-r570, rtx4090-r580"


def test_stdin_is_read_for_dash():
    proc = cudaenv("check", "--cuda", "12.4", "--python", "3.11", "--flavor", "runtime", "--nodes", "-", "--json",
                   stdin=SINGLE_NODE.read_text())
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1 and payload["nodes_file"] == "<stdin>"
    assert [n["name"] for n in payload["nodes"]] == ["t4-r470"]


def test_github_format_annotates_each_refused_node():
    proc = cudaenv("check", PROJECT, "--nodes", NODES, "--format", "github")
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    assert proc.returncode == 1
    assert len(errors) == 3  # t4-r470 (driver), nvidia1 (no labels), cpu-0 (no GPU)
    assert all(line.startswith(f"::error file={PROJECT}/cudaenv.toml,title=cudaenv check::node ") for line in errors)
    assert any("::node t4-r470: driver 470.129.06" in line for line in errors)
    assert any(line.startswith("::warning ") and "node a100-r535" in line for line in proc.stdout.splitlines())


def test_slurm_nodes_take_their_driver_from_the_projects_features(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    with open(project / "cudaenv.toml", "a") as config:
        config.write('\n[cluster.slurm.features]\na100-r550 = { gpu = "A100", driver = "550.54.15" }\n')
    proc = cudaenv("check", project, "--nodes", SLURM / "scontrol-show-node-json-23.11.json", "--json")
    nodes = {n["name"]: n for n in json.loads(proc.stdout)["nodes"]}
    assert proc.returncode == 1
    assert nodes["gpu-a100-01"]["compatible"] and nodes["gpu-a100-01"]["facts"]["mapped_feature"] == "a100-r550"
    assert nodes["gpu-t4-01"]["reasons"] == [
        "cannot be known: driver: Slurm records no driver version (scontrol and sinfo have no such field); map a "
        "feature these nodes carry to their GPU and driver in [cluster.slurm.features]"]
    assert nodes["cpu-01"]["reasons"] == ["no NVIDIA GPU on this node (no gpu GRES)"]


BAD = [
    ("not json at all", "not JSON (line 1, column 1"),
    (json.dumps({"kind": "PodList", "items": []}), "got a JSON object with kind 'PodList'"),
    (json.dumps(as_list({**node("l4-r570"), "metadata": {**node("l4-r570")["metadata"], "labels": {
        **node("l4-r570")["metadata"]["labels"], "nvidia.com/cuda.driver.major": "５７０"}}})),
     "node l4-r570: label nvidia.com/cuda.driver.major: expected the driver version's digits like 535 or 05, "
     "got '５７０'"),
    (json.dumps(as_list({**node("l4-r570"), "metadata": {**node("l4-r570")["metadata"], "labels": {
        **node("l4-r570")["metadata"]["labels"], "nvidia.com/gpu.count": "9" * 500}}})),
     "node l4-r570: label nvidia.com/gpu.count: expected a whole number of GPUs, got '9999"),
    (json.dumps(as_list(node("l4-r570"))).replace('"capacity": {', '"capacity": {"x": ' + "9" * 5000 + ", ", 1),
     "node l4-r570: status.capacity.x: a number of more digits than can be read"),
    (json.dumps(as_list(node("l4-r570"), node("l4-r570"))), "node l4-r570: listed twice (items[0] and items[1])"),
]


@pytest.mark.parametrize("text,expected", BAD, ids=["not-json", "wrong-kind", "fullwidth-digits", "huge-count",
                                                    "integer-past-the-digit-limit", "node-listed-twice"])
def test_bad_input_is_one_line_naming_file_node_and_label(tmp_path, text, expected):
    path = tmp_path / "nodes.json"
    path.write_text(text, encoding="utf-8")
    proc = cudaenv("check", PROJECT, "--nodes", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"cudaenv: error: {path}: ") and expected in proc.stderr
    assert len(proc.stderr) < 400


@pytest.mark.parametrize("index,field", [(4, "items[0].status.capacity.x"), (5, "items[1].metadata.name")])
def test_unreadable_node_lists_with_json_are_one_error_object(tmp_path, index, field):
    path = tmp_path / "nodes.json"
    path.write_text(BAD[index][0], encoding="utf-8")
    proc = cudaenv("check", PROJECT, "--nodes", path, "--json")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["error"]["code"] == "bad-input"
    assert payload["error"]["file"] == str(path) and payload["error"]["field"] == field
    assert BAD[index][1] in payload["error"]["message"]


def test_bad_input_with_json_is_one_error_object(tmp_path):
    path = tmp_path / "nodes.json"
    path.write_text(BAD[2][0], encoding="utf-8")
    proc = cudaenv("check", PROJECT, "--nodes", path, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 2
    assert payload["ok"] is False and payload["error"]["code"] == "bad-input"
    assert payload["error"]["file"] == str(path)
    assert payload["error"]["field"] == 'items[0].metadata.labels["nvidia.com/cuda.driver.major"]'


def test_a_missing_nodes_file_is_named(tmp_path):
    proc = cudaenv("check", PROJECT, "--nodes", tmp_path / "absent.json", "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["ok"] is False
    assert f"{tmp_path / 'absent.json'}: No such file or directory" in proc.stderr


def test_nodes_and_declared_hosts_do_not_mix():
    proc = cudaenv("check", PROJECT, "--nodes", NODES, "--driver", "550.54.15")
    assert proc.returncode == 2 and "--nodes describes the hosts" in proc.stderr


def test_help_states_the_exit_codes_for_nodes():
    text = " ".join(cudaenv("check", "--help").stdout.split())
    assert "with --nodes, as for a fleet, when any node cannot run it" in text


# --- plan --nodes ------------------------------------------------------------------------------------------

def write_project(directory: Path, name: str, cuda: str, python: str) -> Path:
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(f'[project]\nname = "{name}"\npython = "{python}"\n\n'
                                            f'[cuda]\nversion = "{cuda}"\n\n[build]\nflavor = "runtime"\n')
    return directory


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan-projects")
    return (PROJECT, write_project(root / "kernels", "cuda13-kernels", "13.0", "3.12"),
            write_project(root / "legacy", "legacy-cuda11", "11.4", "3.10"))


def test_plan_groups_projects_by_the_nodes_they_run_on(projects):
    proc = cudaenv("plan", *projects, "--nodes", NODES, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr  # every project runs somewhere
    groups = {tuple(g["projects"]): g["nodes"] for g in payload["groups"]}
    # CUDA 11.4 runs natively on every driver here (R470 included); H100's sm_90 through the toolkit's PTX
    assert groups[("legacy-cuda11",)] == ["t4-r470", "a100-r535", "h100-r535", "p400-r550", "l4-r570", "rtx4090-r580"]
    assert groups[("vision-service",)] == ["a100-r535", "h100-r535", "p400-r550", "l4-r570", "rtx4090-r580"]
    # CUDA 13.0 needs the R580 branch (13.x's minor-version floor); no forward compatibility in a plain runtime stack
    assert groups[("cuda13-kernels",)] == ["rtx4090-r580"]
    assert [len(g["nodes"]) for g in payload["groups"]] == [6, 5, 1]  # widest first
    by_name = {p["name"]: p for p in payload["projects"]}
    assert "t4-r470" in by_name["vision-service"]["refused"] and by_name["vision-service"]["ok"]


def test_plan_text_lists_groups_and_exits_1_when_a_project_runs_nowhere(projects, tmp_path):
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text(json.dumps(as_list(node("cpu-0"), node("t4-r470"))))
    proc = cudaenv("plan", *projects, "--nodes", cpu_only)
    assert proc.returncode == 1
    out = proc.stdout
    assert "\nt4-r470\n  legacy-cuda11: CUDA runtime only; CUDA 11.4, Python 3.10\n" in out
    assert "\nno node can run:\n  vision-service:\n    t4-r470 (driver 470.129.06, T4 (sm_75)): driver 470.129.06" in out


def docs_node_examples() -> list[tuple[str, list[str], list[str]]]:
    """Every `$ cudaenv ... --nodes ...` console example of README.md and docs/*.md: (where, args,
    the output shown)."""
    import shlex

    from tests.support.docs import console_examples, name

    return [(name(path), shlex.split(command)[1:], output)
            for path, command, output in console_examples(lambda line: line.startswith("$ cudaenv ") and "--nodes" in line)]


@pytest.mark.parametrize("args,expected", [(a, o) for _, a, o in docs_node_examples()],
                         ids=[f"{where}: {args[0]}" for where, args, _ in docs_node_examples()])
def test_the_docs_node_examples_are_what_cudaenv_prints(args, expected):
    proc = cudaenv(*args, cwd=ROOT)  # the examples' paths are relative to the repository
    assert proc.stdout.rstrip("\n").split("\n") == expected


def test_the_docs_have_node_examples():
    assert {args[0] for _, args, _ in docs_node_examples()} == {"check", "plan"}


def test_plan_reports_a_project_without_any_stack_as_running_nowhere(tmp_path):
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    # torch 2.5 publishes no wheels for Python 3.7: the configuration admits no stack at all
    (nothing / "cudaenv.toml").write_text('[project]\nname = "nothing-fits"\npython = "3.7"\n\n'
                                          '[frameworks]\ntorch = "==2.5.1"\n')
    proc = cudaenv("plan", PROJECT, nothing, "--nodes", NODES, "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    by_name = {p["name"]: p for p in payload["projects"]}
    assert by_name["nothing-fits"]["ok"] is False and by_name["nothing-fits"]["stack"] is None
    assert "the configuration admits no stack" in by_name["nothing-fits"]["error"]
    assert payload["groups"][-1] == {"nodes": [], "projects": ["nothing-fits"]}


def test_binary_input_and_a_directory_are_named_bad_input(tmp_path):
    binary = tmp_path / "nodes.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    proc = cudaenv("check", PROJECT, "--nodes", binary, "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["file"] == str(binary)
    assert "not UTF-8 text (byte 0): expected JSON" in proc.stderr
    proc = cudaenv("check", PROJECT, "--nodes", tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(f"cudaenv: error: {tmp_path}: ")
    assert "Traceback" not in proc.stderr
