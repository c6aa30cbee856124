"""A hostile-input corpus through the real CLI entry point (in-process, so hundreds of cases stay
fast): for every case, no traceback, an exit code from the contract (0, 1, 2), and under --json
exactly one JSON object on stdout. Property-based where the inputs are open-ended."""

from __future__ import annotations

import contextlib
import io
import json
import os
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudaenv.cli import main

HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\n", "a\nRUN id", "$(id)", "`id`", "'; rm -rf / #", "\x00", "\x1b[31m", "²", "٥٠٠٠",
                     "9" * 5000, "-1", "1e309", "../../etc/passwd", "A" * 5000, "535.104.05\n", "８.０"]),
)
TOML_VALUES = st.one_of(HOSTILE_TEXT, st.integers(min_value=-(10**30), max_value=10**30), st.booleans(),
                        st.floats(allow_nan=False, allow_infinity=False), st.lists(HOSTILE_TEXT, max_size=3),
                        st.dictionaries(st.sampled_from(["a", "memlock", "X"]), HOSTILE_TEXT, max_size=2))
KEYS = [("project", "name"), ("project", "python"), ("project", "requirements"), ("frameworks", "torch"),
        ("cuda", "version"), ("cuda", "cudnn"), ("target", "driver"), ("target", "gpus"),
        ("target", "compute_capabilities"), ("build", "flavor"), ("build", "os"), ("build", "system_packages"),
        ("build", "base_registry"), ("build", "python_index"), ("build", "framework_index"), ("build", "ca_cert"),
        ("run", "gpus"), ("run", "shm_size"), ("run", "ipc"), ("run", "env"), ("run", "ports"), ("run", "command"),
        ("run", "ulimits")]


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `cudaenv ARGS`; any escaping exception fails the test."""
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.update(env or {})
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the point: nothing else may escape
        pytest.fail(f"cudaenv {' '.join(a[:60] for a in args)} raised:\n{traceback.format_exc()}")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out.getvalue(), err.getvalue()


def assert_contract(code: int, stdout: str, stderr: str, *, as_json: bool) -> None:
    assert code in (0, 1, 2), (code, stderr[-500:])
    assert "Traceback" not in stdout + stderr
    if as_json:
        value = json.loads(stdout)  # exactly one JSON value: json.loads refuses trailing data
        assert isinstance(value, dict)
        if code == 2:
            assert value["ok"] is False and {"code", "message", "file", "field"} <= set(value["error"])
    if code == 2:
        assert len(stderr.strip().splitlines()) == 1, stderr  # one line, never a dump


def toml_value(value) -> str:
    import tomlkit

    return tomlkit.item(value).as_string()


@pytest.fixture
def project(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(key=st.sampled_from(KEYS), value=TOML_VALUES)
def test_any_value_for_any_config_key_is_a_clean_answer(project, key, value):
    (project / "cudaenv.toml").write_text(f'[{key[0]}]\n{key[1]} = {toml_value(value)}\n', encoding="utf-8")
    for command in (["resolve", str(project), "--json"], ["check", str(project), "--driver", "550.54.15", "--json"]):
        code, out, err = invoke(*command)
        assert_contract(code, out, err, as_json=True)
        if code == 2:
            assert "cudaenv.toml" in err


FLAGS = ["--driver", "--gpu", "--compute-capability", "--torch", "--python", "--cuda", "--cudnn", "--tensorflow",
         "--jax", "--os", "--flavor"]


@settings(max_examples=150, deadline=None)
@given(flag=st.sampled_from(FLAGS), value=HOSTILE_TEXT)
def test_any_flag_value_is_a_clean_answer(flag, value):
    if value.startswith("-") or "\x00" in value:
        value = "x" + value.replace("\x00", "")
    code, out, err = invoke("resolve", flag, value, "--json")
    assert_contract(code, out, err, as_json=True)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS", "CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX"]),
       value=HOSTILE_TEXT.filter(lambda v: "\x00" not in v))
def test_any_environment_override_is_a_clean_answer(name, value):
    code, out, err = invoke("resolve", "--torch", "2.6", "--json", env={name: value})
    assert_contract(code, out, err, as_json=True)


# --- files that cannot be read as the user meant ---------------------------------------------------


def broken_files(tmp_path: Path) -> dict[str, Path]:
    cases = {}
    nested = tmp_path / "nested"
    nested.mkdir()
    (nested / "cudaenv.toml").write_text("[run]\nenv = " + "[" * 5000 + "]" * 5000 + "\n")
    cases["deeply nested TOML"] = nested
    latin = tmp_path / "latin1"
    latin.mkdir()
    (latin / "cudaenv.toml").write_bytes('[project]\nname = "caf\xe9"\n'.encode("latin-1"))
    cases["non-UTF-8 config"] = latin
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "cudaenv.toml").write_text('[project]\nrequirements = ["requirements.txt"]\n')
    (dangling / "requirements.txt").symlink_to(tmp_path / "missing.txt")
    cases["dangling requirements symlink"] = dangling
    directory_lock = tmp_path / "dirlock"
    directory_lock.mkdir()
    (directory_lock / "cudaenv.toml").write_text('[project]\nname = "x"\n')
    (directory_lock / "cudaenv.lock").mkdir()
    cases["a directory where the lock should be"] = directory_lock
    bad_lock = tmp_path / "badlock"
    bad_lock.mkdir()
    (bad_lock / "cudaenv.toml").write_text('[project]\nname = "x"\n')
    (bad_lock / "cudaenv.lock").write_text('cudaenv = 1\nmatrix_revision = []\ninputs_hash = {}\n[stack]\npython = 3\n')
    cases["a lock with values of the wrong type"] = bad_lock
    future_lock = tmp_path / "futurelock"
    future_lock.mkdir()
    (future_lock / "cudaenv.toml").write_text('[project]\nname = "x"\n')
    (future_lock / "cudaenv.lock").write_text('format = 99\ncudaenv = "9.0"\n')
    cases["a lock from a future cudaenv"] = future_lock
    return cases


@pytest.mark.parametrize("command", [["resolve"], ["lock", "--check"], ["check", "--driver", "550.54.15"],
                                     ["dockerfile"]])
def test_unreadable_or_malformed_project_files_are_one_line_errors(tmp_path, command):
    for label, directory in broken_files(tmp_path).items():
        args = [command[0], str(directory), *command[1:]]
        json_args = args + (["--json"] if command[0] != "dockerfile" else [])
        code, out, err = invoke(*json_args)
        assert_contract(code, out, err, as_json=command[0] != "dockerfile")
        if command[0] != "resolve" or "lock" not in label:  # resolve never reads the lock
            assert code in (1, 2), (label, code, err)


def test_a_one_megabyte_path_is_a_one_line_error():
    code, out, err = invoke("resolve", "x" * 1_000_000, "--json")
    assert_contract(code, out, err, as_json=True)
    assert code == 2 and len(err) < 2000


def test_a_matrix_overlay_that_cannot_be_read_is_a_one_line_error(tmp_path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "torch.toml").symlink_to(tmp_path / "gone.toml")
    code, out, err = invoke("resolve", "--torch", "2.6", "--json", env={"CUDAENV_MATRIX_PATH": str(overlay),
                                                                       "CUDAENV_NO_CACHE": "1"})
    assert_contract(code, out, err, as_json=True)
    assert code == 2 and "torch.toml" in err


def test_non_utf8_nvidia_smi_output_is_a_clean_detection_error(tmp_path):
    """A driver tool printing bytes that are not UTF-8 (a broken locale, a corrupted install)."""
    from cudaenv.hosts.detect import HostDetectionError, from_nvidia_smi

    fake = tmp_path / "nvidia-smi"
    fake.write_bytes(b"#!/bin/sh\nprintf '0, NVIDIA \\377\\376 A100, 8.0, 81920, GPU-1, 550.54.15\\n'\n")
    fake.chmod(0o755)
    try:
        info = from_nvidia_smi(str(fake))
    except HostDetectionError as exc:  # refused with what it said: fine
        assert "nvidia-smi" in str(exc)
    else:
        assert info is None or info.driver == "550.54.15"


@pytest.mark.parametrize("header,expected", [
    ('format = 3\ncudaenv = "9.1.0"\n', "format 3, written by cudaenv 9.1.0; this cudaenv reads formats 1 and 2: upgrade"),
    ('cudaenv = "0.1.0"\n', "no format, written by cudaenv 0.1.0"),
    ('format = "one"\n', "format 'one'"),
])
def test_a_lock_of_another_format_says_which_cudaenv_wrote_it(tmp_path, header, expected):
    from cudaenv.errors import UserError
    from cudaenv.project.lock import read_lock

    path = tmp_path / "cudaenv.lock"
    path.write_text(header + 'matrix_revision = "x"\ninputs_hash = "y"\n')
    with pytest.raises(UserError, match="format") as caught:
        read_lock(path)
    assert expected in str(caught.value) and str(path) in str(caught.value)


@pytest.mark.parametrize("prefix,ok", [("registry.example.com:5000/team", True), ("127.0.0.1:5000", True),
                                       ("registry.example.com:99999/team", False), ("reg.example.com:٥٠٠٠", False),
                                       ("reg.example.com/Team", False), ("x" * 300, False)])
def test_registry_prefixes_docker_would_refuse_are_refused_up_front(tmp_path, prefix, ok):
    (tmp_path / "cudaenv.toml").write_text(f'[build]\nbase_registry = "{prefix}"\n', encoding="utf-8")
    code, out, err = invoke("resolve", str(tmp_path), "--json", "--no-detect")
    assert_contract(code, out, err, as_json=True)
    assert (code != 2) == ok, err
    if not ok:
        assert "build.base_registry" in err


def test_an_image_name_longer_than_docker_allows_is_refused(tmp_path):
    (tmp_path / "cudaenv.toml").write_text(f'[project]\nname = "{"a" * 300}"\n')
    code, out, err = invoke("resolve", str(tmp_path), "--json")
    assert code == 2 and "project.name" in err


def test_a_build_tag_that_is_not_one_reference_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "x"\n')
    code, out, err = invoke("build", str(tmp_path), "-t", "bad tag\nRUN id", "--json")
    assert code == 2 and "--tag" in err and json.loads(out)["error"]["code"] == "bad-input"


@pytest.mark.parametrize("name", ["cudaenv.toml", "cudaenv.lock", "overlay"], ids=["config", "lock", "matrix-overlay"])
@pytest.mark.parametrize("text", ["v = " + "1" * 5000 + "\n", "a = " + "[" * 5000 + "]" * 5000 + "\n"],
                         ids=["huge-integer", "deep-array"])
def test_a_pathological_toml_file_names_itself(tmp_path, name, text):
    """'input nested too deeply' alone does not say which file: each reader names its own."""
    from cudaenv.errors import UserError
    from cudaenv.matrix.load import read_toml as read_matrix_toml
    from cudaenv.project.config import load_project
    from cudaenv.project.lock import read_lock

    path = tmp_path / ("torch.toml" if name == "overlay" else name)
    path.write_text(text)
    read = {"cudaenv.toml": lambda: load_project(tmp_path), "cudaenv.lock": lambda: read_lock(path),
            "overlay": lambda: read_matrix_toml(path)}[name]
    with pytest.raises(UserError) as caught:
        read()
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)
