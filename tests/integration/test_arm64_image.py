"""Issue 35, item 5: a project for a GH200 (a Grace CPU: aarch64) builds an arm64 image on this
x86_64 machine, through qemu-user-static registered with binfmt_misc, and the image runs here and
holds the aarch64 wheels. The requirement's wheels differ per platform (its aarch64 wheel requires
another package than its x86_64 one), so the lock, the build and the container all have to agree on
the platform for the test to pass. Real BuildKit, a real registry serving arm64 stand-ins, a real
loopback PEP 503 index, the real CLI.

The build is a cross build: apt resolves and downloads the arm64 packages, and uv installs the
aarch64 wheels, in stages that run on this machine (FROM the same images for $BUILDPLATFORM); the
image only installs the .debs and takes the files. So the image must also run the console script
uv wrote on x86_64, hold the requirement that replaced one the framework brought (no file of the
replaced version left), and hold a system package with its dependencies."""

from __future__ import annotations

import os
import re
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
HELLO = """import platform

def main():
    print("hello from", platform.machine())
"""
SHAREDEP_TWO = {"sharedep/__init__.py": '__version__ = "2.0"\n', "sharedep/only_in_two.py": "X = 2\n"}
CHECKS = """platdemo-hello
head -1 "$(command -v platdemo-hello)"
python -c 'import sharedep, importlib.util as u; print("sharedep", sharedep.__version__, u.find_spec("sharedep.only_in_two"))'
jq --version
apt-mark showauto | grep -x libjq1
"""
MAIN = """import platform, importlib.metadata as m
tag = [line for line in m.distribution("platdemo").read_text("WHEEL").splitlines() if line.startswith("Tag:")]
print(platform.machine(), tag[0].split()[-1], sorted(d.metadata["Name"] for d in m.distributions()))
"""


def index_env(index, overlay) -> dict[str, str]:
    """The CLI's environment for a project on the loopback ``index`` (python and framework) and the
    matrix ``overlay``: none of the caller's cudaenv, uv or pip settings, uv's cache of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_", "PIP_"))}
    env.update(CUDAENV_MATRIX_PATH=str(overlay), CUDAENV_PYTHON_INDEX=index.url, CUDAENV_FRAMEWORK_INDEX=index.url,
               UV_CACHE_DIR=str(index.root.with_name(index.root.name + "-uv-cache")))
    if "CUDAENV_CACHE_DIR" in os.environ:
        env["CUDAENV_CACHE_DIR"] = os.environ["CUDAENV_CACHE_DIR"]
    return env


@pytest.fixture(scope="module")
def project(tmp_path_factory, arm64_standins):
    index, stop = serve_index(tmp_path_factory.mktemp("arm64-index"))
    index.add("torch", "2.96.0", requires=["sharedep"])  # the framework layer takes the newest sharedep
    index.add("sharedep", "1.0")
    index.add("sharedep", "2.0", files=SHAREDEP_TWO)
    index.add("platdemo", "1.0", requires=["x86only"], tag="py3-none-manylinux_2_28_x86_64")
    index.add("platdemo", "1.0", requires=["armonly"], tag="py3-none-manylinux_2_28_aarch64",
              files={"platdemo/__init__.py": HELLO,
                     "platdemo-1.0.dist-info/entry_points.txt": "[console_scripts]\nplatdemo-hello = platdemo:main\n"})
    index.add("x86only", "1.0")
    index.add("armonly", "1.0")
    overlay = tmp_path_factory.mktemp("arm64-overlay")
    (overlay / "torch.toml").write_text(OVERLAY)
    directory = tmp_path_factory.mktemp("grace-demo")
    (directory / "requirements.txt").write_text("platdemo==1.0\nsharedep==1.0\n")  # the project pins the older
    (directory / "main.py").write_text(MAIN)
    (directory / "cudaenv.toml").write_text("\n".join([
        "[project]", 'name = "grace-demo"', 'requirements = ["requirements.txt"]', 'python = "3.11"', "",
        "[frameworks]", 'torch = "==2.96.0"', "",
        "[target]", 'driver = "580.65.06"', 'gpus = ["NVIDIA GH200 480GB"]', "",
        "[build]", 'flavor = "wheels"', f'base_registry = "{arm64_standins.host}"', 'system_packages = ["jq"]', "",
        "[run]", 'command = ["python", "main.py"]', ""]))
    env = index_env(index, overlay)
    yield directory, env
    stop()


def test_a_gh200_project_builds_an_arm64_image_here_that_runs_and_holds_aarch64_wheels(project, engine, arm64_standins):
    directory, env = project
    locked = cudaenv("lock", directory, env=env)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    lock = lock_view(directory / "cudaenv.lock")
    assert lock["stack"]["arch"] == "aarch64" and lock["requirements"]["platform"] == "aarch64-manylinux_2_28"

    tag = "cudaenv-test/grace-demo:latest"
    built = cudaenv("build", directory, "--network", "host", "-t", tag, "--rebuild-base", "-v", env=env)
    assert built.returncode == 0, built.stderr[-4000:]
    try:
        assert engine.client.images.get(tag).attrs["Architecture"] == "arm64"
        result = engine.run(ContainerSpec(image=tag, command=(), init=False), timeout=300)
        assert result.exit_code == 0, result.output
        machine, wheel_tag, installed = result.output.strip().splitlines()[-1].split(" ", 2)
        assert machine == "aarch64" and wheel_tag == "py3-none-manylinux_2_28_aarch64"
        assert "'armonly'" in installed and "'x86only'" not in installed

        checks = engine.run(ContainerSpec(image=tag, command=("bash", "-ec", CHECKS), init=False), timeout=300)
        assert checks.exit_code == 0, checks.output
        lines = checks.output.strip().splitlines()
        assert lines[:2] == ["hello from aarch64", "#!/opt/venv/bin/python"]  # written on x86_64, runs here
        assert lines[2] == "sharedep 1.0 None"  # 2.0 (the framework's) dropped with all its files
        assert lines[3].startswith("jq-") and lines[4] == "libjq1"  # a dependency, marked as one
    finally:
        engine.remove_image(tag, force=True)
    log = built.stdout + built.stderr
    # uv ran on this machine (x86_64) for the target, in the base's frameworks stage and in the project's
    # requirements stage; both start FROM build-os, the stage apt's downloads run in too
    assert log.count("cudaenv-venv-delta: installed on x86_64 for aarch64") == 2, log[-4000:]
    assert "replacing sharedep" in log
    steps = [line for line in log.splitlines() if re.match(r"#\d+ \[[a-z-]+ \d+/\d+\] ", line)]
    assert any("[essentials-debs 1/1] RUN" in line and "--download-only" in line for line in steps)
    assert any("[system-debs 1/1] RUN" in line and "--download-only" in line for line in steps)
    # the image's own stages (those the emulated CPU runs) neither update apt's lists nor install a wheel
    image_steps = [line for line in steps if not re.search(r"\[(build-[a-z]+|[a-z]+-debs|[a-z]+-wheels) ", line)]
    assert not any("apt-get" in line and " update" in line for line in image_steps)
    assert not any("uv pip install" in line for line in image_steps)
    assert any("[essentials 1/" in line and "apt-get install" in line for line in image_steps)  # .debs only
