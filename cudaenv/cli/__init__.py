"""The ``cudaenv`` command line: thin click commands that parse, call and print.

The click group lives in ``cudaenv.cli.group``; each command's module is imported only when that
command runs (``_lazy``). ``cli`` and ``main`` are importable from here.
"""

from __future__ import annotations

from cudaenv.cli.commands import COMMANDS

__all__ = ["COMMANDS", "cli", "main"]


def main(argv: list[str] | None = None) -> None:
    """Run the click CLI (see ``cudaenv.cli.group.main``)."""
    from cudaenv.cli.group import main as run

    run(argv)


def __getattr__(name: str):
    if name == "cli":  # the click group, built on first use
        from cudaenv.cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
