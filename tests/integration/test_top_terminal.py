"""`cudaenv top` in a real terminal (tmux), on recorded NVML answers: the live screen, its refresh,
and leaving it with q or Ctrl-C. The NVML stand-in is injected through the documented test hook
(CUDAENV_NVML_MODULE); everything else — curses, the terminal, /proc — is real."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.support.nvml_recordings import fake_nvml_env, write_recording
from tests.support.terminal import Tmux
from tests.support.cli import CUDAENV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def terminal(tmp_path):
    opened = []

    def start(recording: Path, width: int = 100, height: int = 30) -> Tmux:
        env = {"PYTHONPATH": str(REPO), "LINES": "24", "COLUMNS": "80", **fake_nvml_env(recording)}  # TERM is the one tmux gives its panes
        session = Tmux([*CUDAENV, "top", "--interval", "0.3"], env, width, height)
        opened.append(session)
        return session

    yield start
    for session in opened:
        session.close()


def test_the_live_screen_shows_each_gpu_and_its_processes(terminal, tmp_path):
    me = os.getpid()
    screen = terminal(write_recording(tmp_path, "rtx3090-r525.json", compute=[(me, 1200)])).wait_for("q quits")  # drawn last
    text = "\n".join(screen)
    assert "GPU 0  NVIDIA GeForce RTX 3090  temp 37 C  power 27 W / 200 W" in screen
    assert re.search(r"^  util \[ {10}\]   0%   mem \[ {10}\]   1%  318 / 24576 MiB$", text, re.M)
    assert re.search(rf"^    1200 MiB    pid {me}\s", text, re.M)
    assert "q quits" in screen[-1]  # on the last row of this 30-row terminal, whatever LINES says
    assert "Traceback" not in text


def test_the_screen_refreshes(terminal, tmp_path):
    session = terminal(write_recording(tmp_path, "a100-sxm4-mig-r535.json"))
    first = session.wait_for("q quits")[0]  # the header carries the sample time, to the second
    changed = [session.screen()[0] for _ in range(30) if not time.sleep(0.1)]
    assert any(header != first for header in changed), f"the header never changed from {first!r}"
    assert "util [          ]  n/a" in "\n".join(session.screen())  # MIG: utilization not reported


@pytest.mark.parametrize("key", ["q", "C-c"])
def test_q_or_ctrl_c_leaves_cleanly(terminal, tmp_path, key):
    session = terminal(write_recording(tmp_path, "rtx3090-r525.json"))
    session.wait_for("q quits")
    session.send(key)
    screen = session.wait_for("exited ")
    assert "exited 0" in screen
    assert not any("Traceback" in line for line in screen)


def test_a_narrow_terminal_cuts_lines_instead_of_failing(terminal, tmp_path):
    session = terminal(write_recording(tmp_path, "rtx3090-r525.json", compute=[(os.getpid(), 1200)]), width=40, height=8)
    screen = session.wait_for("q quits")
    assert all(len(line) <= 40 for line in screen)
    session.send("q")
    assert "exited 0" in session.wait_for("exited ")
