"""Podman for the suite: the root user's (rootful) and a test user's (rootless, runuser -u).

scripts/test.sh installs Debian's podman, creates the rootless user with subordinate IDs and
imports the stand-in base images into both Podman stores; these helpers find out what is there.
The stand-ins come from Docker's store by ``docker export`` | ``podman import`` (a flat copy whose
``/`` is world-readable: the debootstrapped stand-in's own root directory is 0700, which a rootless
container user cannot even traverse).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import uuid
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

ROOTLESS_USER = os.environ.get("CUDAENV_TEST_ROOTLESS_USER", "cudaenv-rootless")
IMPORT_CHANGES = ("ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
                  'CMD ["/bin/bash"]')


def rootless_home() -> str:
    return pwd.getpwnam(ROOTLESS_USER).pw_dir


def user_prefix() -> list[str]:
    """Run a command as the rootless user, with that user's HOME (and so its own Podman store)."""
    home = rootless_home()
    # TMPDIR: buildah's cache mounts live under it, and /var/tmp's belongs to root's builds
    return ["runuser", "-u", ROOTLESS_USER, "--", "env", "-u", "XDG_RUNTIME_DIR", "-u", "CUDAENV_CACHE_DIR",
            f"HOME={home}", f"XDG_CACHE_HOME={home}/.cache", f"TMPDIR={home}/.cache/cudaenv/podman-tmp"]


def podman_argv(rootless: bool, *args: str) -> list[str]:
    return [*(user_prefix() if rootless else []), "podman", *args]


@lru_cache(maxsize=2)
def podman_unusable_reason(rootless: bool) -> str | None:
    """None when this Podman (root's, or the rootless user's) answers; else why not."""
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/test.sh installs Debian's podman)"
    if rootless:
        if os.geteuid() != 0:
            return "the rootless tests run podman as another user through runuser, which needs root"
        try:
            rootless_home()
        except KeyError:
            return f"no user {ROOTLESS_USER} (scripts/test.sh creates it with subordinate IDs)"
    proc = subprocess.run(podman_argv(rootless, "info", "--format", "{{.Host.Security.Rootless}}"),
                          capture_output=True, text=True, timeout=120, cwd="/")
    if proc.returncode != 0:
        return f"podman info failed: {proc.stderr.strip()[-300:]}"
    if proc.stdout.strip() != ("true" if rootless else "false"):
        return f"podman says rootless={proc.stdout.strip()}, expected {rootless}"
    return None


def has_image(rootless: bool, tag: str) -> bool:
    return subprocess.run(podman_argv(rootless, "image", "exists", tag), capture_output=True, cwd="/").returncode == 0


def import_standin(rootless: bool, tag: str) -> None:
    """Copy a stand-in from Docker's store into this Podman's, under the same name."""
    container = subprocess.run(["docker", "create", tag], capture_output=True, text=True, check=True).stdout.strip()
    try:
        export = subprocess.Popen(["docker", "export", container], stdout=subprocess.PIPE)
        argv = podman_argv(rootless, "import", "--quiet", *[x for c in IMPORT_CHANGES for x in ("--change", c)],
                           "--message", f"cudaenv test stand-in {tag}", "-", tag)
        subprocess.run(argv, stdin=export.stdout, capture_output=True, check=True, cwd="/")
        export.wait()
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def prepare_user() -> None:
    """The rootless user's TMPDIR (``user_prefix``), made by that user."""
    subprocess.run(["runuser", "-u", ROOTLESS_USER, "--", "mkdir", "-p", f"{rootless_home()}/.cache/cudaenv/podman-tmp"],
                   check=True, cwd="/")


def engine_for(rootless: bool):
    from cudaenv.engine.podman_engine import PodmanEngine

    if not rootless:
        return PodmanEngine()
    return PodmanEngine(prefix=user_prefix(), rootless=True)


CDI_SPEC_DIR = Path("/var/run/cdi")  # Podman 4.3 reads only the specification's directories


@contextmanager
def fake_cdi_gpus():
    """Two fake GPUs (character devices like /dev/null, at /dev/cudaenv-test-gpuN) and the spec that
    offers them, removed after. The nodes sit at the same path on the host as in the container, as
    real GPUs do (/dev/nvidia0): rootless runc bind-mounts a device from its container path."""
    tag = uuid.uuid4().hex[:8]
    nodes = [Path(f"/dev/cudaenv-test-gpu{index}-{tag}") for index in range(2)]
    for node in nodes:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        node.chmod(0o666)
    devices = "".join(f"- name: '{i}'\n  containerEdits:\n    env: [CUDAENV_FAKE_GPU_{i}=present]\n"
                      f"    deviceNodes:\n    - path: {node}\n" for i, node in enumerate(nodes))
    both = "".join(f"    - path: {node}\n" for node in nodes)
    CDI_SPEC_DIR.mkdir(parents=True, exist_ok=True)
    spec = CDI_SPEC_DIR / f"cudaenv-test-{tag}.yaml"
    spec.write_text(f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n{devices}"
                    f"- name: all\n  containerEdits:\n    env: [CUDAENV_FAKE_GPU_ALL=present]\n    deviceNodes:\n{both}")
    try:
        yield [node.name for node in nodes]
    finally:
        spec.unlink()
        for node in nodes:
            node.unlink()
