"""A real terminal for screen tests: a private tmux server (its own socket) running one command."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid

import pytest


def require_tmux() -> str:
    from tests.conftest import in_ci

    binary = shutil.which("tmux")
    if binary is None:
        message = "tmux is not installed (scripts/test.sh installs Debian's tmux)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return binary


class Tmux:
    """``command`` in a detached WIDTH x HEIGHT session; after it exits the pane prints its exit code."""

    def __init__(self, command: list[str], env: dict[str, str], width: int = 100, height: int = 30) -> None:
        self.binary = require_tmux()
        self.socket = f"cudaenv-test-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # the shell survives the Ctrl-C a test sends (a handler, not an ignore: the command gets the default)
        script = f"trap : INT; env {exports} {shlex.join(command)}; echo \"exited $?\"; sleep 60"
        self._tmux("new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height), "sh", "-c", script)

    def _tmux(self, *args: str) -> str:
        return subprocess.run([self.binary, "-L", self.socket, *args], check=True, capture_output=True,
                              text=True, timeout=30).stdout

    def screen(self) -> list[str]:
        return self._tmux("capture-pane", "-p", "-t", "main").splitlines()

    def wait_for(self, text: str, timeout: float = 30) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            lines = self.screen()
            if any(text in line for line in lines):
                return lines
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on the screen:\n" + "\n".join(lines))
            time.sleep(0.2)

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "main", *keys)

    def close(self) -> None:
        subprocess.run([self.binary, "-L", self.socket, "kill-server"], capture_output=True, timeout=30)
