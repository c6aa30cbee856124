"""`plan` at fleet scale: 1000 projects drawn from a few constraint sets (issue #14's table).

    .venv/bin/python bench/plan_bench.py [--runs N] [--baseline /path/to/other/checkout]

Two fleets: every project fits the host driver, and the same fleet with a few projects that need
a driver upgrade (so the upgrade search runs). Each measurement is one in-process `plan()` call
with the matrix already loaded, run in a fresh interpreter with the checkout being measured first
on ``sys.path``; with ``--baseline`` the other checkout (no virtualenv needed there) runs
interleaved with this one.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLEET = [  # (frameworks, share of the fleet)
    ({"torch": "2.6.0"}, 4), ({"torch": ">=2.4"}, 3), ({"tensorflow": "2.15.1"}, 2),
    ({"jax": ">=0.4.30"}, 1), ({"torch": ">=2.0", "tensorflow": ">=2.12"}, 1),
    ({"torch": "==2.4.1"}, 2), ({"torch": "==2.5.1"}, 2),
]
NEEDS_UPGRADE = {"torch": "2.9.0"}  # built for CUDA >= 12.6: not on an R470 host

MEASURE = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from cudaenv.matrix import load_matrix
from cudaenv.resolver.model import Constraints, Host, TargetGpu
from cudaenv.resolver.plan import plan
from cudaenv.versions import parse_specifier
fleet, upgrade, size = eval(sys.argv[2]), eval(sys.argv[3]), int(sys.argv[4])
matrix = load_matrix(overlays=[])
row = matrix.find_gpu("RTX 3090")
host = Host("535.104.05", (TargetGpu(row.compute_capability, row.name, row.architecture, row.datacenter),))
def constraints(frameworks):
    return Constraints(frameworks=tuple((k, parse_specifier(v)) for k, v in frameworks.items()))
pool = [f for f, share in fleet for _ in range(share)]
projects = [(f"p{i}", constraints(pool[i % len(pool)])) for i in range(size)]
plan(matrix, projects[:1], host)  # warm the matrix's derived views
start = time.perf_counter(); plan(matrix, projects, host); fits = (time.perf_counter() - start) * 1000
import dataclasses
old = dataclasses.replace(host, driver="470.82.01")  # an R470 host: part of the fleet needs a newer driver
projects += [(f"u{i}", constraints(upgrade)) for i in range(size // 100)]
start = time.perf_counter(); result = plan(matrix, projects, old); up = (time.perf_counter() - start) * 1000
print(f"{fits:.1f} {up:.1f} {result.driver_upgrade}")
'''


def measure(python: str, root: Path, size: int) -> tuple[float, float, str]:
    out = subprocess.run([python, "-c", MEASURE, str(root), repr(FLEET), repr(NEEDS_UPGRADE), str(size)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), out[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--projects", type=int, default=1000)
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. `git archive <commit> | tar -x`)")
    args = parser.parse_args()
    sides = {"this": (sys.executable, ROOT)}
    if args.baseline:  # run by this interpreter with the checkout first on sys.path, as the other benches do
        sides["baseline"] = (sys.executable, args.baseline.resolve())
    samples: dict[str, list[tuple[float, float, str]]] = {name: [] for name in sides}
    for _ in range(args.runs):
        for name, (python, root) in sides.items():
            samples[name].append(measure(python, root, args.projects))
    print(f"plan for {args.projects} projects on an RTX 3090 host (all fit: R535; +upgrade: R470 + 1% torch 2.9), median of {args.runs} (ms)")
    print(f"{'':<10} {'all fit':>9} {'+upgrade':>9}  driver upgrade")
    for name, rows in samples.items():
        fits = statistics.median(r[0] for r in rows)
        up = statistics.median(r[1] for r in rows)
        print(f"{name:<10} {fits:>9.0f} {up:>9.0f}  {rows[-1][2]}")
    if args.baseline:
        this, base = samples["this"], samples["baseline"]
        print(f"{'speed-up':<10} {statistics.median(r[0] for r in base) / statistics.median(r[0] for r in this):>8.1f}x"
              f" {statistics.median(r[1] for r in base) / statistics.median(r[1] for r in this):>8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
