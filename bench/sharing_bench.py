"""Disk for N same-stack projects: independent images, cache luck, and the shared stack base (run by hand).

    .venv/bin/python bench/sharing_bench.py [--projects N] [--framework-mb MB]

Needs what the test suite needs (scripts/test.sh sets it up): a Docker engine, Debian's
docker-registry and the stand-in base image. N projects share one stack: Python 3.11 on the
wheels flavor with a stand-in "torch" whose wheel carries MB of incompressible data (the 5.3 GB
framework layer of a real torch stack, scaled down), served from a package index on loopback;
each project adds a small requirement and its code. Three ways to hold them, side by side in
one run, each measured by distinct layer chain IDs (what the engine stores; `docker system df`
calls layers "shared" even when the same content is stored twice):

  * independent:   each project built on its own with `--no-cache` (the standalone Dockerfile,
                   layers 1-3 inline, as `cudaenv build --no-cache` did before stack bases):
                   N framework copies;
  * cache luck:    the standalone Dockerfiles built with BuildKit's cache, then one project
                   rebuilt with `--no-cache`: sharing held only while the cache returned the
                   same layer, so the framework is now stored twice;
  * stack base:    `cudaenv build` of every project, then `cudaenv build --no-cache` of one:
                   the stack base (cudaenv-base:hash-…) is stored once, by identity.

Reported as bytes and as a ratio to "independent", once for everything the images hold and
once for what cudaenv built on top of the upstream stand-in image (the 164 MB stand-in is shared
by all three ways; in a real torch stack the framework layer dwarfs the upstream image). The
target: the stack base's share <= 1/N + 5% of N independent images.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaenv.engine import get_engine  # noqa: E402
from cudaenv.images.plan import plan_image  # noqa: E402
from cudaenv.images.layers import chain_ids, layer_sizes  # noqa: E402
from cudaenv.matrix import load_matrix  # noqa: E402
from cudaenv.project import load_project  # noqa: E402
from cudaenv.project.lock import read_lock  # noqa: E402
from tests.support.package_index import serve_index  # noqa: E402
from tests.support.registry import LocalRegistry  # noqa: E402
from tests.support.standins import StandinRegistry  # noqa: E402

STANDIN_IMAGE = os.environ.get("CUDAENV_STANDIN_IMAGE", "cudaenv-standin/bookworm-python:1")


def cudaenv(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"cudaenv {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def torch_overlay(version: str) -> str:
    return (f'[[release]]\nversion = "{version}"\npython = ["3.11"]\nsource = "bench fixture ; read 2026-11-24"\n\n'
            '[[release.variant]]\ncuda = "12.8"\nindex_url = "https://download.pytorch.org/whl/cu128"\n'
            'compute_capabilities = ["8.0", "9.0"]\n')


def write_project(directory: Path, name: str, registry: str, torch: str, number: int) -> None:
    directory.mkdir(parents=True)
    (directory / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\nrequirements = ["requirements.txt"]\n\n'
        f'[frameworks]\ntorch = "=={torch}"\n\n[target]\ndriver = "570.124.06"\ngpus = ["A100"]\n\n'
        f'[build]\nflavor = "wheels"\nbase_registry = "{registry}"\n\n[run]\ncommand = ["python", "main.py"]\n')
    (directory / "requirements.txt").write_text(f"bench-dep-{number}==1.0.0\n")
    (directory / "main.py").write_text(f"print('project {number}')\n")


def layers_of(engine, references) -> dict[str, int]:
    """chain ID -> bytes, over the images (each chain ID once)."""
    found: dict[str, int] = {}
    for reference in references:
        info = engine.image_info(reference)
        chain = chain_ids(info.diff_ids)
        sizes = layer_sizes(len(chain), info.history)
        if sizes is None or sum(sizes) != info.size:
            sys.exit(f"{reference}: the history does not match the layers; cannot count it per layer")
        for chain_id, size in zip(chain, sizes):
            found.setdefault(chain_id, size)
    return found


def standalone_build(engine, directory: Path, tag: str, *, no_cache: bool) -> None:
    """What `cudaenv build` did before stack bases: one Dockerfile with layers 1-3 inline."""
    project = load_project(directory)
    plan = plan_image(project, load_matrix(), read_lock(project.lock_path), buildkit=True, standalone=True)
    with tempfile.TemporaryDirectory(prefix="cudaenv-bench-secrets-") as secrets:
        engine.build(plan.request(tags=(tag,), no_cache=no_cache, network="host", secrets_dir=Path(secrets)))


def gb(count: int) -> str:
    return f"{count / 1e9:7.3f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=3, help="projects on the one stack (default 3)")
    parser.add_argument("--framework-mb", type=int, default=64, help="the stand-in framework's size (default 64)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args()
    if args.projects < 2:
        sys.exit("--projects: at least 2 (sharing needs two)")
    engine = get_engine()
    if engine.image_labels(STANDIN_IMAGE) is None:
        sys.exit(f"the stand-in base image {STANDIN_IMAGE} is missing: run scripts/test.sh once")

    run_id = uuid.uuid4().hex[:8]
    torch = f"2.96.{int(run_id[:5], 16)}"  # a stack (and so a stack base) of this run alone
    n = args.projects
    tags = {way: [f"cudaenv-bench/sharing-{way}-{i}:{run_id}" for i in range(n)]
            for way in ("independent", "cache-luck", "stack-base")}
    tags["cache-luck"].append(f"cudaenv-bench/sharing-cache-luck-{0}:{run_id}-no-cache")
    tags["stack-base"].append(f"cudaenv-bench/sharing-stack-base-{0}:{run_id}-no-cache")
    base_reference = None
    with tempfile.TemporaryDirectory(prefix="cudaenv-sharing-bench-") as tmp, \
            LocalRegistry.start(Path(tmp) / "registry") as registry:
        root = Path(tmp)
        standins = StandinRegistry(engine, registry, STANDIN_IMAGE)
        standins.provide_uv()
        index, stop_index = serve_index(root / "index")
        blob = random.Random(run_id).randbytes(args.framework_mb * 500_000).hex()  # MB of incompressible text
        index.add("torch", torch, files={"torch/__init__.py": f'__version__ = "{torch}"\n', "torch/_blob.txt": blob})
        for i in range(n):
            index.add(f"bench-dep-{i}", "1.0.0")
        (root / "overlay").mkdir()
        (root / "overlay" / "torch.toml").write_text(torch_overlay(torch))
        env = {k: v for k, v in os.environ.items() if k not in ("CUDAENV_UID", "CUDAENV_GID")}
        env.update(CUDAENV_PYTHON_INDEX=index.url, CUDAENV_FRAMEWORK_INDEX=index.url,
                   CUDAENV_MATRIX_PATH=str(root / "overlay"))
        os.environ.update(env)  # the in-process standalone builds read the same overrides
        try:
            directories = []
            for i in range(n):
                directory = root / f"project-{i}"
                write_project(directory, f"sharing-bench-{run_id}-{i}", registry.host, torch, i)
                cudaenv("lock", str(directory), env=env)
                directories.append(directory)
            standins.provide(read_lock(directories[0] / "cudaenv.lock").stack["base_image"])

            print(f"{n} projects on one stack, stand-in framework {args.framework_mb} MB", file=sys.stderr)
            # cache luck first: run after the independent --no-cache builds, the cached builds here
            # shared nothing at all (four copies instead of two), which would flatter stack bases
            for i, directory in enumerate(directories):
                print(f"cache luck: project {i} …", file=sys.stderr)
                standalone_build(engine, directory, tags["cache-luck"][i], no_cache=False)
            print("cache luck: project 0 again, --no-cache …", file=sys.stderr)
            standalone_build(engine, directories[0], tags["cache-luck"][n], no_cache=True)
            for i, directory in enumerate(directories):
                print(f"independent: project {i}, --no-cache …", file=sys.stderr)
                standalone_build(engine, directory, tags["independent"][i], no_cache=True)
            for i, directory in enumerate(directories):
                print(f"stack base: cudaenv build project {i} …", file=sys.stderr)
                result = json.loads(cudaenv("build", str(directory), "--network", "host", "--json", "-t",
                                            tags["stack-base"][i], env=env).stdout)
                base_reference = result["base"]["reference"]
            print("stack base: cudaenv build --no-cache project 0 …", file=sys.stderr)
            cudaenv("build", str(directories[0]), "--network", "host", "--json", "--no-cache", "-t",
                    tags["stack-base"][n], env=env)

            upstream = set(layers_of(engine, [STANDIN_IMAGE]))
            measured = {}
            for way, references in tags.items():
                layers = layers_of(engine, references + ([base_reference] if way == "stack-base" else []))
                measured[way] = {"all_bytes": sum(layers.values()),
                                 "built_bytes": sum(size for cid, size in layers.items() if cid not in upstream),
                                 "images": len(references)}
        finally:
            stop_index()
            for references in tags.values():
                for reference in references:
                    engine.remove_image(reference, force=True)
            if base_reference:
                info = engine.image_info(base_reference)
                for name in info.tags if info else ():
                    engine.remove_image(name)
            standins.cleanup()

    independent = measured["independent"]
    target = 1 / n + 0.05
    report = {"projects": n, "framework_mb": args.framework_mb, "measured_by": "distinct layer chain IDs",
              "ways": measured, "target_ratio": round(target, 4),
              "ratios": {way: {"all": round(m["all_bytes"] / independent["all_bytes"], 4),
                               "built": round(m["built_bytes"] / independent["built_bytes"], 4)}
                         for way, m in measured.items()}}
    report["met"] = report["ratios"]["stack-base"]["built"] <= target
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"\n{n} same-stack projects, stand-in framework {args.framework_mb} MB; disk by distinct chain IDs")
    print(f"{'':34}{'all layers':>12}{'ratio':>8}   {'built by cudaenv':>16}{'ratio':>8}")
    labels = {"independent": f"independent (N x --no-cache)", "cache-luck": "cache luck, then one --no-cache",
              "stack-base": "stack base, then one --no-cache"}
    for way, m in measured.items():
        r = report["ratios"][way]
        print(f"{labels[way]:34}{gb(m['all_bytes']):>12}{r['all']:>8.3f}   {gb(m['built_bytes']):>16}{r['built']:>8.3f}")
    print(f"\ntarget: stack base <= 1/N + 5% = {target:.3f} of independent (built by cudaenv): "
          f"{'met' if report['met'] else 'NOT met'} ({report['ratios']['stack-base']['built']:.3f})")


if __name__ == "__main__":
    main()
