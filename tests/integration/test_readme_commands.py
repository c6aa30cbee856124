"""The README's two commands, taken from between their markers and run as written in a fresh
Debian 12 container (the suite's debootstrapped stand-in: python3, no pip, no python3-venv, PEP 668
in force). The install-and-run command runs as root and as an ordinary user; the test command runs
as root with this machine's Docker engine reachable through its socket, and must install what it
needs (python3-venv, the Docker client, Slurm, ...) and then run tests. If the README drifts, this
fails."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.network]

REPO = Path(__file__).resolve().parents[2]
COPY_REPO = ("mkdir -p /tmp/checkout && tar -C /src --exclude=./.venv --exclude=./.git --exclude=./.test-logs "
             "--exclude=./.hypothesis --exclude='*/__pycache__' -cf - . | tar -C /tmp/checkout -xf - && cd /tmp/checkout")


def readme_command(marker: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\n```sh\n(.+?)\n```", text, re.S)
    assert match, f"README.md has no ```sh block after <!-- {marker} -->"
    return match.group(1).strip()


def in_fresh_debian(standin_image: str, script: str, *, user: str | None, docker_socket: bool = False,
                    timeout: int = 900) -> subprocess.CompletedProcess:
    argv = ["docker", "run", "--rm", "--network", "host", "-v", f"{REPO}:/src:ro"]
    if docker_socket:  # the engine the suite uses; the container brings its own client (scripts/test.sh installs it)
        argv += ["-v", "/var/run/docker.sock:/var/run/docker.sock"]
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if ca.is_file():  # this machine reaches PyPI through a TLS-intercepting proxy: its CA, as a user would add it
        argv += ["-v", f"{ca}:/etc/ssl/certs/ca-certificates.crt:ro", "-e", "PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
                 "-e", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]
    if user:
        argv += ["--user", user, "-e", "HOME=/tmp/home"]
    argv += [standin_image, "bash", "-c", f"set -e; mkdir -p \"$HOME\"; {COPY_REPO}; {script}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def test_the_stand_in_is_a_fresh_debian_without_pip_or_venv(standin_image):
    proc = subprocess.run(["docker", "run", "--rm", standin_image, "bash", "-c",
                           "python3 -m pip --version; echo pip=$?; python3 -m ensurepip --version; echo ensurepip=$?; "
                           "ls /usr/lib/python3*/EXTERNALLY-MANAGED"], capture_output=True, text=True, timeout=120)
    assert "pip=1" in proc.stdout and "ensurepip=1" in proc.stdout and "EXTERNALLY-MANAGED" in proc.stdout


@pytest.mark.parametrize("user", [None, "1000:1000"], ids=["root", "non-root"])
def test_the_readme_install_and_run_command_works_as_written(standin_image, user):
    command = readme_command("main-command")
    proc = in_fresh_debian(standin_image, command, user=user)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "✓ torch 2.6" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_the_readme_test_command_sets_up_a_fresh_debian_and_runs_tests(standin_image):
    """`bash scripts/test.sh` as the README writes it, on a machine with none of its tools. The
    arguments appended select the unit tests: the engine tests bind-mount this container's files,
    which the host's engine cannot see (they run where the suite itself runs)."""
    command = readme_command("test-command")
    assert command == "bash scripts/test.sh", command
    script = (f"test ! -e /usr/bin/docker && ! python3 -m venv /tmp/probe-venv 2>/dev/null && echo fresh-machine; "
              f"CUDAENV_STANDIN_IMAGE={standin_image} {command} tests/unit -q -x -p no:cacheprovider "
              "-m 'not docker and not slurm and not network'")
    proc = in_fresh_debian(standin_image, script, user=None, docker_socket=True, timeout=1500)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "fresh-machine" in proc.stdout  # no Docker client and no venv module before the command ran
    assert "installing python3-venv" in output and "apt-get install" in output
    assert "Docker engine reachable" in output
    summary = re.search(r"^([0-9]+) passed", proc.stdout, re.M)
    assert summary and int(summary.group(1)) > 500, output[-3000:]
    assert " failed" not in proc.stdout.splitlines()[-1]
