"""What the framework index serves, as configuration and environment say (issue 23, class 1):
PyPI and PyTorch's own indexes are known by their URLs; a mirror says what it mirrors."""

from __future__ import annotations

import pytest

from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import ConfigError
from cudaenv.project.served import served_by
from cudaenv.resolver.model import PYPI

CU126 = "https://download.pytorch.org/whl/cu126"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def no_index_environment(monkeypatch):
    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX", raising=False)
    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX_MIRRORS", raising=False)


def project(tmp_path, build: str):
    (tmp_path / "cudaenv.toml").write_text(f'[project]\nname = "p"\n\n[frameworks]\ntorch = "any"\n\n[build]\n{build}')
    return load_project(tmp_path)


@pytest.mark.parametrize("build,served", [
    ("", None),
    ('framework_index = "https://pypi.org/simple/"', PYPI),
    (f'framework_index = "{CU126}/"', CU126),
    ('framework_index = "https://mirror.example/simple"', None),  # says nothing: each build's own, as before
    ('framework_index = "https://mirror.example/simple"\nframework_index_mirrors = "pypi"', PYPI),
    (f'framework_index = "https://mirror.example/cu126"\nframework_index_mirrors = "{CU126}"', CU126),
])
def test_what_the_configured_framework_index_serves(tmp_path, matrix, build, served):
    assert served_by(matrix, project(tmp_path, build)) == served


def test_the_environment_index_is_known_by_its_url_or_the_mirrors_it_declares(tmp_path, matrix, monkeypatch):
    configured = project(tmp_path, f'framework_index = "{CU126}"')
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://pypi.org/simple")
    assert served_by(matrix, configured) == PYPI
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://ci-mirror.example/simple")
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX_MIRRORS", "pypi")
    assert served_by(matrix, configured) == PYPI


def test_a_mirror_of_an_index_the_matrix_does_not_know_is_bad_input(tmp_path, matrix):
    configured = project(tmp_path, 'framework_index = "https://mirror.example/simple"\n'
                                   'framework_index_mirrors = "https://download.pytorch.org/whl/cu999"')
    with pytest.raises(ConfigError, match=r"cudaenv.toml: build.framework_index_mirrors: expected \"pypi\" or"):
        served_by(matrix, configured)


@pytest.mark.parametrize("build,expected", [
    ('framework_index_mirrors = "pypi"', "no framework_index is set"),
    ('framework_index = "https://m.example/simple"\nframework_index_mirrors = "anaconda"', 'expected "pypi" or'),
])
def test_malformed_mirror_settings_name_the_key(tmp_path, build, expected):
    with pytest.raises(ConfigError, match="build.framework_index_mirrors") as raised:
        project(tmp_path, build)
    assert expected in str(raised.value)


def test_the_mirrors_setting_never_carries_credentials(tmp_path):
    with pytest.raises(UserError, match="framework_index_mirrors"):
        project(tmp_path, 'framework_index = "https://m.example/simple"\n'
                          'framework_index_mirrors = "https://u:secret@download.pytorch.org/whl/cu126"')


@pytest.mark.parametrize("name, value", [
    ("CUDAENV_FRAMEWORK_INDEX", "file:///etc"),
    ("CUDAENV_FRAMEWORK_INDEX", "download.pytorch.org/whl/cu126"),
    ("CUDAENV_FRAMEWORK_INDEX", "https://host/simple'; rm -rf ~"),
    ("CUDAENV_FRAMEWORK_INDEX_MIRRORS", "nonsense"),
    ("CUDAENV_FRAMEWORK_INDEX_MIRRORS", "ftp://mirror.example/simple"),
], ids=["file-url", "no-scheme", "quote", "mirrors-word", "mirrors-ftp"])
def test_the_environment_overrides_are_read_as_strictly_as_the_file_keys(tmp_path, matrix, monkeypatch, name, value):
    """An override a CI job exports decides resolution like [build] framework_index does: what the
    file may not say, the environment may not say either (it was used unchecked before)."""
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError) as raised:
        served_by(matrix, project(tmp_path, ""))
    assert str(raised.value).startswith(f"{name}: expected ")
    assert repr(value) in str(raised.value)


def test_a_mirrors_override_without_any_index_is_still_checked_but_harmless_when_right(tmp_path, matrix, monkeypatch):
    """No framework index anywhere: a well-formed mirrors override changes nothing."""
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX_MIRRORS", "pypi")
    assert served_by(matrix, project(tmp_path, "")) is None


BAD_URLS = {"port-too-big": "https://ex.com:99999/simple", "port-unicode-digits": "https://ex.com:\u0668\u0660/simple",
            "ipv6-unclosed": "https://[::1/simple", "no-host": "https://:80/simple", "port-word": "https://ex.com:http/simple"}


@pytest.mark.parametrize("case", sorted(BAD_URLS))
@pytest.mark.parametrize("where", ["env-index", "env-mirrors", "python_index", "framework_index", "mirrors"])
def test_a_url_whose_port_or_host_cannot_be_read_is_bad_input_not_a_traceback(tmp_path, matrix, monkeypatch, case, where):
    """urllib raises ValueError on such a port or bracket where the index is compared or stripped of
    credentials: refused where it is read, naming where it came from."""
    url = BAD_URLS[case]
    if where == "env-index":
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", url)
    elif where == "env-mirrors":
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://mirror.example/simple")
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX_MIRRORS", url)
    build = {"python_index": f'python_index = "{url}"', "framework_index": f'framework_index = "{url}"',
             "mirrors": f'framework_index = "https://mirror.example/simple"\nframework_index_mirrors = "{url}"'}.get(where, "")
    with pytest.raises(UserError) as raised:
        served_by(matrix, project(tmp_path, build))
    label = {"env-index": "CUDAENV_FRAMEWORK_INDEX: ", "env-mirrors": "CUDAENV_FRAMEWORK_INDEX_MIRRORS: "}.get(
        where, f"{tmp_path / 'cudaenv.toml'}: build.{'framework_index_mirrors' if where == 'mirrors' else where}: ")
    assert str(raised.value).startswith(label) and repr(url) in str(raised.value)


def test_a_url_with_a_port_in_range_is_an_index(tmp_path, matrix, monkeypatch):
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://[::1]:65535/simple")
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX_MIRRORS", "pypi")
    assert served_by(matrix, project(tmp_path, "")) == PYPI
