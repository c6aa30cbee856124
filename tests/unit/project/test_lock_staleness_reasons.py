"""When a lock is stale and how it says so: the hash of the inputs (the configuration but [cluster]
and the [run] keys an image is not built from, and every requirements file by name and content),
the inputs one by one ("requirements.txt changed", "dev.txt is new"), and each reason `cudaenv lock
--check` prints, word for word, since CI logs are where users read them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import resolve_project
from cudaenv.hosts.target import project_target
from cudaenv.project.lock import changed_inputs, input_digests, inputs_hash, make_lock, staleness

CONFIG = '[project]\nname = "p"\nrequirements = [{files}]\n\n[frameworks]\ntorch = "==2.6.0"\n\n' \
         '[target]\ndriver = "570.86.15"\ngpus = ["A100"]\n{more}'


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def project(root, files=("requirements.txt",), more=""):
    (root / "cudaenv.toml").write_text(CONFIG.format(files=", ".join(f'"{f}"' for f in files), more=more))
    for f in files:
        if not (root / f).exists():
            (root / f).write_text(f"# {f}\nnumpy==2.1.3\n")
    return load_project(root)


def locked(matrix, p, pinned=("numpy==2.1.3",)):
    stack = resolve_project(matrix, p, project_target(matrix, p).host).stack
    return make_lock(p, stack, matrix_revision=matrix.revision, target={}, pinned=list(pinned)), stack


def test_the_hash_is_the_configuration_then_each_file_by_name_and_content(tmp_path):
    """Committed locks carry this hash: how it is taken must not change between versions. The target
    tables are not in it (each target is compared on its own, so a changed one is named); the hash
    that format 1 locks carry, with [target], is still accepted (next test)."""
    p = project(tmp_path, files=("requirements.txt", "dev.txt"), more='\n[cluster.slurm]\nfeatures = ["a100"]\n')
    tables = {k: v for k, v in p.raw.items() if k not in ("cluster", "target", "targets")}
    digest = hashlib.sha256(json.dumps(tables, sort_keys=True, default=str).encode())
    for name in ("requirements.txt", "dev.txt"):
        digest.update(b"\0" + name.encode() + b"\0" + (tmp_path / name).read_bytes())
    assert inputs_hash(p) == digest.hexdigest()[:32]
    config = hashlib.sha256(json.dumps(tables, sort_keys=True, default=str).encode()).hexdigest()[:32]
    assert input_digests(p) == (("config", config),
                                ("file:dev.txt", hashlib.sha256((tmp_path / "dev.txt").read_bytes()).hexdigest()[:32]),
                                ("file:requirements.txt",
                                 hashlib.sha256((tmp_path / "requirements.txt").read_bytes()).hexdigest()[:32]))


def test_a_renamed_requirements_file_changes_the_hash(tmp_path):
    a = project(tmp_path / "a" if (tmp_path / "a").mkdir() is None else None, files=("a.txt",))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "b.txt").write_text((tmp_path / "a" / "a.txt").read_text())
    b = project(tmp_path / "b", files=("b.txt",))
    assert inputs_hash(a) != inputs_hash(replace(b, raw=a.raw))


@pytest.mark.parametrize("first, second, same", [
    ("", '\n[run]\ngpus = "all"\nshm_size = "16g"\n', True),
    ('\n[run]\ncommand = ["python", "x.py"]\n', '\n[run]\ncommand = ["python", "x.py"]\ngpus = "1"\n', True),
    ('\n[run]\ncommand = ["python", "x.py"]\n', '\n[run]\ncommand = ["python", "y.py"]\n', False),
    ('\n[run]\njupyter = true\n', '\n[run]\njupyter = false\n', False),
    ('\n[cluster.slurm]\nfeatures = ["a100"]\n', "", True),
    ('\n[lock]\nexclude_newer = 2025-01-31\n', '\n[lock]\nexclude_newer = 2025-02-01\n', False),
], ids=["run-gpus-and-shm", "run-gpus-beside-command", "run-command", "run-jupyter", "cluster", "toml-date"])
def test_only_what_the_image_is_built_from_makes_a_lock_stale(tmp_path, first, second, same):
    """A GPU count or a port is how a container runs, not what the image holds: editing it keeps the lock."""
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    one, two = project(tmp_path / "1", more=first), project(tmp_path / "2", more=second)
    (tmp_path / "2" / "requirements.txt").write_text((tmp_path / "1" / "requirements.txt").read_text())
    assert (inputs_hash(one) == inputs_hash(two)) is same
    assert (dict(input_digests(one))["config"] == dict(input_digests(two))["config"]) is same


def test_the_hash_cudaenv_0_1_0_wrote_covers_all_of_run(tmp_path):
    """Locks written before 2026-11-24 hashed every [run] key; they are still current."""
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    one = project(tmp_path / "1", more='\n[run]\ngpus = "1"\n')
    two = project(tmp_path / "2", more='\n[run]\ngpus = "2"\n')
    (tmp_path / "2" / "requirements.txt").write_text((tmp_path / "1" / "requirements.txt").read_text())
    assert inputs_hash(one, whole_run=True) != inputs_hash(two, whole_run=True)
    assert inputs_hash(one) == inputs_hash(two)


def test_a_format_1_hash_taken_with_the_target_table_is_still_current(tmp_path, matrix):
    p = project(tmp_path, files=("requirements.txt",))
    lock, stack = locked(matrix, p)
    tables = {k: v for k, v in p.raw.items() if k != "cluster"}
    digest = hashlib.sha256(json.dumps(tables, sort_keys=True, default=str).encode())
    digest.update(b"\0requirements.txt\0" + (tmp_path / "requirements.txt").read_bytes())
    old = replace(lock, inputs_hash=digest.hexdigest()[:32], inputs=())
    assert old.inputs_hash != lock.inputs_hash and old.inputs_hash == inputs_hash(p, targets=True)
    assert staleness(old, p, stack, matrix.revision) == []
    assert staleness(replace(old, inputs_hash="0" * 32), p, stack, matrix.revision) == [
        "the configuration or a requirements file changed since the lock was written"]


def test_a_lock_with_the_old_whole_run_hash_is_current(tmp_path, matrix):
    p = project(tmp_path, more='\n[run]\ngpus = "1"\n')
    lock, stack = locked(matrix, p)
    old = replace(lock, inputs_hash=inputs_hash(p, whole_run=True), inputs=())
    assert old.inputs_hash != lock.inputs_hash
    assert staleness(old, p, stack, matrix.revision) == []
    assert staleness(lock, p, stack, matrix.revision) == []


@pytest.mark.parametrize("edit, said", [
    ("requirements", "requirements.txt changed"),
    ("config", "the configuration in cudaenv.toml changed"),
    ("both", "the configuration in cudaenv.toml and requirements.txt changed"),
    ("add-one", "the configuration in cudaenv.toml changed; dev.txt is new"),
    ("add-two", "the configuration in cudaenv.toml changed; a.txt, dev.txt are new"),
    ("drop-one", "the configuration in cudaenv.toml changed; requirements.txt no longer is a requirements file"),
    ("drop-two", "the configuration in cudaenv.toml changed; dev.txt, requirements.txt no longer are a requirements file"),
])
def test_a_stale_lock_names_each_input_that_changed(tmp_path, matrix, edit, said):
    """Which file to look at, in the words of the file list: changed, new, or no longer a requirements file."""
    files = ("requirements.txt", "dev.txt") if edit == "drop-two" else ("requirements.txt",)
    p = project(tmp_path, files=files)
    lock, stack = locked(matrix, p)
    if edit in ("requirements", "both"):
        (tmp_path / "requirements.txt").write_text("numpy==2.1.2\n")
    if edit in ("config", "both"):
        p = project(tmp_path, more='\n[run]\ncommand = ["python", "train.py"]\n')
    if edit == "add-one":
        p = project(tmp_path, files=("requirements.txt", "dev.txt"))
    if edit == "add-two":
        p = project(tmp_path, files=("requirements.txt", "dev.txt", "a.txt"))
    if edit == "drop-one":
        p = project(tmp_path, files=())
    if edit == "drop-two":
        p = project(tmp_path, files=())
    assert changed_inputs(lock, p) == said
    assert staleness(lock, p, stack, matrix.revision) == [f"{said} since the lock was written"]


def test_without_a_configuration_file_it_is_the_configuration(tmp_path, matrix):
    p = project(tmp_path)
    lock, _ = locked(matrix, p)
    changed = replace(project(tmp_path, more='\n[run]\ncommand = ["x"]\n'), config_path=None)
    assert changed_inputs(lock, changed) == "the configuration changed"


def test_a_lock_without_inputs_one_by_one_says_only_that_something_changed(tmp_path, matrix):
    p = project(tmp_path)
    lock, stack = locked(matrix, p)
    (tmp_path / "requirements.txt").write_text("numpy==2.1.2\n")
    assert changed_inputs(replace(lock, inputs=()), p) is None
    assert staleness(replace(lock, inputs=()), p, stack, matrix.revision) == [
        "the configuration or a requirements file changed since the lock was written"]
    assert changed_inputs(locked(matrix, p)[0], p) is None  # nothing changed: nothing to name


def test_each_other_reason_is_said_in_its_own_words(tmp_path, matrix):
    p = project(tmp_path)
    pins = [f"torch==2.{n}.0+cpu" for n in range(4)]
    lock, stack = locked(matrix, p, pinned=pins)
    assert staleness(None, p, stack, matrix.revision) == ["there is no cudaenv.lock"]
    reasons = staleness(lock, p, None, "newer")
    assert reasons == [
        f"the compatibility matrix changed (lock: {matrix.revision}, now: newer)",
        "the locked packages contradict the locked stack: "
        + "; ".join(f"torch==2.{n}.0+cpu carries a CPU-only build, but the stack is CUDA {stack.cuda}" for n in range(3)),
        "the configuration no longer resolves to any stack"]


def test_a_changed_stack_names_the_fields_that_differ(tmp_path, matrix):
    p = project(tmp_path)
    lock, stack = locked(matrix, p)
    other = replace(stack, python="3.11", cudnn=None)
    assert staleness(lock, p, other, matrix.revision) == ["the resolved stack changed (cudnn, python)"]
    moved = {k: v for k, v in other.as_dict().items() if v is not None}
    assert staleness(replace(lock, stack=moved), p, stack, matrix.revision, moved) == []
    assert staleness(replace(lock, stack=moved), p, stack, matrix.revision) != []


@pytest.mark.parametrize("include", ["-r base.txt", "-c pins.txt", "--find-links wheels"],
                         ids=["requirement", "constraint", "find-links-folder"])
def test_editing_what_a_requirements_file_includes_makes_the_lock_stale(matrix, tmp_path, include):
    """uv reads includes, constraints and local wheels: the lock depends on them as on the file."""
    (tmp_path / "requirements.txt").write_text(f"{include}\nnumpy==2.1.3\n")
    (tmp_path / "base.txt").write_text("six==1.16.0\n")
    (tmp_path / "pins.txt").write_text("six<2\n")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"one")
    p = project(tmp_path)
    lock, stack = locked(matrix, p)
    assert staleness(lock, p, stack, matrix.revision) == []
    changed = {"-r base.txt": "base.txt", "-c pins.txt": "pins.txt", "--find-links wheels": "wheels"}[include]
    if changed == "wheels":
        (tmp_path / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"two")
    else:
        (tmp_path / changed).write_text("six==1.17.0\n")
    assert staleness(lock, p, stack, matrix.revision) == [f"{changed} changed since the lock was written"]


def test_an_included_file_does_not_change_the_hash_of_a_project_without_includes(tmp_path):
    """Locks written before includes were inputs stay current: only an include adds to the hash."""
    p = project(tmp_path)
    assert [k for k, _ in input_digests(p)] == ["config", "file:requirements.txt"]
