"""How a failed command ends: one line on stderr, the ``--json`` error object, the exit code.

The one place that turns an exception into that ending, for every command and for the group's
own errors; ``cudaenv.cli.group.main`` adds click's usage errors on top.
"""

from __future__ import annotations

import sys


def wants_json(argv: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it belongs to a container command)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def error_code(exc: BaseException) -> str:
    from cudaenv import errors

    for kind, code in ((errors.BuildError, "build-failed"), (errors.EngineError, "engine"),
                       (errors.MatrixError, "bad-matrix"), (errors.UserError, "bad-input"),
                       (errors.NoStackError, "no-stack")):
        if isinstance(exc, kind):
            return getattr(exc, "code", None) or code
    return getattr(exc, "code", None) if isinstance(getattr(exc, "code", None), str) else "failed"


def fail(exc: BaseException, exit_code: int, message: str, code: str, as_json: bool, *, json_lines: bool = False) -> None:
    """One line on stderr; with --json also the one error object on stdout (unless the command
    already printed its own), on a line of its own with ``json_lines`` (``top --json``'s stream)."""
    import json

    from cudaenv.cli.output import emit_json_text, error_object, json_emitted, json_text

    if len(message) > 1000:  # bad input is named, never echoed back a megabyte at a time
        message = f"{message[:600]} … {message[-200:]}"
    sys.stderr.write(f"cudaenv: error: {message}\n")
    sys.stderr.flush()
    if as_json and not json_emitted():
        payload = error_object(exc, code=code, message=message)
        payload["exit_code"] = exit_code
        emit_json_text(json.dumps(payload, separators=(",", ":")) + "\n" if json_lines else json_text(payload))
    sys.exit(exit_code)


def end(exc: BaseException, as_json: bool) -> None:
    """Exit for the failures every command shares (cudaenv's errors, unreadable files, a reader
    that left); returns for anything else, which the caller re-raises."""
    from cudaenv.errors import CudaenvError

    if isinstance(exc, CudaenvError):
        fail(exc, exc.exit_code, str(exc), error_code(exc), as_json)
    elif isinstance(exc, BrokenPipeError):  # `cudaenv matrix list torch | head`: the reader left
        sys.stderr.close()
        sys.exit(0)
    elif isinstance(exc, (OSError, UnicodeError)):  # a file the user named cannot be read or written
        where = getattr(exc, "filename", None)
        if isinstance(where, str) and len(where) > 200:
            where = f"{where[:120]}… ({len(where)} chars)"
        reason = getattr(exc, "strerror", None) or exc.__class__.__name__
        fail(exc, 2, f"{where}: {reason}" if where else f"{reason}: {str(exc)[:200]}", "bad-input", as_json)
    elif isinstance(exc, RecursionError):  # a TOML or JSON document nested thousands deep
        fail(exc, 2, "input nested too deeply to read", "bad-input", as_json)
