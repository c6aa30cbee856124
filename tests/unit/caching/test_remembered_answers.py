"""`cudaenv resolve` asked the same thing again answers from what it remembered, and only while
nothing it was computed from has changed: the words, the environment, the matrix files (overlays
included, even one created later) and cudaenv's own code. Answers that read a project or asked this
machine are never remembered; neither is bad input. Every test runs the real CLI in a process of
its own, as a user or a CI loop does."""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.core import answers
from tests.unit.host import hide_nvml, path_without_nvidia_smi
from tests.unit.matrix.test_overlays import NEW_TORCH  # a torch release the shipped matrix lacks

REPO = Path(__file__).resolve().parents[3]
QUESTION = ["resolve", "--torch", ">=2.0", "--python", "3.12", "--driver", "580.65.06", "--json"]


class Sandbox:
    """A home, a config directory, a cache and an empty working directory of their own."""

    def __init__(self, root: Path, *, pythonpath: Path | None = None) -> None:
        self.root = root
        self.cache = root / "cache"
        self.config = root / "config"
        self.work = root / "work"
        self.work.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env.update(HOME=str(root / "home"), XDG_CONFIG_HOME=str(self.config), CUDAENV_CACHE_DIR=str(self.cache),
                        PATH=path_without_nvidia_smi())
        paths = [str(hide_nvml(root / "no-nvml"))] + ([str(pythonpath)] if pythonpath else [])
        self.env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p])

    def cudaenv(self, *args: str, imports: bool = False, script: bool = False, **env: str) -> subprocess.CompletedProcess:
        """``python -m cudaenv ARGS``; with ``script`` the way the console script starts it, where
        the working directory is not on sys.path."""
        start = ["-c", "from cudaenv.entry import main; main()"] if script else ["-m", "cudaenv"]
        command = [sys.executable, *(["-X", "importtime"] if imports else []), *start, *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=self.work, env={**self.env, **env},
                              timeout=120, check=False)

    def remembered(self) -> list[Path]:
        directory = self.cache / "answers"
        return sorted(directory.glob("*.answer")) if directory.is_dir() else []


def imported(proc: subprocess.CompletedProcess) -> set[str]:
    """Module names from ``-X importtime`` on stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def test_the_same_question_again_is_answered_without_importing_the_resolver(sandbox):
    first = sandbox.cudaenv(*QUESTION, imports=True)
    again = sandbox.cudaenv(*QUESTION, imports=True)
    assert first.returncode == again.returncode == 0, first.stderr[-2000:]
    assert again.stdout == first.stdout  # byte for byte the same JSON object
    assert json.loads(again.stdout)["stack"]["frameworks"]["torch"]
    assert "cudaenv.resolver.resolve" in imported(first)
    skipped = {"cudaenv.resolver.resolve", "cudaenv.matrix", "packaging.specifiers", "dataclasses"}
    assert not skipped & imported(again), skipped & imported(again)
    assert len(sandbox.remembered()) == 1


def test_a_no_stack_answer_is_remembered_with_its_exit_code(sandbox):
    question = ["resolve", "--torch", "==2.4.1", "--driver", "390.30"]
    first = sandbox.cudaenv(*question)
    again = sandbox.cudaenv(*question, imports=True)
    assert first.returncode == again.returncode == 1
    assert "no stack fits" in again.stdout and again.stdout == first.stdout
    assert "cudaenv.resolver.resolve" not in imported(again)


def test_an_overlay_directory_created_later_changes_the_answer(sandbox):
    before = json.loads(sandbox.cudaenv(*QUESTION).stdout)
    assert before["stack"]["frameworks"]["torch"] != "2.99.0"
    overlay = sandbox.config / "cudaenv" / "matrix"  # the default overlay directory, absent until now
    overlay.mkdir(parents=True)
    (overlay / "torch.toml").write_text(NEW_TORCH)
    after = json.loads(sandbox.cudaenv(*QUESTION).stdout)
    assert after["stack"]["frameworks"]["torch"] == "2.99.0"


def test_editing_or_removing_an_overlay_file_changes_the_answer(sandbox, tmp_path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "torch.toml").write_text(NEW_TORCH)
    env = {"CUDAENV_MATRIX_PATH": str(overlay)}
    assert json.loads(sandbox.cudaenv(*QUESTION, **env).stdout)["stack"]["frameworks"]["torch"] == "2.99.0"
    (overlay / "torch.toml").write_text(NEW_TORCH.replace("2.99.0", "2.98.0"))
    assert json.loads(sandbox.cudaenv(*QUESTION, **env).stdout)["stack"]["frameworks"]["torch"] == "2.98.0"
    (overlay / "torch.toml").unlink()
    assert json.loads(sandbox.cudaenv(*QUESTION, **env).stdout)["stack"]["frameworks"]["torch"] \
        not in ("2.98.0", "2.99.0")


def test_the_environment_is_part_of_the_question(sandbox):
    question = ["resolve", "--torch", "==2.4.1"]
    fits = sandbox.cudaenv(*question, CUDAENV_DRIVER_VERSION="550.54.15")
    old = sandbox.cudaenv(*question, CUDAENV_DRIVER_VERSION="390.30")
    assert (fits.returncode, old.returncode) == (0, 1)
    assert "driver 390.30" in old.stdout


def test_editing_cudaenv_itself_changes_the_answer(tmp_path):
    """A development checkout: an edit to any module the answer came from is seen at once."""
    source = tmp_path / "src"
    for name in ("cudaenv", "matrix", "templates"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    sandbox = Sandbox(tmp_path / "run", pythonpath=source)
    question = ["resolve", "--torch", "==2.4.1", "--driver", "550.54.15"]
    first = sandbox.cudaenv(*question)
    assert first.returncode == 0 and "✓ torch 2.4.1" in first.stdout, first.stderr[-2000:]
    assert sandbox.cudaenv(*question).stdout == first.stdout
    resolving = source / "cudaenv" / "cli" / "resolving.py"
    resolving.write_text(resolving.read_text().replace('f"✓ {', 'f"FITS {'))
    edited = sandbox.cudaenv(*question)
    assert "FITS torch 2.4.1" in edited.stdout, edited.stdout


def test_a_project_here_is_read_every_time_and_never_remembered(sandbox):
    (sandbox.work / "cudaenv.toml").write_text('[project]\nname = "here"\npython = "3.11"\n\n[frameworks]\ntorch = "2.4.1"\n')
    question = ["resolve", "--driver", "550.54.15", "--json"]
    first = sandbox.cudaenv(*question)
    assert json.loads(first.stdout)["stack"]["frameworks"]["torch"] == "2.4.1", first.stderr[-2000:]
    (sandbox.work / "cudaenv.toml").write_text('[project]\nname = "here"\npython = "3.11"\n\n[frameworks]\ntorch = "2.5.1"\n')
    assert json.loads(sandbox.cudaenv(*question).stdout)["stack"]["frameworks"]["torch"] == "2.5.1"
    assert sandbox.remembered() == []


def test_an_answer_that_asked_this_machine_is_never_remembered(sandbox):
    """No driver declared: the host is asked (here it has no NVIDIA driver), and it could change."""
    proc = sandbox.cudaenv("resolve", "--torch", "==2.4.1", "--json")
    assert json.loads(proc.stdout)["host"]["origin"] == "unknown"
    assert sandbox.remembered() == []


def test_bad_input_and_no_cache_remember_nothing(sandbox):
    bad = sandbox.cudaenv("resolve", "--torch", "==٥", "--driver", "550.54.15", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["ok"] is False
    assert sandbox.remembered() == []
    off = sandbox.cudaenv(*QUESTION, CUDAENV_NO_CACHE="1")
    assert off.returncode == 0 and sandbox.remembered() == []


def test_a_call_from_inside_python_never_remembers(sandbox, monkeypatch, capsys):
    """Tests and tools that call the entry point in-process may have patched anything."""
    from cudaenv import entry

    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(sandbox.cache))
    with pytest.raises(SystemExit) as ended:
        entry.main(QUESTION)
    assert ended.value.code == 0 and json.loads(capsys.readouterr().out)["ok"] is True
    assert sandbox.remembered() == []


def _forge(path: Path, text: str) -> None:
    fmt, key, watched, _, code = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps((fmt, key, watched, text, code)))


def test_a_remembered_answer_is_trusted_only_in_a_private_file(sandbox):
    """The check can fail: the same forged file is printed while private and ignored once the
    group can write it, or its directory can be written by others."""
    real = sandbox.cudaenv(*QUESTION).stdout
    [path] = sandbox.remembered()
    _forge(path, '{"forged": true}\n')
    path.chmod(0o600)
    assert sandbox.cudaenv(*QUESTION).stdout == '{"forged": true}\n'
    path.chmod(0o620)
    assert sandbox.cudaenv(*QUESTION).stdout == real
    [path] = sandbox.remembered()  # written afresh, private again
    _forge(path, '{"forged": true}\n')
    path.parent.chmod(0o777)
    try:
        assert sandbox.cudaenv(*QUESTION).stdout == real
    finally:
        path.parent.chmod(0o700)


def test_a_record_holding_anything_but_plain_data_is_ignored(sandbox):
    real = sandbox.cudaenv(*QUESTION).stdout
    [path] = sandbox.remembered()
    fmt, key, watched, _, code = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps((fmt, key, watched, compile("print('ran')", "x", "exec"), code)))
    again = sandbox.cudaenv(*QUESTION)
    assert again.stdout == real and "ran" not in again.stdout
    path.write_bytes(b"\x00not marshal")
    assert sandbox.cudaenv(*QUESTION).stdout == real


def test_another_question_whose_short_name_collides_is_not_answered(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "c"))
    answers.remember("question A", "answer A\n", 0, [])
    short = answers._path("question A")
    os.replace(short, answers._path("question B"))  # as if B's short name were A's
    assert answers.recall("question B") is None
    assert answers.recall("question A") is None  # and A's file is gone
    answers.remember("question A", "answer A\n", 0, answers.states([str(tmp_path)]))
    assert answers.recall("question A") == ("answer A\n", 0)
    os.utime(tmp_path, ns=(1, 1))  # a recorded path changed
    assert answers.recall("question A") is None


def test_the_number_of_remembered_answers_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(answers, "LIMIT", 8)
    for n in range(20):
        answers.remember(f"question {n}", f"answer {n}\n", 0, [])
    kept = list((tmp_path / "answers").glob("*.answer"))
    assert 4 <= len(kept) <= 8
    assert answers.recall("question 19") == ("answer 19\n", 0)
    assert not list((tmp_path / "answers").glob(".*.tmp"))


def test_code_that_cannot_be_looked_at_means_nothing_is_remembered(monkeypatch, tmp_path):
    """A module loaded from somewhere os.stat cannot see (inside a zip archive) could change
    unseen, so an answer computed with it loaded is not kept."""
    import types

    assert answers.code_states()  # this process's own modules can all be looked at
    zipped = types.ModuleType("zipped_helper")
    zipped.__file__ = str(tmp_path / "helpers.zip" / "zipped_helper.py")
    monkeypatch.setitem(sys.modules, "zipped_helper", zipped)
    assert answers.code_states() is None


def test_an_edit_to_code_the_answer_did_not_load_still_counts(tmp_path):
    """With the matrix read from its cache the loader and its checks are never imported, yet they
    decide what the matrix is: an edit to any of cudaenv's files is a change."""
    source = tmp_path / "src"
    for name in ("cudaenv", "matrix", "templates"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    sandbox = Sandbox(tmp_path / "run", pythonpath=source)
    question = ["resolve", "--torch", "==2.4.1", "--driver", "550.54.15"]
    assert sandbox.cudaenv(*question).returncode == 0  # the matrix cache is written
    shutil.rmtree(sandbox.cache / "answers")
    second = sandbox.cudaenv(*question, imports=True)  # matrix from its cache: no loader imported
    assert "cudaenv.matrix.validate" not in imported(second) and sandbox.remembered()
    validate = source / "cudaenv" / "matrix" / "validate.py"
    validate.write_text(validate.read_text() + "\n\ndef check_cross_references(matrix):\n"
                        "    raise MatrixError('edited checks refuse the matrix')\n")
    edited = sandbox.cudaenv(*question)
    assert edited.returncode == 2 and "edited checks refuse the matrix" in edited.stderr


def test_only_the_environment_resolve_reads_is_written_down(sandbox):
    """A password in the environment (for `cudaenv push`) never lands in an answer's file, and
    does not make every call a new question."""
    secrets = {"CUDAENV_REGISTRY_PASSWORD": "hunter2-secret",
               "CUDAENV_PYTHON_INDEX": "https://u:tok3n@pypi.corp/simple"}
    first = sandbox.cudaenv(*QUESTION, **secrets)
    again = sandbox.cudaenv(*QUESTION, imports=True, CUDAENV_REGISTRY_PASSWORD="rotated")
    assert first.returncode == again.returncode == 0 and again.stdout == first.stdout
    assert "cudaenv.resolver.resolve" not in imported(again)
    [path] = sandbox.remembered()
    assert b"hunter2" not in path.read_bytes() and b"tok3n" not in path.read_bytes()


def test_every_variable_a_resolution_reads_is_keyed_or_known_not_to_matter(sandbox):
    """Read the CUDAENV_* names in every cudaenv module a resolution loads (the host asked too, so
    detection's modules count): each must be in ENVIRONMENT or NOT_INPUTS, so a variable added to
    the resolve path later cannot be forgotten by the key."""
    import importlib.util
    import re

    proc = sandbox.cudaenv("resolve", "--torch", "==2.4.1", "--gpu", "A100", imports=True)
    detected = sandbox.cudaenv("resolve", "--torch", "==2.4.1", imports=True)
    assert proc.returncode in (0, 1) and detected.returncode in (0, 1), proc.stderr[-2000:]
    modules = {name for name in imported(proc) | imported(detected) if name.startswith("cudaenv")}
    assert "cudaenv.hosts.detect" in modules and "cudaenv.hosts.target" in modules
    names = set()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and spec.origin.endswith(".py"):
            names |= set(re.findall(r"CUDAENV_[A-Z0-9_]+", Path(spec.origin).read_text()))
    assert {"CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS", "CUDAENV_MATRIX_PATH"} <= names
    unknown = {n for n in names if n not in answers.ENVIRONMENT and n not in answers.NOT_INPUTS}
    assert not unknown, f"read on the resolve path but neither keyed nor known not to matter: {unknown}"


def test_a_relative_overlay_path_means_each_directory_its_own(tmp_path):
    """CUDAENV_MATRIX_PATH=overlay names another directory wherever cudaenv runs: two copies with
    the same sizes and times but other content must not share an answer."""
    sandbox = Sandbox(tmp_path / "sandbox")
    found = {}
    for place, version in (("a", "2.99.0"), ("b", "2.98.0")):
        overlay = tmp_path / place / "overlay"
        overlay.mkdir(parents=True)
        (overlay / "torch.toml").write_text(NEW_TORCH.replace("2.99.0", version))
        os.utime(overlay / "torch.toml", ns=(10**18, 10**18))
        sandbox.work = tmp_path / place
        found[place] = json.loads(sandbox.cudaenv(*QUESTION, script=True, CUDAENV_MATRIX_PATH="overlay").stdout)
    assert found["a"]["stack"]["frameworks"]["torch"] == "2.99.0"
    assert found["b"]["stack"]["frameworks"]["torch"] == "2.98.0"


def test_a_permission_change_alone_is_a_change(sandbox, tmp_path):
    """chmod moves a file's change time, not its modification time; an overlay made unreadable
    must be reported, not answered around."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "torch.toml").write_text(NEW_TORCH)
    env = {"CUDAENV_MATRIX_PATH": str(overlay)}
    assert sandbox.cudaenv(*QUESTION, **env).returncode == 0
    (overlay / "torch.toml").chmod(0o640)
    again = sandbox.cudaenv(*QUESTION, imports=True, **env)
    assert again.returncode == 0 and "cudaenv.resolver.resolve" in imported(again)  # answered afresh
