"""What a daemon could not grant, remembered per daemon, so only the first `cudaenv run` against a
low-limit daemon (rootless Docker, a sandboxed dockerd) pays for finding out.

A small JSON file in the user's cache directory: plain data, never code, and a damaged one is
ignored (the probe simply runs again).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path


def _path() -> Path:
    from cudaenv.matrix.cache import cache_dir

    return cache_dir() / "engine-limits.json"


def _entry(key: str, wanted: dict) -> str:
    return json.dumps([key, sorted((name, list(value)) for name, value in wanted.items())])


def recall(key: str, wanted: dict) -> tuple[str, ...] | None:
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
        found = data.get(_entry(key, wanted))
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(found, list) and all(isinstance(name, str) for name in found):
        return tuple(found)
    return None


def remember(key: str, wanted: dict, refused: tuple[str, ...]) -> None:
    import tempfile

    path = _path()
    try:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[_entry(key, wanted)] = list(refused)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".engine-limits-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except OSError:
        pass  # only a shortcut: the next run probes again
