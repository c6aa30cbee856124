"""Printing helpers shared by commands: the ``--json`` contract and plain tables live here.

``--json`` means one JSON value (an object; an array for listings) on stdout and nothing else on
stdout; human-readable progress and warnings go to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False))


def json_option(func):
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
