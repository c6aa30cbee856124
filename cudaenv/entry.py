"""The console script's entry point: every command, ``--help`` and ``--version`` go to click.

One parser: the click group in ``cudaenv.cli.group`` imports each command's module only when that
command runs, so start-up stays near the interpreter's own plus click's (about 100 ms), which is
below what a person notices.
"""

from cudaenv.cli import main

__all__ = ["main"]
