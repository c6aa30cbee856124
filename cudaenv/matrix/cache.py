"""A per-user cache of the loaded, validated matrix, so a CLI call does not re-parse TOML.

Parsing and cross-checking ~1 MB of TOML costs far more than the resolution itself. The cache
key covers cudaenv's version, the Python version, and the path, size and modification time of
every matrix file (shipped and overlays), so any edit — an overlay added tomorrow included —
invalidates it. A broken or unwritable cache is ignored: it is only ever a shortcut.
Set ``CUDAENV_NO_CACHE=1`` to bypass it; ``CUDAENV_CACHE_DIR`` moves it.

The file is data, never code: the matrix is flattened to plain tuples, strings and numbers
(``marshal`` of those, no pickle), and reading it back only ever builds the row classes named in
``_classes()`` — so a cache in a shared or tampered directory cannot run anything. Even so, a file
(or directory) owned by someone else or writable by others is refused, not read.

Each field of the matrix (and each framework's builds) is its own marshalled chunk inside the
file, decoded on first use: ``cudaenv resolve --torch …`` never builds the JAX rows. The file
also holds the full text of its key, checked on read, so the short name in the file name only
has to be unlikely to collide, not impossible (no ``hashlib`` at start-up).
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cudaenv import __version__
from cudaenv.core.cache import enabled, read_private, root, write_private  # the cache directory and its rules

__all__ = ["enabled", "key_text", "cache_key", "read", "write"]

if TYPE_CHECKING:
    from pathlib import Path

FORMAT = 3  # bump when the encoding below changes
_SUFFIX = ".marshal"


# what shapes the cached data: this package's code and the modules its loader and checks use
CODE = ("model.py", "builds.py", "load.py", "validate.py", "gpus.py", "__init__.py", "cache.py",
        "../versions.py", "../core/references.py", "../errors.py")


_KEYS: dict[str, str] = {}  # short key -> the full text it stands for (this process's keys)


def key_text(directories: list) -> str:
    """Everything the cached matrix depends on, as text: versions, code and matrix file stats."""
    parts = [f"{__version__}\0{sys.version_info[:3]}\0{FORMAT}"]
    here = os.path.dirname(__file__)
    for name in CODE:  # an edited cudaenv (a development checkout) never reads a stale cache
        stat = os.stat(os.path.join(here, name))
        parts.append(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}")
    for directory in directories:
        parts.append(f"dir:{os.path.abspath(directory)}")  # a relative overlay path is another place elsewhere
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".toml"):
                stat = entry.stat()
                parts.append(f"{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return "\0".join(parts)


def cache_key(directories: list) -> str:
    """A short name for ``key_text`` (two 32-bit checksums); the file holds the full text."""
    import zlib

    text = key_text(directories)
    data = text.encode()
    key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
    _KEYS[key] = text
    return key


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


class _Rows(Mapping):
    """framework -> its builds, each framework decoded from its chunk on first use."""

    def __init__(self, chunks: dict, decode_chunk) -> None:
        self._chunks, self._decode, self._done = chunks, decode_chunk, {}

    def __getitem__(self, name: str):
        if name not in self._done:
            self._done[name] = self._decode(self._chunks[name], ("memo", name))
        return self._done[name]

    def __iter__(self):
        return iter(self._chunks)

    def __len__(self) -> int:
        return len(self._chunks)


def _fresh(where: tuple[str, str]):
    """A field (or a framework's builds) from the matrix files, for a chunk that failed to decode."""
    from cudaenv.matrix import load_matrix
    from cudaenv.matrix.builds import every_build

    matrix = load_matrix(use_cache=False)
    return every_build(matrix)[where[1]] if where[0] == "memo" else getattr(matrix, where[1])


def read(key: str):
    path = os.path.join(root(), f"matrix-{key}{_SUFFIX}")
    data = read_private(path)
    if data is None:
        return None  # missing, or someone else could have written it
    try:
        node = marshal.loads(data)  # one read: marshal.load on a file reads piecemeal
        if type(node) is not tuple or len(node) != 6 or node[0] != FORMAT or node[1] != "Matrix":
            return None
        _, _, text, fields, extra, builds = node
        if key in _KEYS and text != _KEYS[key]:
            return None  # another state whose short key collides with this one
        if type(fields) is not dict or type(extra) is not dict or not (builds is None or type(builds) is dict):
            return None
        if not all(type(v) is bytes for chunks in (fields, extra, builds or {}) for v in chunks.values()):
            return None
        classes = _classes()
        matrix_class = classes["Matrix"]
        if set(fields) != set(matrix_class.__dataclass_fields__):
            return None

        def decode_chunk(chunk: bytes, where: tuple[str, str]):
            try:
                return decode(marshal.loads(chunk), classes)
            except Exception:  # damaged after it was written: forget the file, read the TOML
                try:
                    os.unlink(path)
                except OSError:
                    pass
                return _fresh(where)

        matrix = object.__new__(matrix_class)  # frozen dataclass: fill __dict__ directly, no __init__ code
        state = matrix.__dict__
        state["_pending"] = {}
        for name, chunk in fields.items():
            if hasattr(matrix_class, name):  # a default on the class would hide a pending field: decode now
                state[name] = decode(marshal.loads(chunk), classes)
            else:
                state["_pending"][name] = lambda c=chunk, n=name: decode_chunk(c, ("field", n))
        for name, chunk in extra.items():  # cached properties computed before the write (small)
            state[name] = decode(marshal.loads(chunk), classes)
        if builds is not None:
            memo = state.setdefault("memo", {})
            if type(memo) is not dict:
                return None
            memo["resolver.builds"] = _Rows(builds, decode_chunk)
        return matrix
    except Exception:  # missing, truncated, foreign or from an incompatible cudaenv: rebuild it
        return None


def write(key: str, matrix) -> None:
    directory = root()
    try:
        classes = _classes()
        names = tuple(matrix.__dataclass_fields__)
        fields = {n: marshal.dumps(encode(getattr(matrix, n), classes)) for n in names}
        extra, builds = {}, None
        for name, value in vars(matrix).items():
            if name in names or name.startswith("_"):
                continue
            if name == "memo":
                value = dict(value)
                found = value.pop("resolver.builds", None)
                if found is not None:
                    builds = {fw: marshal.dumps(encode(rows, classes)) for fw, rows in found.items()}
            extra[name] = marshal.dumps(encode(value, classes))
        data = marshal.dumps((FORMAT, "Matrix", _KEYS.get(key, ""), fields, extra, builds))
        path = os.path.join(directory, f"matrix-{key}{_SUFFIX}")
        if not write_private(path, data):
            return  # a directory others can write is not a place for a file this user will trust
        import glob

        for stale in [*glob.glob(os.path.join(glob.escape(directory), "matrix-*.pickle")),
                      *glob.glob(os.path.join(glob.escape(directory), f"matrix-*{_SUFFIX}"))]:
            if stale != path:  # one matrix is kept: this one
                try:
                    os.unlink(stale)
                except FileNotFoundError:
                    pass
    except (OSError, TypeError, ValueError):
        pass
