"""Index credentials (https://user:token@host/simple) reach uv and the build, never a file,
the Dockerfile, the image history or a process list."""

from __future__ import annotations

import os
import stat

import pytest

from cudaenv.image import plan_image
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import make_lock, netrc_text, read_lock, strip_credentials
from cudaenv.resolver.resolve import resolve
from cudaenv.target import project_target

SECRET = "s3cr3t-t0ken"
INDEX = f"https://alice:{SECRET}@pypi.corp.example/simple"


def project(tmp_path, index=INDEX):
    (tmp_path / "cudaenv.toml").write_text(
        f'[project]\nname = "creds"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        f'[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n\n[build]\nflavor = "runtime"\npython_index = "{index}"\n')
    return load_project(tmp_path)


def locked(tmp_path, index=INDEX):
    matrix = load_matrix(overlays=[])
    p = project(tmp_path, index)
    stack = resolve(matrix, p.constraints, project_target(matrix, p).host).stack
    lock = make_lock(p, stack, matrix_revision=matrix.revision, target={}, pinned=["six==1.16.0"])
    p.lock_path.write_text(lock.as_toml())
    return matrix, p, read_lock(p.lock_path)


def test_strip_credentials_keeps_host_port_and_path():
    assert strip_credentials("https://u:p@host.example:8443/simple/") == "https://host.example:8443/simple/"
    assert strip_credentials("https://host.example/simple") == "https://host.example/simple"


def test_the_lock_records_the_index_without_its_credentials(tmp_path):
    _, p, lock = locked(tmp_path)
    assert lock.python_index == "https://pypi.corp.example/simple"
    assert SECRET not in p.lock_path.read_text()


def test_the_dockerfile_names_the_index_without_credentials_and_mounts_a_netrc_secret(tmp_path):
    matrix, p, lock = locked(tmp_path)
    plan = plan_image(p, matrix, lock, buildkit=True)
    assert SECRET not in plan.dockerfile
    assert "--index-url https://pypi.corp.example/simple" in plan.dockerfile
    assert "--mount=type=secret,id=cudaenv_netrc,target=/root/.netrc" in plan.dockerfile


def test_the_build_request_carries_the_credentials_as_a_private_secret_file(tmp_path):
    matrix, p, lock = locked(tmp_path)
    plan = plan_image(p, matrix, lock, buildkit=True)
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    request = plan.request(secrets_dir=secrets)
    netrc = request.secrets["cudaenv_netrc"]
    assert netrc.read_text() == f"machine pypi.corp.example login alice password {SECRET}\n"
    assert stat.S_IMODE(os.stat(netrc).st_mode) == 0o600
    assert SECRET not in repr(request.build_args) and SECRET not in repr(request.labels)


def test_without_credentials_there_is_no_netrc(tmp_path):
    matrix, p, lock = locked(tmp_path, index="https://pypi.corp.example/simple")
    plan = plan_image(p, matrix, lock, buildkit=True)
    assert "cudaenv_netrc" not in plan.dockerfile and plan.netrc == ""


def test_netrc_has_one_entry_per_host():
    text = netrc_text([INDEX, INDEX, "https://other.example/simple", None])
    assert text.count("machine pypi.corp.example") == 1 and "other.example" not in text


def test_an_index_from_the_environment_with_a_trailing_newline_is_refused(monkeypatch):
    """`$` would let "...simple\\n" through a regex; the check matches the whole value."""
    from cudaenv.errors import UserError
    from cudaenv.project.lock import env_index

    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", "https://pypi.corp.example/simple\n")
    with pytest.raises(UserError, match="CUDAENV_PYTHON_INDEX: expected an http"):
        env_index("CUDAENV_PYTHON_INDEX")
