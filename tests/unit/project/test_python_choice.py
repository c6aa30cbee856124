"""``cudaenv.project.wheels.choose``: the order Pythons are tried in, how the framework release
moves, how an exact pin's wheel tags spare uv calls, and what the "no" says.

The matrix is the shipped one plus two stand-in torch releases (2.98.0 for Python 3.9-3.11,
2.99.0 for 3.11-3.13). uv's part is played by a compile function that refuses exactly as uv does
when a requirement's wheel tags miss the stack's Python (NoWheels naming it), and the index pages
list those same wheel files; tests/integration/test_wheel_choice.py asks the real uv."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudaenv.matrix import load_matrix
from cudaenv.project.wheels import Inputs, NoWheels, choose
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import resolve
from tests.support.package_index import TORCH_OVERLAY

HOST = Host(driver="570.124.06")


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    overlay: Path = tmp_path_factory.mktemp("overlay")
    (overlay / "torch.toml").write_text(TORCH_OVERLAY)
    return load_matrix(overlays=[overlay])


def cp(python: str) -> str:
    return f"cp{python.replace('.', '')}"


class Index:
    """Packages (name -> Pythons its one release, 1.0, has wheels for) and the compile calls made."""

    def __init__(self, packages: dict[str, set[str]], *, pinned_exactly: bool = True) -> None:
        self.packages, self.calls = packages, []
        self.pinned_exactly = pinned_exactly

    def compile(self, stack) -> list[str]:
        self.calls.append((stack.python, stack.framework("torch")))
        for name, pythons in self.packages.items():
            if stack.python not in pythons:
                raise NoWheels(f"{name}==1.0", stack.python, f"Because {name}==1.0 has no usable wheels")
        return [f"torch=={stack.framework('torch')}", *(f"{n}==1.0" for n in self.packages)]

    def page(self, index: str, name: str):
        pythons = self.packages.get(name)
        if pythons is None:
            return None
        return tuple(f"{name}-1.0-{cp(p)}-{cp(p)}-manylinux_2_17_x86_64.whl" for p in sorted(pythons))

    def inputs(self) -> Inputs:
        pins = {n: Version("1.0") for n in self.packages} if self.pinned_exactly else {}
        return Inputs(compile=self.compile, indexes=("https://index.example/simple",), read_page=self.page,
                      exact_pins=pins)


def run_choice(matrix, spec: str, index: Index):
    constraints = Constraints(frameworks=(("torch", SpecifierSet(spec)),))
    result = resolve(matrix, constraints, HOST)
    return choose(matrix, constraints, HOST, result, index.inputs())


def test_the_frameworks_newest_python_is_kept_when_every_requirement_has_wheels_for_it(matrix):
    index = Index({"a": {"3.12", "3.13"}})
    chosen, pinned = run_choice(matrix, ">=2.98", index)
    assert (chosen.stack.python, chosen.stack.framework("torch")) == ("3.13", "2.99.0")
    assert index.calls == [("3.13", "2.99.0")]  # one uv call, as before
    assert "a==1.0" in pinned


def test_the_python_moves_down_to_the_newest_every_requirement_covers(matrix):
    chosen, _ = run_choice(matrix, ">=2.98", Index({"a": {"3.11", "3.12"}, "b": {"3.10", "3.11", "3.12"}}))
    assert chosen.stack.python == "3.12"


def test_the_framework_release_moves_with_the_python(matrix):
    chosen, pinned = run_choice(matrix, ">=2.98", Index({"a": {"3.9"}}))
    assert (chosen.stack.python, chosen.stack.framework("torch")) == ("3.9", "2.98.0")
    assert "torch==2.98.0" in pinned


def test_an_exact_pins_wheel_tags_skip_the_pythons_it_cannot_cover(matrix):
    index = Index({"a": {"3.9"}})
    run_choice(matrix, ">=2.98", index)
    assert [python for python, _ in index.calls] == ["3.13", "3.9"]


def test_without_an_exact_pin_every_python_is_tried_newest_first(matrix):
    index = Index({"a": {"3.9"}}, pinned_exactly=False)
    chosen, _ = run_choice(matrix, ">=2.98", index)
    assert [python for python, _ in index.calls] == ["3.13", "3.12", "3.11", "3.10", "3.9"]
    assert chosen.stack.python == "3.9"


def test_the_projects_own_python_constraint_bounds_the_tries(matrix):
    constraints = Constraints(python=SpecifierSet(">=3.10"), frameworks=(("torch", SpecifierSet(">=2.98")),))
    index = Index({"a": {"3.9"}})
    chosen, pinned = choose(matrix, constraints, HOST, resolve(matrix, constraints, HOST), index.inputs())
    assert pinned is None and not chosen.ok
    assert all(python != "3.9" for python, _ in index.calls)


def test_a_moved_python_says_why_and_names_its_end_of_life(matrix):
    chosen, _ = run_choice(matrix, ">=2.98", Index({"a": {"3.9"}}))
    codes = [p.code for p in chosen.problems]
    assert "python-from-wheels" in codes and "python-end-of-life" in codes
    moved = next(p for p in chosen.problems if p.code == "python-from-wheels")
    assert moved.message == "Python 3.9: the newest on which every requirement has wheels (a==1.0 has none for 3.13)"


def test_no_python_is_a_no_naming_the_package_its_pythons_and_the_frameworks(matrix):
    chosen, pinned = run_choice(matrix, "==2.99.0", Index({"a": {"3.9"}}))
    assert pinned is None and chosen.stack is None
    assert chosen.problems[0].code == "no-wheels"
    assert chosen.problems[0].message.startswith("a==1.0 has wheels for Python 3.9; torch 2.99.0 for 3.11–3.13")
    fixes = [p.message for p in chosen.problems if p.is_fix]
    assert "or torch to ≤ 2.98.0 (wheels for Python 3.9)" in fixes


def test_the_no_names_the_package_that_misses_every_candidate_over_one_that_only_clashes(matrix):
    # a stops at 3.12 (fails first, at 3.13); b has wheels for no Python torch 2.99.0 supports
    chosen, _ = run_choice(matrix, "==2.99.0", Index({"a": {"3.11", "3.12"}, "b": {"3.8"}}))
    assert chosen.problems[0].message.startswith("b==1.0 has wheels for Python 3.8;")


class ClashingIndex(Index):
    """As Index, and uv reports a conflict on the Pythons in ``clash_on`` (grain: no cp313 wheel,
    which uv words as an unsatisfiable dependency rather than a missing wheel)."""

    def __init__(self, packages, clash_on: set[str], **kwargs) -> None:
        super().__init__(packages, **kwargs)
        self.clash_on = clash_on

    def compile(self, stack) -> list[str]:
        if stack.python in self.clash_on:
            self.calls.append((stack.python, stack.framework("torch")))
            from cudaenv.errors import LockError

            raise LockError(f"the project's requirements cannot be resolved together with torch for Python {stack.python}")
        return super().compile(stack)


def test_a_conflict_at_the_newest_python_tries_the_next_older_one(matrix):
    index = ClashingIndex({}, clash_on={"3.13"})
    chosen, pinned = run_choice(matrix, ">=2.98", index)
    assert chosen.stack.python == "3.12" and pinned
    assert [p for p, _ in index.calls] == ["3.13", "3.12"]
    assert any("the requirements conflict on 3.13" in p.message for p in chosen.problems)


def test_a_package_without_wheels_on_every_python_is_named_before_a_clash_at_an_old_one(matrix):
    """jieba has no wheels at all; at Python 3.9 uv also reports a clash: the answer is jieba."""
    index = ClashingIndex({"jieba": set()}, clash_on={"3.9"}, pinned_exactly=False)
    chosen, pinned = run_choice(matrix, ">=2.98", index)
    assert pinned is None and not chosen.ok
    assert "jieba" in " ".join(chosen.reasons)


def test_a_clash_on_every_python_is_the_newest_pythons_clash(matrix):
    from cudaenv.errors import LockError

    index = ClashingIndex({}, clash_on={"3.9", "3.10", "3.11", "3.12", "3.13"})
    with pytest.raises(LockError, match="for Python 3.13"):
        run_choice(matrix, ">=2.98", index)


def test_an_unreachable_index_stops_the_search_at_once(matrix):
    from cudaenv.errors import IndexUnreachable

    calls = []

    def unreachable(stack):
        calls.append(stack.python)
        raise IndexUnreachable("cannot reach https://index.example/simple (DNS)")

    constraints = Constraints(frameworks=(("torch", SpecifierSet(">=2.98")),))
    inputs = Inputs(compile=unreachable, indexes=(), read_page=lambda *a: None, exact_pins={})
    with pytest.raises(IndexUnreachable):
        choose(matrix, constraints, HOST, resolve(matrix, constraints, HOST), inputs)
    assert calls == ["3.13"]


class BroughtIndex(Index):
    """antlr4-python3-runtime has no wheels; hydra-core==1.3.2 brings it (uv's words, verbatim shape)."""

    def compile(self, stack) -> list[str]:
        self.calls.append((stack.python, stack.framework("torch")))
        raise NoWheels("antlr4-python3-runtime==4.9.3", stack.python,
                       "  x No solution found when resolving dependencies:\n  `-> Because antlr4-python3-runtime==4.9.3 "
                       "has no usable wheels and hydra-core==1.3.2 depends on antlr4-python3-runtime==4.9.*, we can "
                       "conclude that hydra-core==1.3.2 cannot be used.\n      And because you require "
                       "hydra-core==1.3.2, we can conclude that your requirements are unsatisfiable.")


def test_a_package_a_dependency_brings_is_fixed_through_that_dependency(matrix):
    chosen, pinned = run_choice(matrix, ">=2.98", BroughtIndex({"antlr4-python3-runtime": set()}, pinned_exactly=False))
    fixes = [p.message for p in chosen.problems if p.code == "fix-requirement"]
    assert fixes == ["antlr4-python3-runtime comes from hydra-core==1.3.2 (which requires antlr4-python3-runtime==4.9.*): "
                     "relax or replace hydra-core"]


def test_a_python_range_that_excludes_every_python_with_wheels_says_so(matrix):
    index = Index({"a": {"3.9"}})
    constraints = Constraints(frameworks=(("torch", SpecifierSet(">=2.98")),), python=SpecifierSet(">=3.11"))
    result = resolve(matrix, constraints, HOST)
    chosen, pinned = choose(matrix, constraints, HOST, result, index.inputs())
    assert pinned is None
    assert any(p.code == "fix-python" and "widen [project] python (>=3.11)" in p.message
               and "has wheels for Python 3.9" in p.message for p in chosen.problems)


class TwoReleases(Index):
    """a 1.0 has wheels for Python 3.9 only, a 1.2 for 3.12-3.13; the project asks for ``requirement``."""

    def __init__(self, requirement: str) -> None:
        super().__init__({}, pinned_exactly=False)
        self.requirement = requirement

    def compile(self, stack) -> list[str]:
        self.calls.append((stack.python, stack.framework("torch")))
        raise NoWheels(self.requirement, stack.python, f"Because {self.requirement} has no usable wheels")

    def page(self, index: str, name: str):
        return ("a-1.0-cp39-cp39-manylinux_2_17_x86_64.whl", "a-1.2-cp312-cp312-manylinux_2_17_x86_64.whl",
                "a-1.2-cp313-cp313-manylinux_2_17_x86_64.whl") if name == "a" else None


def test_the_relax_fix_names_the_nearest_release_with_wheels(matrix):
    chosen, pinned = run_choice(matrix, ">=2.98", TwoReleases("a==1.0"))
    assert pinned is None
    assert [p.message for p in chosen.problems if p.code == "fix-requirement"] == [
        "relax a to ≥ 1.2 (wheels for 3.12–3.13)"]


def test_a_relax_fix_already_in_effect_is_not_offered(matrix):
    """a>=1.0 already admits 1.2: "relax a to ≥ 1.2" would change nothing."""
    chosen, _ = run_choice(matrix, ">=2.98", TwoReleases("a>=1.0"))
    assert [p for p in chosen.problems if p.code == "fix-requirement"] == []
