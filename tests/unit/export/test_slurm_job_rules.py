"""The rules `cudaenv export slurm` checks and writes by, in-process: sbatch grammars, the GRES
count from `[run] gpus`, node-feature tables, the image each runtime runs, shell quoting per
launcher (`$` stays literal for bash and for Apptainer's own shell), names a batch script cannot
pass through, and the one-line refusals. The CLI tests run the same through a process; here the
functions are called directly so that every rule is checked where it is made."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cudaenv.errors import UserError
from cudaenv.export.slurm import (NoNodeFeature, SlurmJob, apptainer_literal, assignment, build_job, check_passed,
                                  check_time, checked, comment_text, constraint_for, features_table, gres_count,
                                  image_for, literal_checks, render_script, script_context, shell_word, site_features,
                                  SLURM_NAME)
from cudaenv.matrix import load_matrix
from tests.unit.export.test_same_process_models import locked  # noqa: F401  (the locked-project fixture)

IMAGE = "registry.example.com:5000/ml/detector@sha256:" + "0123456789abcdef" * 4
WHERE = "/p/cudaenv.toml"


def fake_project(*, gpus="2", command=("python", "train.py"), env=(), ipc=None, shm_size="8g", ulimits=(),
                 raw=None, name="detector"):
    run = SimpleNamespace(gpus=gpus, command=command, env=env, ipc=ipc, shm_size=shm_size, ulimits=ulimits)
    return SimpleNamespace(name=name, root=Path("/p"), config_path=Path(WHERE), run=run, raw=raw)


FAKE_STACK = SimpleNamespace(frameworks=(("torch", "2.5.1"),), cuda="12.4", python="3.11", min_driver="550.54.15",
                             min_driver_compat="525.60.13", cpu=False, arch="x86_64")


def job(project=None, stack=FAKE_STACK, **kwargs) -> SlurmJob:
    kwargs.setdefault("runtime", "pyxis")
    kwargs.setdefault("image", IMAGE)
    return build_job(project or fake_project(), None, stack, use_features=kwargs.pop("use_features", False), **kwargs)


def message(call, *args, **kwargs) -> str:
    with pytest.raises(UserError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


# --- grammars --------------------------------------------------------------------------------------


def test_checked_passes_none_and_names_where_a_value_fails():
    assert checked(None, SLURM_NAME, "--x", "y") is None
    assert checked("gpu_a.1-b", SLURM_NAME, "--x", "y") == "gpu_a.1-b"
    assert message(checked, "a b", SLURM_NAME, "--account", "an account name") == \
        "--account: expected an account name, got 'a b'"
    assert message(checked, 5, SLURM_NAME, "--account", "an account name") == "--account: expected an account name, got 5"


@pytest.mark.parametrize("value", ["90", "90:30", "4:00:00", "2-12", "2-12:00", "2-12:00:00", "UNLIMITED", "INFINITE"])
def test_slurm_time_limits_that_sbatch_takes(value):
    assert check_time(value) == value


@pytest.mark.parametrize("value", ["", "1:2:3:4", "4:000", "2-", "-1", "1h", "unlimited", "2-12:00:00:00"])
def test_slurm_time_limits_that_are_refused(value):
    assert message(check_time, value) == \
        f"--time: expected a Slurm time limit like 90, 4:00:00 or 2-12:00:00, got {value!r}"


@pytest.mark.parametrize("flag, value, expected", [
    ("job_name", "train run", "--job-name: expected letters, digits and _ . -, got 'train run'"),
    ("job_name", "-x", "--job-name: expected letters, digits and _ . -, got '-x'"),
    ("output", "out log", "--output: expected a path of letters, digits, _ . / + - and % patterns, got 'out log'"),
    ("partition", "a,,b", "--partition: expected partition names (letters, digits, _ . -), comma-separated, got 'a,,b'"),
    ("account", "a|b", "--account: expected an account name of letters, digits and _ . -, got 'a|b'"),
    ("time", "soon", "--time: expected a Slurm time limit like 90, 4:00:00 or 2-12:00:00, got 'soon'"),
], ids=["job-name-space", "job-name-dash", "output", "partition", "account", "time"])
def test_sbatch_options_are_refused_in_one_line(flag, value, expected):
    """`#SBATCH` lines are read by sbatch, not a shell: no quoting can save a bad value."""
    assert message(job, **{flag: value}) == expected


def test_sbatch_options_are_kept_and_defaulted():
    made = job(job_name="train.1", output="logs/%x-%j.out", partition="gpu,debug", account="ml_team", time="4:00:00")
    assert (made.job_name, made.output, made.partition, made.account, made.time) == \
        ("train.1", "logs/%x-%j.out", "gpu,debug", "ml_team", "4:00:00")
    made = job()
    assert (made.job_name, made.output, made.partition, made.account, made.time) == \
        ("detector", "%x-%j.out", None, None, None)


# --- GPUs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cli, run_gpus, expected", [
    (3, "2", (3, "from --gpus")),
    (0, "all", (0, "from --gpus")),
    (None, "none", (0, 'from [run] gpus = "none"')),
    (None, "2", (2, "from [run] gpus = '2'")),
    (None, "auto:3", (3, "from [run] gpus = 'auto:3'")),
    (None, "0,1,3", (3, "[run] gpus = '0,1,3' names 3 device(s); Slurm picks which")),
    (None, "all", (1, "[run] gpus = 'all' has no meaning on a shared node: 1 GPU (pass --gpus N for more)")),
    (None, "auto", (1, "[run] gpus = 'auto' has no meaning on a shared node: 1 GPU (pass --gpus N for more)")),
], ids=["flag", "flag-zero", "none", "count", "auto-n", "ids", "all", "auto"])
def test_gres_count_comes_from_the_flag_or_run_gpus(cli, run_gpus, expected):
    """A cluster allocates counts: ids count, all/auto mean one GPU on a shared node."""
    assert gres_count(cli, run_gpus, WHERE) == expected


def test_device_ids_say_which_scheduler_picks_the_devices():
    """Neither a cluster nor a node's device plugin takes device ids; the note names who picks."""
    assert gres_count(None, "0,1", WHERE, picker="the NVIDIA device plugin") == \
        (2, "[run] gpus = '0,1' names 2 device(s); the NVIDIA device plugin picks which")


def test_gres_count_refusals_name_the_flag_or_the_field():
    assert message(gres_count, -1, "2", WHERE) == "--gpus: expected a GPU count (0 for none), got -1"
    assert message(gres_count, None, "lots", WHERE).startswith(f"{WHERE}: run.gpus: ")


# --- node features ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def test_no_feature_table_is_no_features(matrix):
    assert site_features(matrix, None, WHERE) == ()
    assert site_features(matrix, {}, WHERE) == ()


def test_features_are_read_by_gpu_name_or_compute_capability(matrix):
    (a100, cc90) = site_features(matrix, {"a100": {"gpu": "A100", "driver": " 550.54.15 "},
                                          "cc90": {"compute_capability": "9.0", "driver": "535.104.05"}}, WHERE)
    assert (a100.name, a100.driver, a100.gpu.compute_capability) == ("a100", "550.54.15", "8.0")
    assert (cc90.name, cc90.driver, cc90.gpu.compute_capability) == ("cc90", "535.104.05", "9.0")


K = f"{WHERE}: cluster.slurm.features"
BAD_FEATURES = {
    "not-a-table": (["a100"], f"{K}: expected a table of NAME = {{ gpu, driver }}, got ['a100']"),
    "bad-name": ({"a|b": {"gpu": "A100", "driver": "550.54.15"}},
                 f"{K}: expected feature names of letters, digits and _ . -, got 'a|b'"),
    "spec-not-a-table": ({"x": "A100"}, f"{K}.x: expected a table with driver and gpu (or compute_capability), "
                                        "got 'A100'"),
    "unknown-field": ({"x": {"gpu": "A100", "driver": "550.54.15", "memory": "80g"}},
                      f"{K}.x: expected a table with driver and gpu (or compute_capability), got "
                      "{'gpu': 'A100', 'driver': '550.54.15', 'memory': '80g'}"),
    "no-driver": ({"x": {"gpu": "A100"}}, f"{K}.x.driver: expected the nodes' driver version like \"550.54.15\", "
                                          "got None"),
    "driver-number": ({"x": {"gpu": "A100", "driver": 550}},
                      f"{K}.x.driver: expected the nodes' driver version like \"550.54.15\", got 550"),
    "bad-driver": ({"x": {"gpu": "A100", "driver": "latest"}},
                   f"{K}.x.driver: expected a driver version like 535.104.05, got 'latest'"),
    "both": ({"x": {"gpu": "A100", "compute_capability": "8.0", "driver": "550.54.15"}},
             f"{K}.x: expected exactly one of gpu (a name like \"A100\") or compute_capability"),
    "neither": ({"x": {"driver": "550.54.15"}},
                f"{K}.x: expected exactly one of gpu (a name like \"A100\") or compute_capability"),
    "gpu-not-text": ({"x": {"gpu": 100, "driver": "550.54.15"}},
                     f"{K}.x.gpu: expected a GPU name like \"A100\", got 100"),
    "cc-not-text": ({"x": {"compute_capability": 8.0, "driver": "550.54.15"}},
                    f"{K}.x.compute_capability: expected a string like \"8.0\", got 8.0"),
}


@pytest.mark.parametrize("case", sorted(BAD_FEATURES))
def test_bad_feature_tables_are_refused_naming_the_field(matrix, case):
    table, expected = BAD_FEATURES[case]
    assert message(site_features, matrix, table, WHERE) == expected


@pytest.mark.parametrize("case, field", [("unknown-gpu", "gpu"), ("unknown-cc", "compute_capability")])
def test_a_feature_gpu_the_matrix_lacks_names_its_field(matrix, case, field):
    value = "Z9000" if field == "gpu" else "1.1"
    assert message(site_features, matrix, {"x": {field: value, "driver": "550.54.15"}}, WHERE).startswith(
        f"{K}.x.{field}: ")


@pytest.mark.parametrize("raw, expected", [
    (None, None),
    ({}, None),
    ({"cluster": "x"}, None),
    ({"cluster": {"slurm": "x"}}, None),
    ({"cluster": {"slurm": {}}}, None),
    ({"cluster": {"slurm": {"features": {"a": 1}}}}, {"a": 1}),
], ids=["no-raw", "no-cluster", "cluster-text", "slurm-text", "no-features", "features"])
def test_the_feature_table_is_read_from_cluster_slurm(raw, expected):
    assert features_table(SimpleNamespace(raw=raw)) == expected


def test_the_constraint_is_the_features_check_stack_accepts(locked, matrix):
    """Each feature's nodes are judged by the resolver; the others are listed with the reasons."""
    project, _, stack = locked
    features = site_features(matrix, {"a100": {"gpu": "A100", "driver": "550.54.15"},
                                      "t4old": {"gpu": "T4", "driver": "470.82.01"},
                                      "h100": {"gpu": "H100", "driver": "550.54.15"}}, WHERE)
    usable, refused = constraint_for(matrix, stack, features)
    assert usable == ("a100", "h100")
    (why,) = refused
    assert why.startswith("t4old: ") and len(why) > len("t4old: ")
    assert constraint_for(matrix, stack, ()) == ((), ())
    with pytest.raises(NoNodeFeature) as caught:
        constraint_for(matrix, stack, features[1:2])
    assert str(caught.value) == "no node feature in [cluster.slurm.features] can run this stack: " + why
    made = build_job(SimpleNamespace(**{**vars(project), "raw": {"cluster": {"slurm": {"features": {
        "a100": {"gpu": "A100", "driver": "550.54.15"}, "t4old": {"gpu": "T4", "driver": "470.82.01"}}}}}}),
        matrix, stack, runtime="pyxis", image=IMAGE)
    assert made.constraint == ("a100",) and made.refused_features == (why,)
    assert made.constraint_note == "node features that run it: a100"
    assert script_context(made)["constraint"] == "a100"


# --- the job ---------------------------------------------------------------------------------------


def test_constraint_notes_say_why_there_is_no_constraint(locked, matrix):
    project, _, stack = locked
    assert job(use_features=False).constraint_note == "node features: not asked for (--no-constraint)"
    bare = SimpleNamespace(**{**vars(project), "raw": {}})
    assert build_job(bare, matrix, stack, runtime="pyxis", image=IMAGE).constraint_note == \
        "node features: none configured ([cluster.slurm.features] in cudaenv.toml)"


@pytest.mark.parametrize("kwargs, expected", [
    ({"runtime": "singularity"}, "--runtime: expected one of pyxis, apptainer, docker, got 'singularity'"),
    ({"runtime": "docker", "docker_gpus": "all"}, "--docker-gpus: expected one of allocated, none, got 'all'"),
    ({"runtime": "pyxis", "docker_gpus": "none"}, "--docker-gpus applies to --runtime docker only (got --runtime pyxis)"),
    ({"project": fake_project(command=())}, f"nothing to run: give the command after `--`, or set [run] command in {WHERE}"),
    ({"command": ("python", "a\nb")}, "command word 2: refusing 'a\\nb' in a batch script: it contains a control character"),
    ({"env": {"X": "a\tb"}}, "environment variable X: refusing 'a\\tb' in a batch script: it contains a control character"),
    ({"passthrough": ("PWD",)}, "-e PWD: the batch script cannot read PWD from the environment it was submitted from "
                                "(bash or the script sets it); pass the value (-e PWD=VALUE) instead"),
], ids=["runtime", "docker-gpus", "docker-gpus-runtime", "no-command", "command-newline", "env-tab", "passed-pwd"])
def test_bad_jobs_are_refused_in_one_line(kwargs, expected):
    assert message(job, **kwargs) == expected


def test_docker_may_leave_the_gpus_to_the_launcher():
    assert job(runtime="docker", docker_gpus="none").docker_gpus == "none"
    assert job(runtime="docker").docker_gpus == "allocated"


def test_the_command_flag_replaces_run_command_and_flags_override_run_env():
    made = job(project=fake_project(env=(("A", "1"), ("B", "2"))), command=("bash",), env={"B": "3"},
               passthrough=("TOKEN",))
    assert made.command == ("bash",)
    assert made.env == (("A", "1"), ("B", "3")) and made.passed == ("TOKEN",)
    assert job().command == ("python", "train.py")


def test_the_summary_and_driver_need_come_from_the_stack():
    made = job()
    assert made.project == "detector"
    assert made.summary == "torch 2.5.1 | CUDA 12.4 | Python 3.11"
    assert made.driver_need == "a driver >= 550.54.15 natively (or >= 525.60.13 through minor-version compatibility)"
    bare = SimpleNamespace(**{**vars(FAKE_STACK), "frameworks": ()})
    assert job(stack=bare).summary == "CUDA runtime | CUDA 12.4 | Python 3.11"
    assert (job().gpus, job().gpus_note) == (2, "from [run] gpus = '2'")
    assert job(gpus=4).gpus == 4


def test_shared_memory_and_ipc_follow_run():
    assert (job().shm_size, job().ipc) == ("8g", None)
    made = job(project=fake_project(ipc="host", shm_size="2g"))
    assert (made.shm_size, made.ipc) == (None, "host")
    assert job(project=fake_project(ipc="private", shm_size="2g")).shm_size == "2g"


def test_asked_ulimits_are_kept_and_nvidias_defaults_only_probed():
    """A limit the project asked for must hold, or the job fails; NVIDIA's recommended ones are
    applied only where the node grants them."""
    made = job(project=fake_project(ulimits=(("memlock", -1, -1), ("nofile", 1024, 4096),
                                             ("stack", 67108864, 67108864))))
    assert made.ulimits == (("nofile", 1024, 4096),)
    assert made.default_ulimits == (("memlock", -1, -1), ("stack", 67108864, 67108864))
    context = script_context(made)
    assert context["ulimits"] == ["nofile=1024:4096"]
    assert context["default_ulimits"] == ["memlock=-1:-1", "stack=67108864:67108864"]


# --- the image each runtime runs -------------------------------------------------------------------


def test_the_image_is_the_reference_given_or_dockers_local_tag():
    assert image_for("pyxis", IMAGE, None) == IMAGE
    assert image_for("docker", IMAGE, "cudaenv/p:abc") == IMAGE
    assert image_for("docker", None, "cudaenv/p:abc") == "cudaenv/p:abc"
    assert message(image_for, "apptainer", None, "cudaenv/p:abc") == (
        "--runtime apptainer pulls the image on the node: pass --image REGISTRY/PATH@sha256:... (push the project's "
        "image to a registry the cluster reaches first)")
    assert message(image_for, "docker", None, None).startswith("--runtime docker pulls the image on the node")
    assert message(image_for, "pyxis", "Bad Image", None).startswith("--image")


# --- quoting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("plain", "plain"), ("a b", "'a b'"), ("$(x)", "'$(x)'"), ("it's", "'it'\"'\"'s'"), (3, "3"),
], ids=["plain", "space", "subst", "quote", "number"])
def test_a_shell_word_is_posix_single_quoted(value, expected):
    assert shell_word(value) == expected


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\x00b", "a\x1fb", "a\x7fb"],
                         ids=["newline", "return", "nul", "unit-separator", "delete"])
def test_control_characters_are_refused_in_every_part_of_a_script(value):
    """A newline ends a script line whatever the quoting looks like to a reader."""
    assert message(shell_word, value, "command word 1") == \
        f"command word 1: refusing {value!r} in a batch script: it contains a control character"
    assert message(shell_word, value) == f"value: refusing {value!r} in a batch script: it contains a control character"
    assert message(assignment, "X", value) == \
        f"environment variable X: refusing {value!r} in a batch script: it contains a control character"
    assert message(comment_text, value) == \
        f"refusing {value!r} in a batch script comment: it contains a control character"


def test_an_assignment_value_is_always_single_quoted():
    """`NAME==x` is what shellcheck flags and a reader misreads; a quote inside is closed and escaped."""
    assert assignment("X", "=x") == "X='=x'"
    assert assignment("X", "it's $HOME") == "X='it'\\''s $HOME'"
    assert assignment("X", "") == "X=''"
    assert comment_text(5) == "5" and comment_text("a b") == "a b"


def test_apptainer_values_escape_what_its_double_quoted_export_evaluates():
    """Apptainer re-evaluates env values inside double quotes: \\, $ and ` must be protected."""
    assert apptainer_literal("a\\b$HOME`id`\"'") == "a\\\\b\\$HOME\\`id\\`\"'"
    context = script_context(job(env={"P": "$x"}))
    assert context["apptainer_env"] == ["APPTAINERENV_P='\\$x'"]
    assert context["env"] == ["P='$x'"]


@pytest.mark.parametrize("name", ["PWD", "IFS", "project_dir", "srun_bin", "RANDOM", "LINES", "BASH_ENV", "BASHPID",
                                  "cudaenv_x"])
def test_names_the_script_or_bash_sets_cannot_be_passed_through(name):
    assert message(check_passed, name).startswith(f"-e {name}: the batch script cannot read {name} ")


@pytest.mark.parametrize("name", ["HF_TOKEN", "bash", "CUDAENV_X", "PATH"])
def test_other_names_are_passed_through(name):
    assert check_passed(name) == name


@pytest.mark.parametrize("command, env, expected", [
    (("python",), (), ""),
    (("echo", "$HOME"), (), "SC2016"),
    (("echo", "`id`"), (), "SC2016"),
    (("echo",), (("X", "$y"),), "SC2016"),
    (("echo", "a\\"), (), "SC1003"),
    (("echo",), (("X", "a\\"),), "SC1003"),
    (("echo", "$a\\"), (), "SC2016,SC1003"),
], ids=["none", "dollar", "backquote", "env-dollar", "backslash", "env-backslash", "both"])
def test_shellcheck_notes_are_disabled_only_where_a_literal_draws_them(command, env, expected):
    made = job(command=command, env=dict(env))
    assert literal_checks(made) == expected
    assert script_context(made)["shellcheck_disable"] == expected


def test_the_script_context_carries_every_value_as_checked():
    made = job(env={"B": "2", "A": "1"}, passthrough=("TOKEN", "A2"), partition="gpu", time="90")
    context = script_context(made)
    assert context["runtime"] == "pyxis" and context["image"] == IMAGE
    assert context["enroot_image"] == "registry.example.com:5000#ml/detector:sha256:" + "0123456789abcdef" * 4
    assert context["env_names"] == ["A", "A2", "B", "TOKEN"]
    assert context["passed"] == ["A2", "TOKEN"]
    assert context["command"] == ["python", "train.py"]
    assert (context["gpus"], context["partition"], context["time"], context["account"]) == (2, "gpu", "90", None)
    multi = SlurmJob(**{**vars(made), "constraint": ("a100", "h100"), "refused_features": ("t4: old",)})
    assert script_context(multi)["constraint"] == "a100|h100"
    assert script_context(multi)["refused_features"] == ["t4: old"]


def test_render_refuses_an_unknown_runtime_and_squeezes_blank_lines():
    made = job()
    assert message(render_script, SlurmJob(**{**vars(made), "runtime": "lxc"})) == \
        "--runtime: expected one of pyxis, apptainer, docker, got 'lxc'"
    for runtime in ("pyxis", "apptainer", "docker"):
        text = render_script(SlurmJob(**{**vars(made), "runtime": runtime}))
        assert text.startswith("#!") and "\n\n\n" not in text
        assert text.endswith("\n")  # a text file's last line ends too
        assert "#SBATCH --gres=gpu:2" in text


# an id "docker" reads as the docker mark (tests/conftest.py), skipped without an engine
@pytest.mark.parametrize("runtime", ["pyxis", "apptainer", "docker"], ids=lambda r: f"{r}-runtime")
def test_the_header_is_one_block_of_comments_and_sbatch_options(runtime):
    """sbatch reads #SBATCH lines before the first command; the block tags of the template leave no
    blank line behind, so the header reads as one block up to `set -euo pipefail`."""
    made = job(runtime=runtime, time="90", partition="gpu", account="ml", env={"A": "$x"})
    lines = render_script(made).splitlines()
    head = lines[:lines.index("set -euo pipefail")]
    assert head[0] == "#!/bin/bash" and all(line.startswith("#") for line in head)
    assert [line for line in head if line.startswith("#SBATCH")] == [
        "#SBATCH --job-name=detector", "#SBATCH --output=%x-%j.out", "#SBATCH --gres=gpu:2", "#SBATCH --time=90",
        "#SBATCH --partition=gpu", "#SBATCH --account=ml"]


@pytest.mark.parametrize("runtime, assigned", [("pyxis", "A='$x'"), ("apptainer", "APPTAINERENV_A='\\$x'"),
                                               ("docker", "--env A='$x'")],
                         ids=["pyxis-runtime", "apptainer-runtime", "docker-runtime"])  # plain ids: bench/mutation_score.py
def test_quoted_values_reach_the_script_as_shell_text(runtime, assigned):
    """The filters quote for the shell; nothing else may rewrite the text (no HTML escaping of ' or &)."""
    text = render_script(job(runtime=runtime, env={"A": "$x"}, command=("echo", "a b", "&")))
    lines = [line.strip() for line in text.splitlines()]
    assert f"{assigned} \\" in lines
    assert "echo 'a b' '&'" in text


# --- what a feature's nodes are judged on, and where errors point ---------------------------------


def test_a_features_gpu_is_judged_with_its_driver_and_every_reason_is_kept(locked, matrix):
    """A K80 feature on a current driver is refused for its GPU (Kepler is gone from R550 and from
    CUDA 12's libraries), not accepted on its driver alone; each refusal keeps all its reasons."""
    from cudaenv.resolver.check import check_stack
    from cudaenv.resolver.model import Host

    project, _, stack = locked
    features = site_features(matrix, {"k80": {"gpu": "K80", "driver": "550.54.15"},
                                      "a100": {"gpu": "A100", "driver": "550.54.15"},
                                      "cc35": {"compute_capability": "3.5", "driver": "470.82.01"}}, WHERE)
    why = {f.name: check_stack(matrix, stack, Host(f.driver, (f.gpu,))).reasons for f in features}
    assert len(why["k80"]) >= 2 and len(why["cc35"]) >= 2
    usable, refused = constraint_for(matrix, stack, features)
    assert usable == ("a100",)
    assert refused == ("k80: " + "; ".join(why["k80"]), "cc35: " + "; ".join(why["cc35"]))
    with pytest.raises(NoNodeFeature) as caught:
        constraint_for(matrix, stack, (features[0], features[2]))
    assert str(caught.value) == "no node feature in [cluster.slurm.features] can run this stack: " + " | ".join(refused)


def with_features(project, table):
    return SimpleNamespace(**{**vars(project), "raw": {"cluster": {"slurm": {"features": table}}}})


def test_every_usable_feature_is_named_in_the_note(locked, matrix):
    project, _, stack = locked
    made = build_job(with_features(project, {"a100": {"gpu": "A100", "driver": "550.54.15"},
                                             "h100": {"gpu": "H100", "driver": "550.54.15"}}),
                     matrix, stack, runtime="pyxis", image=IMAGE)
    assert made.constraint == ("a100", "h100")
    assert made.constraint_note == "node features that run it: a100, h100"


def test_no_constraint_reads_no_feature_table(locked, matrix):
    """--no-constraint: the table is not judged at all, so features that cannot run the stack (or
    a table that is not one) do not stop the script."""
    project, _, stack = locked
    none_fits = with_features(project, {"k80": {"gpu": "K80", "driver": "550.54.15"}})
    made = build_job(none_fits, matrix, stack, runtime="pyxis", image=IMAGE, use_features=False)
    assert (made.constraint, made.refused_features) == ((), ())
    with pytest.raises(NoNodeFeature) as caught:
        build_job(none_fits, matrix, stack, runtime="pyxis", image=IMAGE)
    assert str(caught.value).startswith("no node feature in [cluster.slurm.features] can run this stack: k80: ")


def test_job_errors_from_the_project_name_its_file(locked, matrix):
    project, _, stack = locked
    where = str(project.config_path)
    assert message(build_job, with_features(project, ["a100"]), matrix, stack, runtime="pyxis", image=IMAGE) \
        .startswith(f"{where}: cluster.slurm.features: expected a table")
    assert message(job, project=fake_project(gpus="lots")).startswith(f"{WHERE}: run.gpus: ")


def test_the_summary_lists_every_framework():
    both = SimpleNamespace(**{**vars(FAKE_STACK), "frameworks": (("torch", "2.5.1"), ("jax", "0.4.30"))})
    assert job(stack=both).summary == "torch 2.5.1, jax 0.4.30 | CUDA 12.4 | Python 3.11"
