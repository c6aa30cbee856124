"""Image build timings: a cold build next to a rebuild after editing one source file (run by hand).

    .venv/bin/python bench/build_bench.py [--runs N] [--system-package NAME ...]

Needs what the test suite needs (scripts/test.sh sets it up): a Docker engine, Debian's
docker-registry, and the stand-in base image. Like the integration tests, it serves the stand-in
under the name the project's Dockerfile asks for from a registry on loopback, and the project's
requirement from a package index on loopback, so nothing comes from Docker Hub or PyPI; the
essentials and system-package layers do run apt-get against Debian's mirrors.

Reports, per run, the wall time of `cudaenv build` (the whole CLI process):
  * cold:    `--no-cache`, every layer built again (BuildKit's apt/uv cache mounts stay warm, as
             they would on a developer's machine);
  * rebuild: after editing one source file, which should rebuild only the code layer;
  * no-op:   the same build again with nothing changed;
and how many of the rebuild's steps came from the cache. The target: a code-only rebuild
reuses every layer up to the code layer and takes a small fraction of the cold build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaenv.engine import get_engine  # noqa: E402
from cudaenv.project.lock import read_lock  # noqa: E402
from tests.support.package_index import serve_index  # noqa: E402
from tests.support.registry import LocalRegistry  # noqa: E402
from tests.support.standins import StandinRegistry  # noqa: E402

STANDIN_IMAGE = os.environ.get("CUDAENV_STANDIN_IMAGE", "cudaenv-standin/bookworm-python:1")


def cudaenv(*args: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"cudaenv {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, proc


def write_project(directory: Path, name: str, registry: str, system_packages: list[str]) -> None:
    packages = ", ".join(json.dumps(p) for p in system_packages)
    (directory / "cudaenv.toml").write_text(
        "[project]\n"
        f'name = "{name}"\npython = "3.11"\nrequirements = ["requirements.txt"]\n\n'
        '[cuda]\nversion = "12.4"\n\n'
        '[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{registry}"\nsystem_packages = [{packages}]\n\n'
        '[run]\ncommand = ["python", "main.py"]\n'
    )
    (directory / "requirements.txt").write_text("bench-dep==1.0.0\n")
    (directory / "main.py").write_text("from pkg import util\nprint(util.VALUE)\n")
    (directory / "pkg").mkdir()
    (directory / "pkg" / "__init__.py").write_text("")
    (directory / "pkg" / "util.py").write_text("VALUE = 0\n")


def one_run(directory: Path, env: dict[str, str], tag: str, number: int) -> dict:
    cold_s, proc = cudaenv("build", str(directory), "--no-cache", "--network", "host", "--json", "-t", f"{tag}-cold",
                           env=env)
    cold_cached = sum(s["cached"] for s in json.loads(proc.stdout)["steps"] if " FROM " not in s["step"])
    (directory / "pkg" / "util.py").write_text(f"VALUE = {number + 1}  # edited\n")
    rebuild_s, proc = cudaenv("build", str(directory), "--network", "host", "--json", "-t", f"{tag}-edit", env=env)
    steps = [s for s in json.loads(proc.stdout)["steps"] if " FROM " not in s["step"]]
    noop_s, _ = cudaenv("build", str(directory), "--network", "host", "--json", "-t", f"{tag}-edit", env=env)
    return {"cold": cold_s, "cold_cached": cold_cached, "rebuild": rebuild_s, "noop": noop_s,
            "cached": sum(s["cached"] for s in steps), "steps": len(steps),
            "rebuilt": [" ".join(s["step"].split())[:70] for s in steps if not s["cached"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="cold + rebuild pairs to time (default 1)")
    parser.add_argument("--system-package", action="append", default=None,
                        help="a [build] system_packages entry (default: less)")
    args = parser.parse_args()
    engine = get_engine()
    if engine.image_labels(STANDIN_IMAGE) is None:
        sys.exit(f"the stand-in base image {STANDIN_IMAGE} is missing: run scripts/test.sh once")

    run_id = uuid.uuid4().hex[:8]
    tag = f"cudaenv-bench/build:{run_id}"
    with tempfile.TemporaryDirectory(prefix="cudaenv-build-bench-") as tmp, \
            LocalRegistry.start(Path(tmp) / "registry") as registry:
        root = Path(tmp)
        standins = StandinRegistry(engine, registry, STANDIN_IMAGE)
        served = [standins.provide_uv()]
        index, stop_index = serve_index(root / "index")
        index.add("bench-dep", "1.0.0")
        directory = root / "project"
        directory.mkdir()
        (root / "no-overlays").mkdir()
        write_project(directory, f"bench-{run_id}", registry.host, args.system_package or ["less"])
        env = {k: v for k, v in os.environ.items() if k not in ("CUDAENV_FRAMEWORK_INDEX", "CUDAENV_UID", "CUDAENV_GID")}
        env.update(CUDAENV_PYTHON_INDEX=index.url, CUDAENV_MATRIX_PATH=str(root / "no-overlays"))
        try:
            cudaenv("lock", str(directory), env=env)
            base = read_lock(directory / "cudaenv.lock").stack["base_image"]
            served.append(standins.provide(base))
            results = []
            for number in range(args.runs):
                results.append(one_run(directory, env, f"{tag}-{number}", number))
                r = results[-1]
                print(f"run {number + 1}: cold {r['cold']:.1f} s ({r['cold_cached']} steps cached), "
                      f"rebuild after editing one file {r['rebuild']:.1f} s, no-op {r['noop']:.1f} s; "
                      f"rebuild took {r['cached']} of {r['steps']} steps from the cache, "
                      f"rebuilt: {'; '.join(r['rebuilt'])}")
        finally:
            stop_index()
            for number in range(args.runs):
                for suffix in ("-cold", "-edit"):
                    engine.remove_image(f"{tag}-{number}{suffix}", force=True)
            for reference in served:  # the stand-in's names in this run's registry (the image itself stays)
                engine.remove_image(reference)

    cold = statistics.median(r["cold"] for r in results)
    rebuild = statistics.median(r["rebuild"] for r in results)
    noop = statistics.median(r["noop"] for r in results)
    print(f"\nbase {base} (stand-in), Python 3.11, 1 pinned requirement, system packages: "
          f"{', '.join(args.system_package or ['less'])}")
    print(f"cold build (--no-cache):          {cold:6.1f} s")
    print(f"rebuild after editing one file:   {rebuild:6.1f} s  ({rebuild / cold:.0%} of cold)")
    print(f"no-op rebuild:                    {noop:6.1f} s")


if __name__ == "__main__":
    main()
