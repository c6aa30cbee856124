"""The CI wiring: workflows pass actionlint, .ci/run calls the README's test command, and a
missing engine under CI=true fails the run instead of skipping."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def actionlint() -> str:
    path = shutil.which("actionlint", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if path is None:
        pytest.fail("actionlint is not installed; it comes with the test extra (pip install -e '.[test]')")
    return path


def workflow_files(repo_root: Path) -> list[Path]:
    return sorted((repo_root / ".github" / "workflows").glob("*.yml")) + sorted(
        (repo_root / ".github" / "workflows").glob("*.yaml")
    )


def test_every_workflow_passes_actionlint(repo_root):
    files = workflow_files(repo_root)
    assert files, "no workflow under .github/workflows"
    proc = subprocess.run([actionlint(), "-no-color", *map(str, files)], capture_output=True, text=True, cwd=repo_root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    broken = workflows / "broken.yml"
    broken.write_text("on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nope }}\n")
    proc = subprocess.run([actionlint(), "-no-color", str(broken)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0
    assert "matrix" in proc.stdout


def readme_test_command(repo_root: Path) -> str:
    text = (repo_root / "README.md").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:sh|bash|console)?\n(.+?)\n```", text, re.S)
    assert match, "README.md must show the test command in a block after <!-- test-command -->"
    return match.group(1).strip()


def test_ci_run_calls_the_readme_test_command(repo_root):
    command = readme_test_command(repo_root)
    ci_run = (repo_root / ".ci" / "run").read_text()
    assert command in ci_run


def test_github_workflow_runs_the_readme_test_command(repo_root):
    command = readme_test_command(repo_root)
    assert any(command in path.read_text() for path in workflow_files(repo_root))


def test_ci_true_without_engine_fails_instead_of_skipping(repo_root):
    env = dict(os.environ, CI="true", DOCKER_HOST="unix:///nonexistent/cudaenv-test.sock")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/integration/test_engine_build_run.py"],
        capture_output=True, text=True, cwd=repo_root, env=env,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "CI=true" in proc.stdout + proc.stderr
    assert "engine is unreachable" in proc.stdout + proc.stderr


def test_without_ci_a_missing_engine_skips_docker_tests(repo_root):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["DOCKER_HOST"] = "unix:///nonexistent/cudaenv-test.sock"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "tests/integration/test_engine_build_run.py"],
        capture_output=True, text=True, cwd=repo_root, env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b\d+ skipped\b", proc.stdout)
    assert "Docker engine unreachable" in proc.stdout
