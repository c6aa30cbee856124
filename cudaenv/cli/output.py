"""Printing helpers shared by commands: the ``--json`` contract and plain tables live here.

``--json`` means one JSON value (an object; an array for listings) on stdout and nothing else on
stdout; human-readable progress and warnings go to stderr.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`cudaenv ps` does not need it)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


_emitted = False  # whether this process already printed its one JSON value


def json_text(payload: Any) -> str:
    """The one JSON value as every command prints it."""
    import json

    return json.dumps(payload, indent=2, sort_keys=False) + "\n"


def emit_json(payload: Any) -> None:
    emit_json_text(json_text(payload))


def emit_json_text(text: str) -> None:
    """Print a JSON value already made into text (``json_text``), once per process."""
    global _emitted

    _emitted = True
    sys.stdout.write(text)
    sys.stdout.flush()


def print_answer(text: str, as_json: bool) -> None:
    """A command's whole stdout, already made into text: the JSON value or the human report."""
    if as_json:
        emit_json_text(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def json_emitted() -> bool:
    return _emitted


def reset_json() -> None:
    """A new invocation (the entry point can run more than once in one process, as tests do)."""
    global _emitted
    _emitted = False


# "FILE: FIELD: what was expected" is how cudaenv words bad input; pull both out for the JSON object.
_FIELD = r"[A-Za-z_][A-Za-z0-9_.-]*(?:\[[0-9]+\])?(?:\.[A-Za-z0-9_-]+)*"  # compiled when an error needs it


def error_object(exc: BaseException, *, code: str, message: str | None = None) -> dict:
    """The ``--json`` shape of a failure: ``{"ok": false, "error": {"code", "message", "file",
    "field"}}`` (README, "Exit codes and --json"). ``file``/``field`` come from the exception when
    it carries them, else from cudaenv's "FILE: FIELD: …" wording; None when unknown."""
    import re

    text = message if message is not None else str(exc)
    file = getattr(exc, "file", None) or getattr(exc, "filename", None)
    field = getattr(exc, "field", None)
    parts = text.split(": ")
    head = parts[0]
    looks_like_file = not head.startswith("-") and "'" not in head and "://" not in head and (
        "/" in head or head.split(" [")[0].endswith((".toml", ".lock", ".txt", ".json")))
    if file is None and len(parts) > 1 and looks_like_file:
        file = parts[0].split(" [")[0]
        if field is None and len(parts) > 2 and re.fullmatch(_FIELD, parts[1], re.ASCII) and " " not in parts[1]:
            field = parts[1]
    return {"ok": False, "error": {"code": code, "message": text, "file": str(file) if file else None,
                                   "field": field}}


def json_option(func):
    import click  # a decorator: commands that use it import click anyway; printing JSON does not

    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")(func)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned plain-text table; cells are str()-ed, None shows as '-'."""
    cells = [[("-" if c is None else str(c)) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def short_list(values: Sequence[Any], limit: int = 6) -> str:
    values = [str(v) for v in values]
    if len(values) <= limit:
        return ", ".join(values)
    return ", ".join(values[:limit]) + f", … ({len(values)})"
