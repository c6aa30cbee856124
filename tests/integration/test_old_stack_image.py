"""Issue 34, items 2 and 3: TensorFlow 1.15 on a V100 resolves to a stack whose image builds here.

TensorFlow 1.15 runs on CUDA 10.0 with cuDNN 7 and Python <= 3.7. Its only nvidia/cuda bases are
Ubuntu 18.04 tags that NVIDIA deleted from Docker Hub (a mirror that kept them is named by
``[build] base_registry``; here the suite's local registry serves a debootstrapped bionic under that
name), Python 3.7 is below what uv downloads, and bionic's archive has no tini. So the image must
get python3.7 and python3-distutils from bionic's own archive, make its venv from that interpreter,
and run dumb-init as PID 1: this builds it for real, with a stand-in tensorflow-gpu wheel from a
loopback index, and looks inside the container."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

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

cudaenv = partial(run_cli, timeout=1200)
OVERRIDES = ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_MATRIX_PATH", "CUDAENV_DRIVER_VERSION",
             "CUDAENV_GPUS")


def newest_tf1(matrix) -> str:
    from packaging.version import Version

    return max((r.version for r in matrix.tensorflow if r.version.startswith("1.15.")), key=Version)


@pytest.fixture(scope="module")
def project(tmp_path_factory, standins, bionic_standin):
    from cudaenv.matrix import load_matrix

    version = newest_tf1(load_matrix(overlays=[]))
    served, stop = serve_index(tmp_path_factory.mktemp("tf1-index"))
    served.add("tensorflow-gpu", version, files={"tensorflow/__init__.py": f'__version__ = "{version}"\n'})
    directory = tmp_path_factory.mktemp("paper-code")
    (directory / "requirements.txt").write_text(f"tensorflow-gpu=={version}\n")
    (directory / "main.py").write_text("import sys, tensorflow\nprint(tensorflow.__version__, sys.version_info[:2])\n")
    (directory / "cudaenv.toml").write_text("\n".join([
        "[project]", 'name = "paper-code-tf1"', 'requirements = ["requirements.txt"]', "",
        "[frameworks]", f'tensorflow = "=={version}"', "",
        "[target]", 'driver = "450.80.02"', 'gpus = ["V100"]', "",
        "[build]", f'base_registry = "{standins.host}"', "",
        "[run]", 'command = ["python", "main.py"]', ""]))
    overlays = tmp_path_factory.mktemp("no-overlays")
    import os

    env = dict({k: v for k, v in os.environ.items() if k not in OVERRIDES}, CUDAENV_MATRIX_PATH=str(overlays),
               CUDAENV_PYTHON_INDEX=served.url, CUDAENV_FRAMEWORK_INDEX=served.url)
    yield directory, env, version
    stop()


def test_tensorflow_1_15_on_a_v100_builds_on_the_bionic_base_with_its_own_python_and_init(project, standins, engine):
    directory, env, version = project
    proc = cudaenv("lock", directory, "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stack = lock_view(directory / "cudaenv.lock")["stack"]
    assert stack["python"] == "3.7" and stack["cuda"] == "10.0"
    assert stack["base_image"].startswith("nvidia/cuda:10.0-cudnn7-") and stack["base_image"].endswith("-ubuntu18.04")
    assert stack["requirements"] == [f"tensorflow-gpu=={version}"]
    assert stack["python_packages"] == ["python3.7", "python3-distutils"] and stack["init"] == "dumb-init"
    warnings = json.loads(proc.stdout)["warnings"]
    assert any(w["code"] == "base-image-removed" for w in warnings), warnings

    standins.provide(stack["base_image"])  # the bionic stand-in, under the deleted tag's name
    tag = "cudaenv-test/paper-code-tf1:latest"
    built = cudaenv("build", directory, "--network", "host", "--json", "-t", tag, env=env)
    assert built.returncode == 0, built.stderr[-4000:]
    try:
        result = engine.run(ContainerSpec(image=tag, command=(), init=False), timeout=120)
        assert result.exit_code == 0, result.output
        assert result.output.strip().splitlines()[-1] == f"{version} (3, 7)"
        pid1 = engine.run(ContainerSpec(image=tag, command=("cat", "/proc/1/cmdline"), init=False), timeout=60)
        assert pid1.output.split("\0")[0] == "/usr/bin/dumb-init", pid1.output
        python = engine.run(ContainerSpec(image=tag, command=("readlink", "-f", "/opt/venv/bin/python"), init=False),
                            timeout=60)
        assert python.output.strip() == "/usr/bin/python3.7"  # bionic's interpreter, not a download
    finally:
        engine.remove_image(tag, force=True)
