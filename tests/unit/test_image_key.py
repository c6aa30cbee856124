"""The inputs key of a project image: every input of the render changes it, project code does not;
records are trusted only when private and only for their own key."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cudaenv.images import key as image_key
from cudaenv.project import load_project

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch-classifier"


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root)
    (root / ".dockerignore").write_text("data/\n")
    (root / "cudaenv.lock").write_text("# the key reads the lock's bytes; their meaning is cudaenv.project.lock's\n")
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDAENV_MATRIX_PATH", raising=False)
    return root


def key(root: Path, **kwargs) -> str:
    return image_key.inputs_key(load_project(root), **kwargs)


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_the_key_is_the_same_when_nothing_changed(project_dir):
    assert key(project_dir) == key(project_dir)


def test_editing_project_code_leaves_the_key_alone(project_dir):
    before = key(project_dir)
    (project_dir / "train.py").write_text("print('changed')\n")
    assert key(project_dir) == before  # code is mounted (and the last layer): the tag does not change


@pytest.mark.parametrize("edit", [
    lambda root: append(root / "cudaenv.toml", "\n# a comment still changes the bytes\n"),
    lambda root: append(root / "cudaenv.lock", "\n"),
    lambda root: append(root / ".dockerignore", "logs/\n"),
    lambda root: (root / ".dockerignore").unlink(),
    lambda root: append(root / "requirements.txt", "\n"),
], ids=["config", "lock", "dockerignore", "dockerignore-removed", "requirements"])
def test_every_project_input_changes_the_key(project_dir, edit):
    before = key(project_dir)
    edit(project_dir)
    assert key(project_dir) != before


@pytest.mark.parametrize("name,value", [
    ("CUDAENV_PYTHON_INDEX", "https://mirror.example/simple"), ("CUDAENV_UID", "4242"),
    ("DOCKER_HOST", "unix:///run/user/1000/docker.sock"), ("DOCKER_BUILDKIT", "0"),
    ("CUDAENV_DOCKER_CLI", "/opt/docker/bin/docker"),
])
def test_the_build_environment_changes_the_key(project_dir, monkeypatch, name, value):
    monkeypatch.delenv(name, raising=False)
    before = key(project_dir)
    monkeypatch.setenv(name, value)
    assert key(project_dir) != before


def test_index_credentials_in_the_netrc_change_the_key(project_dir, monkeypatch, tmp_path):
    netrc = tmp_path / "netrc"
    monkeypatch.setenv("NETRC", str(netrc))
    before = key(project_dir)
    netrc.write_text("machine mirror.example login me password secret\n")
    assert key(project_dir) != before


def test_jupyter_changes_the_key(project_dir):
    assert key(project_dir, jupyter=True) != key(project_dir)


def test_a_matrix_overlay_changes_the_key(project_dir, monkeypatch, tmp_path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    monkeypatch.setenv("CUDAENV_MATRIX_PATH", str(overlay))
    before = key(project_dir)
    (overlay / "torch.toml").write_text("# an overlay row would go here\n")
    assert key(project_dir) != before


def test_templates_code_and_version_change_the_key(project_dir, monkeypatch, tmp_path):
    templates, package = tmp_path / "templates", tmp_path / "package"
    shutil.copytree(Path(image_key.__file__).parents[2] / "templates", templates)
    shutil.copytree(Path(image_key.__file__).parents[1], package, ignore=shutil.ignore_patterns("__pycache__"))
    shipped = Path(image_key.__file__).parents[2]
    monkeypatch.setattr("cudaenv.core.resources.data_path",
                        lambda name: str(templates) if name == "templates" else str(shipped / name))
    monkeypatch.setattr(image_key, "_PACKAGE", str(package))
    before = key(project_dir)
    append(templates / "Dockerfile.j2", "\n")
    after_template = key(project_dir)
    assert after_template != before
    render = package / "images" / "render.py"
    append(render, "\n")
    os.utime(render, ns=(1, 1))
    after_code = key(project_dir)
    assert after_code != after_template
    monkeypatch.setattr(image_key, "__version__", "0.0.0-other")
    assert key(project_dir) != after_code


def test_a_docker_cli_appearing_on_path_changes_the_key(project_dir, monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    before = key(project_dir)
    (bin_dir / "docker").write_text("#!/bin/sh\n")
    assert key(project_dir) != before


def test_a_record_answers_only_for_its_key(project_dir):
    project = load_project(project_dir)
    image_key.remember(project, "k1", "cudaenv/proj:abc")
    assert image_key.recall(project, "k1") == "cudaenv/proj:abc"
    assert image_key.recall(project, "k2") is None
    other = load_project(shutil.copytree(project_dir, project_dir.parent / "other"))
    assert image_key.recall(other, "k1") is None  # records are per project directory


def test_a_record_others_can_write_is_ignored(project_dir):
    project = load_project(project_dir)
    image_key.remember(project, "k1", "cudaenv/proj:abc")
    directory, path = image_key._record_path(project)
    os.chmod(path, 0o666)
    assert image_key.recall(project, "k1") is None
    os.chmod(path, 0o600)
    os.chmod(directory, 0o777)
    assert image_key.recall(project, "k1") is None


def test_a_file_the_requirements_include_changes_the_key(project_dir):
    """`run` must not run the old image after an included file changed."""
    requirements = project_dir / "requirements.txt"
    append(requirements, "-r extra.txt\n")
    (project_dir / "extra.txt").write_text("six==1.16.0\n")
    before = key(project_dir)
    (project_dir / "extra.txt").write_text("six==1.17.0\n")
    assert key(project_dir) != before


def test_an_include_in_a_utf16_file_changes_the_key_too(project_dir):
    """The key skips the parser for a file that cannot name another one; a UTF-16 file always goes
    to it (its bytes hide '-r' from a byte search)."""
    (project_dir / "requirements.txt").write_bytes("torch>=2.4,<2.7\r\n-r extra.txt\r\n".encode("utf-16"))
    (project_dir / "extra.txt").write_text("six==1.16.0\n")
    before = key(project_dir)
    (project_dir / "extra.txt").write_text("six==1.17.0\n")
    assert key(project_dir) != before


def test_the_ca_bundle_the_build_reads_changes_the_key(project_dir):
    (project_dir / "corp-ca.pem").write_text("one\n")
    config = project_dir / "cudaenv.toml"
    config.write_text(config.read_text().replace("[build]\n", '[build]\nca_cert = "corp-ca.pem"\n', 1))
    before = key(project_dir)
    (project_dir / "corp-ca.pem").write_text("two\n")
    assert key(project_dir) != before


@pytest.mark.parametrize("name", ["NETRC", "HOME"])
def test_where_credentials_are_read_from_changes_the_key(project_dir, monkeypatch, tmp_path, name):
    before = key(project_dir)
    monkeypatch.setenv(name, str(tmp_path / "elsewhere"))
    assert key(project_dir) != before


def test_a_tree_is_its_files_bytes_or_stats_without_bytecode(tmp_path):
    import hashlib

    from cudaenv.images.key import _tree

    def digest(contents: bool) -> str:
        found = hashlib.sha256()
        _tree(found, "t", str(tmp_path / "t"), contents=contents)
        return found.hexdigest()

    (tmp_path / "t" / "sub").mkdir(parents=True)
    (tmp_path / "t" / "a.py").write_text("one")
    (tmp_path / "t" / "sub" / "b.j2").write_text("two")
    by_bytes, by_stat = digest(True), digest(False)
    (tmp_path / "t" / "a.pyc").write_bytes(b"\0")
    (tmp_path / "t" / "a.pyo").write_bytes(b"\0")
    (tmp_path / "t" / "__pycache__").mkdir()
    (tmp_path / "t" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert (digest(True), digest(False)) == (by_bytes, by_stat)  # bytecode is no input
    (tmp_path / "t" / "sub" / "b.j2").write_text("TWO")
    assert digest(True) != by_bytes
    (tmp_path / "t" / "sub" / "c.j2").write_text("new")
    assert digest(False) != by_stat


def test_a_record_keeps_the_images_own_labels_and_each_target_its_own_record(project_dir):
    project = load_project(project_dir)
    labels = {"io.cudaenv.stack": '{"cuda": "12.4"}', "io.cudaenv.target": "a100", "maintainer": "someone"}
    image_key.remember(project, "k1", "cudaenv/proj:abc", "a100", labels)
    image_key.remember(project, "k2", "cudaenv/proj:def", "laptop")
    assert image_key.recall_with_labels(project, "k1", "a100") == (
        "cudaenv/proj:abc", {"io.cudaenv.stack": '{"cuda": "12.4"}', "io.cudaenv.target": "a100"})  # cudaenv's only
    assert image_key.recall_with_labels(project, "k2", "laptop") == ("cudaenv/proj:def", None)
    assert image_key.recall(project, "k1", "a100") == "cudaenv/proj:abc"  # the laptop's record left it alone
    assert image_key.recall(project, "k1") is None  # the project's untargeted record is another one


def test_recorded_labels_that_are_not_strings_are_not_trusted(project_dir):
    import json

    project = load_project(project_dir)
    image_key.remember(project, "k1", "cudaenv/proj:abc", None, {"io.cudaenv.stack": "{}"})
    _, path = image_key._record_path(project)
    record = json.loads(Path(path).read_text())
    record["labels"] = {"io.cudaenv.stack": 1}
    Path(path).write_text(json.dumps(record))
    assert image_key.recall_with_labels(project, "k1") == ("cudaenv/proj:abc", None)
