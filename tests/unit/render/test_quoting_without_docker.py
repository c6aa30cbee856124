"""Quoting rules of the Dockerfile render that hold without a Docker engine (issue 25 §3: the only
test of ``$`` escaping needed Docker and was skipped without it, and the Unicode line breaks were
never exercised).

Docker's parser expands ``$VAR`` and ``${VAR:-x}`` in LABEL and ENV values unless the ``$`` is
escaped as ``\\$`` (Dockerfile reference, "Environment replacement"); and U+0085 (NEL), U+2028 and
U+2029 end a line for many readers (Python's ``str.splitlines``, editors, YAML), so a value holding
one could show a reader a different file than the one Docker parses."""

from __future__ import annotations

import json
import re

import pytest

from cudaenv.errors import UserError
from cudaenv.images.render import BuildSettings, UnsafeValue, build_context, dockerquote, render_dockerfile, shquote
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
], ids=["dollar-name", "dollar-brace-default", "double-dollar", "quote-and-backslash", "newline"])
def test_dockerquote_escapes_dollar_quote_backslash_and_newline(value, quoted):
    assert dockerquote(value) == quoted


def test_a_dollar_in_a_label_value_reaches_the_dockerfile_escaped(context):
    text = render_dockerfile({**context, "labels": {**context["labels"], "io.example.note": "costs $HOME ${X:-y}"}})
    [line] = [line for line in text.splitlines() if "io.example.note=" in line]
    assert 'io.example.note="costs \\$HOME \\${X:-y}"' in line
    assert not re.search(r"(?<!\\)\$", line.split("io.example.note=", 1)[1])  # no $ left for Docker to expand


def test_the_context_renders_as_it_is(context):
    assert "\nFROM " in render_dockerfile(context)  # the refusals below are the values', not the context's


# plain ASCII ids: mutmut re-runs a test by its node id, and pytest cannot find an escaped one again
LINE_BREAKS = [pytest.param("\x85", id="NEL"), pytest.param("\u2028", id="LINE-SEPARATOR"),
               pytest.param("\u2029", id="PARAGRAPH-SEPARATOR")]
CONTROL = [pytest.param("\n", id="LF"), pytest.param("\r", id="CR"), pytest.param("\x0b", id="VT"),
           pytest.param("\x00", id="NUL"), pytest.param("\x1f", id="US"), pytest.param("\x7f", id="DEL")]


@pytest.mark.parametrize("char", LINE_BREAKS + CONTROL)
def test_a_character_that_ends_a_line_somewhere_is_refused_in_any_value(context, char):
    with pytest.raises(UserError, match="contains a line break or another control character"):
        render_dockerfile({**context, "labels": {**context["labels"], "io.example.note": f"one{char}RUN two"}})


@pytest.mark.parametrize("char", LINE_BREAKS)
def test_a_unicode_line_break_in_a_nested_value_is_refused_naming_where(context, char):
    settings = {**context, "system_packages": [*context["system_packages"], f"curl{char}wget"]}
    with pytest.raises(UserError, match=r"the image's inputs\.system_packages\[\d+\]"):
        render_dockerfile(settings)


# --- the exact rules of the two filters -------------------------------------------------------------

@pytest.mark.parametrize("value, quoted", [
    pytest.param("\\$HOME", '"\\\\\\$HOME"', id="backslash-then-dollar"),
    pytest.param('\\"', '"\\\\\\""', id="backslash-then-quote"),
    pytest.param("a\r\nb", '"a\\nb"', id="crlf-is-one-newline"),
    pytest.param("lone\rcr", '"lonecr"', id="lone-cr-dropped"),
    pytest.param("", '""', id="empty"),
    pytest.param(42, '"42"', id="not-a-string"),
])
def test_dockerquote_escapes_a_backslash_before_the_characters_it_escapes(value, quoted):
    """A backslash is doubled first, so the ``\\`` dockerquote adds before ``$`` or ``"`` is never doubled
    itself: Docker then reads back exactly the value, and a ``$`` after a user's backslash stays literal."""
    assert dockerquote(value) == quoted


@pytest.mark.parametrize("value, quoted", [
    pytest.param("numpy==2.1.3", "numpy==2.1.3", id="safe-word-bare"),
    pytest.param("a b", "'a b'", id="space"),
    pytest.param("$HOME", "'$HOME'", id="dollar"),
    pytest.param("it's", "'it'\"'\"'s'", id="single-quote"),
    pytest.param("", "''", id="empty"),
    pytest.param(3, "3", id="not-a-string"),
])
def test_shquote_is_posix_single_quoting(value, quoted):
    """A RUN line's shell sees exactly one word per value: single quotes, and ``'"'"'`` for a quote inside."""
    assert shquote(value) == quoted


@pytest.mark.parametrize("value", [pytest.param("a\nb", id="LF"), pytest.param("a\x1fb", id="US"),
                                   pytest.param("a\x7fb", id="DEL")])
def test_shquote_refusal_names_the_value(value):
    """The refusal is the user's error message: it shows the offending value, escaped."""
    with pytest.raises(UnsafeValue) as refused:
        shquote(value)
    assert str(refused.value) == f"refusing to put {value!r} into a Dockerfile: it contains a control character"


def refusal(context: dict, **changes) -> str:
    with pytest.raises(UserError) as refused:
        render_dockerfile({**context, **changes})
    return str(refused.value)


REASON = "contains a line break or another control character, which cannot be written into a Dockerfile safely"


def test_a_refused_value_is_named_by_its_path_and_its_first_60_characters(context):
    """The message names where the value sits and shows at most 60 characters of it (a value may be long)."""
    value = "y" * 59 + "\u2028" + "z" * 20
    message = refusal(context, labels={**context["labels"], "io.example.note": value})
    assert message == f"the image's inputs.labels.io.example.note: {value[:60]!r} {REASON}"


def test_a_line_break_in_a_mapping_key_is_refused_naming_the_mapping(context):
    """Label keys are written into the LABEL line too: a key is checked like a value."""
    key = "io.example\u2029RUN id"
    message = refusal(context, labels={**context["labels"], key: "x"})
    assert message == f"the image's inputs.labels: {key!r} {REASON}"


@pytest.mark.parametrize("sequence", [list, tuple])
def test_a_line_break_in_a_sequence_item_is_refused_naming_its_index(context, sequence):
    """Lists and tuples are walked item by item; the message says which item."""
    message = refusal(context, find_links=sequence(["https://ok.example/", "https://x.example/\x85RUN id"]))
    assert message == f"the image's inputs.find_links[1]: {'https://x.example/' + chr(0x85) + 'RUN id'!r} {REASON}"


@pytest.mark.parametrize("char", LINE_BREAKS + CONTROL)
def test_the_command_may_hold_any_character_because_it_is_written_as_json(context, char):
    """[run] command becomes a JSON exec-form CMD, where json.dumps escapes every control and
    non-ASCII character: it is the one input not refused, and it still cannot end the line."""
    command = ["python", "-c", f"print(1){char}RUN id"]
    text = render_dockerfile({**context, "command": command})
    benign = render_dockerfile({**context, "command": ["python", "-c", "print(1)"]})
    assert [line for line in text.split("\n") if line.startswith("CMD ")] == [f"CMD {json.dumps(command)}"]
    assert len(text.split("\n")) == len(benign.split("\n"))


def test_the_cmd_is_json_dumps_of_the_command_with_nothing_html_escaped(context):
    """The CMD is json.dumps of the command: jinja's own tojson would write <, >, & and ' as \\u003c
    and so on, still valid JSON, but not the Dockerfile `cudaenv dockerfile` promises to print."""
    command = ["sh", "-c", "a < b > c && echo 'done'"]
    text = render_dockerfile({**context, "command": command})
    assert [line for line in text.split("\n") if line.startswith("CMD ")] == [f"CMD {json.dumps(command)}"]


def test_a_missing_value_is_an_error_not_an_empty_string(context):
    """Templates run with StrictUndefined: a value the context lacks is a bug to surface, never an
    empty word in a RUN line."""
    import jinja2

    with pytest.raises(jinja2.UndefinedError, match="python"):
        render_dockerfile({k: v for k, v in context.items() if k != "python"})
