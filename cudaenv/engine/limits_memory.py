"""What a daemon could not grant, remembered per daemon, so only the first `cudaenv run` against a
low-limit daemon (rootless Docker, a sandboxed dockerd) pays for finding out.

A small JSON file in the user's cache directory, under its rules (``cudaenv.core.cache``): plain
data, never code; a damaged one, or one someone else could have written, is ignored (the probe
simply runs again).
"""

from __future__ import annotations

import json
import os



def _path() -> str:
    from cudaenv.core.cache import root

    return os.path.join(root(), "engine-limits.json")


def _entry(key: str, wanted: dict) -> str:
    return json.dumps([key, sorted((name, list(value)) for name, value in wanted.items())])


def _load() -> dict:
    """The remembered refusals; empty when missing, damaged, or not this user's alone."""
    from cudaenv.core.cache import read_private

    data = read_private(_path())
    try:
        found = json.loads(data) if data is not None else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def recall(key: str, wanted: dict) -> tuple[str, ...] | None:
    found = _load().get(_entry(key, wanted))
    if isinstance(found, list) and all(isinstance(name, str) for name in found):
        return tuple(found)
    return None


def remember(key: str, wanted: dict, refused: tuple[str, ...]) -> None:
    """Best effort: a file that cannot be written means the next run probes again."""
    from cudaenv.core.cache import write_private

    data = _load()
    data[_entry(key, wanted)] = list(refused)
    write_private(_path(), json.dumps(data).encode())
