"""Compiled templates are cached on disk (compiling them was most of `cudaenv dockerfile`), but
compiled code is only loaded from a private directory and file, as for the matrix cache."""

from __future__ import annotations

import os
import stat

import jinja2
import jinja2.bccache
import pytest

from cudaenv.core.resources import templates_dir

from tests.support.cli import cudaenv as run_cli

PROJECT = '[project]\nname = "bccache"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n[build]\nflavor = "runtime"\n'


def dockerfile(project, cache) -> str:
    env = dict(os.environ, CUDAENV_CACHE_DIR=str(cache))
    env.pop("CUDAENV_NO_CACHE", None)
    proc = run_cli("dockerfile", str(project), env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def project(tmp_path):
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(PROJECT)
    env = dict(os.environ, CUDAENV_CACHE_DIR=str(tmp_path / "lock-cache"))
    proc = run_cli("lock", str(directory), env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return directory


def test_a_render_leaves_private_compiled_templates_that_the_next_render_uses(project, tmp_path):
    cache = tmp_path / "cache"
    first = dockerfile(project, cache)
    compiled = sorted((cache / "templates").glob("*.jinja"))
    assert compiled, "no compiled template was cached"
    assert stat.S_IMODE(os.stat(cache / "templates").st_mode) == 0o700
    assert all(stat.S_IMODE(os.stat(path).st_mode) == 0o600 for path in compiled)
    assert dockerfile(project, cache) == first


def forged_bytecode(directory, target: str, replacement_source: str) -> None:
    """A cache file for ``target`` whose checksum matches the real template but whose code renders
    ``replacement_source``: what someone who can write the cache directory could plant."""
    loader = jinja2.FileSystemLoader(str(templates_dir()))
    environment = jinja2.Environment(loader=loader, keep_trailing_newline=True)
    source, filename, _ = loader.get_source(environment, target)
    cache = jinja2.bccache.BytecodeCache()
    bucket = jinja2.bccache.Bucket(environment, cache.get_cache_key(target, filename), cache.get_source_checksum(source))
    bucket.code = environment.compile(replacement_source, target, filename)
    with open(directory / f"{bucket.key}.jinja", "wb") as handle:
        bucket.write_bytecode(handle)


@pytest.mark.parametrize("how", ["directory writable by others", "file owned by another user"])
def test_compiled_code_in_a_cache_others_can_write_is_never_loaded(project, tmp_path, how):
    cache = tmp_path / "cache"
    honest = dockerfile(project, tmp_path / "honest-cache")
    directory = cache / "templates"
    directory.mkdir(parents=True, mode=0o700)
    forged_bytecode(directory, "Dockerfile.j2", "FORGED\n")
    forged = next(directory.glob("*.jinja"))
    if how == "directory writable by others":
        os.chmod(directory, 0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("needs root to give the file to another user")
        os.chown(forged, 65534, 65534)
    assert dockerfile(project, cache) == honest


def test_the_forged_file_would_be_loaded_from_a_private_cache(project, tmp_path):
    """The check above can fail: the same forged file in a private cache is what jinja runs."""
    cache = tmp_path / "cache"
    directory = cache / "templates"
    directory.mkdir(parents=True, mode=0o700)
    forged_bytecode(directory, "Dockerfile.j2", "FORGED\n")
    assert dockerfile(project, cache) == "FORGED\n"


def test_uv_version_read_from_its_dist_info_matches_importlib_metadata():
    from importlib.metadata import version

    from cudaenv.images.render import uv_version

    assert uv_version() == version("uv")


def test_uv_version_asks_importlib_metadata_when_a_uv_directory_has_no_dist_info(tmp_path, monkeypatch):
    from importlib.metadata import version

    from cudaenv.images.render import uv_version

    (tmp_path / "uv").mkdir()  # e.g. a project folder named uv first on the path
    monkeypatch.syspath_prepend(str(tmp_path))
    assert uv_version() == version("uv")
