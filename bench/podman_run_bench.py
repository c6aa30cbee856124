"""`CUDAENV_ENGINE=podman cudaenv run DIR --gpus none -- true` next to a bare `podman run --rm` of
the same image, side by side in one run (issue #36's budget: <= 1.3x).

    python bench/podman_run_bench.py [--runs N]

Root's Podman and a real build: the stand-in base (``CUDAENV_STANDIN_IMAGE``, in Podman's store as
scripts/test.sh copies it) stands in for nvidia/cuda under a loopback registry name the project
asks for, the project is built once, then the two commands run alternately and the medians are
compared. The bare run is the same container: the same image, user, /workspace mount and
working directory, and the nofile/nproc limits Podman needs to start anything on a host whose
own limits are lower than its 1048576 default (without them a bare `podman run` fails there).
The project's images are removed afterwards.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BASE = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
STANDIN = os.environ.get("CUDAENV_STANDIN_IMAGE", "cudaenv-standin/bookworm-python:1")
REGISTRY = "127.0.0.1:5999"  # never contacted: the bases are in Podman's store under these names

from bench.run_bench import timed  # noqa: E402 (the same timing as the Docker run bench)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    from uv import find_uv_bin

    from cudaenv.core.references import with_registry
    from cudaenv.engine.podman_engine import PodmanEngine
    from cudaenv.images.render import UV_IMAGE, uv_version

    engine = PodmanEngine()
    if engine.image_labels(STANDIN) is None:
        raise SystemExit(f"{STANDIN} is not in Podman's store (scripts/test.sh copies it there)")
    served = [with_registry(BASE, REGISTRY), with_registry(f"{UV_IMAGE}:{uv_version()}", REGISTRY)]
    engine.tag(STANDIN, served[0])
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name in ("uv", "uvx"):
            tar.add(str(Path(find_uv_bin()).with_name(name)), arcname=name)
    subprocess.run(["podman", "import", "--quiet", "-", served[1]], input=archive.getvalue(), check=True,
                   capture_output=True)

    project = Path(tempfile.mkdtemp(prefix="cudaenv-podman-bench-"))
    cache = Path(tempfile.mkdtemp(prefix="cudaenv-podman-bench-cache-"))
    name = f"podbench-{uuid.uuid4().hex[:6]}"
    (project / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{REGISTRY}"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), CUDAENV_CACHE_DIR=str(cache), CUDAENV_ENGINE="podman")
    cudaenv = [sys.executable, "-m", "cudaenv", "run", "--gpus", "none", str(project), "--", "true"]
    try:
        print("building the project once …", flush=True)
        timed(cudaenv, env=env)  # builds, locks, probes the limits (remembered in the cache)
        image = next(t for i in engine.images(f"io.cudaenv.project={name}") for t in i.tags if not t.endswith(":latest"))
        ceilings = engine.ceilings(image) or {}
        bare = ["podman", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}",
                "--mount", f"type=bind,source={project},target=/workspace", "--workdir", "/workspace"]
        for limit in ("nofile", "nproc"):
            if limit in ceilings:
                bare += ["--ulimit", f"{limit}={ceilings[limit]}:{ceilings[limit]}"]
        bare += [image, "true"]
        timed(bare)  # warm both paths once
        timed(cudaenv, env=env)
        times: dict[str, list[float]] = {"cudaenv run": [], "podman run": []}
        for _ in range(args.runs):
            times["cudaenv run"].append(timed(cudaenv, env=env))
            times["podman run"].append(timed(bare))
        medians = {what: statistics.median(values) for what, values in times.items()}
        print(f"{'':12} {'median':>8} {'min':>8} {'max':>8}   ({args.runs} runs each, alternating; "
              f"Podman {subprocess.run(['podman', 'version', '--format', '{{.Client.Version}}'], capture_output=True, text=True).stdout.strip()}, rootful)")
        for what, values in times.items():
            print(f"{what:12} {medians[what]:8.3f} {min(values):8.3f} {max(values):8.3f} s")
        ratio = medians["cudaenv run"] / medians["podman run"]
        print(f"ratio cudaenv/podman: {ratio:.2f}x (goal <= 1.3x): {'ok' if ratio <= 1.3 else 'OVER'}")
        print(f"bare command: {' '.join(bare)}")
    finally:
        for image_info in engine.images(f"io.cudaenv.project={name}"):
            for tag in image_info.tags or (image_info.id,):
                engine.remove_image(tag, force=True)
        for reference in served:
            engine.remove_image(reference)
        shutil.rmtree(project, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
