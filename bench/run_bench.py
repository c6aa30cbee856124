"""`cudaenv run DIR --gpus none -- true` next to `docker run --rm IMAGE true` on the same image.

    python bench/run_bench.py [--runs N] [--baseline /path/to/other/checkout]

Issue #26's run budget (<= 1.3x): nothing changed since the last run, so cudaenv should only check that the
project's image is current and then do what `docker run --rm` does. A real Docker engine and a
real build: the stand-in base image (``CUDAENV_STANDIN_IMAGE``, made by scripts/test.sh) is
served from a throw-away local registry under the nvidia/cuda name the project asks for, as the
integration tests do; the project is built once, then the two commands run alternately and the
medians are compared. With ``--baseline`` another checkout's `cudaenv run` joins the rotation
(run with this interpreter and ``PYTHONPATH`` set to that checkout). Images and the registry are
removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
STANDIN = os.environ.get("CUDAENV_STANDIN_IMAGE", "cudaenv-standin/bookworm-python:1")


def env_for(checkout: Path, cache: Path) -> dict:
    """The environment a CLI run gets: that checkout first on the path, bytecode as an installed
    package has it, its own matrix cache (two checkouts never evict each other's)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)
    env["CUDAENV_CACHE_DIR"] = str(cache)
    return env


def timed(command: list[str], env: dict | None = None, cwd: str | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return time.perf_counter() - start


@contextlib.contextmanager
def built_project(scratch: Path):
    """A built project (its image tag), the registry and its images removed on the way out."""
    sys.path.insert(0, str(ROOT))
    from cudaenv.engine import get_engine
    from tests.support.registry import LocalRegistry
    from tests.support.standins import StandinRegistry

    engine = get_engine()
    if engine.image_labels(STANDIN) is None:
        raise SystemExit(f"stand-in image {STANDIN} is missing (scripts/test.sh makes it; or set CUDAENV_STANDIN_IMAGE)")
    name = f"runbench-{uuid.uuid4().hex[:6]}"
    with LocalRegistry.start(scratch / "registry") as registry:
        standins = StandinRegistry(engine, registry, STANDIN)
        try:
            standins.provide_uv()
            standins.provide(BASE)
            project = scratch / name
            project.mkdir()
            (project / "cudaenv.toml").write_text(
                f'[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
                f'[build]\nflavor = "runtime"\nbase_registry = "{registry.host}"\n')
            env = env_for(ROOT, scratch / "cache-this")
            build = subprocess.run([sys.executable, "-m", "cudaenv", "build", str(project)], capture_output=True,
                                   text=True, env=env, cwd=str(scratch))
            if build.returncode != 0:
                raise SystemExit(f"cudaenv build failed:\n{build.stderr[-2000:]}")
            yield project, f"cudaenv/{name}:latest"
        finally:
            for image in engine.client.images.list(name=f"cudaenv/{name}"):
                for tag in image.tags:
                    engine.remove_image(tag, force=True)
            standins.cleanup()


def measure(project: Path, image: str, runs: int, scratch: Path, baseline: Path | None) -> dict[str, float]:
    """Median seconds of each command, interleaved; the first round only warms caches."""
    commands = {
        "this": ([sys.executable, "-m", "cudaenv", "run", str(project), "--gpus", "none", "--", "true"],
                 env_for(ROOT, scratch / "cache-this")),
        "ref": (["docker", "run", "--rm", image, "true"], None),
    }
    if baseline is not None:
        # its own copy of the project: a lock records its matrix, so two checkouts sharing one
        # project would relock it for each other on every run and time that instead
        base_project = project.with_name(project.name + "-base")
        shutil.copytree(project, base_project, ignore=shutil.ignore_patterns("cudaenv.lock"))
        commands["base"] = ([sys.executable, "-m", "cudaenv", "run", str(base_project), "--gpus", "none", "--", "true"],
                            env_for(baseline, scratch / "cache-base"))
    for command, env in commands.values():  # warm: matrix caches, a baseline's own build if it needs one
        subprocess.run(command, env=env, cwd=str(scratch), capture_output=True)
    times: dict[str, list[float]] = {key: [] for key in commands}
    for _ in range(runs):
        for key, (command, env) in commands.items():
            times[key].append(timed(command, env, str(scratch)))
    return {key: statistics.median(values) for key, values in times.items()}


def row(runs: int = 7, baseline: Path | None = None) -> dict[str, float]:
    """The run row for cli_bench: medians in seconds ("this", "ref", and "base" with a baseline)."""
    with tempfile.TemporaryDirectory(prefix="cudaenv-runbench-") as tmp:
        scratch = Path(tmp)
        with built_project(scratch) as (project, image):
            return measure(project, image, runs, scratch, baseline)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. main) to time alongside")
    args = parser.parse_args()
    med = row(args.runs, args.baseline)
    ref = med["ref"]
    print(f"{args.runs} interleaved runs each, medians")
    print(f"docker run --rm IMAGE true      {ref * 1000:7.0f}ms")
    print(f"cudaenv run DIR --gpus none     {med['this'] * 1000:7.0f}ms  {med['this'] / ref:5.2f}x")
    if "base" in med:
        print(f"  baseline ({args.baseline})  {med['base'] * 1000:7.0f}ms  {med['base'] / ref:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
