"""A per-user cache of the loaded, validated matrix, so a CLI call does not re-parse TOML.

Parsing and cross-checking ~1 MB of TOML costs far more than the resolution itself. The cache
key covers cudaenv's version, the Python version, and the path, size and modification time of
every matrix file (shipped and overlays), so any edit — an overlay added tomorrow included —
invalidates it. A broken or unwritable cache is ignored: it is only ever a shortcut.
Set ``CUDAENV_NO_CACHE=1`` to bypass it; ``CUDAENV_CACHE_DIR`` moves it.

Loading a pickle can run code, and ``CUDAENV_CACHE_DIR`` may point at a shared directory (a CI
cache), so a cache file is read only when it and its directory belong to this user and nobody
else can write them; otherwise it is ignored (and never written there either).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

from cudaenv import __version__


def cache_dir() -> Path:
    explicit = os.environ.get("CUDAENV_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cudaenv"


def enabled() -> bool:
    return os.environ.get("CUDAENV_NO_CACHE", "").lower() not in ("1", "true", "yes")


CODE = ("model.py", "builds.py", "load.py", "validate.py", "__init__.py")  # what shapes the cached objects


def cache_key(directories: list[Path]) -> str:
    digest = hashlib.sha256(f"{__version__}\0{sys.version_info[:3]}\0".encode())
    here = Path(__file__).parent
    for name in CODE:  # an edited cudaenv (a development checkout) never reads a stale cache
        stat = (here / name).stat()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for directory in directories:
        digest.update(f"dir:{directory}\0".encode())
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".toml"):
                stat = entry.stat()
                digest.update(f"{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]


def private(path: Path, *, directory: bool) -> bool:
    """Owned by this user, writable by nobody else, and not a symbolic link."""
    import stat

    try:
        info = os.lstat(path)
    except OSError:
        return False
    kind_ok = stat.S_ISDIR(info.st_mode) if directory else stat.S_ISREG(info.st_mode)
    return kind_ok and info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read(key: str):
    directory = cache_dir()
    path = directory / f"matrix-{key}.pickle"
    if not (private(directory, directory=True) and private(path, directory=False)):
        return None  # missing, or someone else could have written it: never unpickle that
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except Exception:  # truncated, or from an incompatible cudaenv: rebuild it
        return None


def write(key: str, matrix) -> None:
    directory = cache_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(directory, directory=True):
            return  # a directory others can write: not a place for a file this user will unpickle
        for stale in directory.glob("matrix-*.pickle"):
            stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".matrix-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(matrix, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, directory / f"matrix-{key}.pickle")
    except OSError:
        pass
