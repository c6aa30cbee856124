"""The inputs key, input by input: what it reads (the project's files wherever the project is named
from, the environment it is given, the netrc in the home directory), how it reads a tree (bytes for
the templates, size and time for cudaenv's own code, never bytecode), and what it gives back."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest

from cudaenv.images import key as image_key
from cudaenv.images.key import _tree
from cudaenv.project import load_project

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "torch-classifier"
SHIPPED = Path(image_key.__file__).resolve().parents[2]


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root)
    (root / ".dockerignore").write_text("data/\n")
    (root / "cudaenv.lock").write_text("# the key reads the lock's bytes\n")
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDAENV_MATRIX_PATH", raising=False)
    return root


def key(root, **kwargs) -> str:
    return image_key.inputs_key(load_project(root), **kwargs)


def tree_digest(top: Path, *, contents: bool, label: str = "t") -> str:
    found = hashlib.sha256()
    _tree(found, label, str(top), contents=contents)
    return found.hexdigest()


# --- the project's own files, however the project was named ------------------------------------


def test_a_project_named_by_a_relative_path_keys_its_configuration(project_dir, monkeypatch):
    """`cudaenv run proj` from the directory above: an edit of proj/cudaenv.toml must give another
    key, or run would start the image built before the edit."""
    monkeypatch.chdir(project_dir.parent)
    before = key("proj")
    config = project_dir / "cudaenv.toml"
    config.write_text(config.read_text().replace("system_packages = []", 'system_packages = ["git"]'))
    assert key("proj") != before
    assert key("proj") == key(project_dir)  # the same project, however it is named


def test_a_project_named_by_a_relative_path_keys_its_ca_bundle(project_dir, monkeypatch):
    (project_dir / "corp-ca.pem").write_text("one\n")
    config = project_dir / "cudaenv.toml"
    config.write_text(config.read_text().replace("[build]\n", '[build]\nca_cert = "corp-ca.pem"\n', 1))
    monkeypatch.chdir(project_dir.parent)
    before = key("proj")
    (project_dir / "corp-ca.pem").write_text("two\n")
    assert key("proj") != before


def test_a_pyproject_configuration_is_keyed_too(project_dir, monkeypatch):
    """[tool.cudaenv] in pyproject.toml is the configuration when there is no cudaenv.toml."""
    text = (project_dir / "cudaenv.toml").read_text()
    (project_dir / "cudaenv.toml").unlink()
    tables = re.sub(r"^\[(\w+)\]$", r"[tool.cudaenv.\1]", text, flags=re.M)
    (project_dir / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0.1"\n\n' + tables)
    monkeypatch.chdir(project_dir.parent)
    assert load_project("proj").config_path.name == "pyproject.toml"
    before = key("proj")
    (project_dir / "pyproject.toml").write_text((project_dir / "pyproject.toml").read_text().replace(
        "system_packages = []", 'system_packages = ["git"]'))
    assert key("proj") != before


def test_a_requirement_file_that_names_a_missing_file_still_gives_a_key_that_follows_it(project_dir):
    """The full check reports the missing include; the key must still be computed, and differ when
    the requirement file changes what it names."""
    requirements = project_dir / "requirements.txt"
    requirements.write_text(requirements.read_text() + "-r missing-one.txt\n")
    first = key(project_dir)
    assert first == key(project_dir)
    requirements.write_text(requirements.read_text().replace("missing-one", "missing-two"))
    assert key(project_dir) != first


# --- the environment it is given ------------------------------------------------------------------


def test_the_environment_passed_in_is_the_one_keyed(project_dir):
    """``environ=`` replaces os.environ everywhere the key looks: the build variables, HOME and the
    PATH the BuildKit probe searches for docker CLIs."""
    env = {name: value for name, value in os.environ.items() if name != "CUDAENV_DOCKER_CLI"}
    env.pop("NETRC", None)
    one = key(project_dir, environ={**env, "PATH": "/nonexistent/one"})
    assert one == key(project_dir, environ={**env, "PATH": "/nonexistent/one"})
    assert key(project_dir, environ={**env, "PATH": "/nonexistent/two"}) != one
    assert key(project_dir, environ={**env, "PATH": "/nonexistent/one", "HOME": "/nonexistent/home"}) != one
    assert key(project_dir, environ={**env, "PATH": "/nonexistent/one", "CUDAENV_UID": "4242"}) != one


def test_other_variables_are_no_input(project_dir):
    env = dict(os.environ)
    assert key(project_dir, environ={**env, "LANG": "C.UTF-8x", "EDITOR": "vi"}) == key(
        project_dir, environ={**env, "LANG": "de_DE.UTF-8", "EDITOR": "emacs"})


def test_the_netrc_in_the_home_directory_is_an_input(project_dir, monkeypatch, tmp_path):
    """Index credentials come from ~/.netrc when NETRC is not set."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC", raising=False)
    (home / ".netrc").write_text("machine mirror.example login me password one\n")
    before = key(project_dir)
    (home / ".netrc").write_text("machine mirror.example login me password two\n")
    assert key(project_dir) != before


def test_the_key_is_32_hex_digits_and_names_the_python_release(project_dir, monkeypatch):
    found = key(project_dir)
    assert re.fullmatch(r"[0-9a-f]{32}", found)
    from types import SimpleNamespace

    monkeypatch.setattr(image_key, "sys", SimpleNamespace(version_info=(3, 11, 9, "final", 0)))
    on_3_11_9 = key(project_dir)
    monkeypatch.setattr(image_key, "sys", SimpleNamespace(version_info=(3, 11, 10, "final", 0)))
    assert key(project_dir) != on_3_11_9


# --- trees: bytes or stats, wherever they lie, never bytecode ----------------------------------------


def make_tree(top: Path) -> Path:
    (top / "sub").mkdir(parents=True)
    (top / "a.j2").write_text("one")
    (top / "sub" / "b.j2").write_text("two")
    return top


def test_a_tree_read_by_its_bytes_is_the_same_wherever_it_lies(tmp_path):
    """The same templates installed in two places give one key."""
    one = make_tree(tmp_path / "one" / "templates")
    two = make_tree(tmp_path / "elsewhere" / "deeper" / "templates")
    assert tree_digest(one, contents=True) == tree_digest(two, contents=True)


def test_a_renamed_file_changes_a_tree(tmp_path):
    top = make_tree(tmp_path / "t")
    before = tree_digest(top, contents=True)
    (top / "sub" / "b.j2").rename(top / "sub" / "c.j2")
    assert tree_digest(top, contents=True) != before


def test_bytes_decide_a_tree_read_by_contents_and_stats_one_read_by_stat(tmp_path):
    top = make_tree(tmp_path / "t")
    path = top / "a.j2"
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    by_bytes, by_stat = tree_digest(top, contents=True), tree_digest(top, contents=False)
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))  # touched: the same bytes
    assert tree_digest(top, contents=True) == by_bytes
    assert tree_digest(top, contents=False) != by_stat
    path.write_text("ONE")  # the same size, the time put back: only the bytes differ
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert tree_digest(top, contents=False) == by_stat
    assert tree_digest(top, contents=True) != by_bytes


def test_files_sorted_after_bytecode_still_count(tmp_path):
    top = tmp_path / "t"
    top.mkdir()
    (top / "a.pyc").write_bytes(b"\0")
    (top / "b.py").write_text("one")
    before = tree_digest(top, contents=True)
    (top / "b.py").write_text("two")
    assert tree_digest(top, contents=True) != before


def test_nothing_in_a_pycache_directory_is_an_input(tmp_path):
    """Python writes bytecode through a temporary file next to it (``x.pyc.<number>``) while
    another cudaenv may be computing a key: a __pycache__ directory is skipped whole."""
    top = make_tree(tmp_path / "t")
    before = tree_digest(top, contents=True), tree_digest(top, contents=False)
    cache = top / "sub" / "__pycache__"
    cache.mkdir()
    (cache / "b.cpython-311.pyc.140234").write_bytes(b"partial")
    assert (tree_digest(top, contents=True), tree_digest(top, contents=False)) == before


def test_a_subdirectory_is_read(tmp_path):
    top = make_tree(tmp_path / "t")
    before = tree_digest(top, contents=True)
    (top / "sub" / "b.j2").write_text("TWO")
    assert tree_digest(top, contents=True) != before


# --- which tree is read how, in the key itself --------------------------------------------------------


@pytest.fixture
def own_trees(project_dir, monkeypatch, tmp_path):
    templates, package = tmp_path / "templates", tmp_path / "package"
    shutil.copytree(SHIPPED / "templates", templates)
    shutil.copytree(SHIPPED / "cudaenv", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr("cudaenv.core.resources.data_path",
                        lambda name: str(templates) if name == "templates" else str(SHIPPED / name))
    monkeypatch.setattr(image_key, "_PACKAGE", str(package))
    return templates, package


def test_templates_are_keyed_by_their_bytes_and_cudaenvs_code_by_its_files_times(project_dir, own_trees):
    """A reinstall that rewrites the templates unchanged keeps the key; cudaenv's own code is read
    by size and time (reading every byte of it on each `run` would cost more than it saves)."""
    templates, package = own_trees
    before = key(project_dir)
    template = next(templates.glob("*.j2"))
    os.utime(template, ns=(1_000_000_000, 1_000_000_000))
    assert key(project_dir) == before
    code = package / "images" / "key.py"
    os.utime(code, ns=(1_000_000_000, 1_000_000_000))
    assert key(project_dir) != before


def test_with_an_included_file_editing_project_code_still_leaves_the_key_alone(project_dir):
    """An include is keyed by its own bytes, not by the project directory it lies in."""
    requirements = project_dir / "requirements.txt"
    requirements.write_text(requirements.read_text() + "-r extra.txt\n")
    (project_dir / "extra.txt").write_text("six==1.16.0\n")
    before = key(project_dir)
    (project_dir / "train.py").write_text("print('changed')\n")
    assert key(project_dir) == before


def test_a_record_is_found_from_any_working_directory(project_dir, monkeypatch, tmp_path):
    """`cudaenv run proj` from above and `cudaenv run` inside it use one record, kept in the cache
    directory and never in the directory the command ran in."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(project_dir)
    image_key.remember(load_project("."), "k1", "cudaenv/proj:abc")
    monkeypatch.chdir(elsewhere)
    assert image_key.recall(load_project(project_dir), "k1") == "cudaenv/proj:abc"
    assert list(elsewhere.iterdir()) == [] and not (project_dir / "images").exists()
    assert str(tmp_path / "cache") in image_key._record_path(load_project(project_dir))[0]
