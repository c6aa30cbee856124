"""cudaenv's per-user cache directory, and the one rule for trusting what is in it.

Several things are remembered between runs so that everyday commands start fast: the decoded
matrix (``cudaenv.matrix.cache``), compiled templates (``cudaenv.images.render``), the BuildKit
probe (``cudaenv.engine.buildkit_probe``), the engine's refused ulimits
(``cudaenv.engine.limits_memory``) and each project's current image (``cudaenv.images.key``);
printed answers are never cached. All of them live under one directory
(``CUDAENV_CACHE_DIR``, else ``$XDG_CACHE_HOME/cudaenv``, else ``~/.cache/cudaenv``) and follow
one rule: a file is read only when it and its directory belong to this user, nobody else can
write them and neither is a symbolic link, and it is written atomically (a private temporary file,
then a rename). A cache that is missing, foreign or broken is ignored: it is only ever a shortcut.
``CUDAENV_NO_CACHE=1`` turns the matrix cache and compiled templates off.

This module imports nothing but ``os`` and ``stat``, so every cache can use it cheaply.
"""

from __future__ import annotations

import os
import stat as stat_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path


def root() -> str:
    """The cache directory, as text (it may not exist yet)."""
    explicit = os.environ.get("CUDAENV_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cudaenv")


def cache_dir() -> Path:
    from pathlib import Path

    return Path(root())


def enabled() -> bool:
    return os.environ.get("CUDAENV_NO_CACHE", "").lower() not in ("1", "true", "yes")


def private(path: str | os.PathLike, *, directory: bool) -> bool:
    """Owned by this user, writable by nobody else, and not a symbolic link."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return False
    kind_ok = stat_module.S_ISDIR(info.st_mode) if directory else stat_module.S_ISREG(info.st_mode)
    return kind_ok and info.st_uid == os.geteuid() \
        and not info.st_mode & (stat_module.S_IWGRP | stat_module.S_IWOTH)


def read_private(path: str) -> bytes | None:
    """The file's bytes, or None when it is missing or it or its directory is not private."""
    if not (private(os.path.dirname(path), directory=True) and private(path, directory=False)):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def write_private(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically (mode 0600) in a private directory, made if missing
    (mode 0700). False, and nothing written, when the directory is not private or on any error."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not private(directory, directory=True):
            return False  # a directory others can write: not a place for a file this user will trust
        # a fresh name that no one else can have made (O_EXCL) or pointed elsewhere (O_NOFOLLOW);
        # not tempfile, whose imports would cost more than a small cached file saves
        temporary = os.path.join(directory, f".{os.getpid()}-{os.urandom(8).hex()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
        return True
    except OSError:
        return False
