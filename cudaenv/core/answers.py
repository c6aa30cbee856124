"""Answers to repeated questions, remembered: ``cudaenv resolve`` asked the same thing again
prints what it printed last time without importing the resolver, the matrix or ``packaging``.

Scripts and CI call ``cudaenv resolve`` in loops with the same words; each call spends most of its
time importing code (about 40 ms here) to redo a resolution whose inputs have not changed
(issue #14). An answer is remembered only when it was a pure function of what is recorded with it:

* the key: the command and its words, the environment it reads (``ENVIRONMENT``: the declared
  target, the overlay path, where the default overlay directory is; nothing else, so no
  credential is ever written down), the working directory, the interpreter, its version and
  ``sys.path``;
* the files it was computed from, each with its identity, size, modification and change time:
  every module the answering process had loaded (cudaenv, ``packaging``, the standard library),
  every ``.py`` file of cudaenv, every matrix directory and file (shipped and overlays), and the
  default overlay directory even where it does not exist yet, so creating it counts as a change.

The caller decides what is pure: ``resolve`` remembers nothing when it read a project or asked
this machine for its driver and GPUs. A remembered answer is used only when the key is the same
text (kept whole in the file, not just its short name) and every recorded file still looks as it
did (``_state``); otherwise the question is answered afresh and remembered again.
Answers are plain data (``marshal`` of strings and numbers, checked on read), live under the cache
directory's rules (``cudaenv.core.cache``), and are bounded (``LIMIT`` files, the oldest dropped).
``CUDAENV_NO_CACHE=1`` turns them off.
"""

from __future__ import annotations

import marshal
import os
import sys

from cudaenv import __version__
from cudaenv.core.cache import enabled, read_private, root, write_private

FORMAT = 2  # bump when the record below changes
LIMIT = 256  # answers kept; writing one more drops the oldest half
# The environment an answer may depend on: what ``resolve`` reads (the declared target, the matrix
# overlays and where the default overlay directory is), named one by one so that nothing else, a
# registry password least of all, is ever written into an answer's file. A test reads every
# CUDAENV_* name in the modules a resolution loads and requires each to be here or in NOT_INPUTS.
ENVIRONMENT = ("CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS", "CUDAENV_MATRIX_PATH", "HOME", "XDG_CONFIG_HOME")
NOT_INPUTS = {  # read on the way, but never part of what an answer says
    "CUDAENV_CACHE_DIR": "where answers are kept",
    "CUDAENV_NO_CACHE": "whether they are kept at all",
    "CUDAENV_NVML_MODULE": "read only when this machine is asked, and such answers are never kept",
}

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable


def directory() -> str:
    return os.path.join(root(), "answers")


def key_text(command: str, words: list[str]) -> str:
    """Everything besides files that an answer depends on, as one text. The working directory is
    part of it: a relative overlay path (``CUDAENV_MATRIX_PATH=overlay``) means another directory
    elsewhere."""
    environment = [(name, os.environ.get(name)) for name in ENVIRONMENT]
    return repr((FORMAT, __version__, sys.version, sys.executable, sys.path, os.getcwd(), command, words,
                 environment))


def _path(key: str) -> str:
    import zlib

    data = key.encode("utf-8", "surrogatepass")
    return os.path.join(directory(), f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.answer")


def _state(path: str):
    """What a recorded file looks like now, or None when it is not there: its identity, size,
    modification time and change time (which also moves on chmod, chown and rename)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


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


def code_states() -> list[tuple[str, tuple[int, ...]]] | None:
    """Every module file this process has loaded and every ``.py`` file of cudaenv itself (some,
    such as the matrix loader, shape an answer without being loaded when the matrix comes from its
    cache), with their states; None when one cannot be looked at (a module inside a zip archive,
    say), since a change to it would go unseen."""
    paths = [path for module in list(sys.modules.values()) if isinstance(path := getattr(module, "__file__", None), str)]
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cudaenv/core/.. = cudaenv
    for folder, folders, files in os.walk(package):
        folders[:] = [name for name in folders if name != "__pycache__"]
        paths += [os.path.join(folder, name) for name in files if name.endswith(".py")]
    found = states(paths)
    return None if any(state is None for _, state in found) else found


def states(paths: Iterable[str]) -> list[tuple[str, tuple[int, ...] | None]]:
    """Each path with what it looks like now. Taken for the data files *before* they are read, so
    an edit made while the answer is computed is seen as a change next time."""
    return [(path, _state(path)) for path in paths]


def remember(key: str, text: str, code: int, watched: Iterable[tuple[str, tuple[int, ...] | None]]) -> None:
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
    """At most ``LIMIT`` answers: past that, the older half goes. A temporary file an interrupted
    write left behind goes after an hour."""
    import time

    try:
        found = list(os.scandir(directory()))
        for entry in found:
            if entry.name.endswith(".tmp") and entry.stat().st_mtime < time.time() - 3600:
                os.unlink(entry.path)
        entries = [e for e in found if e.name.endswith(".answer")]
        if len(entries) <= LIMIT:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for entry in entries[: len(entries) - LIMIT // 2]:
            os.unlink(entry.path)
    except OSError:
        pass
