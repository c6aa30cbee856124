"""Errors that carry their exit code, so the CLI maps them without guessing.

The exit-code contract (design notes): 0 success, 1 a clean "no" (no stack, incompatible host,
failed check or build), 2 bad usage or bad input. Anything a user can cause by what they typed or
wrote is a ``UserError``: the CLI prints its one-line message and never a traceback.
"""

from __future__ import annotations


class CudaenvError(Exception):
    """Base class: a failure with a message meant for the user."""

    exit_code = 1


class UserError(CudaenvError):
    """Bad usage or bad input: unreadable or invalid files, unknown versions. Exit 2."""

    exit_code = 2


class MatrixError(UserError):
    """An invalid matrix file or row (exit 2): names the file, the row and the field."""


class NoStackError(CudaenvError):
    """The configuration admits no stack for its target (exit 1, the clean "no")."""


class LockError(CudaenvError):
    """Locking failed for a reason the user can act on (exit 1): conflicts, unreachable index."""


class IndexUnreachable(LockError):
    """A package index did not answer (DNS, refused, timeout, TLS): nothing was resolved."""

    code = "index-unreachable"


class EngineError(CudaenvError):
    """The container engine failed or is unreachable. Exit 1; the message says how to fix it."""

    exit_code = 1


class ImageNotHere(EngineError):
    """The image a container was to start from is not in the engine's store (removed since its tag
    was recorded): `cudaenv run` then checks and builds again instead of failing."""


class UlimitRefused(EngineError):
    """The daemon cannot grant a ulimit (its own hard limit is lower): ``name`` says which."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class BuildError(EngineError):
    """An image build failed; carries the failing step and the tail of its output."""

    def __init__(self, message: str, *, step: str | None = None, log_tail: str = "") -> None:
        super().__init__(message)
        self.step = step
        self.log_tail = log_tail


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters: an error line names bad input, it never
    repeats a megabyte of it."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 15]}… ({len(text)} chars)"
