"""The rules of ``cudaenv.project.served``: when two index URLs name one index, which index a URL is
known as, and what the framework index serves when configuration and environment both speak (the
environment first), with the messages that name where a bad value came from."""

from __future__ import annotations

import pytest

from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import ConfigError
from cudaenv.project.served import INDEX_ENV, MIRRORS_ENV, _canonical, recognized, same_index, served_by
from cudaenv.resolver.model import PYPI

CU126 = "https://download.pytorch.org/whl/cu126"
CU128 = "https://download.pytorch.org/whl/cu128"
MIRROR = "https://mirror.example/simple"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def no_index_environment(monkeypatch):
    monkeypatch.delenv(INDEX_ENV, raising=False)
    monkeypatch.delenv(MIRRORS_ENV, raising=False)


def project(tmp_path, build: str = ""):
    (tmp_path / "cudaenv.toml").write_text(f'[project]\nname = "p"\n\n[frameworks]\ntorch = "any"\n\n[build]\n{build}')
    return load_project(tmp_path)


# --- one index, however it is spelled ------------------------------------------------------------


@pytest.mark.parametrize("url, canonical", [
    ("https://pypi.org/simple", "https://pypi.org/simple"),
    ("  HTTPS://PyPI.ORG/simple/  ", "https://pypi.org/simple"),
    ("https://user:secret@pypi.org/simple", "https://pypi.org/simple"),
    ("https://mirror.example:8443/simple/", "https://mirror.example:8443/simple"),
    ("https://pypi.org/simple?token=1#top", "https://pypi.org/simple"),
    ("https://pypi.org/Simple", "https://pypi.org/Simple"),
    ("https:///simple", "https:///simple"),
    ("https://mirror.example/pkgs/X/", "https://mirror.example/pkgs/X"),
], ids=["plain", "case-space-slash", "credentials", "port", "query-fragment", "path-case", "no-host", "path-end"])
def test_an_index_url_is_compared_without_credentials_slash_query_or_case_of_scheme_and_host(url, canonical):
    assert _canonical(url) == canonical


def test_two_spellings_of_one_index_are_the_same_index():
    assert same_index("https://u:p@Download.PyTorch.org/whl/cu126/", CU126)
    assert same_index(" https://pypi.org/simple ", "HTTPS://PYPI.ORG/simple/")


@pytest.mark.parametrize("other", [
    "https://download.pytorch.org/whl/cu128", "https://download.pytorch.org:8443/whl/cu126",
    "http://download.pytorch.org/whl/cu126", "https://mirror.pytorch.org/whl/cu126",
    "https://download.pytorch.org/whl/CU126",
], ids=["other-path", "other-port", "other-scheme", "other-host", "path-case"])
def test_another_path_port_scheme_or_host_is_another_index(other):
    assert not same_index(other, CU126)


def test_a_url_without_a_host_is_not_an_index_with_one():
    assert not same_index("https:///simple", "https://xxxx/simple")


def test_pypi_and_a_builds_own_index_are_recognized_by_their_urls():
    own = (CU126, CU128)
    assert recognized("https://pypi.org/simple/", own) == PYPI
    assert recognized("https://u:p@download.pytorch.org/whl/cu128/", own) == CU128  # the matrix's spelling
    assert recognized(MIRROR, own) is None
    assert recognized("https://pypi.org/simple/extra", own) is None


# --- what the framework index serves -------------------------------------------------------------


def test_a_mirror_the_file_declares_is_known_by_what_it_mirrors(tmp_path, matrix):
    configured = project(tmp_path, f'framework_index = "{MIRROR}"\nframework_index_mirrors = "{CU126}/"')
    assert served_by(matrix, configured) == CU126


def test_the_environments_mirrors_setting_wins_over_the_files(tmp_path, matrix, monkeypatch):
    configured = project(tmp_path, f'framework_index = "{MIRROR}"\nframework_index_mirrors = "{CU126}"')
    monkeypatch.setenv(MIRRORS_ENV, "pypi")
    assert served_by(matrix, configured) == PYPI
    monkeypatch.setenv(MIRRORS_ENV, CU128)
    assert served_by(matrix, configured) == CU128


@pytest.mark.parametrize("value", ["PyPI", " pypi ", "PYPI"], ids=["mixed-case", "spaces", "upper"])
def test_the_environment_may_spell_pypi_in_any_case(tmp_path, matrix, monkeypatch, value):
    monkeypatch.setenv(INDEX_ENV, MIRROR)
    monkeypatch.setenv(MIRRORS_ENV, value)
    assert served_by(matrix, project(tmp_path)) == PYPI


def test_an_environment_index_that_says_nothing_of_what_it_mirrors_serves_each_builds_own(tmp_path, matrix,
                                                                                          monkeypatch):
    monkeypatch.setenv(INDEX_ENV, MIRROR)
    assert served_by(matrix, project(tmp_path)) is None


def test_an_empty_environment_index_leaves_the_files(tmp_path, matrix, monkeypatch):
    monkeypatch.setenv(INDEX_ENV, "")
    assert served_by(matrix, project(tmp_path, f'framework_index = "{CU126}"')) == CU126


def test_a_bad_environment_index_names_the_variable(tmp_path, matrix, monkeypatch):
    monkeypatch.setenv(INDEX_ENV, "file:///etc")
    with pytest.raises(UserError) as raised:
        served_by(matrix, project(tmp_path))
    assert str(raised.value) == f"{INDEX_ENV}: expected an http(s):// URL of a package index, got 'file:///etc'"


def test_a_bad_mirrors_variable_says_what_it_expects(tmp_path, matrix, monkeypatch):
    monkeypatch.setenv(MIRRORS_ENV, "anaconda")
    with pytest.raises(UserError) as raised:
        served_by(matrix, project(tmp_path))
    assert str(raised.value) == (f'{MIRRORS_ENV}: expected "pypi" or the URL of the index {INDEX_ENV} mirrors, '
                                 "got 'anaconda'")


def test_the_environment_mirroring_an_index_the_matrix_does_not_know_is_the_variables_error(tmp_path, matrix,
                                                                                            monkeypatch):
    """Not a configuration error: the file is right, the variable is not (exit 2 either way)."""
    monkeypatch.setenv(INDEX_ENV, MIRROR)
    monkeypatch.setenv(MIRRORS_ENV, "https://download.pytorch.org/whl/cu999")
    with pytest.raises(UserError) as raised:
        served_by(matrix, project(tmp_path))
    assert not isinstance(raised.value, ConfigError)
    assert str(raised.value) == (
        f'{MIRRORS_ENV}: expected "pypi" or a framework build\'s own index (https://download.pytorch.org/whl/cu100, '
        "https://download.pytorch.org/whl/cu101, …; see `cudaenv matrix show torch`), "
        "got 'https://download.pytorch.org/whl/cu999'")


def test_the_file_mirroring_an_index_the_matrix_does_not_know_names_the_file_and_key(tmp_path, matrix):
    configured = project(tmp_path, f'framework_index = "{MIRROR}"\n'
                                   'framework_index_mirrors = "https://download.pytorch.org/whl/cu999"')
    with pytest.raises(ConfigError) as raised:
        served_by(matrix, configured)
    assert str(raised.value).startswith(f"{tmp_path / 'cudaenv.toml'}: build.framework_index_mirrors: expected "
                                        '"pypi" or a framework build\'s own index (')
    assert str(raised.value).endswith("got 'https://download.pytorch.org/whl/cu999'")


@pytest.mark.parametrize("own, shown", [
    ((CU126,), CU126),
    ((CU126, CU128), f"{CU126}, {CU128}"),
    ((CU126, CU128, "https://download.pytorch.org/whl/cu130"), f"{CU126}, {CU128}, …"),
], ids=["one", "two", "three"])
def test_the_indexes_a_mirror_may_name_are_shown_two_at_most(tmp_path, matrix, monkeypatch, own, shown):
    import cudaenv.resolver.resolve

    monkeypatch.setattr(cudaenv.resolver.resolve, "own_indexes", lambda _matrix: own)
    monkeypatch.setenv(INDEX_ENV, MIRROR)
    monkeypatch.setenv(MIRRORS_ENV, "https://download.pytorch.org/whl/cu999")
    with pytest.raises(UserError) as raised:
        served_by(matrix, project(tmp_path))
    assert f"own index ({shown}; see" in str(raised.value)
