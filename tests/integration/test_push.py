"""Pushing a project image to the real loopback registry; the digest is read back from it."""
import json

import pytest

from cudaenv.images.push import PUSHED_FILE, push_image, record, recorded

pytestmark = [pytest.mark.docker, pytest.mark.registry]


def test_push_records_the_digest_the_registry_serves(engine, registry, standin_image, tmp_path):
    target = f"{registry.host}/cluster-test/pushed-project:v1"
    lines = []
    pushed = push_image(engine, standin_image, target, progress=lines.append)
    try:
        assert pushed.digest == registry.manifest_digest("cluster-test/pushed-project", "v1")
        assert pushed.by_digest == f"{registry.host}/cluster-test/pushed-project@{pushed.digest}"
        record(tmp_path, pushed)
        assert json.loads((tmp_path / PUSHED_FILE).read_text())["digest"] == pushed.digest
        assert recorded(tmp_path) == pushed
    finally:
        engine.client.images.remove(f"{registry.host}/cluster-test/pushed-project:v1")

