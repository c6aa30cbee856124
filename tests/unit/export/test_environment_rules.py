"""What an export sets in the container (``cudaenv.export.environment``): ``-e NAME=value`` is a
value written into the file, ``-e NAME`` a name whose value is read where the job starts and never
written, the later flag for a name wins, and a flag has the last word over ``[run] env``. Read
in-process, with the caller's environment holding a canary value that must never come out."""

from __future__ import annotations

import uuid

import pytest

from cudaenv.errors import UserError
from cudaenv.export.environment import ExportEnv, merge, parse_export_env

CANARY = f"canary-{uuid.uuid4().hex}"


@pytest.fixture(autouse=True)
def caller_environment(monkeypatch):
    for name in ("HF_TOKEN", "WANDB_API_KEY", "A", "B"):
        monkeypatch.setenv(name, CANARY)


def test_a_name_without_a_value_is_passed_through_and_the_callers_value_never_read():
    values, passed = parse_export_env(("HF_TOKEN", "SEED=1"))
    assert values == {"SEED": "1"}
    assert passed == ("HF_TOKEN",)
    chosen = merge({}, values, passed)
    assert CANARY not in repr(chosen)
    assert chosen == ExportEnv(values=(("SEED", "1"),), passed=("HF_TOKEN",))


def test_a_value_keeps_everything_after_the_first_equals_sign():
    values, passed = parse_export_env(("URL=https://h.example/?a=1&b=2", "EMPTY="))
    assert values == {"URL": "https://h.example/?a=1&b=2", "EMPTY": ""}  # NAME= is an empty value, not a pass-through
    assert passed == ()


def test_the_later_flag_for_a_name_wins_either_way():
    assert parse_export_env(("A=1", "A")) == ({}, ("A",))
    assert parse_export_env(("A", "A=1")) == ({"A": "1"}, ())
    assert parse_export_env(("A=1", "A=2")) == ({"A": "2"}, ())


def test_pass_through_names_keep_the_order_of_their_last_flag_once_each():
    assert parse_export_env(("B", "A", "B")) == ({}, ("A", "B"))
    assert parse_export_env(("B", "A")) == ({}, ("B", "A"))
    values, _ = parse_export_env(("B=1", "A=2", "B=3"))
    assert list(values) == ["A", "B"]


@pytest.mark.parametrize("name", ["_", "A", "hf_token", "X9", "_PRIVATE_2"], ids=["underscore", "one-letter", "lower",
                                                                                 "digit-after", "leading-underscore"])
def test_a_shell_variable_name_is_accepted(name):
    assert parse_export_env((f"{name}=v",)) == ({name: "v"}, ())
    assert parse_export_env((name,)) == ({}, (name,))


@pytest.mark.parametrize("item", ["9LIVES=1", "=x", "", "A-B=1", "A B", "A.B", " A=1", "A =1", "\u00c9T\u00c9=1",
                                  "A\n=1", "A\nB"],
                         ids=["leading-digit", "no-name", "empty", "dash", "space", "dot", "leading-space",
                              "space-before-equals", "non-ascii", "newline-before-equals", "newline-in-name"])
def test_a_flag_that_is_not_a_shell_variable_is_refused_with_its_text(item):
    with pytest.raises(UserError) as caught:
        parse_export_env(("OK=1", item))
    message = str(caught.value)
    assert message == (f"-e {item!r}: expected NAME=value, or NAME to pass the value through where the job "
                       "starts")


def test_a_flag_value_replaces_the_projects_value_and_the_rest_is_kept():
    chosen = merge({"SEED": "1", "MODE": "train"}, {"SEED": "2", "EXTRA": "x"})
    assert chosen.values == (("EXTRA", "x"), ("MODE", "train"), ("SEED", "2"))
    assert chosen.passed == ()


def test_a_pass_through_flag_takes_the_projects_value_out_of_the_file():
    chosen = merge({"HF_TOKEN": "written-in-toml", "MODE": "train"}, {}, ("HF_TOKEN",))
    assert chosen.values == (("MODE", "train"),)
    assert chosen.passed == ("HF_TOKEN",)
    assert "written-in-toml" not in repr(chosen)


def test_a_pass_through_name_the_project_does_not_set_is_only_passed():
    chosen = merge({"MODE": "train"}, None, ("WANDB_API_KEY", "HF_TOKEN", "WANDB_API_KEY"))
    assert chosen.values == (("MODE", "train"),)
    assert chosen.passed == ("HF_TOKEN", "WANDB_API_KEY")  # sorted, once each


def test_without_flags_the_project_env_is_the_export_env():
    assert merge({"B": "2", "A": "1"}, None) == ExportEnv(values=(("A", "1"), ("B", "2")), passed=())
    assert merge((("B", "2"),), {}) == ExportEnv(values=(("B", "2"),))
    assert merge({}, None) == ExportEnv()


def test_the_names_an_export_sets_are_its_values_and_passed_names_once_sorted():
    chosen = ExportEnv(values=(("MODE", "train"), ("A", "1")), passed=("HF_TOKEN", "MODE"))
    assert chosen.names == ("A", "HF_TOKEN", "MODE")
    assert ExportEnv().names == ()
    assert ExportEnv(passed=("B", "A")).names == ("A", "B")
    assert ExportEnv(values=(("B", "1"),)).names == ("B",)
