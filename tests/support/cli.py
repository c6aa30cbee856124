"""The one way the suite runs the real command line in a process of its own.

``python -m cudaenv ARGS`` with this interpreter: real exit codes, stdout and stderr kept apart,
text in and out. Each test module says only what differs for it (the environment, the working
directory, a longer time limit, text on stdin); in-process runs (``CliRunner``, ``main([...])``)
are for tests that patch something and need no process of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def command_line(python: str = sys.executable) -> tuple[str, ...]:
    """The command itself, with ``python`` (another user's process may need an interpreter of its own)."""
    return (python, "-m", "cudaenv")


# The command itself, for the few tests that keep a process running (signals, a terminal) and so
# start it with Popen or tmux instead of ``cudaenv()``.
CUDAENV = command_line()
# The environment a declared target host comes from (``cudaenv.hosts.target``): a developer's or
# CI's own setting must not decide what a test of another host sees.
TARGET_OVERRIDES = ("CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS")


def cudaenv(*args: object, env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
            timeout: float = 600, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``cudaenv ARGS`` (each argument ``str()``-ed) and wait for it. ``env`` None: this
    process's environment. This checkout's cudaenv is imported whatever the working directory
    (its root ends ``PYTHONPATH``, after anything the caller put first). stdin is empty unless
    ``input`` is given, so nothing waits on a terminal and ``run`` never sees one."""
    environ = dict(os.environ if env is None else env)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (environ.get("PYTHONPATH", ""), str(ROOT)) if p)
    return subprocess.run([*CUDAENV, *map(str, args)], capture_output=True, text=True,
                          env=environ, cwd=cwd, timeout=timeout, input=input,
                          stdin=subprocess.DEVNULL if input is None else None)


def without_target_overrides(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) without the declared-target variables."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k not in TARGET_OVERRIDES}


def isolated_env(*, overlay: Path | str | None = None, **extra: str) -> dict[str, str]:
    """This process's environment with no ``CUDAENV_*`` of the caller's but the suite's matrix
    cache, and no matrix overlays unless one is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
    if "CUDAENV_CACHE_DIR" in os.environ:
        env["CUDAENV_CACHE_DIR"] = os.environ["CUDAENV_CACHE_DIR"]  # the suite's throw-away matrix cache
    env["CUDAENV_MATRIX_PATH"] = str(overlay) if overlay else ""
    env.update(extra)
    return env
