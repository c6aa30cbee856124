"""Lock staleness and configuration validation, one rule per test (issue 25 §3: each of these
survived a mutation run). A stale lock must say why; a configuration that could reach outside the
project, or a value no engine accepts, is bad input."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from cudaenv.errors import UserError
from cudaenv.project import load_project
from cudaenv.project.config import ConfigError
from cudaenv.project.lock import read_lock, staleness
from cudaenv.resolver.resolve import resolve
from tests.unit.project.test_lock_validation import _locked_project, edited
from tests.support.cli import cudaenv, without_target_overrides
from tests.unit.resolver.helpers import matrix


# --- lock staleness ------------------------------------------------------------------------------


def _lock_and_stack(tmp_path: Path):
    project = _locked_project(tmp_path / "p")
    from cudaenv.hosts.target import project_target

    stack = resolve(matrix(), project.constraints, project_target(matrix(), project).host).stack
    return project, read_lock(project.lock_path), stack


def test_a_current_lock_has_no_reasons(tmp_path):
    project, lock, stack = _lock_and_stack(tmp_path)
    assert staleness(lock, project, stack, matrix().revision) == []


def test_a_new_matrix_revision_makes_the_lock_stale_and_says_so(tmp_path):
    project, lock, stack = _lock_and_stack(tmp_path)
    reasons = staleness(lock, project, stack, "0123456789abcdef")
    assert reasons == [f"the compatibility matrix changed (lock: {matrix().revision}, now: 0123456789abcdef)"]


def test_a_changed_resolved_stack_makes_the_lock_stale_naming_the_fields(tmp_path):
    project, lock, stack = _lock_and_stack(tmp_path)
    other = replace(stack, python="3.10" if stack.python != "3.10" else "3.12", min_driver="999.1")
    assert staleness(lock, project, other, matrix().revision) == [
        "the resolved stack changed (min_driver, python)"]


def test_a_configuration_that_no_longer_resolves_makes_the_lock_stale(tmp_path):
    project, lock, _stack = _lock_and_stack(tmp_path)
    assert staleness(lock, project, None, matrix().revision) == ["the configuration no longer resolves to any stack"]


def test_no_lock_is_stale():
    assert staleness(None, None, None, "r") == ["there is no cudaenv.lock"]


@pytest.mark.parametrize("key", ["python_index", "framework_index"])
@pytest.mark.parametrize("value, message", [
    ("file:///srv/wheels", "expected an http(s):// URL of a package index"),
    ("https://user:token@wheels.example/simple", "expected an index URL without credentials"),
])
def test_a_recorded_index_with_credentials_or_another_scheme_is_refused(tmp_path, key, value, message):
    project = _locked_project(tmp_path / "p")
    text = project.lock_path.read_text()
    project.lock_path.write_text(edited(text, lambda d: d["requirements"].__setitem__(key, value)))
    with pytest.raises(UserError, match=f"requirements.{key}") as caught:
        read_lock(project.lock_path)
    assert message in str(caught.value) and "token" not in str(caught.value)  # the secret is not echoed back


# --- configuration --------------------------------------------------------------------------------


def _project(root: Path, extra: str = "", *, name: str = "p") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cudaenv.toml").write_text(f'[project]\nname = "{name}"\n{extra}')
    return root


def test_a_requirements_file_above_the_project_is_refused(tmp_path):
    (tmp_path / "x.txt").write_text("six\n")
    root = _project(tmp_path / "p", 'requirements = ["../x.txt"]\n')
    with pytest.raises(ConfigError, match=r"project.requirements: '../x.txt' is outside the project directory"):
        load_project(root)


def test_a_requirements_symlink_leaving_the_project_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("six\n")
    root = _project(tmp_path / "p", 'requirements = ["reqs.txt"]\n')
    os.symlink(tmp_path / "secret.txt", root / "reqs.txt")
    with pytest.raises(ConfigError, match="'reqs.txt' is outside the project directory"):
        load_project(root)


def test_a_requirements_file_inside_the_project_is_read(tmp_path):
    root = _project(tmp_path / "p", 'requirements = ["deps/r.txt"]\n')
    (root / "deps").mkdir()
    (root / "deps" / "r.txt").write_text("six\n")
    assert load_project(root).requirements == (Path("deps/r.txt"),)


@pytest.mark.parametrize("ipc", ["container:other", "none", "HOST", ""])
def test_run_ipc_must_be_a_mode_cudaenv_passes_on(tmp_path, ipc):
    root = _project(tmp_path / "p", f'\n[run]\nipc = "{ipc}"\n')
    with pytest.raises(ConfigError, match="run.ipc"):
        load_project(root)


@pytest.mark.parametrize("ipc", ["host", "private", "shareable"])
def test_run_ipc_modes_are_accepted(tmp_path, ipc):
    assert load_project(_project(tmp_path / "p", f'\n[run]\nipc = "{ipc}"\n')).run.ipc == ipc


def test_the_project_name_may_be_128_characters_and_no_more(tmp_path):
    assert load_project(_project(tmp_path / "ok", name="a" * 128)).name == "a" * 128
    with pytest.raises(ConfigError, match="project.name"):
        load_project(_project(tmp_path / "long", name="a" * 129))


def test_the_projects_flavor_survives_a_stack_flag_on_the_command_line(tmp_path):
    root = _project(tmp_path / "p", '\n[build]\nflavor = "devel"\nos = "ubuntu22.04"\n\n[target]\ndriver = "550.54.15"\n')
    proc = cudaenv("resolve", root, "--torch", "2.6", "--json", env=without_target_overrides())
    stack = json.loads(proc.stdout)["stack"]
    assert proc.returncode == 0 and stack["flavor"] == "devel" and stack["base_image"].endswith("-devel-ubuntu22.04")
    proc = cudaenv("resolve", root, "--torch", "2.6", "--os", "ubuntu24.04", "--json", env=without_target_overrides())
    stack = json.loads(proc.stdout)["stack"]
    assert proc.returncode == 0 and stack["base_image"].endswith("-devel-ubuntu24.04")
