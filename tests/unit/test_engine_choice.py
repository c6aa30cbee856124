"""Which engine a command uses (issue 36): --engine / CUDAENV_ENGINE, else Docker where it is
configured or answers, else Podman where it is installed."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cudaenv import engine as engines
from cudaenv.engine import choose_engine
from cudaenv.errors import UserError
from tests.support.cli import CUDAENV


@pytest.mark.parametrize("value, name", [("podman", "podman"), ("docker", "docker"), (" Podman ", "podman")])
def test_an_asked_engine_is_used_and_says_why(value, name):
    choice = choose_engine({"CUDAENV_ENGINE": value, "DOCKER_HOST": "unix:///nowhere"})
    assert (choice.name, choice.reason) == (name, f"CUDAENV_ENGINE={name} (or --engine) asks for it")


@pytest.mark.parametrize("value", ["rkt", "docker;rm -rf /", "pod\nman", "ｐｏｄｍａｎ"])
def test_an_unknown_engine_is_a_one_line_usage_error(value):
    with pytest.raises(UserError) as caught:
        choose_engine({"CUDAENV_ENGINE": value})
    message = str(caught.value)
    assert message.startswith("CUDAENV_ENGINE=") and "expected one of docker, podman" in message
    assert "\n" not in message


def test_a_configured_docker_host_is_docker_even_when_it_does_not_answer(monkeypatch):
    monkeypatch.setattr(engines, "docker_answers", lambda *a, **k: pytest.fail("probed a configured Docker"))
    choice = choose_engine({"DOCKER_HOST": "unix:///nowhere.sock"})
    assert (choice.name, choice.reason) == ("docker", "automatic: DOCKER_HOST=unix:///nowhere.sock names a Docker engine")


@pytest.mark.parametrize("answers, podman, name", [
    (True, True, "docker"), (False, True, "podman"), (False, False, "docker"), (None, True, "docker"),
], ids=["docker-answers", "only-podman", "neither", "sdk-only"])
def test_automatic_prefers_a_docker_that_answers_then_podman(monkeypatch, answers, podman, name):
    monkeypatch.setattr(engines, "docker_answers", lambda *a, **k: answers)
    monkeypatch.setattr("shutil.which", lambda tool: "/usr/bin/podman" if podman and tool == "podman" else None)
    assert choose_engine({}).name == name


def test_engine_option_reaches_get_engine_and_a_bad_one_is_exit_2_with_one_json_object(tmp_path):
    env = {**os.environ, "CUDAENV_ENGINE": "rkt"}
    proc = subprocess.run([*CUDAENV, "ps", "--json"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["error"]["message"].startswith("CUDAENV_ENGINE='rkt'") or \
        "CUDAENV_ENGINE" in json.loads(proc.stdout)["error"]["message"]
    proc = subprocess.run([*CUDAENV, "--engine", "rkt", "ps"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
