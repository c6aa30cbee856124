"""Printing helpers shared by commands: the ``--json`` contract lives here.

``--json`` means one JSON object (or array, for listings) on stdout and nothing else on stdout;
human-readable progress and warnings go to stderr.
"""

from __future__ import annotations

import json
from typing import Any

import click


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False))


def json_option(func):
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")(func)
