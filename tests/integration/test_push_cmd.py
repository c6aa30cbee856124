"""`cudaenv push` end to end: build, push to the real loopback registry, digest recorded and read back."""
import json
import tomllib
from functools import partial

import pytest

from tests.integration.test_check_image_and_doctor import project_config
from tests.support.cli import cudaenv
from tests.unit.host import cli_env, hide_nvml
from tests.support.lockfile import lock_view

pytestmark = [pytest.mark.docker, pytest.mark.registry]


def test_push_records_the_registry_digest_next_to_the_lock(tmp_path, standins, registry, engine):
    env = cli_env(hide_nvml(tmp_path / "no-nvml"))
    project = tmp_path / "pushed"
    project.mkdir()
    (project / "cudaenv.toml").write_text(project_config(standins.host).replace("check-image", "pushed-project"))
    run = partial(cudaenv, env=env, timeout=120)
    assert run("lock", project).returncode == 0
    standins.provide(lock_view(project / "cudaenv.lock")["stack"]["base_image"])

    proc = run("push", project, "--registry", f"{registry.host}/cluster-cli", "--network", "host", "--json",
               timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout)
    repository, tag = payload["reference"].split("/", 1)[1].rsplit(":", 1)
    assert payload["digest"] == registry.manifest_digest(repository, tag)
    assert json.loads((project / "cudaenv.pushed.json").read_text())["digest"] == payload["digest"]
    assert payload["image"] == f"{registry.host}/{repository}@{payload['digest']}"
    for name in (payload["reference"], f"cudaenv/pushed-project:{tag}", "cudaenv/pushed-project:latest"):
        engine.client.images.remove(name)
