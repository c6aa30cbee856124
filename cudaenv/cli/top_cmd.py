"""``cudaenv top``: GPU use per container, refreshing like top, or one sample (``--once``/``--json``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

import click

from cudaenv.errors import CudaenvError


def _json_line(payload: dict) -> None:
    click.echo(json.dumps(payload, separators=(",", ":")))
    sys.stdout.flush()


def _container_lookup():
    """Full container ID -> ContainerInfo for cudaenv's running containers; one engine, reused."""
    from cudaenv.run.containers import LABEL_MANAGED
    from cudaenv.engine import get_engine

    engine = get_engine()
    return lambda: {c.id: c for c in engine.containers(LABEL_MANAGED, running_only=True)}


def _live(take, interval: float) -> None:
    """Redraw in place with curses until q (or Ctrl-C, handled by the caller)."""
    import curses

    from cudaenv.monitor.render import render

    def loop(screen) -> None:
        try:
            curses.curs_set(0)
        except curses.error:
            pass  # terminals without an invisible cursor
        screen.timeout(int(interval * 1000))
        while True:
            height, width = screen.getmaxyx()
            lines = render(take(), max(width - 1, 1))
            footer = f"every {interval:g}s - q quits"
            screen.erase()
            for row, line in enumerate(lines[:max(height - 1, 0)]):
                screen.addstr(row, 0, line)
            if height > 1:
                screen.addstr(height - 1, 0, footer[:max(width - 1, 0)], curses.A_REVERSE)
            screen.refresh()
            if screen.getch() in (ord("q"), ord("Q")):
                return

    # ncurses prefers LINES/COLUMNS over the terminal's real size, and a stale pair (exported by
    # some shells, or inherited) would pin the screen and ignore resizes
    for name in ("LINES", "COLUMNS"):
        os.environ.pop(name, None)
    curses.wrapper(loop)


@click.command("top")
@click.option("--once", is_flag=True, help="Print one sample and exit.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per sample, one per line (JSON Lines); with --once exactly one.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True, metavar="SECONDS",
              help="Seconds between samples.")
def top(once: bool, as_json: bool, interval: float) -> None:
    """GPU use per container: utilization, memory, power and temperature of every GPU, and its
    processes grouped by cudaenv container (project, stack, name), other containers and the host.

    Needs NVML (an NVIDIA driver and nvidia-ml-py); without it, one line says so and the exit code is 1.
    """
    from cudaenv.hosts.nvml import session
    from cudaenv.monitor.render import render
    from cudaenv.monitor.sample import take_sample, to_json

    try:
        with session() as nvml:
            lookup = _container_lookup()

            def take():
                return take_sample(nvml, lookup)

            if as_json:
                while True:
                    _json_line(to_json(take()))
                    if once:
                        return
                    time.sleep(interval)
            if once:
                width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 10_000
                click.echo("\n".join(render(take(), width)).rstrip())
                return
            if sys.stdout.isatty():
                _live(take, interval)
                return
            while True:  # not a terminal: batch mode, one frame after another
                click.echo("\n".join(render(take(), 10_000)).rstrip() + "\n")
                sys.stdout.flush()
                time.sleep(interval)
    except KeyboardInterrupt:
        return
    except CudaenvError as exc:
        if not as_json:
            raise
        from cudaenv.cli.failure import error_code, fail

        fail(exc, exc.exit_code, str(exc), error_code(exc), True, json_lines=True)  # the stream stays JSON Lines
