"""The stack base in a project's plan: its name is its content hash, the project starts FROM it,
and only the base's content (never how it is fetched) decides which base a project shares."""

from __future__ import annotations

import pytest

from cudaenv.images import publish
from cudaenv.images.plan import plan_image
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import make_lock, read_lock
from cudaenv.resolver.resolve import resolve
from cudaenv.images.stackbase import LABEL_BASE_ID, LABEL_CONTENT_HASH, local_reference
from cudaenv.hosts.target import project_target


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def no_index_overrides(monkeypatch, tmp_path):
    for name in ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))


def planned(directory, matrix, *, pinned=("six==1.16.0",), extra_build="", **kwargs):
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(
        f'[project]\nname = "{directory.name}"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        f'[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n\n[build]\nflavor = "runtime"\n{extra_build}')
    project = load_project(directory)
    stack = resolve(matrix, project.constraints, project_target(matrix, project).host).stack
    lock = make_lock(project, stack, matrix_revision=matrix.revision, target={}, pinned=list(pinned))
    project.lock_path.write_text(lock.as_toml())
    return plan_image(project, matrix, read_lock(project.lock_path), buildkit=True, **kwargs)


def froms(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("FROM ")]


def test_the_project_dockerfile_starts_from_the_base_named_by_its_content_hash(tmp_path, matrix):
    plan = planned(tmp_path / "one", matrix)
    digest = publish.content_hash(matrix, plan.stack)
    assert plan.base.content_hash == digest
    assert froms(plan.dockerfile) == [f"FROM {local_reference(digest)} AS base"]
    assert plan.base.reference == f"cudaenv-base:hash-{digest[:16]}"
    assert plan.base.name == "cudaenv-base:cuda12.4.1-runtime-py3.11-ubuntu22.04"


def test_projects_on_one_stack_share_one_base_whatever_else_differs(tmp_path, matrix):
    one = planned(tmp_path / "one", matrix, pinned=("six==1.16.0",))
    two = planned(tmp_path / "two", matrix, pinned=("idna==3.10",),
                  extra_build='python_index = "https://pypi.mirror.example/simple"\n')
    assert one.base.reference == two.base.reference
    assert one.inputs_hash != two.inputs_hash


def test_the_inputs_hash_changes_when_the_bases_content_does(tmp_path, matrix, monkeypatch):
    before = planned(tmp_path / "one", matrix)
    monkeypatch.setattr(publish, "__version__", "99.0.0")  # a new cudaenv renders (and hashes) another base
    after = planned(tmp_path / "two", matrix)
    assert before.base.content_hash != after.base.content_hash
    assert froms(before.dockerfile) != froms(after.dockerfile)


def test_standalone_puts_the_base_layers_inline(tmp_path, matrix):
    plan = planned(tmp_path / "one", matrix, standalone=True)
    assert plan.base is None
    assert not any("cudaenv-base" in line for line in froms(plan.dockerfile))
    assert "uv venv" in plan.dockerfile


def test_the_base_request_carries_its_content_hash_and_builds_from_an_empty_context(tmp_path, matrix):
    plan = planned(tmp_path / "one", matrix)
    context = tmp_path / "empty"
    context.mkdir()
    request = plan.base.request(context, no_cache=True)
    assert request.labels == {LABEL_CONTENT_HASH: plan.base.content_hash}
    assert request.tags == plan.base.tags and request.tags[-1] == plan.base.reference
    assert request.no_cache is True and request.context == context
    assert froms(request.dockerfile_text)[-1].startswith("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04")


def test_the_project_request_never_pulls_its_local_base_and_records_which_base_it_used(tmp_path, matrix):
    plan = planned(tmp_path / "one", matrix)
    request = plan.request(pull=True, base_id="sha256:" + "b" * 64)
    assert request.pull is False
    assert request.labels[LABEL_BASE_ID] == "sha256:" + "b" * 64


def test_the_base_is_fetched_with_the_projects_index_and_mirror(tmp_path, matrix):
    plan = planned(tmp_path / "one", matrix, extra_build='base_registry = "registry.example.com/mirror"\n')
    text = plan.base.dockerfile()
    assert froms(text)[-1].startswith("FROM registry.example.com/mirror/nvidia/cuda:")
    assert "pulled from registry.example.com/mirror/cudaenv-base" in plan.dockerfile


def test_index_credentials_reach_the_base_build_only_as_the_private_netrc_secret(tmp_path, matrix, monkeypatch):
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", "https://alice:s3cr3t-t0ken@pypi.corp.example/simple")
    plan = planned(tmp_path / "one", matrix)
    secrets, context = tmp_path / "secrets", tmp_path / "empty"
    secrets.mkdir()
    context.mkdir()
    request = plan.base.request(context, secrets_dir=secrets)
    assert request.secrets["cudaenv_netrc"].read_text() == "machine pypi.corp.example login alice password s3cr3t-t0ken\n"
    assert "s3cr3t-t0ken" not in request.dockerfile_text and "s3cr3t-t0ken" not in str(request.labels)
    assert "--mount=type=secret,id=cudaenv_netrc,target=/root/.netrc" in request.dockerfile_text
