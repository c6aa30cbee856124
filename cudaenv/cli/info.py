"""``cudaenv info``: what this installation is and where its data lives."""

from __future__ import annotations

import platform

import click

from cudaenv import __version__
from cudaenv.cli.output import emit_json, json_option
from cudaenv.core.resources import matrix_dir, templates_dir


def _listing(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))


@click.command()
@json_option
def info(as_json: bool) -> None:
    """Show cudaenv's version, Python, and the matrix and templates it will use."""
    payload = {
        "version": __version__,
        "python": platform.python_version(),
        "matrix_dir": str(matrix_dir()),
        "matrix_files": _listing(matrix_dir()),
        "templates_dir": str(templates_dir()),
        "templates": _listing(templates_dir()),
    }
    if as_json:
        emit_json(payload)
        return
    click.echo(f"cudaenv {payload['version']} on Python {payload['python']}")
    click.echo(f"matrix:    {payload['matrix_dir']} ({len(payload['matrix_files'])} files)")
    click.echo(f"templates: {payload['templates_dir']} ({len(payload['templates'])} files)")
