"""Where an index credential comes from (``cudaenv.secrets.credentials``), source by source, and
every refusal word for word: a secret is never guessed, never empty by accident, never spliced."""

from __future__ import annotations

import pytest

from cudaenv.errors import UserError
from cudaenv.secrets.credentials import (Credential, credential_for, from_environment, from_netrc, from_url,
                                         netrc_path, netrc_text, refuse_userinfo)


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    for name in ("NETRC", "CUDAENV_PYTHON_INDEX_USERNAME", "CUDAENV_PYTHON_INDEX_PASSWORD",
                 "CUDAENV_FRAMEWORK_INDEX_USERNAME", "CUDAENV_FRAMEWORK_INDEX_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_a_url_gives_its_decoded_user_info_with_its_source():
    assert from_url("https://me%40corp:p%2Fss@pypi.example/simple", "CUDAENV_PYTHON_INDEX") == Credential(
        "pypi.example", "me@corp", "p/ss", "CUDAENV_PYTHON_INDEX")
    assert from_url("https://token@pypi.example/simple", "X") == Credential("pypi.example", "token", "", "X")
    assert from_url("https://:secret@pypi.example/simple", "X") == Credential("pypi.example", "", "secret", "X")
    assert from_url("https://pypi.example/simple", "X") is None


def test_the_environment_pair_is_for_that_index_host(monkeypatch):
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX_USERNAME", "me")
    assert from_environment("https://pypi.example/simple", "python") == Credential(
        "pypi.example", "me", "", "CUDAENV_PYTHON_INDEX_USERNAME/CUDAENV_PYTHON_INDEX_PASSWORD")
    monkeypatch.delenv("CUDAENV_PYTHON_INDEX_USERNAME")
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX_PASSWORD", "tok")
    assert from_environment("https://pypi.example/simple", "python") == Credential(
        "pypi.example", "", "tok", "CUDAENV_PYTHON_INDEX_USERNAME/CUDAENV_PYTHON_INDEX_PASSWORD")
    assert from_environment("https://pypi.example/simple", "framework") is None
    with pytest.raises(UserError, match="^CUDAENV_PYTHON_INDEX_USERNAME/CUDAENV_PYTHON_INDEX_PASSWORD: expected an "
                                        "index URL with a host name$"):
        from_environment("https:///simple", "python")


def test_the_netrc_is_netrc_else_home(monkeypatch, tmp_path):
    assert netrc_path() == tmp_path / "home" / ".netrc"
    monkeypatch.setenv("NETRC", str(tmp_path / "mine"))
    assert netrc_path() == tmp_path / "mine"


def test_a_netrc_entry_for_the_host_is_used_and_names_its_file(monkeypatch, tmp_path):
    path = tmp_path / "netrc"
    path.write_text("machine pypi.example login me password tok\nmachine other.example login x password y\n")
    path.chmod(0o600)
    monkeypatch.setenv("NETRC", str(path))
    assert from_netrc("https://pypi.example/simple") == Credential("pypi.example", "me", "tok", str(path))
    assert from_netrc("https://third.example/simple") is None
    assert from_netrc("https:///simple") is None
    path.write_text("machine pypi.example password tok\n")
    assert from_netrc("https://pypi.example/simple") == Credential("pypi.example", "", "tok", str(path))
    path.unlink()
    assert from_netrc("https://pypi.example/simple") is None


def test_a_malformed_netrc_is_ignored_as_pip_does(monkeypatch, tmp_path):
    path = tmp_path / "netrc"
    path.write_text("machine\n")
    monkeypatch.setenv("NETRC", str(path))
    assert from_netrc("https://pypi.example/simple") is None


def test_the_url_comes_first_then_the_environment_then_the_netrc(monkeypatch, tmp_path):
    path = tmp_path / "netrc"
    path.write_text("machine pypi.example login n password n\n")
    path.chmod(0o600)
    monkeypatch.setenv("NETRC", str(path))
    assert credential_for("https://pypi.example/simple", "python").source == str(path)
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX_USERNAME", "e")
    assert credential_for("https://pypi.example/simple", "python").login == "e"
    assert credential_for("https://u:p@pypi.example/simple", "python").login == "u"
    assert credential_for(None, "python") is None and credential_for("", "python") is None


@pytest.mark.parametrize("url, part", [("https://me%20x:p@h.example/s", "user name"), ("https://me:p%0Aq@h.example/s", "password"),
                                       ("https://me:p%22@h.example/s", "password"), ("https://m%5C:p@h.example/s", "user name")],
                         ids=["space", "newline", "quote", "backslash"])
def test_a_value_a_netrc_cannot_carry_is_refused_naming_the_part(url, part):
    with pytest.raises(UserError) as caught:
        from_url(url, "CUDAENV_PYTHON_INDEX")
    assert str(caught.value) == (f"CUDAENV_PYTHON_INDEX: the index {part} contains whitespace, a quote, a backslash or "
                                 "a control character (after percent-decoding); such a value cannot be passed safely")


def test_a_url_with_credentials_in_a_committed_file_is_refused_word_for_word():
    refuse_userinfo("https://pypi.example/simple", "cudaenv.toml: build.python_index")
    refuse_userinfo("", "cudaenv.toml: build.python_index")
    with pytest.raises(UserError) as caught:
        refuse_userinfo("https://u:p@pypi.example/simple", "cudaenv.toml: build.python_index")
    assert str(caught.value) == (
        "cudaenv.toml: build.python_index: expected an index URL without credentials (user:password@ in a committed "
        "file is copied into the image and every clone); put the URL with credentials in the environment "
        "(CUDAENV_PYTHON_INDEX / CUDAENV_FRAMEWORK_INDEX), or set <VAR>_USERNAME / <VAR>_PASSWORD, or use ~/.netrc")


def test_the_netrc_text_has_one_entry_per_host_the_first_winning():
    a, b = Credential("h.example", "a", "1", "x"), Credential("h.example", "b", "2", "y")
    assert netrc_text([None, a, b, Credential("g.example", "c", "3", "z")]) == (
        "machine h.example login a password 1\nmachine g.example login c password 3\n")
    assert netrc_text([]) == ""


def test_a_host_with_a_quote_is_refused():
    with pytest.raises(UserError, match="expected an index URL with a host name"):
        from_url("https://u:p@h'x.example/s", "SRC")
