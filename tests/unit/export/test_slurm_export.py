"""`cudaenv export slurm`: golden scripts per runtime, shellcheck on every variant, --constraint
agreeing with `cudaenv check` feature by feature, hostile values refused (exit 2, one line) or
quoted so the shell hands them over verbatim.

Projects lock offline (plain CUDA, no requirements) through the real CLI in a subprocess. Golden
files live in tests/fixtures/golden/slurm/; after reviewing a change, regenerate them with::

    CUDAENV_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/export/test_slurm_export.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from functools import partial
from pathlib import Path

import pytest

from cudaenv.export.slurm import enroot_image
from tests.support.cli import cudaenv as run_cli
from tests.unit.host import cli_env, hide_nvml

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "slurm"
UPDATE = os.environ.get("CUDAENV_UPDATE_GOLDEN", "").strip().lower() in {"1", "true", "yes"}
IMAGE = "registry.example.com:5000/ml/detector@sha256:" + "0123456789abcdef" * 4

# What each node feature's nodes have: the constraint must list exactly those `cudaenv check` accepts.
FEATURES = {
    "a100": ("A100", "550.54.15"),
    "h100": ("H100", "550.54.15"),
    "t4-r470": ("T4", "470.82.01"),
    "l4-r535": ("L4", "535.104.05"),
}

CONFIG = """\
[project]
name = "detector"
python = "3.11"

[cuda]
version = "12.4"

[target]
driver = "550.54.15"
gpus = ["A100"]

[build]
flavor = "runtime"

[run]
command = ["python", "train.py", "--epochs", "3"]
gpus = "2"
env = {{ WANDB_MODE = "offline" }}

[cluster.slurm.features]
{features}
"""


def features_toml(features: dict[str, tuple[str, str]]) -> str:
    return "\n".join(f'{name} = {{ gpu = "{gpu}", driver = "{driver}" }}' for name, (gpu, driver) in features.items())


cudaenv = partial(run_cli, timeout=120)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return cli_env(hide_nvml(tmp_path_factory.mktemp("no-nvml")))


def make_project(directory: Path, env: dict, *, features=FEATURES, run_gpus: str = '"2"') -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = CONFIG.format(features=features_toml(features)).replace('gpus = "2"', f"gpus = {run_gpus}")
    (directory / "cudaenv.toml").write_text(text)
    proc = cudaenv("lock", directory, env=env)
    assert proc.returncode == 0, proc.stderr
    return directory


@pytest.fixture(scope="module")
def project(tmp_path_factory, env) -> Path:
    return make_project(tmp_path_factory.mktemp("slurm-export") / "detector", env)


def export(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return cudaenv("export", "slurm", project, *args, env=env)


def script(project: Path, env: dict, *args: str) -> str:
    proc = export(project, env, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def sbatch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#SBATCH ")]


# --- golden scripts ---------------------------------------------------------------------------------

GOLDEN_CASES = {
    "pyxis": ("--runtime", "pyxis", "--image", IMAGE, "--time", "4:00:00", "--partition", "gpu",
              "--account", "ml-team"),
    "apptainer": ("--runtime", "apptainer", "--image", IMAGE, "--time", "1-00:00:00", "--output", "logs/%x-%j.out"),
    "docker": ("--runtime", "docker", "--image", IMAGE, "--gpus", "1", "--job-name", "detector-train"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_script_matches_its_golden_file(project, env, name):
    text = script(project, env, *GOLDEN_CASES[name])
    golden = GOLDEN / f"{name}.sbatch"
    if UPDATE:
        golden.write_text(text)
    assert golden.exists(), f"{golden} is missing: run with CUDAENV_UPDATE_GOLDEN=1 to write it, then review it"
    assert text == golden.read_text(), f"{name}: regenerate with CUDAENV_UPDATE_GOLDEN=1 and review the diff"


# --- shellcheck on every variant ---------------------------------------------------------------------

VARIANTS = {
    **GOLDEN_CASES,
    "docker-local-tag": ("--runtime", "docker"),
    "docker-no-gpus-to-container": ("--runtime", "docker", "--docker-gpus", "none"),
    "docker-no-gres": ("--runtime", "docker", "--gpus", "0"),
    "pyxis-no-constraint": ("--runtime", "pyxis", "--image", IMAGE, "--no-constraint"),
    "apptainer-env-and-command": ("--runtime", "apptainer", "--image", IMAGE, "-e", "SEED=7", "--",
                                  "python", "-m", "train", "--lr", "0.1"),
}


@pytest.mark.skipif(shutil.which("shellcheck") is None and os.environ.get("CI") != "true",
                    reason="shellcheck not installed (scripts/test.sh installs it)")
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_variant_passes_shellcheck(project, env, tmp_path, name):
    path = tmp_path / f"{name}.sbatch"
    path.write_text(script(project, env, *VARIANTS[name]))
    proc = subprocess.run(["shellcheck", "--shell=bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# --- what the #SBATCH lines say -------------------------------------------------------------------------


def test_constraint_lists_exactly_the_features_cudaenv_check_accepts(project, env):
    lines = sbatch_lines(script(project, env, "--runtime", "pyxis", "--image", IMAGE))
    constraint = next(line for line in lines if line.startswith("#SBATCH --constraint="))
    chosen = set(constraint.removeprefix("#SBATCH --constraint=").split("|"))
    verdicts = {}
    for name, (gpu, driver) in FEATURES.items():
        proc = cudaenv("check", project, "--driver", driver, "--gpu", gpu, "--json", env=env)
        verdicts[name] = json.loads(proc.stdout)["compatible"]
    assert chosen == {name for name, ok in verdicts.items() if ok}
    assert chosen and chosen != set(FEATURES)  # the fixture has features on both sides


def test_features_left_out_are_explained_in_the_script(project, env):
    text = script(project, env, "--runtime", "pyxis", "--image", IMAGE)
    assert "#   left out: t4-r470: driver 470.82.01" in text


def test_no_feature_that_runs_the_stack_is_a_clean_no(tmp_path, env):
    directory = make_project(tmp_path / "old", env, features={"t4-r470": ("T4", "470.82.01")})
    proc = export(directory, env, "--runtime", "pyxis", "--image", IMAGE)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "no node feature" in proc.stderr and "t4-r470: driver 470.82.01" in proc.stderr


def test_no_constraint_flag_and_no_features_leave_the_line_out(tmp_path, project, env):
    assert not any("--constraint" in line for line in
                   sbatch_lines(script(project, env, "--runtime", "pyxis", "--image", IMAGE, "--no-constraint")))
    bare = make_project(tmp_path / "bare", env, features={})
    text = script(bare, env, "--runtime", "pyxis", "--image", IMAGE)
    assert not any("--constraint" in line for line in sbatch_lines(text))
    assert "node features: none configured" in text


def test_editing_cluster_features_leaves_the_lock_current(tmp_path, env):
    directory = make_project(tmp_path / "edit", env)
    config = directory / "cudaenv.toml"
    config.write_text(config.read_text().replace('h100 = { gpu = "H100"', 'h100x = { gpu = "H100"'))
    lines = sbatch_lines(script(directory, env, "--runtime", "pyxis", "--image", IMAGE))
    assert "#SBATCH --constraint=a100|h100x|l4-r535" in lines


@pytest.mark.parametrize("run_gpus, flag, expected", [
    ('"2"', None, "#SBATCH --gres=gpu:2"),
    ('"all"', None, "#SBATCH --gres=gpu:1"),
    ('"0,1,3"', None, "#SBATCH --gres=gpu:3"),
    ('"auto:4"', None, "#SBATCH --gres=gpu:4"),
    ('"none"', None, None),
    ('"2"', "0", None),
    ('"2"', "8", "#SBATCH --gres=gpu:8"),
])
def test_gres_count_from_run_gpus_or_the_flag(tmp_path, env, run_gpus, flag, expected):
    directory = make_project(tmp_path / "gres", env, run_gpus=run_gpus)
    args = ("--runtime", "docker", "--image", IMAGE) + (("--gpus", flag) if flag else ())
    gres = [line for line in sbatch_lines(script(directory, env, *args)) if "--gres" in line]
    assert gres == ([expected] if expected else [])


def test_passthrough_options_become_sbatch_lines(project, env):
    lines = sbatch_lines(script(project, env, "--runtime", "pyxis", "--image", IMAGE, "--time", "2-12:00:00",
                                "--partition", "gpu,gpu-long", "--account", "ml", "--job-name", "train.v2",
                                "--output", "logs/%x-%j.out"))
    assert lines[:2] == ["#SBATCH --job-name=train.v2", "#SBATCH --output=logs/%x-%j.out"]
    for line in ("#SBATCH --time=2-12:00:00", "#SBATCH --partition=gpu,gpu-long", "#SBATCH --account=ml"):
        assert line in lines


def test_pyxis_image_uses_enroots_registry_separator(project, env):
    text = script(project, env, "--runtime", "pyxis", "--image", IMAGE)
    assert "--container-image='registry.example.com:5000#ml/detector:sha256:" in text


@pytest.mark.parametrize("reference, expected", [
    ("ghcr.io/team/img:1@sha256:" + "a" * 64, "ghcr.io#team/img:sha256:" + "a" * 64),
    ("127.0.0.1:5000/ml/det@sha256:" + "b" * 64, "127.0.0.1:5000#ml/det:sha256:" + "b" * 64),
    ("team/img@sha256:" + "c" * 64, "team/img:sha256:" + "c" * 64),
    ("img:1@sha256:" + "d" * 64, "img:sha256:" + "d" * 64),  # no path: the tag is in the only part
    ("127.0.0.1:5000/ml/det:1@sha256:" + "e" * 64, "127.0.0.1:5000#ml/det:sha256:" + "e" * 64),  # the tag's colon, not the port's
    ("127.0.0.1:5000/library/python:3.11", "127.0.0.1:5000#library/python:3.11"),
    ("localhost/img", "localhost#img"),
    ("team/img:2", "team/img:2"),  # Docker Hub: enroot's default registry, no separator
    ("python:3.11", "python:3.11"),
])
def test_enroot_image(reference, expected):
    assert enroot_image(reference) == expected
    assert ENROOT_REFERENCE.fullmatch(expected)


# enroot's own pattern for docker:// references (NVIDIA/enroot src/docker.sh, docker::import):
# [USER@][REGISTRY#]IMAGE[:TAG] with IMAGE [[:lower:][:digit:]/._-]+ and TAG [[:alnum:]._:-]+
ENROOT_REFERENCE = re.compile(r"(?:([^#]+)#)?([a-z0-9/._-]+)(?::([A-Za-z0-9._:-]+))?")


def test_docker_runtime_defaults_to_the_projects_local_tag(project, env):
    text = script(project, env, "--runtime", "docker")
    assert "    cudaenv/detector:" in text


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_registry_runtimes_need_an_image_reference(project, env, runtime):
    proc = export(project, env, "--runtime", runtime)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--image" in proc.stderr


def test_unlocked_project_is_refused(tmp_path, env):
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "x"\n[cuda]\nversion = "12.4"\n')
    proc = export(tmp_path, env, "--runtime", "pyxis", "--image", IMAGE)
    assert proc.returncode == 2 and "cudaenv lock" in proc.stderr


# --- hostile values: refused with one line, or quoted -------------------------------------------------

REFUSED = {
    "time with a command": (("--time", "1; reboot"), "--time"),
    "partition with a newline": (("--partition", "gpu\n#SBATCH --uid=0"), "--partition"),
    "account with a substitution": (("--account", "$(id)"), "--account"),
    "job name with a space": (("--job-name", "a b"), "--job-name"),
    "output with a quote": (("--output", "x'y"), "--output"),
    "image with a semicolon": (("--image", "reg.example.com/a;rm"), "--image"),
    "image with upper case path": (("--image", "reg.example.com/Team/img"), "--image"),
    "negative gpus": (("--gpus", "-1"), "--gpus"),
    "bad env name": (("-e", "BAD-NAME=x"), "-e"),
    "env value with a newline": (("-e", "X=a\nb"), "environment variable X"),
    "command word with a newline": (("--", "python", "-c", "a\nb"), "command word 3"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_hostile_values_are_refused_in_one_line(project, env, case):
    args, named = REFUSED[case]
    runtime = ("--runtime", "apptainer") if "--image" in args else ("--runtime", "apptainer", "--image", IMAGE)
    proc = export(project, env, *runtime, *args)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert named in proc.stderr


BAD_FEATURES = {
    "name with a bar": ('"a|b" = { gpu = "A100", driver = "550.54.15" }', "cluster.slurm.features"),
    "no driver": ('a100 = { gpu = "A100" }', "cluster.slurm.features.a100.driver"),
    "bad driver": ('a100 = { gpu = "A100", driver = "latest" }', "cluster.slurm.features.a100.driver"),
    "unknown gpu": ('x = { gpu = "Z9000", driver = "550.54.15" }', "cluster.slurm.features.x.gpu"),
    "gpu and capability": ('x = { gpu = "A100", compute_capability = "8.0", driver = "550.54.15" }',
                           "cluster.slurm.features.x"),
    "unknown field": ('x = { gpu = "A100", driver = "550.54.15", memory = "80g" }', "cluster.slurm.features.x"),
}


@pytest.mark.parametrize("case", sorted(BAD_FEATURES))
def test_bad_feature_tables_name_the_field(tmp_path, env, case):
    line, named = BAD_FEATURES[case]
    directory = make_project(tmp_path / "bad", env, features={})
    config = directory / "cudaenv.toml"
    config.write_text(config.read_text() + line + "\n")
    proc = export(directory, env, "--runtime", "pyxis", "--image", IMAGE)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.count("\n") == 1 and named in proc.stderr and "cudaenv.toml" in proc.stderr


def test_unknown_key_under_cluster_slurm_is_refused(tmp_path, env):
    directory = make_project(tmp_path / "key", env)
    config = directory / "cudaenv.toml"
    config.write_text(config.read_text().replace("[cluster.slurm.features]", "[cluster.slurm]\nfeatures_x = 1\n\n"
                                                                            "[cluster.slurm.features]"))
    proc = export(directory, env, "--runtime", "pyxis", "--image", IMAGE)
    assert proc.returncode == 2 and "cluster.slurm.features_x" in proc.stderr


HOSTILE_WORDS = ("$(touch pwned)", "`touch pwned`", "a b; touch pwned", "it's", "--container-image=evil", "#x")


def recording_tool(bin_dir: Path, name: str, record: Path) -> None:
    """A stand-in for a launcher that cannot run here (srun with pyxis, apptainer, docker with GPUs):
    it writes the words it was given, NUL-separated, so the test sees what the shell handed over."""
    tool = bin_dir / name
    tool.write_text(f'#!/bin/bash\nprintf "%s\\0" "$@" > {record}\nenv -0 > {record}.env\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("runtime, tool", [("pyxis", "srun"), ("apptainer", "apptainer"), ("docker", "docker")])
def test_hostile_command_and_env_reach_the_launcher_verbatim(project, env, tmp_path, runtime, tool):
    text = script(project, env, "--runtime", runtime, "--image", IMAGE, "-e", "NOTE=$(touch pwned) it's",
                  "--", *HOSTILE_WORDS)
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    record = tmp_path / "argv"
    recording_tool(bin_dir, tool, record)
    (tmp_path / "job.sbatch").write_text(text)
    run_env = dict(env, PATH=f"{bin_dir}:{env['PATH']}", SLURM_SUBMIT_DIR=str(work), SLURM_JOB_ID="42")
    run_env.pop("SLURM_JOB_GPUS", None)
    proc = subprocess.run(["bash", str(tmp_path / "job.sbatch")], cwd=work, env=run_env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    words = record.read_bytes().split(b"\0")[:-1]
    decoded = [w.decode() for w in words]
    assert decoded[-len(HOSTILE_WORDS):] == list(HOSTILE_WORDS)
    assert not (work / "pwned").exists() and not (tmp_path / "pwned").exists()
    environment = (tmp_path / "argv.env").read_bytes().decode().split("\0")
    if runtime == "pyxis":
        assert "--container-mounts=" + str(work) + ":/workspace" in decoded
        assert "NOTE=$(touch pwned) it's" in environment  # srun's own environment, which the task gets
    elif runtime == "apptainer":  # Apptainer evaluates the value in double quotes: $ arrives escaped
        assert "APPTAINERENV_NOTE=\\$(touch pwned) it's" in environment
    else:
        assert "NOTE=$(touch pwned) it's" in decoded


def test_docker_gpus_is_refused_for_other_runtimes(project, env):
    proc = export(project, env, "--runtime", "pyxis", "--image", IMAGE, "--docker-gpus", "none")
    assert proc.returncode == 2 and "--docker-gpus applies to --runtime docker only" in proc.stderr


README_FEATURES = {"a100": ("A100", "550.54.15"), "h100": ("H100", "550.54.15"), "v100": ("V100", "470.82.01")}


def test_the_docs_slurm_example_is_what_cudaenv_prints(tmp_path, env):
    """The sbatch script after `<!-- slurm-script -->` is what the command after
    `<!-- slurm-example -->` prints (both in README.md or a docs/ page)."""
    import shlex

    from tests.support.docs import find_one

    _, command = find_one(r"<!-- slurm-example -->\n```sh\n(cudaenv export slurm .+?) > train\.sbatch",
                          "`cudaenv export slurm` command after <!-- slurm-example -->")
    _, shown = find_one(r"<!-- slurm-script -->\n```bash\n(.+?)```", "```bash block after <!-- slurm-script -->")
    directory = make_project(tmp_path / "detector", env, features=README_FEATURES)
    args = shlex.split(command.group(1).replace("\\\n", " "))[4:]  # after `cudaenv export slurm .`
    assert script(directory, env, *args) == shown.group(1)


def test_the_digest_cudaenv_push_recorded_is_the_default_image(project, env):
    """After `cudaenv push`, a pyxis script names that exact digest without --image."""
    import json as _json

    digest = "sha256:" + "ab" * 32
    pushed = project / "cudaenv.pushed.json"
    pushed.write_text(_json.dumps({"reference": "registry.example.com/ml/detector:abc123", "digest": digest}))
    try:
        proc = export(project, env, "--runtime", "apptainer")
        assert proc.returncode == 0, proc.stderr
        assert f"docker://registry.example.com/ml/detector@{digest}" in proc.stdout
        assert "cudaenv.pushed.json" in proc.stderr
    finally:
        pushed.unlink()


def test_docker_script_passes_asked_ulimits_and_probes_only_the_defaults(tmp_path, env):
    """A limit the project sets is the job's contract (the run fails if the node refuses it); NVIDIA's
    defaults are tried first, so a daemon with a low memlock cap still runs the job."""
    directory = make_project(tmp_path / "limits", env)
    config = directory / "cudaenv.toml"
    config.write_text(config.read_text().replace('env = { WANDB_MODE = "offline" }',
                                                 'env = { WANDB_MODE = "offline" }\nulimits = { nofile = "1024:4096" }'))
    assert cudaenv("lock", directory, env=env).returncode == 0
    text = script(directory, env, "--runtime", "docker", "--image", IMAGE)
    assert "ulimit_args+=(--ulimit nofile=1024:4096)\n" in text
    probed = re.search(r"^for limit in (.*); do$", text, re.M)
    assert probed and probed.group(1).split() == ["memlock=-1:-1", "stack=67108864:67108864"]
    assert text.count("--ulimit nofile") == 1


def test_editing_how_the_image_runs_leaves_the_lock_current(tmp_path, env):
    """[run] (GPUs, /dev/shm, ports, the command) changes nothing installed in the image: the lock
    stays current, the export follows the new values without a relock (which needs the network),
    while a change to what is installed still makes the lock stale."""
    directory = make_project(tmp_path / "edit-run", env)
    config = directory / "cudaenv.toml"
    config.write_text(config.read_text().replace('gpus = "2"', 'gpus = "4"\nshm_size = "32g"'))
    assert "#SBATCH --gres=gpu:4" in sbatch_lines(script(directory, env, "--runtime", "pyxis", "--image", IMAGE))
    config.write_text(config.read_text().replace('python = "3.11"', 'python = "3.10"'))
    stale = cudaenv("export", "slurm", directory, "--runtime", "pyxis", "--image", IMAGE, env=env)
    assert stale.returncode != 0 and "cudaenv.lock" in stale.stderr


def test_the_run_keys_the_image_is_built_from_still_make_the_lock_stale(tmp_path, env):
    """[run] command is the image's CMD and [run] jupyter adds a layer: an export after editing
    them would name an image nothing built, so the lock goes stale and says to lock (build) again."""
    for old, new in (('"train.py"', '"eval.py"'), ('gpus = "2"', 'gpus = "2"\njupyter = true')):
        directory = make_project(tmp_path / new.split()[-1].strip('"'), env)
        config = directory / "cudaenv.toml"
        config.write_text(config.read_text().replace(old, new))
        proc = cudaenv("export", "slurm", directory, "--runtime", "docker", env=env)
        assert proc.returncode == 2 and "the configuration in cudaenv.toml changed" in proc.stderr, new


def test_a_lock_hashed_the_way_older_cudaenv_did_is_still_current(tmp_path, env):
    """Until this change the hash covered all of [run]; such locks stay current after upgrading."""
    import re

    from cudaenv.project import load_project
    from cudaenv.project.lock import inputs_hash

    directory = make_project(tmp_path / "legacy", env)
    lock = directory / "cudaenv.lock"
    older = inputs_hash(load_project(directory), whole_run=True)
    assert older != inputs_hash(load_project(directory))  # the project has a [run] table
    lock.write_text(re.sub(r'inputs_hash = "[0-9a-f]+"', f'inputs_hash = "{older}"', lock.read_text()))
    assert cudaenv("lock", directory, "--check", env=env).returncode == 0
