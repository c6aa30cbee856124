"""A cudaenv.lock read back is the lock that was written, field for field (its defaults where an
older writer left a field out), and each way a lock file can be unreadable is refused with its own
one-line message naming the file, what is wrong and what to do: upgrade cudaenv for a newer
format, rewrite the lock for anything else."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from cudaenv import __version__
from cudaenv.errors import UserError
from cudaenv.project.lock import PYPI_SIMPLE, Lock, read_lock
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import constraints, host, matrix
from tests.support.lockfile import OneTarget, entry_prefix

CU126 = "https://download.pytorch.org/whl/cu126"


@pytest.fixture(scope="module")
def stack() -> dict:
    result = resolve(matrix(), constraints(torch="2.6"), host(driver="550.54.15", gpus=("A100",)))
    return {k: v for k, v in result.stack.as_dict().items() if v is not None}


@pytest.fixture
def full_lock(stack) -> Lock:
    return Lock(cudaenv="0.9.1", matrix_revision="rev-7", inputs_hash="ab" * 16, stack=stack,
                target={"driver": "550.54.15", "gpus": ["A100"]}, requirement_files=("requirements.txt", "dev.txt"),
                python_index="https://mirror.example/simple", framework_index=CU126, platform="x86_64-manylinux_2_28",
                pinned=("numpy==2.1.3", "torch==2.6.0+cu126"), inputs=(("config", "0a"), ("file:dev.txt", "ff")))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cudaenv.lock"
    path.write_text(text)
    return path


def test_a_lock_reads_back_as_it_was_written(tmp_path, full_lock):
    """Every field the image and the checks use survives the file: nothing is dropped or renamed."""
    assert read_lock(write(tmp_path, full_lock.as_toml())) == full_lock


def test_a_lock_without_the_optional_fields_gets_their_defaults(tmp_path, full_lock):
    """An older lock: PyPI as the Python index, no framework index, no platform, no files, no pins."""
    doc = tomlkit.parse(full_lock.as_toml())
    lock = OneTarget(doc)
    for key in ("python_index", "framework_index", "platform", "files", "pinned"):
        del lock["requirements"][key]
    for key in [k for k in lock["target"] if k != "stack"]:  # the host it was for: not recorded
        del lock["target"][key]
    del doc["inputs"]
    lock = read_lock(write(tmp_path, tomlkit.dumps(doc)))
    assert (lock.python_index, lock.framework_index, lock.platform) == (PYPI_SIMPLE, None, "")
    assert (lock.requirement_files, lock.pinned, lock.inputs, lock.target) == ((), (), (), {})
    assert (lock.cudaenv, lock.matrix_revision, lock.inputs_hash) == ("0.9.1", "rev-7", "ab" * 16)


def test_no_lock_file_is_no_lock(tmp_path):
    assert read_lock(tmp_path / "cudaenv.lock") is None


REWRITE = "run `cudaenv lock` to rewrite it"
UPGRADE = f"upgrade cudaenv (this is {__version__}) to read it"


@pytest.mark.parametrize("head, said", [
    ('format = 9\ncudaenv = "9.9.9"\n', f"this lock has format 9, written by cudaenv 9.9.9; this cudaenv reads formats 1 and 2: {UPGRADE}"),
    ('format = 0\ncudaenv = "0.0.1"\n', f"this lock has format 0, written by cudaenv 0.0.1; this cudaenv reads formats 1 and 2: {REWRITE}"),
    ('cudaenv = "0.0.1"\n', f"this lock has no format, written by cudaenv 0.0.1; this cudaenv reads formats 1 and 2: {REWRITE}"),
    ('format = "1"\n', f"this lock has format '1', written by an unknown cudaenv; this cudaenv reads formats 1 and 2: {REWRITE}"),
    ("format = 1.0\ncudaenv = 5\n",
     f"this lock has format 1.0, written by an unknown cudaenv; this cudaenv reads formats 1 and 2: {REWRITE}"),
    ("format = true\ncudaenv = 5\n",
     f"this lock has format True, written by an unknown cudaenv; this cudaenv reads formats 1 and 2: {REWRITE}"),
    (f'format = 3\ncudaenv = "{"v" * 39}"\n',
     f"this lock has format 3, written by cudaenv {'v' * 39}; this cudaenv reads formats 1 and 2: {UPGRADE}"),
    (f'format = 3\ncudaenv = "{"v" * 40}"\n',
     f"this lock has format 3, written by an unknown cudaenv; this cudaenv reads formats 1 and 2: {UPGRADE}"),
    (f'format = "{"x" * 100}"\n',
     f"this lock has format '{'x' * 52}, written by an unknown cudaenv; this cudaenv reads formats 1 and 2: {REWRITE}"),
], ids=["newer", "older", "no-format", "string-format", "float-format-and-odd-writer", "bool-format", "writer-39", "writer-40",
        "long-format"])
def test_a_lock_of_another_format_says_which_and_what_to_do(tmp_path, head, said):
    """A newer format needs a newer cudaenv; anything else is rewritten: say which, and who wrote it."""
    path = write(tmp_path, head)
    with pytest.raises(UserError) as caught:
        read_lock(path)
    assert str(caught.value) == f"{path}: format: {said}"


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.__setitem__("requirements", 5),
     "{entry}requirements: expected a table, got 5; run `cudaenv lock` to rewrite the lock"),
    (lambda d: d.__setitem__("target", "x"), "targets.default: expected a table, got 'x'; run `cudaenv lock` to rewrite the lock"),
    (lambda d: d.__setitem__("inputs", []), "inputs: expected a table, got []; run `cudaenv lock` to rewrite the lock"),
    (lambda d: d["requirements"].__setitem__("files", "requirements.txt"),
     "{entry}requirements.pinned and {entry}requirements.files must be lists"),
    (lambda d: d["inputs"].__setitem__("config", "XYZ"),
     "inputs: expected file names with hex digests; run `cudaenv lock` to rewrite it"),
    (lambda d: d["inputs"].__setitem__("config", "a" * 65),
     "inputs: expected file names with hex digests; run `cudaenv lock` to rewrite it"),
    (lambda d: d["inputs"].__setitem__("config", 1),
     "inputs: expected file names with hex digests; run `cudaenv lock` to rewrite it"),
    (lambda d: d.__delitem__("matrix_revision"), f"not a valid cudaenv.lock (KeyError: 'matrix_revision'); {REWRITE}"),
    (lambda d: d.__delitem__("cudaenv"), f"not a valid cudaenv.lock (KeyError: 'cudaenv'); {REWRITE}"),
    (lambda d: d["requirements"].__setitem__("framework_index", "https://u:p@fw.example/cu126"), None),
], ids=["requirements", "target", "inputs", "files", "digest-not-hex", "digest-too-long", "digest-not-text",
        "no-matrix-revision", "no-writer", "credentials"])
def test_each_damaged_field_has_its_own_message(tmp_path, full_lock, edit, said):
    text = full_lock.as_toml()
    entry = entry_prefix(text)
    doc = tomlkit.parse(text)
    edit(OneTarget(doc))
    path = write(tmp_path, tomlkit.dumps(doc))
    with pytest.raises(UserError) as caught:
        read_lock(path)
    if said is None:
        assert str(caught.value).startswith(f"{path}: {entry}requirements.framework_index: ")
    else:
        assert str(caught.value) == f"{path}: {said.format(entry=entry)}"


def test_a_lock_that_is_not_toml_is_rewritten(tmp_path):
    path = write(tmp_path, "format = = 1\n")
    with pytest.raises(UserError) as caught:
        read_lock(path)
    assert str(caught.value).startswith(f"{path}: not a valid cudaenv.lock (")
    assert str(caught.value).endswith(f"); {REWRITE}")


def test_the_lock_file_says_what_it_is_and_lists_one_pin_a_line(full_lock):
    """A committed file reviewed in diffs: the header says not to edit it and how CI checks it, and a
    changed pin is a one-line change."""
    text = full_lock.as_toml()
    assert text.startswith("# cudaenv.lock: written by `cudaenv lock`; do not edit by hand.\n"
                           "# Commit it: `cudaenv lock --check` in CI fails when it no longer matches.\n")
    assert '\n    "numpy==2.1.3",\n    "torch==2.6.0+cu126",\n]' in text


def test_an_unknown_target_value_is_written_empty(tmp_path, full_lock):
    """TOML has no null: a target field the host did not say (no driver) is written as ''."""
    from dataclasses import replace

    lock = replace(full_lock, target={"driver": None, "gpus": ["A100"]})
    assert read_lock(write(tmp_path, lock.as_toml())).target == {"driver": "", "gpus": ["A100"]}
