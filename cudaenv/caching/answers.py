"""Answers to repeated questions, remembered: ``cudaenv resolve`` asked the same thing again
prints what it printed last time without importing the resolver, the matrix or ``packaging``.

Scripts and CI call ``cudaenv resolve`` in loops with the same words; each call spends most of its
time importing code (about 40 ms here) to redo a resolution whose inputs have not changed
(issue #14). An answer is remembered only when it was a pure function of what is recorded with it:

* the key: the command and its words, every ``CUDAENV_*`` variable, ``HOME`` and
  ``XDG_CONFIG_HOME`` (where matrix overlays are looked for), the interpreter, its version and
  ``sys.path``;
* the files it was computed from, each with its size and modification time: every module the
  answering process had loaded (cudaenv, ``packaging``, the standard library), every matrix
  directory and file (shipped and overlays), and the default overlay directory even where it does
  not exist yet, so creating it counts as a change.

The caller decides what is pure: ``resolve`` remembers nothing when it read a project or asked
this machine for its driver and GPUs. A remembered answer is used only when the key is the same
text (kept whole in the file, not just its short name) and every recorded file still has the
size and modification time it had; otherwise the question is answered afresh and remembered again.
Answers are plain data (``marshal`` of strings and numbers, checked on read), live under the cache
directory's rules (``cudaenv.caching``), and are bounded (``LIMIT`` files, the oldest dropped).
``CUDAENV_NO_CACHE=1`` turns them off.
"""

from __future__ import annotations

import marshal
import os
import sys

from cudaenv import __version__
from cudaenv.caching import enabled, read_private, root, write_private

FORMAT = 1  # bump when the record below changes
LIMIT = 256  # answers kept; writing one more drops the oldest half
_ENVIRONMENT = ("HOME", "XDG_CONFIG_HOME")  # beside every CUDAENV_* variable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable


def directory() -> str:
    return os.path.join(root(), "answers")


def key_text(command: str, words: list[str]) -> str:
    """Everything besides files that an answer depends on, as one text."""
    environment = sorted((name, value) for name, value in os.environ.items()
                         if name.startswith("CUDAENV_") or name in _ENVIRONMENT)
    return repr((FORMAT, __version__, sys.version, sys.executable, sys.path, command, words, environment))


def _path(key: str) -> str:
    import zlib

    data = key.encode("utf-8", "surrogatepass")
    return os.path.join(directory(), f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.answer")


def _state(path: str):
    """What a recorded file looks like now: (size, mtime_ns), or None when it is not there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns)


def recall(key: str) -> tuple[str, int] | None:
    """(the text printed on stdout, the exit code) remembered for ``key``, or None."""
    if not enabled():
        return None
    data = read_private(_path(key))
    if data is None:
        return None
    try:
        record = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if type(record) is not tuple or len(record) != 5 or record[0] != FORMAT or record[1] != key:
        return None  # another format, or another key whose short name collides with this one
    _, _, files, text, code = record
    if type(files) is not tuple or type(text) is not str or type(code) is not int:
        return None
    for entry in files:
        if type(entry) is not tuple or len(entry) != 2 or type(entry[0]) is not str:
            return None
        if _state(entry[0]) != entry[1]:
            return None  # edited, added or removed since: answer afresh
    return text, code


def module_states() -> list[tuple[str, tuple[int, int]]] | None:
    """The file of every module this process has loaded, with its state; None when one of them
    cannot be looked at (a module inside a zip archive, say), since a change to it would go unseen."""
    found = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            state = _state(path)
            if state is None:
                return None
            found.append((path, state))
    return found


def states(paths: Iterable[str]) -> list[tuple[str, tuple[int, int] | None]]:
    """Each path with what it looks like now. Taken for the data files *before* they are read, so
    an edit made while the answer is computed is seen as a change next time."""
    return [(path, _state(path)) for path in paths]


def remember(key: str, text: str, code: int, watched: Iterable[tuple[str, tuple[int, int] | None]]) -> None:
    """Record an answer and the files it was computed from, each as ``states`` saw it (the first
    state of a path listed twice wins). Best effort: never fails the command."""
    if not enabled():
        return
    try:
        first: dict = {}
        for path, state in watched:
            first.setdefault(path, state)
        data = marshal.dumps((FORMAT, key, tuple(sorted(first.items())), text, code))
        if write_private(_path(key), data):
            _bound()
    except (OSError, ValueError, TypeError):
        pass


def _bound() -> None:
    """At most ``LIMIT`` answers: past that, the older half goes."""
    try:
        entries = [e for e in os.scandir(directory()) if e.name.endswith(".answer")]
        if len(entries) <= LIMIT:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for entry in entries[: len(entries) - LIMIT // 2]:
            os.unlink(entry.path)
    except OSError:
        pass
