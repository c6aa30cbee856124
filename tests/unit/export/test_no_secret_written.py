"""`-e NAME` without a value copies the caller's value under `cudaenv run`; an export is a file
people commit and share, so it must never hold that value. A canary value in the caller's
environment is looked for in everything every export prints and every file it writes, and each
export must say where the value comes from instead (a Secret, the submitting environment, the
shell that runs Compose)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from tests.unit.export.test_kubernetes_export import CONFIG, cudaenv
from tests.unit.host import cli_env, hide_nvml

IMAGE = "registry.example.com:5000/ml/detector@sha256:" + "0123456789abcdef" * 4
CANARY = f"canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    env = cli_env(hide_nvml(tmp_path_factory.mktemp("no-nvml")), CUDAENV_UID="4242", CUDAENV_GID="4343",
                  HF_TOKEN=CANARY)
    directory = tmp_path_factory.mktemp("canary") / "detector"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(CONFIG)
    proc = cudaenv("lock", directory, env=env)
    assert proc.returncode == 0, proc.stderr
    return directory, env


def files_under(directory: Path) -> dict[Path, str]:
    return {p: p.read_text(errors="replace") for p in directory.rglob("*") if p.is_file()}


def written(directory: Path, env: dict, *args) -> tuple[str, dict[Path, str]]:
    """(what the export printed, every file it wrote or changed under the project)."""
    before = files_under(directory)
    proc = cudaenv(*args, env=env, cwd=directory)
    assert proc.returncode == 0, proc.stderr
    after = files_under(directory)
    changed = {p: t for p, t in after.items() if before.get(p) != t}
    everything = [proc.stdout, proc.stderr, *changed.values()]
    assert not any(CANARY in text for text in everything), "the caller's value was written"
    return proc.stdout + proc.stderr, changed


def test_kubernetes_reads_a_passed_variable_from_a_named_secret(setup):
    directory, env = setup
    printed, _ = written(directory, env, "export", "kubernetes", directory, "--image", IMAGE, "-e", "HF_TOKEN",
                         "--", "python", "train.py")
    document = yaml.safe_load(printed)
    container = document["spec"]["template"]["spec"]["containers"][0]
    entry = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert entry["valueFrom"]["secretKeyRef"] == {"name": "detector-env", "key": "HF_TOKEN"}
    assert "kubectl create secret generic detector-env" in printed


def test_kubernetes_secret_can_be_named_and_the_file_holds_no_value(setup):
    directory, env = setup
    out = directory / "k8s"
    _, files = written(directory, env, "export", "kubernetes", directory, "--image", IMAGE, "-e", "HF_TOKEN",
                       "--secret", "hf-credentials", "-o", out, "--force", "--", "python")
    (path, text), = files.items()
    assert path.parent == out and "name: hf-credentials" in text


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer", "docker"])
def test_slurm_takes_a_passed_variable_from_the_submitting_environment(setup, runtime):
    directory, env = setup
    printed, _ = written(directory, env, "export", "slurm", directory, "--runtime", runtime, "--image", IMAGE,
                         "-e", "HF_TOKEN", "--", "python")
    assert "${HF_TOKEN-}" in printed


def test_compose_passes_the_variable_through_from_the_shell_that_runs_it(setup):
    directory, env = setup
    out = directory / "compose.yaml"
    printed, files = written(directory, env, "export", "compose", directory, "-e", "HF_TOKEN", "-o", out, "--force")
    service = yaml.safe_load(files[out])["services"]["detector"]
    assert service["environment"]["HF_TOKEN"] is None


def test_devcontainer_holds_no_value_of_the_callers(setup):
    directory, env = setup
    written(directory, env, "export", "devcontainer", directory, "--force")


def test_a_value_given_on_the_command_line_is_written_as_given(setup):
    """-e NAME=value is the user's own text for the file, and is written: only -e NAME is a reference."""
    directory, env = setup
    proc = cudaenv("export", "kubernetes", directory, "--image", IMAGE, "-e", "SEED=7", "--", "python", env=env)
    assert proc.returncode == 0 and "value: '7'" in proc.stdout


def test_secret_without_a_passed_variable_is_refused(setup):
    directory, env = setup
    proc = cudaenv("export", "kubernetes", directory, "--image", IMAGE, "--secret", "x", "--", "python", env=env)
    assert proc.returncode == 2 and "--secret" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
