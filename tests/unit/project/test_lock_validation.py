"""A cudaenv.lock feeds RUN lines and host checks: a hand-edited or damaged one is refused with
one line naming the file and what is wrong (exit 2), never a traceback from deep inside."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

from cudaenv.errors import UserError
from cudaenv.project.lock import Lock, read_lock
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import constraints, host, matrix


@pytest.fixture(scope="module")
def valid_lock_text() -> str:
    result = resolve(matrix(), constraints(torch="2.6"), host(driver="550.54.15", gpus=("A100",)))
    stack = {k: v for k, v in result.stack.as_dict().items() if v is not None}
    return Lock(cudaenv="0.1.0", matrix_revision="r1", inputs_hash="0" * 32, stack=stack, target={},
                requirement_files=("requirements.txt",), python_index="https://pypi.org/simple",
                framework_index=None, platform="x86_64-manylinux_2_28", pinned=("numpy==2.1.3",)).as_toml()


def edited(text: str, edit) -> str:
    doc = tomlkit.parse(text)
    edit(doc)
    return tomlkit.dumps(doc)


def test_the_valid_lock_reads_back(tmp_path: Path, valid_lock_text):
    path = tmp_path / "cudaenv.lock"
    path.write_text(valid_lock_text)
    lock = read_lock(path)
    assert lock.pinned == ("numpy==2.1.3",) and lock.stack["cuda"]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.__setitem__("stack", "cuda 12.4"), "stack: expected a table"),
    (lambda d: d.__setitem__("requirements", ["numpy"]), "requirements: expected a table"),
    (lambda d: d["requirements"].__setitem__("pinned", "numpy==2.1.3"), "must be lists"),
    (lambda d: d["stack"].__setitem__("cuda", 12.4), "stack.cuda must be a string"),
    (lambda d: d["stack"].__setitem__("frameworks", "torch"), "stack.frameworks must be a table"),
    (lambda d: d["stack"].__delitem__("python"), "stack.python must be a string"),
    (lambda d: d.__delitem__("inputs_hash"), "not a valid cudaenv.lock"),
    (lambda d: d["requirements"]["pinned"].append("numpy; rm -rf /"), r"requirements.pinned\[1\]"),
    (lambda d: d["requirements"].__setitem__("python_index", "file:///etc"), "requirements.python_index"),
])
def test_a_damaged_lock_is_refused_naming_the_file_and_field(tmp_path: Path, valid_lock_text, edit, message):
    path = tmp_path / "cudaenv.lock"
    path.write_text(edited(valid_lock_text, edit))
    with pytest.raises(UserError, match=message) as caught:
        read_lock(path)
    assert str(caught.value).startswith(str(path))


def test_a_lock_that_is_not_utf8_is_bad_input_not_a_crash(tmp_path: Path):
    path = tmp_path / "cudaenv.lock"
    path.write_bytes(b"format = 1\ncudaenv = \"\xff\xfe\"\n")
    with pytest.raises(UserError, match="not a valid cudaenv.lock"):
        read_lock(path)


def test_the_cli_exits_2_without_a_traceback_on_a_damaged_lock(tmp_path: Path, valid_lock_text):
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "2.6"\n')
    (tmp_path / "cudaenv.lock").write_text(edited(valid_lock_text, lambda d: d.__setitem__("stack", 3)))
    proc = subprocess.run([sys.executable, "-m", "cudaenv", "check", str(tmp_path), "--driver", "550.54.15"],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cudaenv.lock: stack: expected a table" in proc.stderr
