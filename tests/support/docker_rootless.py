"""Rootless Docker for the suite: the rootless test user's own dockerd, driven through runuser.

scripts/test.sh starts it (``ensure_rootless_docker``) with Docker's own
``dockerd-rootless.sh`` under rootlesskit, detached, and leaves it running like root's dockerd;
a second run reuses it. Its socket, data and rootlesskit state live under the user's
``~/.cache/cudaenv/docker-rootless`` (``XDG_RUNTIME_DIR`` points there, not at ``/run/user/UID``,
which rootless Podman would then also pick up).

This machine denies ``/dev/net/tun``, so rootlesskit's own networks (slirp4netns, vpnkit) cannot
start. The daemon therefore stays in the host's network namespace (``--net=host``), where the
user may make neither a bridge nor iptables rules: dockerd runs with ``--bridge=none
--iptables=false``, and its containers get a loopback interface only (or the host's network with
``--network host``). Nothing the rootless tests do needs a network.

The tests run cudaenv itself as that user (``cudaenv_as_user``), since what they check depends on
who the caller is. The suite's virtualenv may sit on an interpreter the user cannot execute (a
pyenv Python under root's 0700 home), so the user's process runs an interpreter of the same
version it can execute, with this checkout and the virtualenv's site-packages on its path.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from tests.support.cli import command_line
from tests.support.podman_env import ROOTLESS_USER, rootless_home

REPO_ROOT = Path(__file__).resolve().parents[2]
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def state_dir() -> Path:
    return Path(rootless_home()) / ".cache" / "cudaenv" / "docker-rootless"


def docker_host() -> str:
    """Where the rootless daemon listens (scripts/test.sh exports the same as
    CUDAENV_TEST_ROOTLESS_DOCKER_HOST)."""
    return os.environ.get("CUDAENV_TEST_ROOTLESS_DOCKER_HOST") or f"unix://{state_dir()}/run/docker.sock"


def user_ids() -> tuple[int, int]:
    entry = pwd.getpwnam(ROOTLESS_USER)
    return entry.pw_uid, entry.pw_gid


def subordinate_start(kind: str = "uid") -> int:
    """The first subordinate UID (or GID) of the user: what the container's UID 1 is on the host."""
    for line in Path(f"/etc/sub{kind}").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in (ROOTLESS_USER, str(user_ids()[0])):
            return int(rest.split(":")[0])
    raise LookupError(f"{ROOTLESS_USER} has no subordinate {kind}s in /etc/sub{kind}")


def daemon_info() -> dict:
    """The rootless daemon's ``/info``, asked through its socket (root may open it)."""
    import docker

    client = docker.DockerClient(base_url=docker_host(), timeout=10)
    try:
        return client.info()
    finally:
        client.close()


def _user_env(**extra: str) -> list[str]:
    home = rootless_home()
    env = {"PATH": PATH, "HOME": home, "LANG": "C.UTF-8", "DOCKER_HOST": docker_host(), **extra}
    return ["runuser", "-u", ROOTLESS_USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items())]


@lru_cache(maxsize=1)
def user_python() -> tuple[str, str] | None:
    """(interpreter, PYTHONPATH) with which the user runs this checkout's cudaenv and the suite's
    packages; None when no interpreter of this one's version is executable by the user."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    paths = sysconfig.get_paths()
    pythonpath = os.pathsep.join(dict.fromkeys([str(REPO_ROOT), paths["purelib"], paths["platlib"]]))
    candidates = [os.path.realpath(sys.executable), shutil.which(f"python{version}", path=PATH),
                  f"/usr/bin/python{version}"]
    for candidate in dict.fromkeys(c for c in candidates if c):
        proc = subprocess.run([*_user_env(PYTHONPATH=pythonpath, PYTHONNOUSERSITE="1"), candidate, "-c",
                               "import sys, docker, cudaenv; print('%d.%d' % sys.version_info[:2], cudaenv.__file__)"],
                              capture_output=True, text=True, cwd="/", timeout=60)
        seen = proc.stdout.split()
        if proc.returncode == 0 and seen[:1] == [version] and seen[1].startswith(str(REPO_ROOT)):
            return candidate, pythonpath
    return None


def cudaenv_as_user(*args: str, python: str | None = None, timeout: float = 300,
                    **env: str) -> subprocess.CompletedProcess:
    """``cudaenv ARGS`` run by the rootless user with DOCKER_HOST at its daemon (``python``: a
    script to run with ``-c`` instead, ARGS then being its arguments)."""
    found = user_python()
    if found is None:
        raise RuntimeError(unusable_reason() or "no interpreter for the rootless user")
    interpreter, pythonpath = found
    argv = [interpreter, "-c", python, *args] if python is not None else [*command_line(interpreter), *args]
    return subprocess.run([*_user_env(PYTHONPATH=pythonpath, PYTHONNOUSERSITE="1", **env), *argv],
                          capture_output=True, text=True, cwd="/", timeout=timeout, stdin=subprocess.DEVNULL)


@lru_cache(maxsize=1)
def unusable_reason() -> str | None:
    """None when the rootless user's dockerd answers, says it is rootless, and the user can run
    this checkout's cudaenv; else why not."""
    if os.geteuid() != 0:
        return "the rootless Docker tests run cudaenv as another user through runuser, which needs root"
    try:
        rootless_home()
    except KeyError:
        return f"no user {ROOTLESS_USER} (scripts/test.sh creates it with subordinate IDs)"
    try:
        info = daemon_info()
    except Exception as exc:  # noqa: BLE001 - any failure to answer is the reason
        return (f"no rootless dockerd answers at {docker_host()} ({str(exc)[:200]}); "
                "scripts/test.sh starts one for the rootless user")
    from cudaenv.engine.docker_engine import daemon_is_rootless

    if not daemon_is_rootless(info):
        return f"the daemon at {docker_host()} is not rootless (security options {json.dumps(info.get('SecurityOptions'))})"
    if user_python() is None:
        return (f"{ROOTLESS_USER} can execute no Python {sys.version_info.major}.{sys.version_info.minor} "
                f"that imports this checkout's cudaenv (tried {os.path.realpath(sys.executable)} and /usr/bin)")
    return None


def import_standin(tag: str) -> None:
    """Copy a stand-in from root's Docker store into the rootless daemon's, under the same name:
    ``docker export`` | ``docker import``, a flat copy whose ``/`` is world-readable (older builds of
    the debootstrapped stand-in have a 0700 ``/``, which a container user other than root cannot enter)."""
    from tests.support.podman_env import IMPORT_CHANGES

    container = subprocess.run(["docker", "create", tag], capture_output=True, text=True, check=True).stdout.strip()
    try:
        export = subprocess.Popen(["docker", "export", container], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "--host", docker_host(), "import",
                               *[x for c in IMPORT_CHANGES for x in ("--change", c)],
                               "--message", f"cudaenv test stand-in {tag}", "-", tag],
                              stdin=export.stdout, capture_output=True, text=True)
        export.stdout.close()
        if export.wait() != 0 or load.returncode != 0:
            raise RuntimeError(f"could not copy {tag} into the rootless Docker store: {load.stderr.strip()[-300:]}")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def has_image(tag: str) -> bool:
    return subprocess.run(["docker", "--host", docker_host(), "image", "inspect", tag],
                          capture_output=True).returncode == 0
