"""Everyday CLI commands next to the tools they wrap, interleaved in one run (issue #14's table).

    .venv/bin/python bench/cli_bench.py [--runs N] [--baseline /path/to/other/checkout]

Each row runs its command and its reference (`python -c pass`, `docker ps -q`) alternately, N
times, and reports medians and the ratio. With ``--baseline`` the same command also runs from
another checkout (its own .venv), interleaved too, so before/after numbers come from one run.
Absolute times on a busy machine are noisy; the ratios are what count.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "torch-classifier"


def cudaenv(python: str, *args: str) -> list[str]:
    return [python, "-m", "cudaenv", *args]


def rows(python: str) -> list[tuple[str, list[str], list[str] | None]]:
    """(name, command, reference command or None)."""
    bare = [python, "-c", "pass"]
    out = [
        ("resolve --json", cudaenv(python, "resolve", "--torch", "==2.4.1", "--python", "3.11",
                                   "--driver", "550.54.15", "--json"), bare),
        ("--version", cudaenv(python, "--version"), bare),
        ("--help", cudaenv(python, "--help"), bare),
        ("dockerfile DIR", cudaenv(python, "dockerfile", str(EXAMPLE)), None),
    ]
    if shutil.which("docker"):
        out.append(("ps --json", cudaenv(python, "ps", "--json"), ["docker", "ps", "-q"]))
    return out


CACHES = {}  # python -> its own matrix cache dir, so two checkouts never evict each other's cache
ROOTS = {}  # python -> its checkout: `python -m` puts the working directory first on sys.path


def once(command: list[str]) -> float:
    env = dict(os.environ)
    if command[0] in CACHES:
        env["CUDAENV_CACHE_DIR"] = CACHES[command[0]]
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env,
                   cwd=ROOTS.get(command[0]))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline", type=Path, help="another checkout with its own .venv (e.g. main)")
    args = parser.parse_args()
    ours = sys.executable
    theirs = str(args.baseline / ".venv" / "bin" / "python") if args.baseline else None
    scratch = Path(tempfile.mkdtemp(prefix="cudaenv-bench-"))
    CACHES[ours], ROOTS[ours] = str(scratch / "this"), str(ROOT)
    if theirs:
        CACHES[theirs], ROOTS[theirs] = str(scratch / "baseline"), str(args.baseline)
    print(f"{args.runs} interleaved runs each, medians; matrix caches under {scratch}")
    header = f"{'command':<16} {'this':>9} {'ref':>9} {'ratio':>7}"
    if theirs:
        header += f" {'baseline':>9} {'b.ratio':>8}"
    print(header)
    ours_rows = rows(ours)
    theirs_rows = rows(theirs) if theirs else [None] * len(ours_rows)
    for mine, base in zip(ours_rows, theirs_rows):
        name, command, reference = mine
        for warm in (command, reference, base and base[1]):  # fill caches before timing
            if warm:
                once(warm)
        times: dict[str, list[float]] = {"this": [], "ref": [], "base": []}
        for _ in range(args.runs):
            times["this"].append(once(command))
            if reference:
                times["ref"].append(once(reference))
            if base:
                times["base"].append(once(base[1]))
        med = {k: statistics.median(v) * 1000 if v else None for k, v in times.items()}
        ref = med["ref"]
        line = f"{name:<16} {med['this']:>7.0f}ms " + (f"{ref:>7.0f}ms {med['this'] / ref:>6.1f}x" if ref else f"{'-':>9} {'-':>7}")
        if base:
            line += f" {med['base']:>7.0f}ms " + (f"{med['base'] / ref:>7.1f}x" if ref else f"{'-':>8}")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
