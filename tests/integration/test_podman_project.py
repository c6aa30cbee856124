"""`CUDAENV_ENGINE=podman`: a project builds, runs (a /workspace owned by the caller), is listed
and stopped, on root's Podman and on a rootless user's (the whole CLI run as that user).

The stack's upstream bases (nvidia/cuda, the uv image) are the stand-in under the names the
project's ``base_registry`` gives them, in that Podman's own store.
"""

from __future__ import annotations

import io
import json
import os
import pwd
import shutil
import site
import subprocess
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support import podman_env
from tests.support.cli import CUDAENV

pytestmark = pytest.mark.podman
REPO = Path(__file__).resolve().parents[2]
CUDA_12 = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"


@pytest.fixture(params=["podman", "podman-rootless"])
def engine_kind(request):
    return request.param


def caller(kind: str) -> tuple[int, int]:
    if kind == "podman-rootless":
        entry = pwd.getpwnam(podman_env.ROOTLESS_USER)
        return entry.pw_uid, entry.pw_gid
    return os.getuid(), os.getgid()


def cli_argv(kind: str, *args: str) -> list[str]:
    """``cudaenv ARGS`` as the caller: root in-process's interpreter, or the rootless user's (the
    suite's interpreter where that user may run it, else the system python3 with this checkout and
    its site-packages on the path)."""
    env = {"CUDAENV_ENGINE": "podman", "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()])}
    if kind != "podman-rootless":
        return ["env", *(f"{k}={v}" for k, v in env.items()), *CUDAENV, *args]
    python = sys.executable
    probe = podman_env.user_prefix() + [python, "-c", "import sys"]
    if subprocess.run(probe, capture_output=True, cwd="/").returncode != 0:
        python = "/usr/bin/python3"
    return [*podman_env.user_prefix(), *(f"{k}={v}" for k, v in env.items()), python, *CUDAENV[1:], *args]


def cudaenv(kind: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cli_argv(kind, *args), capture_output=True, text=True, cwd=cwd, timeout=900)


@pytest.fixture
def project(engine_kind, podman_standin, registry):
    rootless = engine_kind == "podman-rootless"
    engine, standin = podman_standin(engine_kind)
    readable = subprocess.run(podman_env.podman_argv(rootless, "version") if not rootless else
                              podman_env.user_prefix() + ["test", "-r", str(REPO / "cudaenv" / "__init__.py")],
                              capture_output=True, cwd="/")
    if readable.returncode != 0:
        pytest.fail(f"{podman_env.ROOTLESS_USER} cannot read this checkout ({REPO}): put it where that user can")
    from uv import find_uv_bin

    from cudaenv.core.references import with_registry
    from cudaenv.images.render import UV_IMAGE, uv_version

    engine.tag(standin, with_registry(CUDA_12, registry.host))
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name in ("uv", "uvx"):
            tar.add(str(Path(find_uv_bin()).with_name(name)), arcname=name)
    subprocess.run(podman_env.podman_argv(rootless, "import", "--quiet", "-",
                                                  with_registry(f"{UV_IMAGE}:{uv_version()}", registry.host)),
                   input=archive.getvalue(), check=True, capture_output=True, cwd="/")
    root = Path(tempfile.mkdtemp(prefix="cudaenv-podman-project-"))
    root.chmod(0o755)
    name = f"podtest-{uuid.uuid4().hex[:6]}"
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{registry.host}"\n')
    for path in (root, root / "cudaenv.toml"):
        os.chown(path, *caller(engine_kind))
    yield engine, root, name
    subprocess.run(cli_argv(engine_kind, "stop", str(root)), capture_output=True, cwd=root)
    for image in engine.images(f"io.cudaenv.project={name}"):
        for tag in image.tags or (image.id,):
            engine.remove_image(tag, force=True)
    for served in (with_registry(CUDA_12, registry.host), with_registry(f"{UV_IMAGE}:{uv_version()}", registry.host)):
        engine.remove_image(served)
    shutil.rmtree(root, ignore_errors=True)


def test_a_project_builds_runs_is_listed_and_stops_on_podman(project, engine_kind):
    engine, root, name = project
    run = cudaenv(engine_kind, "run", "--gpus", "none", str(root), "--",
                  "sh", "-c", "echo written > /workspace/out.txt; id -u; exit 3", cwd=root)
    assert run.returncode == 3, run.stderr
    uid, gid = caller(engine_kind)
    assert run.stdout.split()[-1] == str(uid)
    written = (root / "out.txt").stat()
    assert (written.st_uid, written.st_gid) == (uid, gid)

    detached = cudaenv(engine_kind, "run", "--detach", "--gpus", "none", str(root), "--", "sleep", "300", cwd=root)
    assert detached.returncode == 0, detached.stderr
    container = detached.stdout.strip().splitlines()[-1]
    listed = json.loads(cudaenv(engine_kind, "ps", "--json", cwd=root).stdout)["containers"]
    assert [(c["name"], c["project"], c["status"]) for c in listed if c["project"] == name] == \
        [(container, name, "running")]
    stopped = cudaenv(engine_kind, "stop", str(root), cwd=root)
    assert stopped.returncode == 0, stopped.stderr
    after = json.loads(cudaenv(engine_kind, "ps", "--json", "--all", cwd=root).stdout)["containers"]
    assert [c for c in after if c["project"] == name] == []


def test_a_second_run_starts_the_recorded_image_and_one_removed_since_is_built_again(project, engine_kind):
    """Podman's second run starts the image its inputs recorded without asking Podman first (an
    inspect is a process of its own); an image removed since makes that run check and build again,
    never fail."""
    engine, root, name = project
    for word in ("first", "second"):  # the first locks and builds; the second records the image for its inputs
        ran = cudaenv(engine_kind, "run", "--gpus", "none", str(root), "--", "echo", word, cwd=root)
        assert ran.returncode == 0 and ran.stdout.split()[-1] == word, ran.stderr
    third = cudaenv(engine_kind, "run", "--gpus", "none", str(root), "--", "echo", "third", cwd=root)
    assert third.returncode == 0 and third.stdout.split()[-1] == "third", third.stderr
    assert "building" not in third.stderr and "gone" not in third.stderr
    for image in engine.images(f"io.cudaenv.project={name}"):
        for tag in image.tags or (image.id,):
            engine.remove_image(tag, force=True)
    again = cudaenv(engine_kind, "run", "--gpus", "none", str(root), "--", "echo", "again", cwd=root)
    assert again.returncode == 0 and again.stdout.split()[-1] == "again", again.stderr
    assert "the recorded image is gone: checking the project's image again" in again.stderr
    assert engine.images(f"io.cudaenv.project={name}"), "the image was not built again"


def test_run_gpus_device_0_on_podman_gets_that_gpu_through_cdi(project, engine_kind):
    """`cudaenv run --gpus device=0` on Podman: the GPU is the CDI device nvidia.com/gpu=0 of the host's spec
    (written by the test: a fake device node and an environment entry), nothing else."""
    engine, root, name = project
    with podman_env.fake_cdi_gpus() as nodes:
        run = cudaenv(engine_kind, "run", "--gpus", "device=0", str(root), "--", "sh", "-c",
                      "env | grep ^CUDAENV_FAKE | sort; ls /dev | grep ^cudaenv-test-gpu | sort", cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-2:] == ["CUDAENV_FAKE_GPU_0=present", nodes[0]]
