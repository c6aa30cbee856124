"""One process, every engine, for real: a probe in the project's image writes the argv and the
environment it was started with, under `cudaenv run`, under `docker compose up` of the Compose
export, under the one-node Slurm cluster's job from the Docker-runtime sbatch export, and (the
environment: a Dev Container's command is the editor's) under `devcontainer up`. Commands and env
values are generated with ``$``, ``$$``, ``$(VAR)``, ``${X:-y}``, quotes, a leading ``=``, commas,
spaces, newlines and non-ASCII; each engine must show the probe what `cudaenv run` shows it.

A passed-through variable (``-e HF_TOKEN``) takes its value from where the job starts: the
environment of `cudaenv run`, of `docker compose up` and of `sbatch`. Kubernetes, pyxis and
Apptainer cannot run here: tests/unit/export/test_same_process_models.py holds them to the same
rule through models of their documented behaviour. Example counts are small: every example starts
real containers and a Slurm job.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.integration.test_compose_up import cudaenv, make_project
from tests.integration.test_devcontainer_up import devcontainer_cli
from tests.unit.export.test_compose_export import compose_binary

pytestmark = [pytest.mark.docker, pytest.mark.registry]

RUN_ID = uuid.uuid4().hex[:6]
NAMES = ("X", "Y", "NCCL_IB_HCA", "OUT")
PROBE = ("import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': {n: os.environ.get(n) for n in %r}}, "
         "open(os.environ['PROBE_OUT'], 'w'))" % ((*NAMES, "HF_TOKEN", "WANDB_MODE"),))
SNIPPETS = ("$", "$$", "$(X)", "${X:-y}", "$X", "`id`", "'", '"', "\\", "=mlx5_0:1", ",", "a,b=c", " ", "é",
            "日本", "🙂", "--x")
PLAIN = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=4)


def values(newlines: bool) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(SNIPPETS + (("\n",) if newlines else ())), PLAIN), max_size=5).map("".join)


CASES = st.booleans().flatmap(lambda newlines: st.tuples(
    st.just(newlines),
    st.lists(values(newlines), max_size=3),
    st.dictionaries(st.sampled_from(NAMES), values(newlines), max_size=3),
    values(False),  # the passed-through HF_TOKEN arrives through process environments: no newline needed
))


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes (\\" \\\\ \\n \\uXXXX) are TOML's; non-ASCII stays as UTF-8."""
    return json.dumps(text, ensure_ascii=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory, standins):
    standins.provide("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_UID="4321", CUDAENV_GID="4321")
    env.pop("HF_TOKEN", None)
    name = f"sameproc-{RUN_ID}"
    project = make_project(tmp_path_factory.mktemp("sameproc") / "proj", name, standins.host, "x")
    built = cudaenv("build", project, env=env)
    assert built.returncode == 0, built.stderr[-2000:]
    config = (project / "cudaenv.toml").read_text()
    yield project, env, config[:config.index("[run]")]
    from cudaenv.engine import get_engine

    engine = get_engine()
    for image in engine.client.images.list(name=f"cudaenv/{name}"):
        for tag in image.tags:
            engine.remove_image(tag, force=True)


def configure(project: Path, head: str, words: list[str], env: dict[str, str], out: str) -> tuple[str, ...]:
    """Write [run] env and command; the probe writes to PROBE_OUT. [run] env leaves the image
    current; a new command is the image's CMD, so ``build`` follows it (cached: one layer)."""
    command = ("python", "-c", PROBE, *words)
    run_env = {"WANDB_MODE": "offline", **env, "PROBE_OUT": f"/workspace/{out}"}
    (project / "cudaenv.toml").write_text(
        head + "[run]\nulimits = { memlock = 8388608 }\n"  # this sandbox cannot grant NVIDIA's unlimited memlock
        + "env = { " + ", ".join(f"{n} = {toml_string(v)}" for n, v in run_env.items()) + " }\n"
        + "command = [" + ", ".join(toml_string(w) for w in command) + "]\n")
    return command


def probed(project: Path, out: str) -> dict:
    path = project / out
    assert path.exists(), f"the probe wrote no {out}"
    return json.loads(path.read_text(encoding="utf-8"))


def compose(path: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([compose_binary(), "-f", str(path), *args], capture_output=True, text=True, timeout=600,
                          cwd=path.parent, env=env)


def under_cudaenv_run(project, env, token, out) -> dict:
    proc = cudaenv("run", project, "--gpus", "none", "-e", "HF_TOKEN", env={**env, "HF_TOKEN": token})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return probed(project, out)


def under_compose(project, env, token, out) -> dict:
    path = project.parent / f"compose-{out}.yaml"
    exported = cudaenv("export", "compose", project, "--gpus", "none", "-e", "HF_TOKEN", "--name",
                       f"cudaenv-sameproc-{RUN_ID}", "-o", path, "--force", env=env)
    assert exported.returncode == 0, exported.stderr
    import yaml

    (service,) = yaml.safe_load(path.read_text(encoding="utf-8"))["services"].values()
    assert service["environment"]["HF_TOKEN"] is None
    up_env = {**os.environ, "HF_TOKEN": token}
    try:
        up = compose(path, "up", "--no-color", env=up_env)
        if up.returncode != 0:
            logs = compose(path, "logs", "--no-color", env=up_env)
            pytest.fail(f"docker compose up: {up.stdout[-2000:]}{up.stderr[-2000:]}\n{logs.stdout[-3000:]}"
                        f"{logs.stderr[-2000:]}\n{path.read_text(encoding='utf-8')}")
    finally:
        compose(path, "down", "--remove-orphans", env=up_env)
    return probed(project, out)


def under_slurm(project, env, token, out, cluster) -> dict | None:
    exported = cudaenv("export", "slurm", project, "--runtime", "docker", "--docker-gpus", "none", "--job-name",
                       f"sameproc-{RUN_ID}", "-e", "HF_TOKEN", env=env)
    if exported.returncode == 2:
        return None  # a newline: refused in one line (a batch script keeps every value on its line)
    assert exported.returncode == 0, exported.stderr
    script = project / f"job-{out}.sbatch"
    script.write_text(exported.stdout, encoding="utf-8")
    submitted = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True, check=True,
                               cwd=project, env={**cluster.env, "HF_TOKEN": token})
    job = submitted.stdout.strip().split(";")[0]
    state = cluster.wait_job(job)
    log = project / f"sameproc-{RUN_ID}-{job}.out"
    assert state == "COMPLETED", f"job {job} ended {state}: {log.read_text() if log.exists() else 'no log'}"
    return probed(project, out)


@pytest.mark.slurm
@settings(max_examples=3, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@example(case=(False, ["echo $$", "$(X)", "${X:-y}", "=a,b", "it's \"q\"", "日本 🙂"],
               {"X": "=mlx5_0:1,$(Y)", "Y": "$$", "OUT": "/out/$(X) `id`"}, "tok$(X)'\"`,=é"))
@example(case=(True, ["two\nlines"], {"X": "a\nb"}, "t"))
@given(case=CASES)
def test_compose_and_the_slurm_job_start_what_cudaenv_run_starts(built, slurm_cluster, case):
    newlines, words, env, token = case
    project, cli_env, head = built
    tag = uuid.uuid4().hex[:8]
    seen = {}
    configure(project, head, words, env, "unused")
    rebuilt = cudaenv("build", project, env=cli_env)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    for engine in ("run", "compose", "slurm"):
        out = f"probe-{engine}-{tag}.json"
        command = configure(project, head, words, env, out)
        if engine == "run":
            seen[engine] = under_cudaenv_run(project, cli_env, token, out)
        elif engine == "compose":
            seen[engine] = under_compose(project, cli_env, token, out)
        else:
            seen[engine] = under_slurm(project, cli_env, token, out, slurm_cluster)
            if seen[engine] is None:
                assert newlines, "the Slurm export refused a value without a control character"
                del seen[engine]
    expected_env = {n: env.get(n) for n in NAMES} | {"HF_TOKEN": token, "WANDB_MODE": "offline"}
    assert seen["run"] == {"argv": list(command[3:]), "env": expected_env}
    for engine, view in seen.items():
        assert view == seen["run"], f"{engine} started another process than `cudaenv run`"


@settings(max_examples=1, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@example(env={"X": "=mlx5_0:1,$(Y) ${X:-y} $$ `id` 'q' \"d\" \\ é🙂", "Y": "a\nb"})
@given(env=st.dictionaries(st.sampled_from(NAMES), values(True), max_size=3))
def test_a_dev_container_has_the_environment_cudaenv_run_gives(built, engine, env):
    """The editor runs its own commands in a Dev Container: what must match is the environment."""
    project, cli_env, head = built
    tag = uuid.uuid4().hex[:8]
    out = f"probe-devc-{tag}.json"
    configure(project, head, [], env, f"probe-run-{tag}.json")
    rebuilt = cudaenv("build", project, env=cli_env)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    expected = under_cudaenv_run(project, cli_env, "", f"probe-run-{tag}.json")["env"]
    exported = cudaenv("export", "devcontainer", project, "--gpus", "none", "--force", env=cli_env)
    assert exported.returncode == 0, exported.stderr
    cli = devcontainer_cli()
    up = subprocess.run([cli, "up", "--workspace-folder", str(project), "--remove-existing-container"],
                        capture_output=True, text=True, timeout=600)
    result = json.loads(up.stdout.strip().splitlines()[-1])
    try:
        assert up.returncode == 0 and result["outcome"] == "success", up.stderr[-2000:]
        ran = subprocess.run([cli, "exec", "--workspace-folder", str(project), "--remote-env",
                              f"PROBE_OUT=/workspace/{out}", "/opt/venv/bin/python", "-c", PROBE],
                             capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stderr[-2000:]
    finally:
        if result.get("containerId"):
            engine.client.containers.get(result["containerId"]).remove(force=True)
    seen = probed(project, out)["env"]
    assert {n: seen[n] for n in NAMES} == {n: expected[n] for n in NAMES} == {n: env.get(n) for n in NAMES}


def test_dockers_own_reading_of_the_dev_container_gpus_is_both_devices(built, engine):
    """`docker create` records the device request the Dev Container's runArgs make: devices 0 and
    1, no count (unquoted, Docker read device 0 and a count of 1). No GPU is needed to create."""
    project, cli_env, _ = built
    exported = cudaenv("export", "devcontainer", project, "--gpus", "0,1", "--stdout", env=cli_env)
    config = json.loads(exported.stdout)
    flag, value = config["runArgs"][:2]
    created = subprocess.run(["docker", "create", flag, value, config["image"], "true"], capture_output=True,
                             text=True, check=True)
    container = created.stdout.strip()
    try:
        inspected = subprocess.run(["docker", "inspect", "-f", "{{json .HostConfig.DeviceRequests}}", container],
                                   capture_output=True, text=True, check=True)
        (request,) = json.loads(inspected.stdout)
        assert request["DeviceIDs"] == ["0", "1"] and request["Count"] == 0
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def test_the_dev_containers_tool_substitutes_what_the_export_refuses(tmp_path):
    """Why `export devcontainer` refuses ``${localEnv:…}`` and the like: the reference CLI replaces
    them in containerEnv, ``$$`` does not escape them, and any other ``${...}`` stays as written."""
    folder = tmp_path / "ws"
    (folder / ".devcontainer").mkdir(parents=True)
    (folder / ".devcontainer" / "devcontainer.json").write_text(json.dumps({"image": "x", "containerEnv": {
        "A": "${localWorkspaceFolderBasename}", "B": "${X:-y}", "C": "$${localEnv:HOME}"}}))
    proc = subprocess.run([devcontainer_cli(), "read-configuration", "--workspace-folder", str(folder)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": "/home/probe"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout)["configuration"]["containerEnv"]
    assert seen == {"A": "ws", "B": "${X:-y}", "C": "$/home/probe"}
