"""Quoting rules of the Dockerfile render that hold without a Docker engine (issue 25 §3: the only
test of ``$`` escaping needed Docker and was skipped without it, and the Unicode line breaks were
never exercised).

Docker's parser expands ``$VAR`` and ``${VAR:-x}`` in LABEL and ENV values unless the ``$`` is
escaped as ``\\$`` (Dockerfile reference, "Environment replacement"); and U+0085 (NEL), U+2028 and
U+2029 end a line for many readers (Python's ``str.splitlines``, editors, YAML), so a value holding
one could show a reader a different file than the one Docker parses."""

from __future__ import annotations

import re

import pytest

from cudaenv.errors import UserError
from cudaenv.images.render import BuildSettings, build_context, dockerquote, render_dockerfile
from tests.unit.resolver.helpers import constraints, host, matrix
from cudaenv.resolver.resolve import resolve


@pytest.fixture(scope="module")
def context() -> dict:
    stack = resolve(matrix(), constraints(torch="2.6"), host("550.54.15", ["A100"])).stack
    return build_context(stack, BuildSettings(project="demo"))


@pytest.mark.parametrize("value, quoted", [
    ("$HOME", '"\\$HOME"'),
    ("${X:-y}", '"\\${X:-y}"'),
    ("a$$b", '"a\\$\\$b"'),
    ('say "hi" \\ bye', '"say \\"hi\\" \\\\ bye"'),
    ("two\nlines", '"two\\nlines"'),
])
def test_dockerquote_escapes_dollar_quote_backslash_and_newline(value, quoted):
    assert dockerquote(value) == quoted


def test_a_dollar_in_a_label_value_reaches_the_dockerfile_escaped(context):
    text = render_dockerfile({**context, "labels": {**context["labels"], "io.example.note": "costs $HOME ${X:-y}"}})
    [line] = [line for line in text.splitlines() if "io.example.note=" in line]
    assert 'io.example.note="costs \\$HOME \\${X:-y}"' in line
    assert not re.search(r"(?<!\\)\$", line.split("io.example.note=", 1)[1])  # no $ left for Docker to expand


def test_the_context_renders_as_it_is(context):
    assert "\nFROM " in render_dockerfile(context)  # the refusals below are the values', not the context's


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\n", "\r", "\x0b", "\x7f"])
def test_a_character_that_ends_a_line_somewhere_is_refused_in_any_value(context, char):
    with pytest.raises(UserError, match="contains a line break or another control character"):
        render_dockerfile({**context, "labels": {**context["labels"], "io.example.note": f"one{char}RUN two"}})


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"])
def test_a_unicode_line_break_in_a_nested_value_is_refused_naming_where(context, char):
    settings = {**context, "system_packages": [*context["system_packages"], f"curl{char}wget"]}
    with pytest.raises(UserError, match=r"the image's inputs\.system_packages\[\d+\]"):
        render_dockerfile(settings)
