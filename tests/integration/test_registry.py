"""The suite's local registry is a real distribution registry: push, list, pull back."""

from __future__ import annotations

import uuid

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.registry]


def test_push_and_pull_round_trip_through_local_registry(engine, standin_image, registry):
    client = engine.client
    repository = f"{registry.host}/cudaenv-test/standin"
    tag = uuid.uuid4().hex[:8]
    client.images.get(standin_image).tag(repository, tag)
    for line in client.images.push(repository, tag=tag, stream=True, decode=True):
        assert "error" not in line, line
    assert tag in registry.tags("cudaenv-test/standin")
    digest = registry.manifest_digest("cudaenv-test/standin", tag)
    assert digest and digest.startswith("sha256:")

    client.images.remove(f"{repository}:{tag}")
    pulled = client.images.pull(repository, tag=tag)
    assert f"{repository}:{tag}" in pulled.tags
    client.images.remove(f"{repository}:{tag}")
