"""A per-user cache of the loaded, validated matrix, so a CLI call does not re-parse TOML.

Parsing and cross-checking ~1 MB of TOML costs far more than the resolution itself. The cache
key covers cudaenv's version, the Python version, and the path, size and modification time of
every matrix file (shipped and overlays), so any edit — an overlay added tomorrow included —
invalidates it. A broken or unwritable cache is ignored: it is only ever a shortcut.
Set ``CUDAENV_NO_CACHE=1`` to bypass it; ``CUDAENV_CACHE_DIR`` moves it.

The file is data, never code: the matrix is flattened to plain tuples, strings and numbers
(``marshal`` of those, no pickle), and reading it back only ever builds the row classes named in
``_CLASSES`` — so a cache in a shared or tampered directory cannot run anything. Even so, a file
(or directory) owned by someone else or writable by others is refused, not read.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import stat as stat_module
import sys
import tempfile
from pathlib import Path

from cudaenv import __version__

FORMAT = 2  # bump when the encoding below changes
_SUFFIX = ".marshal"


def cache_dir() -> Path:
    explicit = os.environ.get("CUDAENV_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cudaenv"


def enabled() -> bool:
    return os.environ.get("CUDAENV_NO_CACHE", "").lower() not in ("1", "true", "yes")


CODE = ("model.py", "builds.py", "load.py", "validate.py", "__init__.py", "cache.py")  # what shapes the cached data


def cache_key(directories: list[Path]) -> str:
    digest = hashlib.sha256(f"{__version__}\0{sys.version_info[:3]}\0{FORMAT}\0".encode())
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


# --- encoding: dataclass rows and specifier sets to tagged plain data ----------------------------
# A tagged node is a list: ["D", class name, (field values...)], ["S", specifier text],
# ["F", (frozenset items...)], ["L", (list items...)]. Tuples, dicts, str, int, float, bool and
# None stand for themselves. Nothing else is accepted in either direction.


def _classes() -> dict[str, type]:
    """The only types a cache file may produce (the matrix and its rows)."""
    from cudaenv.matrix import Matrix, model
    from cudaenv.matrix.builds import Build

    found = {"Matrix": Matrix, "Build": Build}
    for name in dir(model):
        value = getattr(model, name)
        if isinstance(value, type) and getattr(value, "__module__", "") == model.__name__ \
                and hasattr(value, "__dataclass_fields__"):
            found[name] = value
    return found


_PLAIN = (str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


def encode(value, classes: dict[str, type]):
    from packaging.specifiers import SpecifierSet

    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, tuple):
        return tuple(encode(v, classes) for v in value)
    if isinstance(value, list):
        return ["L", tuple(encode(v, classes) for v in value)]
    if isinstance(value, frozenset):
        return ["F", tuple(encode(v, classes) for v in sorted(value, key=repr))]
    if isinstance(value, dict):
        return {encode(k, classes): encode(v, classes) for k, v in value.items()}
    if isinstance(value, SpecifierSet):
        return ["S", str(value)]
    name = type(value).__name__
    if classes.get(name) is type(value):
        names = tuple(value.__dataclass_fields__)
        state = tuple(encode(getattr(value, n), classes) for n in names)
        extra = {k: encode(v, classes) for k, v in vars(value).items() if k not in names}
        return ["D", name, state, extra]  # extra: cached properties computed before the write
    raise TypeError(f"cannot cache a {type(value).__name__}")


_SPECIFIERS: dict = {}  # specifier text -> SpecifierSet (treated as immutable everywhere)


class _Invalid(Exception):
    """The file holds something a matrix cache never holds."""


def decode(node, classes: dict[str, type]):
    if type(node) in _PLAIN_TYPES:
        return node
    kind = type(node)
    if kind is tuple:
        if all(type(v) in _PLAIN_TYPES for v in node):  # most tuples: names, versions, capabilities
            return node
        return tuple([decode(v, classes) for v in node])
    if kind is dict:
        return {k if type(k) in _PLAIN_TYPES else decode(k, classes): v if type(v) in _PLAIN_TYPES else decode(v, classes)
                for k, v in node.items()}
    if kind is not list or not node:
        raise _Invalid(type(node).__name__)
    tag = node[0]
    if tag == "S" and len(node) == 2 and type(node[1]) is str:
        found = _SPECIFIERS.get(node[1])
        if found is None:  # many rows share a range: parse each text once
            from packaging.specifiers import SpecifierSet

            found = _SPECIFIERS[node[1]] = SpecifierSet(node[1])
        return found
    if tag == "L" and len(node) == 2 and type(node[1]) is tuple:
        return [decode(v, classes) for v in node[1]]
    if tag == "F" and len(node) == 2 and type(node[1]) is tuple:
        return frozenset(decode(v, classes) for v in node[1])
    if tag == "D" and len(node) == 4 and node[1] in classes and type(node[2]) is tuple and type(node[3]) is dict:
        cls = classes[node[1]]
        names = tuple(cls.__dataclass_fields__)
        if len(names) != len(node[2]) or not all(type(k) is str for k in node[3]):
            raise _Invalid(node[1])
        instance = object.__new__(cls)  # frozen dataclass: fill __dict__ directly, no __init__ code
        instance.__dict__.update(zip(names, [v if type(v) in _PLAIN_TYPES else decode(v, classes) for v in node[2]]))
        instance.__dict__.update({k: decode(v, classes) for k, v in node[3].items()})
        return instance
    raise _Invalid(repr(tag)[:20])


# --- the file ----------------------------------------------------------------------------------


def private(path: Path, *, directory: bool) -> bool:
    """Owned by this user, writable by nobody else, and not a symbolic link."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    kind_ok = stat_module.S_ISDIR(info.st_mode) if directory else stat_module.S_ISREG(info.st_mode)
    return kind_ok and info.st_uid == os.geteuid() \
        and not info.st_mode & (stat_module.S_IWGRP | stat_module.S_IWOTH)


def read(key: str):
    directory = cache_dir()
    path = directory / f"matrix-{key}{_SUFFIX}"
    if not (private(directory, directory=True) and private(path, directory=False)):
        return None  # missing, or someone else could have written it
    try:
        with open(path, "rb") as handle:
            node = marshal.loads(handle.read())  # one read: marshal.load on a file reads piecemeal
        return decode(node, _classes())
    except Exception:  # missing, truncated, foreign or from an incompatible cudaenv: rebuild it
        return None


def write(key: str, matrix) -> None:
    directory = cache_dir()
    try:
        data = marshal.dumps(encode(matrix, _classes()))
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(directory, directory=True):
            return  # a directory others can write: not a place for a file this user will trust
        for stale in [*directory.glob("matrix-*.pickle"), *directory.glob(f"matrix-*{_SUFFIX}")]:
            stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".matrix-", suffix=".tmp")  # mode 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, directory / f"matrix-{key}{_SUFFIX}")
    except (OSError, TypeError, ValueError):
        pass
