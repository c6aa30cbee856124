"""The matrix cache is data only: it round-trips the matrix, never runs code, and trusts only the user's files."""

import marshal
import os
import pickle

import pytest

from cudaenv.matrix import Matrix, cache, load_matrix
from cudaenv.matrix.builds import framework_builds


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "cache"
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(home))
    monkeypatch.delenv("CUDAENV_NO_CACHE", raising=False)
    return home


def _cache_file(home):
    files = list(home.glob("matrix-*"))
    assert len(files) == 1
    return files[0]


def test_cached_matrix_equals_a_fresh_load_with_its_builds_view(cache_home):
    fresh = load_matrix(use_cache=False)
    load_matrix()  # writes the cache
    cached = load_matrix()
    assert isinstance(cached, Matrix) and cached == fresh
    assert "resolver.builds" in cached.memo  # precomputed view came back from the file
    assert framework_builds(cached) == framework_builds(fresh)


def test_cache_file_is_private_and_holds_no_pickle(cache_home):
    load_matrix()
    path = _cache_file(cache_home)
    assert path.suffix == ".marshal"
    assert path.stat().st_mode & 0o077 == 0
    assert cache_home.stat().st_mode & 0o077 == 0
    with pytest.raises(Exception):
        pickle.loads(path.read_bytes())


def test_a_file_writable_by_others_is_not_read(cache_home):
    load_matrix()
    path = _cache_file(cache_home)
    key = path.stem.removeprefix("matrix-")
    assert isinstance(cache.read(key), Matrix)
    path.chmod(0o666)
    assert cache.read(key) is None


def test_a_file_naming_an_unknown_class_is_refused(cache_home):
    load_matrix()
    path = _cache_file(cache_home)
    key = path.stem.removeprefix("matrix-")
    path.write_bytes(marshal.dumps(["D", "Popen", (["ls"],), {}]))
    os.chmod(path, 0o600)
    assert cache.read(key) is None
    assert isinstance(load_matrix(), Matrix)  # a bad cache is only a miss


def test_a_code_object_in_the_file_is_refused_not_run(cache_home):
    load_matrix()
    path = _cache_file(cache_home)
    key = path.stem.removeprefix("matrix-")
    marker = cache_home / "ran"
    code = compile(f"open({str(marker)!r}, 'w').close()", "x", "exec")
    path.write_bytes(marshal.dumps(code))
    os.chmod(path, 0o600)
    assert cache.read(key) is None
    assert not marker.exists()


def test_the_cache_directory_is_created_private(cache_home):
    load_matrix()
    assert oct(cache_home.stat().st_mode & 0o777) == oct(0o700)


def test_a_directory_others_can_write_is_neither_read_nor_written(cache_home):
    load_matrix()
    path = _cache_file(cache_home)
    key = path.stem.removeprefix("matrix-")
    cache_home.chmod(0o777)
    assert cache.read(key) is None
    path.unlink()
    load_matrix()
    assert list(cache_home.glob("matrix-*")) == []  # nothing written where others can write


def test_a_symlinked_cache_file_is_not_read(cache_home, tmp_path):
    load_matrix()
    path = _cache_file(cache_home)
    key = path.stem.removeprefix("matrix-")
    elsewhere = tmp_path / "elsewhere.marshal"
    os.replace(path, elsewhere)
    path.symlink_to(elsewhere)
    assert cache.read(key) is None


def test_fields_are_decoded_on_first_use_and_equal_a_fresh_load(cache_home):
    fresh = load_matrix(use_cache=False)
    load_matrix()  # writes the cache
    cached = load_matrix()
    assert "jax" not in vars(cached) and "torch" not in vars(cached)  # nothing built yet
    assert cached.torch == fresh.torch
    assert "torch" in vars(cached) and "jax" not in vars(cached)
    assert framework_builds(cached)["torch"] == framework_builds(fresh)["torch"]


def test_a_damaged_chunk_is_read_from_the_matrix_files_and_the_file_dropped(cache_home):
    fresh = load_matrix(use_cache=False)
    load_matrix()
    path = _cache_file(cache_home)
    node = list(marshal.loads(path.read_bytes()))
    node[3] = dict(node[3], jax=marshal.dumps(["D", "Popen", (["ls"],), {}]))  # a class no cache may build
    path.write_bytes(marshal.dumps(tuple(node)))
    os.chmod(path, 0o600)
    cached = load_matrix()
    assert cached.jax == fresh.jax
    assert not path.exists()


def test_a_file_for_another_state_with_the_same_short_key_is_not_read(cache_home):
    load_matrix()
    path = _cache_file(cache_home)
    key = path.stem.removeprefix("matrix-")
    node = list(marshal.loads(path.read_bytes()))
    node[2] = node[2] + "\0another matrix file"
    path.write_bytes(marshal.dumps(tuple(node)))
    os.chmod(path, 0o600)
    assert cache.read(key) is None
