"""The docs' --json failure object is what cudaenv prints, and `resolve` with no directory uses
the project in the current directory like every other command."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from tests.support.cli import cudaenv as run_cli, without_target_overrides

from tests.support.docs import find_one


def cudaenv(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, env=without_target_overrides(), timeout=120)


def test_the_docs_json_error_example_is_what_cudaenv_prints(tmp_path):
    _, match = find_one(r"a failure is still exactly one object on stdout:\n\n```json\n(.+?)\n```", "--json failure example")
    example = json.loads(match.group(1))
    field = example["error"]["field"]
    bad = re.search(r"got '(.+?)'", example["error"]["message"]).group(1)
    section, key = field.split(".")
    (tmp_path / "cudaenv.toml").write_text(f'[{section}]\n{key} = "{bad}"\n')
    proc = cudaenv("resolve", "--json", cwd=tmp_path)
    assert proc.returncode == example["exit_code"]
    assert json.loads(proc.stdout) == example


def test_resolve_without_a_directory_uses_the_project_here_and_flags_replace_its_constraints(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "==2.4.1"\n\n[target]\ndriver = "550.54.15"\n')
    here = json.loads(cudaenv("resolve", "--json", "--no-detect", cwd=tmp_path).stdout)
    assert here["stack"]["frameworks"]["torch"] == "2.4.1"
    assert here["host"]["driver"] == "550.54.15"  # the project's [target]
    replaced = json.loads(cudaenv("resolve", "--json", "--no-detect", "--torch", "2.5.1", cwd=tmp_path).stdout)
    assert replaced["stack"]["frameworks"]["torch"] == "2.5.1"


def test_resolve_in_a_directory_without_a_project_answers_for_the_flags_alone(tmp_path):
    proc = cudaenv("resolve", "--json", "--no-detect", "--torch", "2.6", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["stack"]["frameworks"]["torch"].startswith("2.6")


def test_requirements_here_without_a_project_are_named_as_not_read(tmp_path):
    """A newcomer runs `cudaenv resolve` next to requirements.txt before `cudaenv init`: the answer
    is for the options alone, and stderr says so (every time, remembered answer or not)."""
    (tmp_path / "requirements.txt").write_text("torch==2.4.1\n")
    for _ in range(2):
        proc = cudaenv("resolve", "--json", "--driver", "550.54.15", cwd=tmp_path)
        assert proc.returncode == 0 and json.loads(proc.stdout)["stack"]["frameworks"] == {}
        assert "requirements.txt is not read" in proc.stderr and "cudaenv init" in proc.stderr
    asked = cudaenv("resolve", "--json", "--driver", "550.54.15", "--torch", "2.4.1", cwd=tmp_path)
    assert asked.returncode == 0 and asked.stderr == ""
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "2.4.1"\n')
    project = cudaenv("resolve", "--json", "--driver", "550.54.15", cwd=tmp_path)
    assert project.stderr == "" and json.loads(project.stdout)["stack"]["frameworks"]["torch"] == "2.4.1"


def test_every_error_code_cudaenv_can_print_is_in_the_docs():
    """Scripts branch on `code`: each one an error class carries (or the failure handler maps to)
    is listed where the docs promise the list."""
    where, match = find_one(r"`code` is one of (.+?); `file`", "list of error codes")
    listed = set(re.findall(r"`([a-z-]+)`", match.group(1)))
    source = Path(__file__).resolve().parents[2] / "cudaenv"
    used = set()
    for path in source.rglob("*.py"):
        text = path.read_text()
        used |= set(re.findall(r'^\s+code(?::\s*str)?\s*=\s*"([a-z-]+)"', text, re.M))
        used |= set(re.findall(r'\(errors\.\w+, "([a-z-]+)"\)', text))
    used |= {"usage", "failed"}  # click's usage errors, and anything else (cudaenv.cli.failure)
    assert {"bad-input", "no-stack", "index-unreachable"} <= used
    assert used <= listed, f"codes missing from {where.name}: {sorted(used - listed)}"


def test_a_message_about_a_url_does_not_name_the_url_as_the_file():
    from cudaenv.cli.output import error_object

    found = error_object(OSError(), code="index-unreachable",
                         message="cannot reach https://download.pytorch.org/whl/cu124/ (DNS lookup failed): try again")
    assert found["error"]["file"] is None
    named = error_object(OSError(), code="bad-input", message="proj/cudaenv.toml: run.gpus: expected all")
    assert named["error"]["file"] == "proj/cudaenv.toml" and named["error"]["field"] == "run.gpus"


def test_an_unknown_key_is_named_as_the_field(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorhc = "2.4"\n')
    proc = cudaenv("resolve", "--json", cwd=tmp_path)
    error = json.loads(proc.stdout)["error"]
    assert proc.returncode == 2 and error["field"] == "frameworks.torhc" and "did you mean 'torch'" in error["message"]
