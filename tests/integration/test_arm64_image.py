"""Issue 35, item 5: a project for a GH200 (a Grace CPU: aarch64) builds an arm64 image on this
x86_64 machine, through qemu-user-static registered with binfmt_misc, and the image runs here and
holds the aarch64 wheels. The requirement's wheels differ per platform (its aarch64 wheel requires
another package than its x86_64 one), so the lock, the build and the container all have to agree on
the platform for the test to pass. Real BuildKit, a real registry serving arm64 stand-ins, a real
loopback PEP 503 index, the real CLI."""

from __future__ import annotations

import os
import sys
from functools import partial

import pytest

from cudaenv.engine import ContainerSpec
from tests.support.cli import cudaenv as run_cli
from tests.support.package_index import serve_index
from tests.support.lockfile import lock_view

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytestmark = [pytest.mark.docker, pytest.mark.registry]

cudaenv = partial(run_cli, timeout=1800)
OVERLAY = """
[[release]]
version = "2.96.0"
python = ["3.11"]
source = "test fixture ; read 2026-11-28"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["9.0"]
platforms = ["x86_64", "aarch64"]
"""
MAIN = """import platform, importlib.metadata as m
tag = [line for line in m.distribution("platdemo").read_text("WHEEL").splitlines() if line.startswith("Tag:")]
print(platform.machine(), tag[0].split()[-1], sorted(d.metadata["Name"] for d in m.distributions()))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory, arm64_standins):
    index, stop = serve_index(tmp_path_factory.mktemp("arm64-index"))
    index.add("torch", "2.96.0")
    index.add("platdemo", "1.0", requires=["x86only"], tag="py3-none-manylinux_2_28_x86_64")
    index.add("platdemo", "1.0", requires=["armonly"], tag="py3-none-manylinux_2_28_aarch64")
    index.add("x86only", "1.0")
    index.add("armonly", "1.0")
    overlay = tmp_path_factory.mktemp("arm64-overlay")
    (overlay / "torch.toml").write_text(OVERLAY)
    directory = tmp_path_factory.mktemp("grace-demo")
    (directory / "requirements.txt").write_text("platdemo==1.0\n")
    (directory / "main.py").write_text(MAIN)
    (directory / "cudaenv.toml").write_text("\n".join([
        "[project]", 'name = "grace-demo"', 'requirements = ["requirements.txt"]', 'python = "3.11"', "",
        "[frameworks]", 'torch = "==2.96.0"', "",
        "[target]", 'driver = "580.65.06"', 'gpus = ["NVIDIA GH200 480GB"]', "",
        "[build]", 'flavor = "wheels"', f'base_registry = "{arm64_standins.host}"', "",
        "[run]", 'command = ["python", "main.py"]', ""]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_", "PIP_"))}
    env.update(CUDAENV_MATRIX_PATH=str(overlay), CUDAENV_PYTHON_INDEX=index.url, CUDAENV_FRAMEWORK_INDEX=index.url,
               UV_CACHE_DIR=str(index.root.with_name(index.root.name + "-uv-cache")))
    if "CUDAENV_CACHE_DIR" in os.environ:
        env["CUDAENV_CACHE_DIR"] = os.environ["CUDAENV_CACHE_DIR"]
    yield directory, env
    stop()


def test_a_gh200_project_builds_an_arm64_image_here_that_runs_and_holds_aarch64_wheels(project, engine):
    directory, env = project
    locked = cudaenv("lock", directory, env=env)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    lock = lock_view(directory / "cudaenv.lock")
    assert lock["stack"]["arch"] == "aarch64" and lock["requirements"]["platform"] == "aarch64-manylinux_2_28"

    tag = "cudaenv-test/grace-demo:latest"
    built = cudaenv("build", directory, "--network", "host", "-t", tag, env=env)
    assert built.returncode == 0, built.stderr[-4000:]
    try:
        assert engine.client.images.get(tag).attrs["Architecture"] == "arm64"
        result = engine.run(ContainerSpec(image=tag, command=(), init=False), timeout=300)
        assert result.exit_code == 0, result.output
        machine, wheel_tag, installed = result.output.strip().splitlines()[-1].split(" ", 2)
        assert machine == "aarch64" and wheel_tag == "py3-none-manylinux_2_28_aarch64"
        assert "'armonly'" in installed and "'x86only'" not in installed
    finally:
        engine.remove_image(tag, force=True)
