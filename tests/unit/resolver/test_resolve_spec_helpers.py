"""The small rules under the resolver's sentences and pin checks: how a constraint reads, how a Python
list reads, and whether two specifiers can both hold (issue 25 §3)."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.resolver.model import Constraints
from cudaenv.resolver.resolve import _fmt_python, _framework_desc, _near, _pins_compatible, _spec_text, specs_overlap


@pytest.mark.parametrize("spec,text", [
    (None, "(any)"), (SpecifierSet(), "(any)"), (SpecifierSet("==3.8"), "3.8"), (SpecifierSet(">=2.4"), ">=2.4"),
    (SpecifierSet("==3.8.*"), "3.8.*"), (SpecifierSet("<4,==3.8"), "<4,==3.8"),
], ids=["none", "empty", "pin", "lower-bound", "wildcard-pin", "two-clauses"])
def test_a_constraint_reads_as_a_version_only_when_it_is_one_pin(spec, text):
    """``==3.8`` reads "Python 3.8" in a sentence; anything else reads as written."""
    assert _spec_text(spec) == text


@pytest.mark.parametrize("values,text", [
    (["3.9", "3.11", "3.10", "3.10"], "3.9–3.11"), (["3.10", "3.9"], "3.9, 3.10"), (["3.9"], "3.9"), ([], ""),
], ids=["three-as-a-span", "two-listed", "one", "none"])
def test_pythons_read_as_a_span_from_three_on_in_version_order(values, text):
    assert _fmt_python(values) == text


@pytest.mark.parametrize("frameworks,text", [
    ((("torch", SpecifierSet("==2.6.0")),), "torch 2.6.0"), ((("torch", SpecifierSet(">=2.4")),), "torch >=2.4"),
    ((("torch", SpecifierSet()),), "torch"), ((("jax", SpecifierSet("==0.4.30")),), "torch"),
], ids=["pinned", "range", "unpinned", "not-named"])
def test_a_framework_is_described_with_its_constraint_when_it_has_one(frameworks, text):
    assert _framework_desc("torch", Constraints(frameworks=frameworks)) == text


@pytest.mark.parametrize("version,near", [
    ("1.0", ["1.0", "1.0.1", "1.1"]), ("9", ["9", "9.1", "10"]), ("12.8.90", ["12.8.90", "12.8.90.1", "12.8.91"]),
    ("2.4.*", ["2.4.*", "2.4.1", "2.5"]), ("1.0rc1", ["1.0rc1"]),
], ids=["two-parts", "one-part", "three-parts", "wildcard", "pre-release"])
def test_near_is_a_version_and_the_versions_just_above_it(version, near):
    assert _near(version) == near


@pytest.mark.parametrize("a,b,compatible", [
    (">1.0", "<2.0", True), ("==1.0", "==2.0", False), ("==8.9.2.26", ">=9.0,<10.0", False), (">=1.0", "==2.5", True),
    ("", "", True), ("<1.0", "<2.0", True), ("<=2.0", "<1.0", True), (">=2.0.post1", ">2.0.post1", True),
    ("==1.0", "<0.5", False), ("<0.5", "==1.0", False),
], ids=["meet-between", "two-pins", "cudnn-8-vs-9", "pin-inside-range", "both-empty", "both-upper", "upper-and-upper-or-equal",
        "lower-and-strictly-lower", "pin-above-an-upper-bound", "upper-bound-below-a-pin"])
def test_two_pins_are_compatible_when_some_version_meets_both(a, b, compatible):
    """Two builds in one environment need one version of each shared nvidia-* package."""
    assert _pins_compatible(a, b) is compatible
    assert _pins_compatible(b, a) is compatible


@pytest.mark.parametrize("a,b,overlap", [
    (">=3", ">=2.15.0,<2.16", False), ("<3", ">=2.15.0,<2.16", True), ("<1", "<2", True), ("==1.5", "==1.5", True),
    (">2.0", "<2.0.2", True), ("==2.0", "==2.1", False), ("==1.2.3.4.5", "==1.2.3.4.5", True),
], ids=["keras-3-vs-tf-2.15", "below-3", "only-zero", "same-pin", "just-above-a-bound", "two-pins", "five-part-pin"])
def test_two_ranges_overlap_when_some_version_satisfies_both(a, b, overlap):
    """A project's keras pin against the range TensorFlow declares: tried at every bound and just past it."""
    assert specs_overlap(SpecifierSet(a), SpecifierSet(b)) is overlap
    assert specs_overlap(SpecifierSet(b), SpecifierSet(a)) is overlap


def test_cuda_versions_read_in_version_order():
    """CUDA 9.2 before 10.0, 12.9 before 12.10: version order, not text order."""
    from cudaenv.resolver.resolve import _fmt_versions

    assert _fmt_versions(["10.0", "9.2", "12.10", "12.9", "9.2"]) == "9.2, 10.0, 12.9, 12.10"
