"""bench/mutation_score.py's own inputs stay honest: every equivalent mutant listed once, with a
reason, naming a module the script mutates; and every test it runs has an id mutmut can hand back
to pytest (an escaped id fails the mutant's run, which mutmut counts as a kill)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("mutation_score", ROOT / "bench" / "mutation_score.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutation_score", module)
    spec.loader.exec_module(module)
    return module


def test_every_equivalent_mutant_is_listed_once_with_a_reason_in_a_mutated_module(bench):
    entries = bench.tomllib.loads((ROOT / "bench" / "mutation_equivalent.toml").read_text(encoding="utf-8"))["mutant"]
    names = [entry["name"] for entry in entries]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    assert all(entry.get("reason", "").strip() for entry in entries)
    modules = {m[:-3].replace("/", ".") for mods, _ in bench.GROUPS.values() for m in mods}
    for name in names:
        module, _, function = name.rpartition(".")
        assert module in modules, name
        assert function.startswith("x") and "__mutmut_" in function, name


def test_a_name_listed_twice_is_refused(bench, tmp_path, monkeypatch):
    twice = '[[mutant]]\nname = "a.x_f__mutmut_1"\nreason = "r"\n' * 2
    (tmp_path / "eq.toml").write_text(twice)
    monkeypatch.setattr(bench, "EQUIVALENT", tmp_path / "eq.toml")
    with pytest.raises(SystemExit, match="listed twice"):
        bench.equivalents()


def test_every_test_the_groups_run_has_an_id_mutmut_can_find_again(bench):
    tests = tuple(sorted({t for _, group_tests in bench.GROUPS.values() for t in group_tests}))
    assert bench.unfindable_ids(tests) == []
