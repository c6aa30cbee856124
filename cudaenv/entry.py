"""The console script's entry point: ``cudaenv --version`` answers before click is imported.

Everything else goes to ``cudaenv.cli.main``; keeping this module tiny is what makes the fast
path fast (importing click alone costs about twice the bare interpreter's start-up).
"""

import sys

from cudaenv import __version__


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        sys.stdout.write(f"cudaenv {__version__}\n")
        sys.exit(0)
    from cudaenv.cli import main as cli_main

    cli_main(argv)
