"""`cudaenv init --target NAME` adds or updates [targets.NAME] and keeps the rest of the file;
`cudaenv resolve` on a project with several targets answers for each, as one JSON object."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from cudaenv.project import load_project
from cudaenv.project.config import TargetConfig
from cudaenv.project.init import add_target, target_table
from cudaenv.resolver.model import Host
from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.unit.resolver.helpers import host
from tests.support.targets import THREE_TARGET_TABLES

ONE = """# my project: keep this comment
[project]
name = "demo"  # the image name

[frameworks]
torch = ">=2.6"

[target]
driver = "535.104.05"  # the cluster
gpus = ["A100"]

[build]
flavor = "auto"
"""


def init(root: Path, *args):
    return run_cli("init", root, "--no-lock", "--no-detect", *args, env=isolated_env())


def configured(tmp_path: Path, text: str = ONE, name: str = "cudaenv.toml") -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / name).write_text(text)
    return root


def test_adding_a_target_moves_the_single_target_to_default_and_keeps_everything_else(tmp_path):
    root = configured(tmp_path)
    proc = init(root, "--target", "laptop", "--gpu", "none")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (root / "cudaenv.toml").read_text()
    assert text.startswith("# my project: keep this comment\n[project]\nname = \"demo\"  # the image name\n")
    assert 'driver = "535.104.05"  # the cluster' in text and "[build]\nflavor = \"auto\"" in text
    assert "[target]\n" not in text
    assert load_project(root).targets == (TargetConfig(driver="535.104.05", gpus=("A100",), name="default"),
                                          TargetConfig(name="laptop", cpu=True))
    assert proc.stdout.splitlines()[-1] == f"wrote {root / 'cudaenv.toml'}"


def test_a_target_given_again_is_updated_in_place(tmp_path):
    root = configured(tmp_path)
    assert init(root, "--target", "h100", "--driver", "570.86.15", "--gpu", "H100").returncode == 0
    assert init(root, "--target", "laptop", "--gpu", "none").returncode == 0
    assert init(root, "--target", "h100", "--driver", "580.65.06", "--gpu", "H100", "--gpu", "H100").returncode == 0
    project = load_project(root)
    assert [t.name for t in project.targets] == ["default", "h100", "laptop"]
    assert project.target_named("h100") == TargetConfig(driver="580.65.06", gpus=("H100", "H100"), name="h100")


def test_a_target_is_added_to_tool_cudaenv_in_pyproject(tmp_path):
    root = configured(tmp_path, '[project]\nname = "demo"\nversion = "1"\n\n[tool.cudaenv.frameworks]\ntorch = "any"\n',
                      "pyproject.toml")
    proc = init(root, "--target", "grace", "--driver", "580.65.06", "--gpu", "GH200")
    assert proc.returncode == 0, proc.stderr
    data = tomllib.loads((root / "pyproject.toml").read_text())
    assert data["project"] == {"name": "demo", "version": "1"}
    assert data["tool"]["cudaenv"]["targets"] == {"grace": {"driver": "580.65.06", "gpus": ["GH200"]}}
    assert not (root / "cudaenv.toml").exists()


def test_init_target_json_is_one_object_naming_what_it_wrote(tmp_path):
    root = configured(tmp_path)
    proc = init(root, "--target", "laptop", "--gpu", "none", "--json")
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["ok"] and answer["target"] == "laptop" and answer["written"] == [str(root / "cudaenv.toml")]
    assert answer["host"]["gpus"] == "none"


@pytest.mark.parametrize("args, said", [
    (("--target", "Laptop", "--gpu", "none"),
     "--target: expected a target name of lower-case letters, digits and - (at most 32, e.g. cluster), got 'Laptop'"),
    (("--target", "ラップトップ", "--gpu", "none"),
     "--target: expected a target name of lower-case letters, digits and - (at most 32, e.g. cluster), got 'ラップトップ'"),
    (("--target", "auto", "--gpu", "none"),
     "--target: 'auto' is a reserved word (reserved: all, auto, none, any, this, host); pick another name"),
    (("--target", "x", "--gpu", "none", "--driver", "535.104.05"),
     "--gpu none: a target without a GPU takes no other --gpu, --driver or --compute-capability"),
    (("--target", "x", "--gpu", "none", "--gpu", "A100"),
     "--gpu none: a target without a GPU takes no other --gpu, --driver or --compute-capability"),
    (("--target", "x"),
     "--target x: describe the target: --driver and --gpu (or --gpu none for one without a GPU); no NVIDIA driver "
     "was detected here"),
    (("--target", "x", "--driver", "535.104.05", "--gpu", "Z9000"), "--gpu: unknown GPU 'Z9000'"),
])
def test_a_bad_target_flag_is_one_line_and_exit_2_and_the_file_is_untouched(tmp_path, args, said):
    root = configured(tmp_path)
    proc = init(root, *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"cudaenv: error: {said}") and len(proc.stderr.splitlines()) == 1
    assert (root / "cudaenv.toml").read_text() == ONE


def test_a_file_that_is_not_toml_is_not_touched(tmp_path):
    root = configured(tmp_path, ONE + "[[[ broken\n")
    proc = init(root, "--target", "laptop", "--gpu", "none")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (root / "cudaenv.toml").read_text() == ONE + "[[[ broken\n"


def test_a_new_project_gets_its_first_target_as_a_named_table(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "requirements.txt").write_text("torch>=2.6\n")
    proc = init(root, "--target", "laptop", "--gpu", "none")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    project = load_project(root)
    assert project.targets == (TargetConfig(name="laptop", cpu=True),)
    text = (root / "cudaenv.toml").read_text()
    assert "[target]\n" not in text and "None" not in text  # no CUDA was resolved, and none is named
    assert project.run.gpus == "none"  # its containers ask for no GPU


@pytest.mark.parametrize("value", [Host(cpu=True), Host(arch="aarch64", cpu=True), host("535.104.05", ("A100",)),
                                   host("580.65.06", ("GH200",)), Host("550.54.15", host(gpus=("A100",)).gpus, "aarch64")])
def test_a_written_target_reads_back_as_the_same_host(tmp_path, value):
    from cudaenv.hosts.target import project_target
    from cudaenv.matrix import load_matrix

    text = add_target('[project]\nname = "x"\n', "t", value)
    (tmp_path / "cudaenv.toml").write_text(text)
    project = load_project(tmp_path)
    assert project_target(load_matrix(overlays=[]), project, "t").host.platform == value.platform
    read = project_target(load_matrix(overlays=[]), project, "t").host
    assert (read.driver, read.cpu, [g.compute_capability for g in read.gpus]) == (
        value.driver, value.cpu, [g.compute_capability for g in value.gpus])


def test_a_cpu_target_table_says_gpus_none_and_nothing_else():
    assert target_table(Host(cpu=True)).unwrap() == {"gpus": "none"}


# --- resolve, per target ------------------------------------------------------------------------------

THREE = THREE_TARGET_TABLES


def test_resolve_json_of_several_targets_is_one_object_with_a_stack_per_target(tmp_path):
    root = configured(tmp_path, THREE)
    proc = run_cli("resolve", root, "--json", env=isolated_env())
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert set(answer) == {"ok", "targets"} and answer["ok"] is True
    assert list(answer["targets"]) == ["laptop", "a100", "h100"]
    for name, cuda in (("laptop", None), ("a100", "12.6"), ("h100", "13.0")):
        one = answer["targets"][name]
        assert set(one) == {"ok", "stack", "valid_cuda", "problems", "host"} and one["stack"].get("cuda") == cuda
    assert answer["targets"]["laptop"]["host"]["gpus"] == "none"
    assert answer["targets"]["laptop"]["stack"]["device"] == "cpu"


def test_resolve_of_several_targets_exits_1_when_one_has_no_stack(tmp_path):
    root = configured(tmp_path, THREE.replace('torch = ">=2.6"', 'torch = "==2.14.1"'))
    proc = run_cli("resolve", root, "--json", env=isolated_env())
    assert proc.returncode == 1
    answer = json.loads(proc.stdout)
    assert answer["ok"] is False and answer["targets"]["laptop"]["ok"] is False and answer["targets"]["a100"]["ok"]


def test_resolve_with_a_host_on_the_command_line_keeps_the_one_target_shape(tmp_path):
    root = configured(tmp_path, THREE)
    proc = run_cli("resolve", root, "--json", "--driver", "550.54.15", "--gpu", "A100", env=isolated_env())
    assert proc.returncode == 0
    assert set(json.loads(proc.stdout)) == {"ok", "stack", "valid_cuda", "problems", "host"}


def test_resolve_of_one_named_target_keeps_the_one_target_shape(tmp_path):
    root = configured(tmp_path, '[frameworks]\ntorch = ">=2.6"\n[targets.laptop]\ngpus = "none"\n')
    proc = run_cli("resolve", root, "--json", env=isolated_env())
    answer = json.loads(proc.stdout)
    assert set(answer) == {"ok", "stack", "valid_cuda", "problems", "host"} and answer["stack"]["device"] == "cpu"


def test_resolve_text_of_several_targets_has_a_section_per_target(tmp_path):
    root = configured(tmp_path, THREE)
    proc = run_cli("resolve", root, env=isolated_env())
    sections = proc.stdout.split("\n\n")
    assert [s.splitlines()[0] for s in sections] == ["[targets.laptop]", "[targets.a100]", "[targets.h100]"]
    assert "  CPU only (no CUDA library), Python" in sections[0]
