"""The container environment an export writes: ``[run] env`` and ``-e`` flags, split into values
that go into the file and names whose value is read where the job starts.

``cudaenv run -e HF_TOKEN`` hands the caller's value to the container. An export is a file that
people commit and share, so the same flag must never copy that value into it: ``-e NAME`` without
a value becomes a *pass-through* name, and each export says in its own terms where the value comes
from when the job starts (a Kubernetes Secret, the environment ``sbatch`` was submitted from, the
shell that runs ``docker compose up``). ``cudaenv.project.runopts.parse_env`` stays what ``cudaenv run``
uses; this module is the exports' reading of the same flags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudaenv.errors import UserError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


@dataclass(frozen=True)
class ExportEnv:
    """What an export sets in the container: ``values`` are written into the file; ``passed``
    names take their value from where the job starts and are never written with one."""

    values: tuple[tuple[str, str], ...] = ()
    passed: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted({name for name, _ in self.values} | set(self.passed)))


def parse_export_env(flags: tuple[str, ...]) -> tuple[dict[str, str], tuple[str, ...]]:
    """``-e NAME=value`` / ``-e NAME`` -> (the values, the pass-through names), the caller's
    environment never read. The later flag for a name wins, as with ``docker run -e``."""
    values: dict[str, str] = {}
    passed: dict[str, None] = {}
    for item in flags:
        name, sep, value = item.partition("=")
        if not ENV_NAME.fullmatch(name):
            raise UserError(f"-e {item!r}: expected NAME=value, or NAME to pass the value through where the job starts")
        values.pop(name, None)
        passed.pop(name, None)
        if sep:
            values[name] = value
        else:
            passed[name] = None
    return values, tuple(passed)


def merge(project_env, values: dict[str, str] | None, passed: tuple[str, ...] = ()) -> ExportEnv:
    """``[run] env`` under the flags: a flag's value, or a flag's pass-through, replaces the
    project's value for that name (``cudaenv run`` gives ``-e`` the last word too)."""
    merged = {**dict(project_env), **(values or {})}
    for name in passed:
        merged.pop(name, None)
    return ExportEnv(values=tuple(sorted(merged.items())), passed=tuple(sorted(set(passed))))
