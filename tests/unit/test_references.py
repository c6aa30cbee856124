"""Image references: Docker's rule for when the first path component is a registry, applied the
same way when re-homing bases under a mirror, parsing publish targets and checking --registry."""

from __future__ import annotations

import pytest

from cudaenv.engine.builders import split_reference
from cudaenv.core.references import names_registry, with_registry
from cudaenv.engine.registry import Reference, RegistryError


@pytest.mark.parametrize("component, expected", [
    ("ghcr.io", True), ("127.0.0.1:5000", True), ("localhost", True), ("registry:5000", True),
    ("nvidia", False), ("library", False), ("team", False),
])
def test_a_registry_host_has_a_dot_or_a_port_or_is_localhost(component, expected):
    assert names_registry(component) is expected


@pytest.mark.parametrize("reference, expected", [
    ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", "mirror.example.com/hub/nvidia/cuda:12.4.1-runtime-ubuntu22.04"),
    ("python:3.11-slim", "mirror.example.com/hub/library/python:3.11-slim"),
    ("ghcr.io/astral-sh/uv:0.5.0", "mirror.example.com/hub/astral-sh/uv:0.5.0"),
])
def test_with_registry_rehomes_hub_and_foreign_references_under_the_mirror(reference, expected):
    assert with_registry(reference, "mirror.example.com/hub/") == expected
    assert with_registry(reference, "") == reference


def test_a_reference_parses_into_registry_repository_and_tag():
    assert Reference.parse("127.0.0.1:5000/team/cudaenv-base:hash-ab12") == \
        Reference("127.0.0.1:5000", "team/cudaenv-base", "hash-ab12")
    assert str(Reference.parse("registry.example.com/ml/base")) == "registry.example.com/ml/base:latest"


@pytest.mark.parametrize("text", ["team/cudaenv-base:1", "cudaenv-base:1"])
def test_a_reference_without_a_registry_is_refused(text):
    with pytest.raises(RegistryError, match="expected a reference with a registry"):
        Reference.parse(text)


def test_a_registry_port_is_not_taken_for_a_tag():
    assert split_reference("localhost:5000/ns/img:tag") == ("localhost:5000/ns/img", "tag")
    assert split_reference("localhost:5000/ns/img") == ("localhost:5000/ns/img", None)
