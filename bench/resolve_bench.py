"""Resolver and CLI start-up timings (a benchmark to run by hand, not a test).

    .venv/bin/python bench/resolve_bench.py [--runs N]

Reports:
  * in-process resolution time per typical project (median over N runs, matrix already loaded);
  * `plan` time for 100 projects on one host;
  * wall time of a whole `cudaenv resolve --json` process next to `python -c pass`.
Targets (issue #4): a typical project resolves in under 5 ms in-process; the whole CLI process
stays within 4x the bare interpreter's start-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaenv.matrix import load_matrix  # noqa: E402
from cudaenv.resolver.model import Constraints, Host, TargetGpu  # noqa: E402
from cudaenv.resolver.plan import plan  # noqa: E402
from cudaenv.resolver.resolve import resolve  # noqa: E402
from cudaenv.versions import parse_specifier  # noqa: E402

PROJECTS = {
    "torch 2.6 on A100/R535": ({"torch": "2.6.0"}, "535.104.05", ["A100"]),
    "torch >=2.4 on T4/R550": ({"torch": ">=2.4"}, "550.54.15", ["T4"]),
    "tensorflow 2.15 on A100/R535": ({"tensorflow": "2.15.1"}, "535.104.05", ["A100"]),
    "jax on H100/R570": ({"jax": ">=0.4.30"}, "570.124.06", ["H100"]),
    "torch + tensorflow on A100/R535": ({"torch": ">=2.0", "tensorflow": ">=2.12"}, "535.104.05", ["A100"]),
    "torch 2.9 on K80/R470 (no stack)": ({"torch": "2.9.0"}, "470.82.01", ["K80"]),
}


def gpu(matrix, name):
    row = matrix.find_gpu(name)
    return TargetGpu(row.compute_capability, row.name, row.architecture, row.datacenter)


def constraints(frameworks: dict[str, str]) -> Constraints:
    return Constraints(frameworks=tuple((k, parse_specifier(v)) for k, v in frameworks.items()))


def median_ms(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def process_ms(argv: list[str], runs: int, env: dict) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    start = time.perf_counter()
    matrix = load_matrix(overlays=[])
    print(f"matrix load (in-process, first): {(time.perf_counter() - start) * 1000:.1f} ms")
    resolve(matrix, constraints({"torch": "2.6.0"}), Host())  # builds the framework catalogue once

    print("\nin-process resolution (median):")
    for label, (frameworks, driver, gpus) in PROJECTS.items():
        host = Host(driver, tuple(gpu(matrix, g) for g in gpus))
        c = constraints(frameworks)
        print(f"  {label:36s} {median_ms(lambda: resolve(matrix, c, host), args.runs):7.2f} ms")

    host = Host("550.54.15", (gpu(matrix, "A100"),))
    hundred = [(f"p{i}", constraints(list(PROJECTS.values())[i % 5][0])) for i in range(100)]
    print(f"\nplan for 100 projects: {median_ms(lambda: plan(matrix, hundred, host), max(3, args.runs // 10)):.1f} ms")

    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
    env["CUDAENV_DRIVER_VERSION"] = "535.104.05"
    env["CUDAENV_GPUS"] = "A100"
    bare = process_ms([sys.executable, "-c", "pass"], args.runs, env)
    cli = process_ms([sys.executable, "-m", "cudaenv", "resolve", "--torch", "2.6.0", "--json"], args.runs, env)
    print(f"\nprocess wall time (median of {args.runs}):")
    print(f"  python -c pass                      {bare:7.1f} ms")
    print(f"  cudaenv resolve --torch 2.6 --json  {cli:7.1f} ms  ({cli / bare:.1f}x the bare interpreter)")


if __name__ == "__main__":
    main()
