"""The console script's entry point: the fast paths answer before click is imported.

``--version`` is answered here; ``--help``, ``resolve``, ``ps`` and the common ``run`` by ``cudaenv.cli.fast``, which declines
anything it does not parse exactly as click would. Everything else goes to ``cudaenv.cli.main``.
Keeping this module tiny is what makes the fast paths fast (importing click alone costs about
twice the bare interpreter's start-up).
"""

import sys

from cudaenv import __version__


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        sys.stdout.write(f"cudaenv {__version__}\n")
        sys.exit(0)
    if args and args[0] in ("resolve", "ps", "run", "--help", "-h"):  # = cudaenv.cli.fast.FAST
        code = _fast(list(args), remember=argv is None)
        if code is not None:
            if argv is None and args[0] in ("run", "resolve"):
                # The answer is printed (or the container gone) and every file and socket closed
                # (each in a `with`); what is left is the interpreter's teardown, whose final
                # garbage collection walks every object the imports made (5-10 ms). Frozen objects
                # are skipped by that walk (a cycle among them is left to the operating system);
                # atexit handlers, the flushing of stdout and stderr and the exit status are the
                # interpreter's as before. Only in a process of its own: a test calling main()
                # keeps its heap.
                import gc

                gc.freeze()
            sys.exit(code)
    from cudaenv.cli import main as cli_main

    cli_main(argv)


def _fast(args: list[str], *, remember: bool) -> int | None:
    """A fast path's exit code, or None to hand over to click; failures end as click's commands do."""
    from cudaenv.cli import fast

    try:
        return fast.main(args, remember=remember)
    except Exception as exc:
        from cudaenv.cli.failure import end, wants_json

        end(exc, wants_json(args))
        raise
