"""An aarch64 image build next to the x86_64 build of the same project, in one run (run by hand).

    .venv/bin/python bench/arm64_bench.py [--runs N]

Issue 35's goal: on an x86_64 machine an arm64 build (emulated through qemu-user-static and
binfmt_misc) costs at most 3x the native build of the same project. Needs what the test suite
needs (scripts/test.sh sets it up): a Docker engine, Debian's docker-registry, both stand-ins
(bookworm x86_64 and arm64), uv's aarch64 wheel (CUDAENV_TEST_UV_AARCH64) and qemu-aarch64
registered. One project (torch from a loopback index, one requirement whose wheels differ per
platform, Python 3.11, the wheels flavor), locked for an A100 host (x86_64) and for a GH200 host
(aarch64); each run builds both cold: `--no-cache`, with the stack base removed and BuildKit's cache
pruned first (`docker builder prune -af`, its apt and uv cache mounts included), so every layer is
built again and apt and uv download again. The two builds alternate within a run.
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
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudaenv.engine import get_engine  # noqa: E402
from tests.support.package_index import serve_index  # noqa: E402
from tests.support.registry import LocalRegistry  # noqa: E402
from tests.support.standins import Arm64Standins, StandinRegistry  # noqa: E402

STANDIN = os.environ.get("CUDAENV_STANDIN_IMAGE", "cudaenv-standin/bookworm-python:1")
STANDIN_ARM64 = os.environ.get("CUDAENV_STANDIN_ARM64", "cudaenv-standin/bookworm-python-arm64:1")
OVERLAY = """[[release]]
version = "2.96.0"
python = ["3.11"]
source = "bench fixture ; read 2026-11-28"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
platforms = ["x86_64", "aarch64"]
"""


def cudaenv(*args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"cudaenv {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return time.perf_counter() - started


def write_project(directory: Path, gpu: str, registry: str) -> None:
    directory.mkdir()
    (directory / "requirements.txt").write_text("platdemo==1.0\n")
    (directory / "main.py").write_text("import platform\nprint(platform.machine())\n")
    (directory / "cudaenv.toml").write_text(
        f'[project]\nname = "{directory.name}"\npython = "3.11"\nrequirements = ["requirements.txt"]\n\n'
        '[frameworks]\ntorch = "==2.96.0"\n\n'
        f'[target]\ndriver = "580.65.06"\ngpus = ["{gpu}"]\n\n'
        f'[build]\nflavor = "wheels"\nbase_registry = "{registry}"\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="cold builds of each architecture (default 3)")
    args = parser.parse_args()
    engine = get_engine()
    wheel = os.environ.get("CUDAENV_TEST_UV_AARCH64", "")
    for image in (STANDIN, STANDIN_ARM64):
        if engine.image_labels(image) is None:
            sys.exit(f"the stand-in {image} is missing: run scripts/test.sh once")
    if not Path(wheel).is_file():
        sys.exit("CUDAENV_TEST_UV_AARCH64 must name uv's aarch64 wheel (scripts/test.sh downloads it)")
    run_id = uuid.uuid4().hex[:8]
    times: dict[str, list[float]] = {"x86_64": [], "aarch64": []}
    with tempfile.TemporaryDirectory(prefix="cudaenv-arm64-bench-") as tmp, \
            LocalRegistry.start(Path(tmp) / "registry") as native, \
            LocalRegistry.start(Path(tmp) / "registry-arm64") as emulated:
        root = Path(tmp)
        x86 = StandinRegistry(engine, native, STANDIN)
        arm = Arm64Standins(engine, emulated, STANDIN_ARM64, Path(wheel), root / "uv-arm64", native_image=STANDIN)
        (root / "uv-arm64").mkdir()
        x86.provide_uv(), x86.provide("python:3.11-slim"), arm.provide_uv(), arm.provide("python:3.11-slim")
        index, stop = serve_index(root / "index")
        index.add("torch", "2.96.0")
        index.add("platdemo", "1.0", requires=["x86only"], tag="py3-none-manylinux_2_28_x86_64")
        index.add("platdemo", "1.0", requires=["armonly"], tag="py3-none-manylinux_2_28_aarch64")
        index.add("x86only", "1.0")
        index.add("armonly", "1.0")
        (root / "overlay").mkdir()
        (root / "overlay" / "torch.toml").write_text(OVERLAY)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_FRAMEWORK", "CUDAENV_PYTHON", "UV_"))}
        env.update(CUDAENV_MATRIX_PATH=str(root / "overlay"), CUDAENV_PYTHON_INDEX=index.url,
                   CUDAENV_FRAMEWORK_INDEX=index.url, UV_CACHE_DIR=str(root / "uv-cache"))
        projects = {"x86_64": root / f"bench-x86-{run_id}", "aarch64": root / f"bench-arm-{run_id}"}
        write_project(projects["x86_64"], "A100", native.host)
        write_project(projects["aarch64"], "NVIDIA GH200 480GB", emulated.host)

        def remove_bases() -> None:
            """The stack bases of this bench's stacks (torch 2.96.0, a fixture release), whenever made."""
            for info in engine.images("io.cudaenv.project=cudaenv-base"):
                if '"torch":"2.96.0"' in info.labels.get("io.cudaenv.stack", ""):
                    engine.remove_image(info.id, force=True)
        try:
            for directory in projects.values():
                cudaenv("lock", str(directory), env=env)
            for number in range(args.runs):
                for arch, directory in projects.items():
                    remove_bases()  # the stack base is built again too, with BuildKit's cache emptied:
                    subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True, check=False)
                    tag = f"cudaenv-bench/arm64-{arch}:{run_id}"
                    times[arch].append(cudaenv("build", str(directory), "--no-cache", "--network", "host", "-t", tag,
                                               env=env))
                    engine.remove_image(tag, force=True)
                print(f"run {number + 1}: x86_64 {times['x86_64'][-1]:.1f} s, aarch64 {times['aarch64'][-1]:.1f} s")
        finally:
            stop()
            remove_bases()
            x86.cleanup(), arm.cleanup()
            shutil.rmtree(root / "uv-cache", ignore_errors=True)
    native_s, emulated_s = statistics.median(times["x86_64"]), statistics.median(times["aarch64"])
    print(f"\ncold build of the same project (median of {args.runs}), this machine: {os.uname().machine}")
    print(f"x86_64 (native):         {native_s:6.1f} s")
    print(f"aarch64 (qemu emulated): {emulated_s:6.1f} s  ratio {emulated_s / native_s:.2f}x (goal <= 3x)")


if __name__ == "__main__":
    main()
