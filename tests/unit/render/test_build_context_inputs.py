"""What build_context checks and derives before any template runs: every FROM value is one image
reference (a bad one is refused naming which image it is), and the build environment of the
packages built from source lists the GPUs' compute capabilities in numeric order."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.errors import UserError
from cudaenv.images import render
from cudaenv.images.render import BuildSettings, build_context
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import constraints, host, matrix

NOT_ONE_REFERENCE = "nvidia/cuda:12.4 AS x"


@pytest.fixture(scope="module")
def stack():
    return resolve(matrix(), constraints(torch="2.6"), host("550.54.15", ["A100"])).stack


def refusal(stack, settings: BuildSettings) -> str:
    with pytest.raises(UserError) as refused:
        build_context(stack, settings)
    return str(refused.value)


def test_a_base_image_that_is_not_one_reference_is_refused_as_the_stacks_base_image(stack):
    """A hand-edited lock can carry any base image: the message says it is the stack's base image."""
    message = refusal(replace(stack, base_image=NOT_ONE_REFERENCE), BuildSettings(project="p"))
    assert message.startswith("the stack's base image: expected one image reference like ")
    assert message.endswith(f"got {NOT_ONE_REFERENCE!r}")


def test_a_stack_base_that_is_not_one_reference_is_refused_as_the_stack_base_image(stack):
    message = refusal(stack, BuildSettings(project="p", stack_base=NOT_ONE_REFERENCE))
    assert message.startswith("the stack base image: expected one image reference like ")


def test_a_uv_tag_that_is_not_a_reference_is_refused_as_the_uv_image(stack, monkeypatch):
    monkeypatch.setattr(render, "uv_version", lambda: "0.13 AS x")
    message = refusal(stack, BuildSettings(project="p"))
    assert message.startswith("the uv image: expected one image reference like ")


@pytest.mark.parametrize("archs, listed", [
    pytest.param(("12.0", "9.0", "10.0", "8.6", "9.0"), "8.6;9.0;10.0;12.0", id="two-digit-majors"),
    pytest.param(("8.9", "8.10", "7.5"), "7.5;8.9;8.10", id="two-digit-minors"),
])
def test_torch_cuda_arch_list_is_in_numeric_order_and_names_each_capability_once(stack, archs, listed):
    """8.6 comes before 10.0 (numbers, not text), and a capability two GPUs share is listed once."""
    settings = BuildSettings(project="p", build_from_source=("flash-attn",), cuda_arch_list=archs)
    context = build_context(replace(stack, flavor="devel"), settings)
    assert context["build_env"] == [("CUDA_HOME", "/usr/local/cuda"), ("TORCH_CUDA_ARCH_LIST", listed)]


@pytest.mark.parametrize("packages, installed", [
    pytest.param(("git",), ["git", "build-essential"], id="added"),
    pytest.param(("git", "build-essential"), ["git", "build-essential"], id="already-listed"),
])
def test_building_from_source_brings_build_essential_once(stack, packages, installed):
    """A compiler comes with [build] build_from_source, after the project's packages, never twice."""
    settings = BuildSettings(project="p", system_packages=packages, build_from_source=("flash-attn",))
    assert build_context(stack, settings)["system_packages"] == installed


def test_a_native_stack_carries_no_compat_package_and_no_entrypoint(stack):
    """Only forward compatibility brings cuda-compat and its entrypoint script; otherwise both are empty."""
    context = build_context(stack, BuildSettings(project="p"))
    assert (context["compat_package"], context["compat_entrypoint_b64"]) == (None, "")
