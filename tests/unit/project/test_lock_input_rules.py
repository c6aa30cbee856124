"""The small rules around a lock, each pinned by a table: which index wins (environment, then
[build], then the stack's or the lock's own), what a pinned line may be, how a requirements file
is read as pip reads it (comments, continuations, per-line options, URLs), and where the atomic
write puts its temporary file."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import InvalidRequirement, Requirement

from cudaenv.errors import UserError
from cudaenv.project.lock import (PYPI_SIMPLE, check_pin, check_requirements_file, framework_index, python_index,
                                  strip_credentials, write_atomically)

OWN = "https://download.pytorch.org/whl/cu126"
ENV = "https://env.example/simple"
CONFIGURED = "https://configured.example/simple"


def project(python="", framework=""):
    return SimpleNamespace(build=SimpleNamespace(python_index=python, framework_index=framework))


@pytest.mark.parametrize("env, configured, own, chosen", [
    (ENV, CONFIGURED, OWN, ENV),
    (None, CONFIGURED, OWN, CONFIGURED),
    (None, "", OWN, OWN),
    (ENV, CONFIGURED, None, None),
    (None, CONFIGURED, "", None),
], ids=["environment-first", "then-build", "then-own", "no-own-index-no-framework-index", "empty-own-index"])
def test_the_framework_index_is_the_environments_then_the_configured_then_the_builds_own(monkeypatch, env, configured,
                                                                                       own, chosen):
    """A CI mirror overrides the committed setting; a build with no index of its own has none to replace."""
    if env:
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", env)
    else:
        monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX", raising=False)
    assert framework_index(project(framework=configured), own) == chosen


@pytest.mark.parametrize("env, configured, chosen", [
    (ENV, CONFIGURED, ENV), (None, CONFIGURED, CONFIGURED), (None, "", "https://recorded.example/simple"),
], ids=["environment-first", "then-build", "then-recorded"])
def test_the_python_index_is_the_environments_then_the_configured_then_the_recorded(monkeypatch, env, configured, chosen):
    if env:
        monkeypatch.setenv("CUDAENV_PYTHON_INDEX", env)
    else:
        monkeypatch.delenv("CUDAENV_PYTHON_INDEX", raising=False)
    assert python_index(project(python=configured), "https://recorded.example/simple") == chosen


def test_the_python_index_defaults_to_pypi(monkeypatch):
    monkeypatch.delenv("CUDAENV_PYTHON_INDEX", raising=False)
    assert python_index(project()) == PYPI_SIMPLE


def test_an_index_variable_that_is_no_url_is_bad_input_naming_it(monkeypatch):
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "ftp://x")
    with pytest.raises(UserError, match=r"^CUDAENV_FRAMEWORK_INDEX: expected an http\(s\):// URL of a package index, "
                                        r"got 'ftp://x'$"):
        framework_index(project(), OWN)


@pytest.mark.parametrize("url, written", [
    ("https://user:token@host.example/simple", "https://host.example/simple"),
    ("https://user@host.example:8443/simple?x=1#f", "https://host.example:8443/simple?x=1#f"),
    ("https://:token@host.example/simple", "https://host.example/simple"),
    ("https://host.example/simple", "https://host.example/simple"),
    (None, None),
], ids=["user-and-token", "user-port-query", "token-only", "none-to-strip", "no-url"])
def test_credentials_are_never_written_down(url, written):
    assert strip_credentials(url) == written


@pytest.mark.parametrize("value, said", [
    ("-r other.txt", "'-r other.txt' is not a pinned requirement (run `cudaenv lock` to rewrite the lock)"),
    ("numpy==2.1.3\x00", "'numpy==2.1.3\\x00' is not a pinned requirement (run `cudaenv lock` to rewrite the lock)"),
    ("numpy==2.1.3\x7f", "'numpy==2.1.3\\x7f' is not a pinned requirement (run `cudaenv lock` to rewrite the lock)"),
    ("numpy==2.1.3\n", "'numpy==2.1.3\\n' is not a pinned requirement (run `cudaenv lock` to rewrite the lock)"),
    (5, "5 is not a pinned requirement (run `cudaenv lock` to rewrite the lock)"),
], ids=["option", "nul", "del", "newline", "not-text"])
def test_a_pinned_line_that_could_smuggle_an_option_or_a_line_is_refused(value, said):
    """Pins become RUN lines: an option or a control character in one is tampering, refused before it gets there."""
    with pytest.raises(UserError) as caught:
        check_pin(value, "cudaenv.lock: requirements.pinned[0]")
    assert str(caught.value) == f"cudaenv.lock: requirements.pinned[0]: {said}"


def test_a_pinned_line_that_is_no_requirement_says_why():
    with pytest.raises(InvalidRequirement) as reason:
        Requirement("numpy==")
    with pytest.raises(UserError) as caught:
        check_pin("numpy==", "w")
    assert str(caught.value) == f"w: 'numpy==' is not a pinned requirement ({reason.value})"
    assert check_pin("numpy==2.1.3 ; python_version >= '3.9'", "w") == "numpy==2.1.3 ; python_version >= '3.9'"


@pytest.mark.parametrize("text", [
    "numpy==2.1.3 # a # b\n",
    "\t# an indented comment\n",
    "numpy \\\n>=2, \\\n<3\n",
    "numpy==2.1.3 \\\n# a comment ends the continuation\n",
    "numpy==2.1.3 --hash=sha256:aa --hash=sha256:bb\n",
], ids=["comment-with-hash", "tab-comment", "three-line-continuation", "continued-into-a-comment", "two-hashes"])
def test_what_pip_reads_passes(tmp_path, text):
    path = tmp_path / "r.txt"
    path.write_text(text)
    check_requirements_file(path, "r.txt")


def first_line_of(requirement: str) -> str:
    with pytest.raises(InvalidRequirement) as caught:
        Requirement(requirement)
    return str(caught.value).splitlines()[0][:120]


def test_a_line_with_a_url_after_its_name_is_still_checked(tmp_path):
    """Only a bare URL (a wheel or archive) is left to uv: ``name @ URL`` is a requirement and must read."""
    path = tmp_path / "r.txt"
    path.write_text("not valid @ https://example.com/x.whl\n")
    with pytest.raises(UserError) as caught:
        check_requirements_file(path, "r.txt")
    assert str(caught.value) == (f"r.txt:1: 'not valid @ https://example.com/x.whl' is not a requirement pip can read "
                                 f"({first_line_of('not valid @ https://example.com/x.whl')})")


def test_a_long_bad_line_is_shown_cut_to_80_characters(tmp_path):
    line = "numpy" + "!" * 100
    path = tmp_path / "r.txt"
    path.write_text(f"six\n\n{line}\n")
    with pytest.raises(UserError) as caught:
        check_requirements_file(path, "r.txt")
    assert str(caught.value) == f"r.txt:3: {line[:80]!r} is not a requirement pip can read ({first_line_of(line)})"


def test_the_lock_is_written_through_a_hidden_temporary_file_beside_it(tmp_path, monkeypatch):
    """Same directory (so the rename is atomic), hidden, and recognisably the lock's while it exists."""
    renamed = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: renamed.append((Path(src), Path(dst))) or real(src, dst))
    path = tmp_path / "cudaenv.lock"
    write_atomically(path, "format = 1\n")
    (src, dst), = renamed
    assert dst == path and src.parent == tmp_path
    assert src.name.startswith(".cudaenv.lock.") and src.name.endswith(".tmp")
    assert path.read_text() == "format = 1\n" and list(tmp_path.iterdir()) == [path]


def test_a_new_lock_is_readable_by_everyone_the_umask_allows(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "cudaenv.lock", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "cudaenv.lock").stat().st_mode & 0o777 == 0o640
