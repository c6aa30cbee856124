"""A cudaenv.lock feeds RUN lines and host checks: a hand-edited or damaged one is refused with
one line naming the file and what is wrong (exit 2), never a traceback from deep inside."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from cudaenv.errors import UserError
from cudaenv.project.lock import Lock, read_lock
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import constraints, host, matrix
from tests.support.cli import cudaenv as run_cli
from tests.support.lockfile import OneTarget


@pytest.fixture(scope="module")
def valid_lock_text() -> str:
    result = resolve(matrix(), constraints(torch="2.6"), host(driver="550.54.15", gpus=("A100",)))
    stack = {k: v for k, v in result.stack.as_dict().items() if v is not None}
    return Lock(cudaenv="0.1.0", matrix_revision="r1", inputs_hash="0" * 32, stack=stack, target={},
                requirement_files=("requirements.txt",), python_index="https://pypi.org/simple",
                framework_index=None, platform="x86_64-manylinux_2_28", pinned=("numpy==2.1.3",)).as_toml()


def edited(text: str, edit) -> str:
    """The lock with one field damaged, wherever its format keeps that field (``OneTarget``)."""
    doc = tomlkit.parse(text)
    edit(OneTarget(doc))
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
], ids=["stack-not-table", "requirements-not-table", "pinned-not-list", "cuda-not-string", "frameworks-not-table",
        "python-missing", "inputs-hash-missing", "pinned-shell-text", "python-index-file-url"])
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
    proc = run_cli("check", str(tmp_path), "--driver", "550.54.15")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cudaenv.lock: stacks." in proc.stderr and ".stack: expected a table" in proc.stderr


# --- a stale lock says which input changed ---------------------------------------------------------


def _locked_project(directory: Path):
    from cudaenv.project import load_project
    from cudaenv.project.lock import make_lock
    from cudaenv.hosts.target import project_target

    directory.mkdir()
    (directory / "requirements.txt").write_text("six==1.16.0\n")
    (directory / "extra.txt").write_text("tqdm==4.66.5\n")
    (directory / "cudaenv.toml").write_text(
        '[project]\nname = "p"\npython = "3.11"\nrequirements = ["requirements.txt", "extra.txt"]\n\n'
        '[cuda]\nversion = "12.4"\n\n[build]\nflavor = "runtime"\n')
    project = load_project(directory)
    stack = resolve(matrix(), project.constraints, project_target(matrix(), project).host).stack
    lock = make_lock(project, stack, matrix_revision=matrix().revision, target={}, pinned=["six==1.16.0"])
    project.lock_path.write_text(lock.as_toml())
    return project


def _why_stale(directory: Path) -> list[str]:
    from cudaenv.project import load_project
    from cudaenv.project.lock import current_lock

    return current_lock(load_project(directory), matrix())[1]


def test_a_stale_lock_names_the_input_that_changed(tmp_path: Path):
    project = _locked_project(tmp_path / "p")
    assert _why_stale(project.root) == []
    assert dict(read_lock(project.lock_path).inputs).keys() == {"config", "file:requirements.txt", "file:extra.txt"}
    (project.root / "extra.txt").write_text("tqdm==4.66.6\n")
    assert _why_stale(project.root) == ["extra.txt changed since the lock was written"]
    config = project.root / "cudaenv.toml"
    config.write_text(config.read_text().replace(', "extra.txt"', ""))
    assert _why_stale(project.root)[0] == ("the configuration in cudaenv.toml changed; extra.txt no longer is a "
                                           "requirements file since the lock was written")


def test_a_lock_without_inputs_one_by_one_still_says_something_changed(tmp_path: Path):
    project = _locked_project(tmp_path / "old")
    text = project.lock_path.read_text()
    start = text.index("[inputs]")
    project.lock_path.write_text(text[:start] + text[text.index("\n[targets.") + 1:])  # as older cudaenv wrote it
    assert read_lock(project.lock_path).inputs == ()
    (project.root / "requirements.txt").write_text("six==1.17.0\n")
    assert _why_stale(project.root) == ["the configuration or a requirements file changed since the lock was written"]


def test_a_tampered_inputs_table_is_refused(tmp_path: Path):
    project = _locked_project(tmp_path / "bad")
    project.lock_path.write_text(project.lock_path.read_text().replace('config = "', 'config = "$(x)'))
    with pytest.raises(UserError, match="inputs: expected file names with hex digests"):
        read_lock(project.lock_path)
