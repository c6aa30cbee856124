"""Placement rules as node-selector terms: evaluated as Kubernetes would, against plain numbers."""
import pytest
from hypothesis import given, strategies as st

from cudaenv.export.placement import (Requirement, and_terms, architecture_terms, at_least_terms, capability_terms,
                                      integer_equal, runnable_capabilities)

KEYS = ("driver.major", "driver.minor", "driver.rev")


def requirement_holds(req: Requirement, labels: dict[str, str]) -> bool:
    """Kubernetes semantics: a missing label fails In/Gt/Lt; Gt/Lt parse one integer."""
    if req.key not in labels:
        return False
    value = labels[req.key]
    if req.operator == "Exists":
        return True
    if req.operator == "In":
        return value in req.values
    if req.operator == "Gt":
        return int(value) > int(req.values[0])
    if req.operator == "Lt":
        return int(value) < int(req.values[0])
    raise AssertionError(req.operator)


def selects(terms, labels) -> bool:
    return any(all(requirement_holds(r, labels) for r in term) for term in terms)


def labels_for(version: tuple[int, int, int]) -> dict[str, str]:
    return dict(zip(KEYS, (str(p) for p in version)))


def test_driver_at_least_expands_into_ored_terms():
    terms = at_least_terms("525.60.13", KEYS)
    assert selects(terms, labels_for((525, 60, 13)))
    assert selects(terms, labels_for((535, 0, 0)))
    assert selects(terms, labels_for((525, 61, 0)))
    assert not selects(terms, labels_for((525, 60, 12)))
    assert not selects(terms, labels_for((470, 82, 1)))


part = st.integers(min_value=0, max_value=700)


@given(st.tuples(part, part, part), st.tuples(part, part, part))
def test_expanded_terms_agree_with_tuple_comparison(minimum, node):
    terms = at_least_terms(".".join(map(str, minimum)), KEYS)
    assert selects(terms, labels_for(node)) == (node >= minimum)


def test_two_component_minimum_ignores_the_revision():
    terms = at_least_terms("580.0", KEYS)
    assert selects(terms, {"driver.major": "580", "driver.minor": "0"})
    assert not selects(terms, {"driver.major": "575", "driver.minor": "99"})


def test_sass_runs_on_newer_minor_of_same_major_only():
    targets = (("torch", ("7.5", "8.0", "8.6", "9.0"), ()),)
    known = ("6.1", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0")
    assert runnable_capabilities(targets, known, ptx_jit=False) == ("7.5", "8.0", "8.6", "8.9", "9.0")


def test_ptx_reaches_newer_majors_only_with_jit():
    targets = (("torch", ("8.0",), ("9.0",)),)
    assert "10.0" in runnable_capabilities(targets, ("8.0", "10.0"), ptx_jit=True)
    assert "10.0" not in runnable_capabilities(targets, ("8.0", "10.0"), ptx_jit=False)


def test_capability_terms_and_driver_terms_combine_with_and():
    caps = capability_terms(("8.0", "8.6", "9.0"), "cc.major", "cc.minor")
    combined = and_terms(at_least_terms("525.60.13", KEYS), caps)
    a100_r535 = {**labels_for((535, 104, 5)), "cc.major": "8", "cc.minor": "0"}
    t4_r535 = {**labels_for((535, 104, 5)), "cc.major": "7", "cc.minor": "5"}
    a100_r470 = {**labels_for((470, 82, 1)), "cc.major": "8", "cc.minor": "0"}
    assert selects(combined, a100_r535)
    assert not selects(combined, t4_r535)
    assert not selects(combined, a100_r470)


def test_a_version_longer_than_its_labels_is_refused():
    """Four components cannot be compared over three labels: refusing beats dropping the last one."""
    with pytest.raises(ValueError) as caught:
        at_least_terms("525.60.13.1", KEYS)
    assert str(caught.value) == ("version '525.60.13.1' has more components than labels "
                                 "('driver.major', 'driver.minor', 'driver.rev')")


def test_a_zero_last_component_needs_only_the_label_to_exist():
    """``>= 580.0``: any minor passes once the major is 580, but a node must carry the label."""
    terms = at_least_terms("580.0", KEYS)
    assert terms[-1] == (Requirement("driver.major", "In", ("580",)), Requirement("driver.minor", "Exists"))
    assert at_least_terms("580.0", KEYS, integers=True)[-1][-1] == Requirement("driver.minor", "Gt", ("-1",))


def test_integer_terms_compare_numbers_whatever_zeros_pad_the_labels():
    """A driver revision label keeps its leading zero (``535.104.05``); ``In`` would compare text."""
    terms = at_least_terms("535.104.5", KEYS, integers=True)
    assert terms[0] == (Requirement("driver.major", "Gt", ("535",)),)
    assert terms[2] == (Requirement("driver.major", "Gt", ("534",)), Requirement("driver.major", "Lt", ("536",)),
                        Requirement("driver.minor", "Gt", ("103",)), Requirement("driver.minor", "Lt", ("105",)),
                        Requirement("driver.rev", "Gt", ("4",)))
    assert integer_equal("k", 0) == (Requirement("k", "Gt", ("-1",)), Requirement("k", "Lt", ("1",)))
    assert selects(terms, {"driver.major": "535", "driver.minor": "104", "driver.rev": "05"})
    assert not selects(terms, {"driver.major": "535", "driver.minor": "104", "driver.rev": "04"})


def test_a_build_without_a_recorded_sm_list_does_not_narrow_the_capabilities():
    """An unrecorded list is only a caveat for `cudaenv check`, so placement does not exclude by it."""
    targets = (("torch", ("8.0",), ()), ("custom", (), ()))
    assert runnable_capabilities(targets, ("9.0", "8.6", "7.5", "8.0"), ptx_jit=False) == ("8.0", "8.6")
    assert runnable_capabilities((("custom", (), ()),), ("8.0", "7.5", "7.5"), ptx_jit=False) == ("7.5", "8.0")


def test_capability_terms_list_each_majors_minors_in_order():
    assert capability_terms(("9.0", "8.6", "8.0"), "M", "m") == (
        (Requirement("M", "In", ("8",)), Requirement("m", "In", ("0", "6"))),
        (Requirement("M", "In", ("9",)), Requirement("m", "In", ("0",))),
    )


def test_the_architecture_term_uses_kubelet_names():
    """kubernetes.io/arch is GOARCH (amd64, arm64), not the kernel's x86_64/aarch64."""
    assert architecture_terms(("x86_64", "aarch64")) == ((Requirement("kubernetes.io/arch", "In", ("amd64", "arm64")),),)


def test_a_last_component_of_one_still_excludes_zero():
    """``>= 580.1`` leaves out 580.0: only a bound of 0 may become a bare ``Exists``."""
    terms = at_least_terms("580.1", KEYS)
    assert terms[-1][-1] == Requirement("driver.minor", "Gt", ("0",))
    assert not selects(terms, {"driver.major": "580", "driver.minor": "0"})
    assert selects(terms, {"driver.major": "580", "driver.minor": "1"})


def test_capabilities_come_back_in_numeric_order():
    """10.0 sorts after 9.0 as a version, before it as text."""
    targets = (("torch", ("9.0", "10.0"), ()),)
    assert runnable_capabilities(targets, ("10.0", "9.0", "12.0"), ptx_jit=False) == ("9.0", "10.0")
