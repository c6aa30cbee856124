"""The parsed-matrix cache is a pickle: it is read only from a private file in a private directory,
so a shared CUDAENV_CACHE_DIR (a CI cache) cannot make cudaenv run someone else's code."""

from __future__ import annotations

import os
import pickle

import pytest

from cudaenv.matrix import cache, load_matrix


class Planted:
    """Unpickling this runs code: it creates the marker file named in the test."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(directory))
    monkeypatch.delenv("CUDAENV_NO_CACHE", raising=False)
    return directory


def planted_cache(cache_dir, tmp_path):
    """A real cache file for the shipped matrix, replaced by a pickle that runs code."""
    load_matrix(overlays=[])
    (written,) = list(cache_dir.glob("matrix-*.pickle"))
    marker = tmp_path / "code-ran"
    written.write_bytes(pickle.dumps(Planted(str(marker))))
    return written, marker


def test_the_cache_directory_is_created_private_and_reused(cache_dir):
    first = load_matrix(overlays=[])
    assert oct(cache_dir.stat().st_mode & 0o777) == oct(0o700)
    (written,) = list(cache_dir.glob("matrix-*.pickle"))
    assert written.stat().st_mode & 0o077 == 0
    assert cache.read(written.stem.removeprefix("matrix-")).revision == first.revision


def test_a_cache_file_others_can_write_is_never_unpickled(cache_dir, tmp_path):
    written, marker = planted_cache(cache_dir, tmp_path)
    written.chmod(0o666)
    matrix = load_matrix(overlays=[])
    assert not marker.exists() and matrix.torch  # rebuilt from TOML instead


def test_a_cache_file_in_a_directory_others_can_write_is_never_unpickled(cache_dir, tmp_path):
    written, marker = planted_cache(cache_dir, tmp_path)
    cache_dir.chmod(0o777)
    load_matrix(overlays=[])
    assert not marker.exists()
    assert written.read_bytes() == pickle.dumps(Planted(str(marker)))  # and nothing is written there


def test_a_symlinked_cache_file_is_never_unpickled(cache_dir, tmp_path):
    written, marker = planted_cache(cache_dir, tmp_path)
    elsewhere = tmp_path / "elsewhere.pickle"
    os.replace(written, elsewhere)
    written.symlink_to(elsewhere)
    load_matrix(overlays=[])
    assert not marker.exists()


def test_the_private_check_is_what_guards_the_load(cache_dir, tmp_path):
    """Control: the same planted file in a private place does run, so the tests above test the check."""
    written, marker = planted_cache(cache_dir, tmp_path)
    cache.read(written.stem.removeprefix("matrix-"))
    assert marker.exists()
