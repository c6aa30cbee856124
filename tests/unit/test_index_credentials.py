"""Index credentials come from the environment or the user's netrc, never from a committed file;
they reach uv and the build as a private netrc, never the lock, the Dockerfile, a label or argv."""

from __future__ import annotations

import os
import stat

import pytest

from cudaenv.errors import UserError
from cudaenv.images.plan import plan_image
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import index_netrc, make_lock, read_lock, strip_credentials
from cudaenv.resolver.resolve import resolve
from cudaenv.secrets.credentials import Credential, credential_for, netrc_text
from cudaenv.hosts.target import project_target

SECRET = "s3cr3t-t0ken"
HOST = "pypi.corp.example"
PLAIN = f"https://{HOST}/simple"
WITH_CREDENTIALS = f"https://alice:{SECRET}@{HOST}/simple"
ENV_NAMES = ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_PYTHON_INDEX_USERNAME",
             "CUDAENV_PYTHON_INDEX_PASSWORD", "CUDAENV_FRAMEWORK_INDEX_USERNAME", "CUDAENV_FRAMEWORK_INDEX_PASSWORD")


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch, tmp_path):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))


def write_config(directory, index=PLAIN, table="cudaenv.toml"):
    body = (f'[project]\nname = "creds"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
            f'[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n\n[build]\nflavor = "runtime"\npython_index = "{index}"\n')
    if table == "pyproject.toml":
        body = "[project]\nname = 'x'\nversion = '0'\n\n" + body.replace("[project]\nname = \"creds\"", "[tool.cudaenv.project]\nname = \"creds\"").replace(
            "\n[", "\n[tool.cudaenv.").replace("[tool.cudaenv.tool.cudaenv.", "[tool.cudaenv.")
    (directory / table).write_text(body)


def locked(tmp_path):
    matrix = load_matrix(overlays=[])
    write_config(tmp_path)
    p = load_project(tmp_path)
    stack = resolve(matrix, p.constraints, project_target(matrix, p).host).stack
    lock = make_lock(p, stack, matrix_revision=matrix.revision, target={}, pinned=["six==1.16.0"])
    p.lock_path.write_text(lock.as_toml())
    return matrix, p, read_lock(p.lock_path)


@pytest.mark.parametrize("table", ["cudaenv.toml", "pyproject.toml"])
def test_a_committed_config_with_credentials_in_an_index_url_is_refused(tmp_path, table):
    write_config(tmp_path, WITH_CREDENTIALS, table)
    with pytest.raises(UserError) as caught:
        load_project(tmp_path)
    message = str(caught.value)
    assert table in message and "build.python_index" in message and "without credentials" in message
    assert SECRET not in message
    assert caught.value.exit_code == 2


def test_a_lock_that_records_credentials_is_refused(tmp_path):
    _, p, _ = locked(tmp_path)
    text = p.lock_path.read_text().replace(f'"{PLAIN}"', f'"{WITH_CREDENTIALS}"')
    assert WITH_CREDENTIALS in text
    p.lock_path.write_text(text)
    with pytest.raises(UserError, match="requirements.python_index: expected an index URL without credentials"):
        read_lock(p.lock_path)


def test_strip_credentials_keeps_host_port_and_path():
    assert strip_credentials("https://u:p@host.example:8443/simple/") == "https://host.example:8443/simple/"
    assert strip_credentials("https://host.example/simple") == "https://host.example/simple"


def test_credentials_in_an_index_url_from_the_environment_become_a_private_netrc_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", WITH_CREDENTIALS)
    matrix, p, lock = locked(tmp_path)
    plan = plan_image(p, matrix, lock, buildkit=True)
    assert SECRET not in plan.dockerfile and SECRET not in p.lock_path.read_text()
    assert f"--index-url {PLAIN}" in plan.dockerfile
    assert "--mount=type=secret,id=cudaenv_netrc,target=/root/.netrc" in plan.dockerfile
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    request = plan.request(secrets_dir=secrets)
    netrc = request.secrets["cudaenv_netrc"]
    assert netrc.read_text() == f"machine {HOST} login alice password {SECRET}\n"
    assert stat.S_IMODE(os.stat(netrc).st_mode) == 0o600
    assert SECRET not in repr(request.build_args) and SECRET not in repr(request.labels)


def test_per_index_username_and_password_variables_apply_to_that_index_host(monkeypatch):
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX_USERNAME", "bob")
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX_PASSWORD", SECRET)
    assert index_netrc(PLAIN, "https://wheels.corp.example/cu126") == \
        f"machine wheels.corp.example login bob password {SECRET}\n"
    assert credential_for(PLAIN, "python") is None  # the python index's own variables are unset


def test_the_users_netrc_supplies_credentials_for_its_host(tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine {HOST}\n  login carol\n  password {SECRET}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    found = credential_for(PLAIN, "python")
    assert (found.host, found.login, found.password) == (HOST, "carol", SECRET)
    assert credential_for("https://elsewhere.example/simple", "python") is None


@pytest.mark.parametrize("password", ["a%0Amachine%20evil", "tab%09here", "nul%00", "sp%20ace", "quote%22"])
def test_a_percent_encoded_control_character_or_space_in_a_password_is_refused(monkeypatch, password):
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", f"https://alice:{password}@{HOST}/simple")
    with pytest.raises(UserError, match="CUDAENV_PYTHON_INDEX: the index password contains"):
        index_netrc(os.environ["CUDAENV_PYTHON_INDEX"], None)


def test_a_control_character_in_a_username_variable_is_refused(monkeypatch):
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX_USERNAME", "alice\nmachine evil login x password y")
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX_PASSWORD", SECRET)
    with pytest.raises(UserError, match="user name contains"):
        index_netrc(PLAIN, None)


def test_without_credentials_there_is_no_netrc(tmp_path):
    matrix, p, lock = locked(tmp_path)
    plan = plan_image(p, matrix, lock, buildkit=True)
    assert "cudaenv_netrc" not in plan.dockerfile and plan.netrc == ""


def test_netrc_has_one_entry_per_host():
    first = Credential(HOST, "alice", SECRET, "x")
    text = netrc_text([first, Credential(HOST, "mallory", "other", "y"), None])
    assert text == f"machine {HOST} login alice password {SECRET}\n"


def test_an_index_from_the_environment_with_a_trailing_newline_is_refused(monkeypatch):
    """`$` would let "...simple\\n" through a regex; the check matches the whole value."""
    from cudaenv.project.lock import env_index

    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", "https://pypi.corp.example/simple\n")
    with pytest.raises(UserError, match="CUDAENV_PYTHON_INDEX: expected an http"):
        env_index("CUDAENV_PYTHON_INDEX")


@pytest.mark.parametrize("python_index, framework_index, extra", [
    (None, "https://PyPI.org/simple/", False),  # one index, spelled twice
    (PLAIN, "https://pypi.org/simple", True),  # a corporate mirror for Python, PyPI for torch: both
], ids=["pypi-twice", "two-indexes"])
def test_the_image_names_an_index_once(tmp_path, python_index, framework_index, extra):
    """uv reads `--index-url X --extra-index-url X` as one index; the image said PyPI twice."""
    matrix = load_matrix(overlays=[])
    build = f'framework_index = "{framework_index}"\n' + (f'python_index = "{python_index}"\n' if python_index else "")
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "twice"\npython = "3.12"\n\n[frameworks]\ntorch = "==2.10.0"\n\n'
                                           '[target]\ndriver = "570.124.06"\ngpus = ["A100"]\n\n[build]\n' + build)
    p = load_project(tmp_path)
    from cudaenv.project.config import resolve_project

    stack = resolve_project(matrix, p, project_target(matrix, p).host).stack
    lock = make_lock(p, stack, matrix_revision=matrix.revision, target={}, pinned=["torch==2.10.0"])
    p.lock_path.write_text(lock.as_toml())
    dockerfile = plan_image(p, matrix, read_lock(p.lock_path), buildkit=True).dockerfile
    assert dockerfile.count("--index-url") == 1
    assert dockerfile.count("--extra-index-url") == (1 if extra else 0)
    assert ("--extra-index-url https://pypi.org/simple" in dockerfile) is extra
