"""Issue #26's budgets in one run: everyday CLI commands next to the tools they wrap, interleaved.

    python bench/cli_bench.py [--runs N] [--baseline /path/to/other/checkout] [--no-run]

Each row runs its command and its reference (`python -c pass`, `docker ps -q`, `docker run --rm
IMAGE true`) alternately, N times, and reports medians and the ratio. With ``--baseline`` the
same commands also run from another checkout (e.g. ``git archive 84bffb0 | tar -x -C /tmp/base``),
interleaved too, so before/after numbers come from one run on one machine.

Both checkouts run under this interpreter with ``PYTHONPATH`` set to the checkout (a checkout
needs no virtualenv of its own), from an empty scratch directory (no project or pyproject.toml
around to read), with bytecode written and used as an installed package would have it, and each
with its own matrix cache. The `dockerfile DIR` row renders a locked CUDA-only project made in the
scratch directory. `resolve --json` is a question scripts and CI loops ask again and again; it is
resolved every time (nothing but the matrix's data is cached). The run row is bench/run_bench.py (real Docker and the stand-in image; left
out with ``--no-run`` or when Docker is not there). Absolute times on a busy machine are noisy;
the ratios are what count.
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
TARGETS = {  # issue #26: the budgets, as a ratio to the reference; the other rows are for information
    "resolve --json": "<= 10x", "run --gpus none": "<= 1.3x",
}
PROJECT = '[project]\nname = "clibench"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n[build]\nflavor = "runtime"\n'


def environment(checkout: Path, scratch: Path, side: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)
    env["CUDAENV_CACHE_DIR"] = str(scratch / f"cache-{side}")
    return env


def cudaenv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cudaenv", *args]


def rows(project: Path) -> list[tuple[str, list[str], list[str] | None]]:
    """(name, command, reference command or None)."""
    bare = [sys.executable, "-c", "pass"]
    question = cudaenv("resolve", "--torch", "==2.4.1", "--python", "3.11", "--driver", "550.54.15", "--json")
    out = [
        ("resolve --json", question, bare),
        ("--version", cudaenv("--version"), bare),
        ("--help", cudaenv("--help"), bare),
        ("dockerfile DIR", cudaenv("dockerfile", str(project)), None),
    ]
    if shutil.which("docker"):
        out.append(("ps --json", cudaenv("ps", "--json"), ["docker", "ps", "-q"]))
    return out


def once(command: list[str], env: dict | None, cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:  # a bench of an error path measures nothing useful
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}: {proc.stderr.decode()[-400:]}")
    return elapsed


def lock_project(scratch: Path, env: dict, side: str) -> Path:
    """A locked project per checkout: a lock records its matrix, so each side renders its own."""
    project = scratch / f"project-{side}"
    project.mkdir(exist_ok=True)
    (project / "cudaenv.toml").write_text(PROJECT)
    subprocess.run(cudaenv("lock", str(project)), check=True, capture_output=True, env=env, cwd=scratch)
    return project


def line(name: str, this: float, ref: float | None, base: float | None) -> str:
    text = f"{name:<16} {this:>7.0f}ms " + (f"{ref:>7.0f}ms {this / ref:>6.2f}x" if ref else f"{'-':>9} {'-':>7}")
    if base is not None:
        text += f" {base:>7.0f}ms " + (f"{base / ref:>7.2f}x" if ref else f"{'-':>8}")
    return text + f"   {TARGETS.get(name, '')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. main at an older commit)")
    parser.add_argument("--no-run", action="store_true", help="leave out the `cudaenv run` row (needs Docker)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="cudaenv-bench-"))
    sides = {"this": environment(ROOT, scratch, "this")}
    if args.baseline:
        sides["base"] = environment(args.baseline.resolve(), scratch, "base")
    projects = {side: lock_project(scratch, env, side) for side, env in sides.items()}
    print(f"{args.runs} interleaved runs each, medians; python {sys.version.split()[0]}; scratch {scratch}")
    header = f"{'command':<16} {'this':>9} {'ref':>9} {'ratio':>7}"
    if "base" in sides:
        header += f" {'baseline':>9} {'b.ratio':>8}"
    print(header + "   target")
    per_side = {side: rows(project) for side, project in projects.items()}
    for index, (name, _command, reference) in enumerate(per_side["this"]):
        commands = {side: table[index][1] for side, table in per_side.items()}
        for side, env in sides.items():  # fill caches (matrix, bytecode, BuildKit probe) before timing
            once(commands[side], env, scratch)
        if reference:
            once(reference, None, scratch)
        times: dict[str, list[float]] = {"this": [], "ref": [], "base": []}
        for _ in range(args.runs):
            times["this"].append(once(commands["this"], sides["this"], scratch))
            if reference:
                times["ref"].append(once(reference, None, scratch))
            if "base" in sides:
                times["base"].append(once(commands["base"], sides["base"], scratch))
        med = {k: statistics.median(v) * 1000 if v else None for k, v in times.items()}
        print(line(name, med["this"], med["ref"], med["base"]), flush=True)
    if not args.no_run and shutil.which("docker"):
        sys.path.insert(0, str(ROOT / "bench"))
        import run_bench

        med = run_bench.row(max(3, args.runs // 2), args.baseline.resolve() if args.baseline else None)
        print(line("run --gpus none", med["this"] * 1000, med["ref"] * 1000,
                   med["base"] * 1000 if "base" in med else None), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
