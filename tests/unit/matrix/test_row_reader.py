"""RowReader, the typed access every matrix row goes through: a field is required unless the caller
gives the value its absence stands for, a wrong type is one line naming the row, the field, what
was expected and what was found, and a row that is not a table is named as such."""

from __future__ import annotations

import pytest

from cudaenv.matrix import MatrixError
from cudaenv.matrix.load import RowReader

WHERE = "torch.toml: [[release]] #3"


def refusal(call, *args, **kwargs) -> str:
    with pytest.raises(MatrixError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


@pytest.mark.parametrize("value, shown", [(["x"], "a list"), (3, "an integer"), ("row", "a string")],
                         ids=["list", "int", "str"])
def test_a_row_that_is_not_a_table_says_what_it_is(value, shown):
    expected = {"a list": "list", "an integer": "int", "a string": "str"}[shown]
    assert refusal(RowReader, value, WHERE) == f"{WHERE}: expected a table, got {expected}"


@pytest.mark.parametrize("method", ["str", "int", "bool", "source"])
def test_every_field_is_required_unless_the_caller_gives_its_default(method):
    reader = RowReader({}, WHERE)
    assert refusal(getattr(reader, method), "x") == f"{WHERE}: missing required field 'x'"
    assert getattr(RowReader({}, WHERE), method)("x", default=None) is None


@pytest.mark.parametrize("default", ["", "x86_64", False, True, (), 0],
                         ids=["empty", "text", "false", "true", "tuple", "zero"])
def test_an_absent_optional_field_is_the_default_given(default):
    assert RowReader({}, WHERE).str("note", default=default) is default
    assert RowReader({}, WHERE).bool("flag", default=default) is default


@pytest.mark.parametrize("method, value, expected", [
    ("str", "", "a non-empty string"),
    ("str", "   ", "a non-empty string"),
    ("str", 5, "a non-empty string"),
    ("int", "5", "an integer"),
    ("int", True, "an integer"),
    ("bool", "yes", "true or false"),
    ("bool", 1, "true or false"),
    ("source", "https://example.com", 'a source with the date it was read ("<URL or document> ; read YYYY-MM-DD")'),
], ids=["str-empty", "str-blank", "str-int", "int-text", "int-bool", "bool-text", "bool-int", "source-undated"])
def test_a_wrong_value_names_the_row_the_field_what_was_expected_and_what_was_found(method, value, expected):
    from cudaenv.errors import shown

    reader = RowReader({"x": value}, WHERE)
    assert refusal(getattr(reader, method), "x") == f"{WHERE}: field 'x': expected {expected}, got {shown(value)}"


def test_good_values_are_returned_as_written():
    reader = RowReader({"s": " a ", "i": 0, "b": False, "source": "x ; read 2026-11-26"}, WHERE)
    assert (reader.str("s"), reader.int("i"), reader.bool("b"), reader.source()) == (" a ", 0, False, "x ; read 2026-11-26")


TYPED = {  # method: (a good value, a value refused, what the message expects)
    "numeric": ("12.4.1", "12.x", "a dotted version"),
    "cuda_xy": ("12.4", "12.4.1", 'a CUDA version "X.Y"'),
    "cc": ("8.0", "8", 'a compute capability "X.Y"'),
    "version": ("2.6.0", "two", "a PEP 440 version string"),
    "specifier": (">=12.0,<13", 12, 'a PEP 440 specifier such as ">=12.0,<13"'),
    "python_list": (["3.11"], ["3.11.2"], 'a list of Python versions like ["3.11"]'),
    "cc_list": (["8.0", "9.0"], ["8"], 'a list of compute capabilities like ["8.0", "9.0"]'),
    "str_list": (["a"], ["a", " "], "a list of strings"),
}


@pytest.mark.parametrize("method", sorted(TYPED))
def test_each_typed_field_is_required_and_names_what_it_expects(method):
    good, bad, expected = TYPED[method]
    from cudaenv.errors import shown

    assert refusal(getattr(RowReader({}, WHERE), method), "x") == f"{WHERE}: missing required field 'x'"
    marker = object()
    assert getattr(RowReader({}, WHERE), method)("x", default=marker) is marker
    assert refusal(getattr(RowReader({"x": bad}, WHERE), method), "x") == \
        f"{WHERE}: field 'x': expected {expected}, got {shown(bad)}"
    value = getattr(RowReader({"x": good}, WHERE), method)("x")
    if method == "specifier":
        assert value.contains("12.4") and not value.contains("13.0")
    else:
        assert value == (tuple(good) if isinstance(good, list) else good)


def test_numeric_counts_its_parts_as_asked():
    """A driver is at least two parts (535.104 or 535.104.05), a CUDA release exactly three."""
    assert RowReader({"x": "535.104"}, WHERE).numeric("x", min_parts=2) == "535.104"
    assert "expected a driver" in refusal(RowReader({"x": "535"}, WHERE).numeric, "x", min_parts=2, what="a driver")
    assert RowReader({"x": "535"}, WHERE).numeric("x") == "535"
    assert "expected 3 parts" in refusal(RowReader({"x": "12.4"}, WHERE).numeric, "x", parts=3, what="3 parts")


def test_a_list_names_a_duplicate_item():
    assert refusal(RowReader({"x": ["8.0", "8.0"]}, WHERE).cc_list, "x") == (
        f"{WHERE}: field 'x': expected a list of compute capabilities like [\"8.0\", \"9.0\"] without duplicates, "
        "got ['8.0', '8.0']")


def test_requires_is_an_optional_table_of_package_specifiers():
    """[...requires] pins (``"nvidia-cudnn-cu12" = "==9.1.0.70"``), sorted; anything else is named."""
    assert RowReader({}, WHERE).requires("requires") == ()
    reader = RowReader({"requires": {"b": ">=1", "a": "==9.1.0.70"}}, WHERE)
    assert reader.requires("requires") == (("a", "==9.1.0.70"), ("b", ">=1"))
    assert refusal(RowReader({"requires": ["a==1"]}, WHERE).requires, "requires") == \
        f"{WHERE}: field 'requires': expected a table of package = specifier, got ['a==1']"
    assert refusal(RowReader({"requires": {"a": 1}}, WHERE).requires, "requires") == \
        f"{WHERE}: field requires.'a': expected a PEP 440 specifier, got 1"
    assert refusal(RowReader({"requires": {"a": "any version"}}, WHERE).requires, "requires") == \
        f"{WHERE}: field requires.'a': expected a PEP 440 specifier, got 'any version'"


def test_a_python_list_takes_major_minor_only():
    assert RowReader({"python": ["3.11", "3.12"]}, WHERE).python_list() == ("3.11", "3.12")
    assert "expected a list of Python versions" in refusal(RowReader({"python": ["3"]}, WHERE).python_list)
