"""Several targets in one configuration: [targets.NAME] tables, a single [target] as the one target
named "default", and every mistake as one line naming the file, the field and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaenv.project.config import DEFAULT_TARGET, TargetConfig, load_project, parse_config
from cudaenv.project.locate import ConfigError
from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.support.targets import THREE_TARGETS

THREE = THREE_TARGETS


def parsed(tmp_path: Path, text: str):
    (tmp_path / "cudaenv.toml").write_text(text, encoding="utf-8")
    return load_project(tmp_path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parsed(tmp_path, text)
    return str(caught.value)


def test_three_named_targets_are_read_in_the_files_order(tmp_path):
    project = parsed(tmp_path, THREE)
    assert project.targets == (
        TargetConfig(name="laptop", cpu=True),
        TargetConfig(driver="535.104.05", gpus=("A100",), name="a100"),
        TargetConfig(driver="580.65.06", gpus=("H100",), name="h100"),
    )
    assert project.several_targets and project.named_targets == project.targets


def test_gpus_none_is_the_cpu_marker_whatever_its_case(tmp_path):
    project = parsed(tmp_path, '[targets.laptop]\ngpus = " None "\narch = "arm64"\n')
    assert project.targets == (TargetConfig(name="laptop", cpu=True, arch="aarch64"),)


def test_a_single_target_table_is_the_one_target_named_default(tmp_path):
    project = parsed(tmp_path, '[target]\ndriver = "535.104.05"\ngpus = ["A100"]\n')
    assert project.target == TargetConfig(driver="535.104.05", gpus=("A100",), name=DEFAULT_TARGET)
    assert project.targets == (project.target,) and not project.several_targets


def test_no_target_at_all_is_one_undeclared_target_named_default(tmp_path):
    project = parsed(tmp_path, '[project]\nname = "x"\n')
    assert project.named_targets == (TargetConfig(),) and project.target.name == DEFAULT_TARGET


def test_a_single_named_target_is_the_projects_target(tmp_path):
    project = parsed(tmp_path, '[targets.cluster]\ndriver = "535.104.05"\ngpus = ["A100"]\n')
    assert project.target.name == "cluster" and not project.several_targets


def test_several_named_targets_leave_no_default_target(tmp_path):
    assert parsed(tmp_path, THREE).target == TargetConfig()


def test_a_target_is_found_by_name_and_an_unknown_name_lists_the_targets(tmp_path):
    project = parsed(tmp_path, THREE)
    assert project.target_named("a100").gpus == ("A100",)
    with pytest.raises(ConfigError) as caught:
        project.target_named("h200")
    assert str(caught.value) == f"--target: no target 'h200' in {tmp_path / 'cudaenv.toml'} (targets: laptop, a100, h100)"


@pytest.mark.parametrize("text, said", [
    ('[target]\ngpus = ["A100"]\n[targets.x]\ngpus = ["A100"]\n',
     "[target] and [targets.*] both present: describe one target in [target], or name each in its own "
     "[targets.NAME] table (move [target] to [targets.default])"),
    ('targets = "laptop"\n', "[targets]: expected tables like [targets.cluster] (driver, gpus, compute_capabilities, "
                             "arch), got 'laptop'"),
    ("[targets]\n", "[targets]: expected tables like [targets.cluster] (driver, gpus, compute_capabilities, arch), got {}"),
    ("[targets]\nx = 5\n", "targets.x: expected a table [targets.x] with driver, gpus, compute_capabilities, arch, got 5"),
    ('[targets.Laptop]\ngpus = "none"\n', "targets.'Laptop': expected a target name of lower-case letters, digits "
                                         "and - (at most 32, e.g. [targets.cluster]), got 'Laptop'"),
    ('[targets."lap top"]\ngpus = "none"\n', "targets.'lap top': expected a target name of lower-case letters, digits "
                                            "and - (at most 32, e.g. [targets.cluster]), got 'lap top'"),
    ('[targets."läptop"]\ngpus = "none"\n', "targets.'läptop': expected a target name of lower-case letters, digits "
                                           "and - (at most 32, e.g. [targets.cluster]), got 'läptop'"),
    ('[targets.-x]\ngpus = "none"\n', "targets.'-x': expected a target name of lower-case letters, digits "
                                     "and - (at most 32, e.g. [targets.cluster]), got '-x'"),
    ('[targets.x-]\ngpus = "none"\n', "targets.'x-': expected a target name of lower-case letters, digits "
                                     "and - (at most 32, e.g. [targets.cluster]), got 'x-'"),
    (f'[targets.{"a" * 33}]\ngpus = "none"\n', f"targets.'{'a' * 33}': expected a target name of lower-case letters, "
                                               f"digits and - (at most 32, e.g. [targets.cluster]), got '{'a' * 33}'"),
    ('[targets.all]\ngpus = "none"\n', "targets.all: 'all' is a reserved word (reserved: all, auto, none, any, this, "
                                      "host); pick another name"),
    ('[targets.none]\ngpus = "none"\n', "targets.none: 'none' is a reserved word (reserved: all, auto, none, any, "
                                       "this, host); pick another name"),
    ('[targets.a]\ngpu = ["A100"]\n', "unknown key 'targets.a.gpu' (did you mean 'gpus'?)"),
    ('[targets.a]\ngpus = "none"\ndriver = "535.104.05"\n',
     'targets.a.driver: a target with gpus = "none" has no GPU, so no driver: drop it, or name the target\'s GPUs'),
    ('[targets.a]\ngpus = "none"\ncompute_capabilities = ["8.0"]\n',
     'targets.a.compute_capabilities: a target with gpus = "none" has no GPU, so no compute capabilities: drop it, '
     "or name the target's GPUs"),
    ('[targets.a]\ngpus = "A100"\n', 'targets.a.gpus: expected a list of strings, e.g. gpus = ["A100"], got \'A100\''),
    ("[targets.a]\ndriver = 99999999999999999999999\n", "targets.a.driver: expected a string, got 99999999999999999999999"),
    ('[targets.a]\ndriver = "535"\n', "targets.a.driver: expected a driver version like 535.104.05, got '535'"),
    ('[targets.a]\ncompute_capabilities = ["8"]\n', 'targets.a.compute_capabilities: expected compute capabilities like '
                                                    '"8.0", got \'8\''),
    ('[targets.a]\narch = "ppc64le"\n', 'targets.a.arch: expected "x86_64" or "aarch64" (the target\'s CPU '
                                        "architecture), got 'ppc64le'"),
    ('[target]\ngpus = "none"\ndriver = "535.104.05"\n',
     'target.driver: a target with gpus = "none" has no GPU, so no driver: drop it, or name the target\'s GPUs'),
], ids=["both", "targets-not-table", "targets-empty", "target-not-table", "upper-case", "space", "unicode",
        "leading-dash", "trailing-dash", "too-long", "reserved-all", "reserved-none", "unknown-key", "cpu-with-driver",
        "cpu-with-cc", "gpus-a-string", "huge-number", "driver-short", "cc-bad", "arch-bad", "single-cpu-with-driver"])
def test_each_bad_target_is_one_line_naming_file_field_and_what_was_expected(tmp_path, text, said):
    assert error_of(tmp_path, text) == f"{tmp_path / 'cudaenv.toml'}: {said}"


def test_a_target_in_pyproject_is_named_like_any_other(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n'
                                             '[tool.cudaenv.targets.laptop]\ngpus = "none"\n')
    assert load_project(tmp_path).targets == (TargetConfig(name="laptop", cpu=True),)


def test_a_parsed_target_errors_name_the_label_given(tmp_path):
    with pytest.raises(ConfigError) as caught:
        parse_config(tmp_path, {"targets": {"a": {"gpus": "none", "driver": "535.104.05"}}}, "here", None)
    assert str(caught.value).startswith("here: targets.a.driver: ")


def test_a_duplicate_target_table_is_bad_input_without_a_traceback(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[targets.a]\ngpus = "none"\n[targets.a]\ngpus = "none"\n')
    proc = run_cli("lock", tmp_path, "--check", env=isolated_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"cudaenv: error: {tmp_path / 'cudaenv.toml'}") and len(proc.stderr.splitlines()) == 1


def test_a_bad_target_name_is_one_json_error_object_and_exit_2(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[targets."GPU!"]\ngpus = "none"\n')
    proc = run_cli("resolve", tmp_path, "--json", env=isolated_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["ok"] is False and "expected a target name" in json.dumps(error)


def test_an_unknown_gpu_in_a_named_target_is_named_by_its_table(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[targets.a]\ndriver = "535.104.05"\ngpus = ["Z9000"]\n'
                                           '[targets.b]\ngpus = "none"\n')
    proc = run_cli("resolve", tmp_path, env=isolated_env())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{tmp_path / 'cudaenv.toml'}: targets.a.gpus: unknown GPU 'Z9000'" in proc.stderr
