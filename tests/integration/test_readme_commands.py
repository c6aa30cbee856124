"""The README's install-and-run command, taken from between its markers and run as written in a
fresh Debian 12 container (the suite's debootstrapped stand-in: python3, no pip, no python3-venv,
PEP 668 in force), as root and as an ordinary user. If the README drifts, this fails."""

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


def in_fresh_debian(standin_image: str, script: str, *, user: str | None) -> subprocess.CompletedProcess:
    argv = ["docker", "run", "--rm", "--network", "host", "-v", f"{REPO}:/src:ro"]
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if ca.is_file():  # this machine reaches PyPI through a TLS-intercepting proxy: its CA, as a user would add it
        argv += ["-v", f"{ca}:/etc/ssl/certs/ca-certificates.crt:ro", "-e", "PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
                 "-e", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]
    if user:
        argv += ["--user", user, "-e", "HOME=/tmp/home"]
    argv += [standin_image, "bash", "-c", f"set -e; mkdir -p \"$HOME\"; {COPY_REPO}; {script}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900)


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
