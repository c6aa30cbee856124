"""A foreground `cudaenv run` prints everything the container wrote before removing it, even when
the daemon is slow to serve the last log lines; if the stream never ends, it says so."""

from __future__ import annotations

import threading
import time

from cudaenv.run import session as running


class SlowLogsEngine:
    """The calls _foreground makes; the container has exited, its logs arrive after ``delay``."""

    def __init__(self, delay: float, output: bytes = b"/workspace\ntoken\n") -> None:
        self.delay, self.output = delay, output
        self.removed = threading.Event()
        self.calls: list[str] = []

    def start(self, container_id):
        self.calls.append("start")

    def wait(self, container_id, timeout=None):
        return 0

    def stream_output(self, container_id, on_output):
        time.sleep(self.delay)
        if not self.removed.is_set():  # a removed container has no logs left to serve
            on_output(self.output)

    def kill(self, container_id, signal="SIGTERM"):
        self.calls.append("kill")

    def remove(self, container_id):
        self.removed.set()
        self.calls.append("remove")


def test_output_that_arrives_late_is_printed_before_the_container_is_removed(capfdbinary):
    engine = SlowLogsEngine(delay=5.5)  # longer than the 5 s after which output used to be dropped
    assert running.foreground(engine, "c0ffee") == 0
    out, err = capfdbinary.readouterr()
    assert out == b"/workspace\ntoken\n"
    assert b"warning" not in err
    assert engine.calls == ["start", "remove"]


def test_a_stream_that_does_not_end_is_reported_not_silently_cut(capfdbinary, monkeypatch):
    monkeypatch.setattr(running, "OUTPUT_DRAIN_SECONDS", 0.2)
    engine = SlowLogsEngine(delay=2.0)
    assert running.foreground(engine, "c0ffee") == 0
    out, err = capfdbinary.readouterr()
    assert out == b""
    assert b"output was still streaming after 0.2 s; what is shown may be incomplete" in err
    assert engine.calls[-1] == "remove"
