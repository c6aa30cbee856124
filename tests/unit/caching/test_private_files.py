"""The cache directory's one rule (``cudaenv.core.cache``): read only what this user alone could have
written, write atomically into a private directory. Every cache (matrix, templates, BuildKit
probe, image records, engine limits, answers) goes through these two functions."""

from __future__ import annotations

import os

import pytest

from cudaenv.core import cache as caching
from cudaenv.engine import limits_memory


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(directory))
    return directory


def test_written_privately_and_read_back(cache):
    path = str(cache / "sub" / "file")
    assert caching.write_private(path, b"data")
    assert caching.read_private(path) == b"data"
    assert os.stat(cache / "sub").st_mode & 0o777 == 0o700
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(cache / "sub")) == ["file"]  # no temporary file left behind


@pytest.mark.parametrize("how", ["group-writable file", "world-writable directory", "link", "someone else's"])
def test_a_file_someone_else_could_have_written_is_not_read(cache, how, monkeypatch):
    path = cache / "file"
    assert caching.write_private(str(path), b"data")
    assert caching.read_private(str(path)) == b"data"  # the same file is read while it is private
    if how == "group-writable file":
        path.chmod(0o620)
    elif how == "world-writable directory":
        cache.chmod(0o777)
    elif how == "link":
        path.rename(cache / "target")
        path.symlink_to(cache / "target")
    else:
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    assert caching.read_private(str(path)) is None


def test_nothing_is_written_into_a_directory_others_can_write(cache):
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    assert caching.write_private(str(cache / "file"), b"data") is False
    assert not (cache / "file").exists()


def test_no_cache_is_read_from_the_environment(monkeypatch):
    for value, expected in (("1", False), ("yes", False), ("", True), ("0", True)):
        monkeypatch.setenv("CUDAENV_NO_CACHE", value)
        assert caching.enabled() is expected


def test_remembered_engine_limits_follow_the_rule(cache):
    """A refusal remembered for a daemon makes cudaenv leave a ulimit out: a file anyone else could
    have written must not decide that."""
    wanted = {"memlock": (-1, -1)}
    limits_memory.remember("daemon-1", wanted, ("memlock",))
    assert limits_memory.recall("daemon-1", wanted) == ("memlock",)
    assert limits_memory.recall("daemon-2", wanted) is None
    (cache / "engine-limits.json").chmod(0o666)
    assert limits_memory.recall("daemon-1", wanted) is None
