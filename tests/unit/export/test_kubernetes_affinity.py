"""The node affinity `cudaenv export kubernetes` writes selects exactly the nodes `check_stack`
accepts: evaluated as Kubernetes evaluates it (tests/support/k8s_affinity.py) over GPU Feature
Discovery label sets — old keys, new keys, both — for real stacks and generated ones."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cudaenv.export.kubernetes import (COMPUTE_KEYS, DRIVER_KEYS, DRIVER_KEYS_DEPRECATED, NoNodeFits,
                                       affinity_terms, node_affinity)
from cudaenv.matrix import load_matrix
from cudaenv.resolver import driver as drv
from cudaenv.resolver.check import check_stack
from cudaenv.resolver.model import Constraints, Host, TargetGpu
from cudaenv.resolver.resolve import resolve
from cudaenv.versions import numeric_key, parse_specifier
from tests.support.k8s_affinity import affinity_selects, requirement_matches, selects

MATRIX = load_matrix()


def _stack(**constraints):
    frameworks = tuple((name, parse_specifier(spec)) for name, spec in constraints.pop("frameworks", {}).items())
    cuda = constraints.pop("cuda", None)
    result = resolve(MATRIX, Constraints(frameworks=frameworks, cuda=parse_specifier(cuda) if cuda else None,
                                         **constraints), Host())
    assert result.stack is not None, result.problems
    return result.stack


# Real stacks across CUDA 11, 12 and 13, wheels and runtime images, with and without PTX in the builds.
REAL_STACKS = {
    "torch-2.6": _stack(frameworks={"torch": "2.6.0"}),
    "torch-cuda-11.8": _stack(frameworks={"torch": ">=2.0"}, cuda="11.8"),
    "tensorflow": _stack(frameworks={"tensorflow": ">=2.15"}),
    "jax": _stack(frameworks={"jax": ">=0.4.30"}),
    "runtime-12.4": _stack(cuda="12.4", flavor="runtime"),
    "runtime-13": _stack(cuda=">=13", flavor="runtime"),
}

KNOWN_CCS = tuple(sorted({c for a in MATRIX.architectures for c in a.compute_capabilities}, key=numeric_key))


def host_for(labels: dict[str, str]) -> Host:
    """The host a node's GFD labels describe, as `check --nodes` reads it: the driver version from
    its parts (revision left out when empty), one GPU of the labelled capability."""
    for keys in (DRIVER_KEYS, DRIVER_KEYS_DEPRECATED):
        if keys[0] in labels:
            parts = [labels[k] for k in keys if labels.get(k)]
            driver = ".".join(parts)
            break
    cc = f"{int(labels[COMPUTE_KEYS[0]])}.{int(labels[COMPUTE_KEYS[1]])}"
    arch = MATRIX.architecture_of(cc)
    return Host(driver, (TargetGpu(cc, None, arch.name if arch else None, False),))


def node_labels(driver: tuple[str, str, str], cc: tuple[int, int], keys: str) -> dict[str, str]:
    labels = {COMPUTE_KEYS[0]: str(cc[0]), COMPUTE_KEYS[1]: str(cc[1]), "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64",
              "nvidia.com/gpu.product": "NVIDIA-Test-GPU"}
    if keys in ("new", "both"):
        labels.update(zip(DRIVER_KEYS, driver))
        labels["nvidia.com/cuda.driver-version.full"] = ".".join(p for p in driver if p)
    if keys in ("old", "both"):
        labels.update(zip(DRIVER_KEYS_DEPRECATED, driver))
    return labels


def agree(stack, labels) -> tuple[bool, bool]:
    return affinity_selects(node_affinity(MATRIX, stack), labels), check_stack(MATRIX, stack, host_for(labels)).compatible


# --- generated label sets -----------------------------------------------------------------------------


def _anchors(stack) -> list[tuple[int, ...]]:
    points = [drv.native_requirement(MATRIX, stack.cuda), drv.minor_version_floor(MATRIX, stack.cuda)]
    points += [f"{b.branch}.0.0" for b in MATRIX.driver_branches]
    return [numeric_key(p) + (0,) * (3 - len(numeric_key(p))) for p in points if p]


@st.composite
def driver_labels(draw, stack) -> tuple[str, str, str]:
    """Driver versions around the stack's thresholds and the branch boundaries, and anywhere; the
    minor sometimes and the revision usually zero-padded as NVIDIA spells them; sometimes no revision."""
    if draw(st.booleans()):
        base = draw(st.sampled_from(_anchors(stack)))
        major = base[0] + draw(st.sampled_from([0, 0, 0, -1, 1]))  # mostly a branch the matrix knows
        parts = [major] + [max(0, p + draw(st.integers(-2, 2))) for p in base[1:]]
    else:
        parts = [draw(st.integers(300, 700)), draw(st.integers(0, 250)), draw(st.integers(0, 120))]
    width = st.sampled_from([0, 0, 2, 3])  # as printed, or zero-padded (NVIDIA pads revisions: 535.104.05)
    minor = f"{parts[1]:0{draw(width) or 1}d}"
    rev = "" if draw(st.integers(0, 9)) == 0 else f"{parts[2]:0{draw(width) or 1}d}"
    return str(parts[0]), minor, rev


capabilities = st.one_of(
    st.sampled_from(KNOWN_CCS).map(lambda c: tuple(int(p) for p in c.split("."))),
    st.tuples(st.integers(1, 14), st.integers(0, 12)),
)
key_sets = st.sampled_from(["new", "old", "both"])


@st.composite
def generated_stacks(draw):
    """A real stack with its CUDA and framework SM lists replaced: any CUDA in the matrix, 0-2
    builds with SASS and PTX drawn from the known capabilities (an empty list is 'not recorded')."""
    base = draw(st.sampled_from(sorted(REAL_STACKS)))
    cuda = draw(st.sampled_from(MATRIX.cuda_minors))
    builds = draw(st.lists(st.tuples(st.lists(st.sampled_from(KNOWN_CCS), max_size=6, unique=True),
                                     st.lists(st.sampled_from(KNOWN_CCS), max_size=2, unique=True)), max_size=2))
    targets = tuple((f"fw{i}", tuple(sorted(s, key=numeric_key)), tuple(sorted(p, key=numeric_key)))
                    for i, (s, p) in enumerate(builds))
    return dataclasses.replace(REAL_STACKS[base], cuda=cuda, gpu_targets=targets)


@pytest.mark.parametrize("name", sorted(REAL_STACKS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_affinity_selects_exactly_the_nodes_check_stack_accepts(name, data):
    stack = REAL_STACKS[name]
    labels = node_labels(data.draw(driver_labels(stack)), data.draw(capabilities), data.draw(key_sets))
    selected, compatible = agree(stack, labels)
    assert selected == compatible, (labels, check_stack(MATRIX, stack, host_for(labels)).reasons)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stack=generated_stacks(), data=st.data())
def test_affinity_agrees_with_check_stack_for_generated_sm_lists(stack, data):
    try:
        affinity = node_affinity(MATRIX, stack)
    except NoNodeFits:
        # nothing labels can describe runs it: then no labelled node passes check_stack either
        labels = node_labels(data.draw(driver_labels(stack)), data.draw(capabilities), data.draw(key_sets))
        assert not check_stack(MATRIX, stack, host_for(labels)).compatible
        return
    labels = node_labels(data.draw(driver_labels(stack)), data.draw(capabilities), data.draw(key_sets))
    assert affinity_selects(affinity, labels) == check_stack(MATRIX, stack, host_for(labels)).compatible, labels


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_old_and_new_driver_keys_are_judged_alike(data):
    stack = REAL_STACKS["torch-2.6"]
    driver, cc = data.draw(driver_labels(stack)), data.draw(capabilities)
    verdicts = {keys: affinity_selects(node_affinity(MATRIX, stack), node_labels(driver, cc, keys))
                for keys in ("new", "old", "both")}
    assert len(set(verdicts.values())) == 1, verdicts


# --- examples that read as the rules --------------------------------------------------------------------


def test_a100_on_r535_runs_torch_through_minor_version_compatibility():
    stack = REAL_STACKS["torch-2.6"]
    labels = node_labels(("535", "104", "05"), (8, 0), "new")
    assert check_stack(MATRIX, stack, host_for(labels)).mode == drv.MINOR_VERSION
    assert agree(stack, labels) == (True, True)


def test_driver_below_the_minor_version_floor_is_not_selected():
    stack = REAL_STACKS["torch-2.6"]
    assert agree(stack, node_labels(("525", "60", "12"), (8, 0), "new")) == (False, False)
    assert agree(stack, node_labels(("525", "60", "13"), (8, 0), "new")) == (True, True)


def test_revision_with_a_leading_zero_compares_as_a_number():
    """GFD keeps the driver's own spelling (``05``); `In` would compare text, Gt/Lt compare numbers."""
    stack = REAL_STACKS["torch-2.6"]
    assert agree(stack, node_labels(("525", "60", "013"), (8, 0), "old")) == (True, True)
    assert agree(stack, node_labels(("525", "060", "13"), (8, 0), "old")) == (True, True)


def test_gpu_outside_the_builds_sm_lists_is_not_selected():
    stack = REAL_STACKS["torch-2.6"]
    sm_3x = next(c for c in KNOWN_CCS if c.startswith("3."))
    labels = node_labels(("570", "86", "10"), tuple(int(p) for p in sm_3x.split(".")), "new")
    assert agree(stack, labels) == (False, False)


def test_node_without_gfd_labels_is_never_selected():
    stack = REAL_STACKS["runtime-12.4"]
    assert not affinity_selects(node_affinity(MATRIX, stack), {"kubernetes.io/os": "linux"})


def test_newer_major_reached_only_by_ptx_needs_the_native_driver():
    """Under minor-version compatibility PTX is not JIT-compiled: a GPU the builds reach only
    through PTX needs the driver that runs the CUDA natively."""
    base = REAL_STACKS["runtime-12.4"]
    stack = dataclasses.replace(base, gpu_targets=(("fw", ("8.0",), ("8.0",)),))
    native = drv.native_requirement(MATRIX, stack.cuda)
    floor = drv.minor_version_floor(MATRIX, stack.cuda)
    assert numeric_key(floor) < numeric_key(native)
    compat_driver = tuple(str(p) for p in numeric_key(floor)) + ("",) * (3 - len(numeric_key(floor)))
    hopper = node_labels(compat_driver, (9, 0), "new")
    ampere = node_labels(compat_driver, (8, 6), "new")
    assert agree(stack, hopper) == (False, False)
    assert agree(stack, ampere) == (True, True)


def test_stack_whose_cuda_the_matrix_lacks_has_no_nodes():
    with pytest.raises(NoNodeFits) as caught:
        affinity_terms(MATRIX, dataclasses.replace(REAL_STACKS["runtime-12.4"], cuda="99.9"))
    assert str(caught.value) == ("the stack's CUDA 99.9 is not a CUDA release in this matrix: no node can be chosen "
                                 "for it (written by a newer cudaenv or matrix? run `cudaenv matrix check`)")


def test_a_build_no_labelled_gpu_runs_has_no_nodes_and_says_so():
    """SASS for 3.0 only, no PTX, on CUDA 12.4 (whose libraries start at 5.0): no capability runs it."""
    stack = dataclasses.replace(REAL_STACKS["runtime-12.4"], gpu_targets=(("fw0", ("3.0",), ()),))
    with pytest.raises(NoNodeFits) as caught:
        affinity_terms(MATRIX, stack)
    assert str(caught.value) == ("no driver and GPU that GPU Feature Discovery labels can describe runs CUDA 12.4 "
                                 "with these framework builds")


# --- the evaluator itself follows Kubernetes' rules ------------------------------------------------------


@pytest.mark.parametrize("requirement, labels, expected", [
    ({"key": "a", "operator": "In", "values": ["1"]}, {"a": "1"}, True),
    ({"key": "a", "operator": "In", "values": ["1"]}, {"a": "01"}, False),  # text, not numbers
    ({"key": "a", "operator": "In", "values": ["1"]}, {}, False),
    ({"key": "a", "operator": "NotIn", "values": ["1"]}, {}, True),  # a missing label is "not in"
    ({"key": "a", "operator": "NotIn", "values": ["1"]}, {"a": "1"}, False),
    ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
    ({"key": "a", "operator": "DoesNotExist"}, {"a": ""}, False),
    ({"key": "a", "operator": "DoesNotExist"}, {}, True),
    ({"key": "a", "operator": "Gt", "values": ["4"]}, {"a": "05"}, True),  # Gt parses the label
    ({"key": "a", "operator": "Gt", "values": ["5"]}, {"a": "5"}, False),
    ({"key": "a", "operator": "Gt", "values": ["4"]}, {"a": ""}, False),  # not an integer
    ({"key": "a", "operator": "Gt", "values": ["4"]}, {}, False),
    ({"key": "a", "operator": "Lt", "values": ["526"]}, {"a": "525"}, True),
    ({"key": "a", "operator": "Lt", "values": ["-1"]}, {"a": "0"}, False),
])
def test_evaluator_follows_the_kubernetes_operators(requirement, labels, expected):
    assert requirement_matches(requirement, labels) is expected


def test_evaluator_ors_terms_and_ands_expressions_and_empty_terms_match_nothing():
    a, b = {"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}
    assert selects({"nodeSelectorTerms": [{"matchExpressions": [a, b]}]}, {"a": "", "b": ""})
    assert not selects({"nodeSelectorTerms": [{"matchExpressions": [a, b]}]}, {"a": ""})
    assert selects({"nodeSelectorTerms": [{"matchExpressions": [a]}, {"matchExpressions": [b]}]}, {"b": ""})
    assert not selects({"nodeSelectorTerms": [{"matchExpressions": []}]}, {"a": ""})


def test_evaluator_refuses_malformed_requirements():
    with pytest.raises(ValueError):
        requirement_matches({"key": "a", "operator": "Gt", "values": ["x"]}, {"a": "1"})
    with pytest.raises(ValueError):
        requirement_matches({"key": "a", "operator": "In", "values": []}, {"a": "1"})


# --- the same verdict as `cudaenv check --nodes` on its fixtures (once that is merged) -----------------

NODE_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "k8s-nodes"


def test_affinity_agrees_with_check_nodes_on_the_node_fixtures():
    from cudaenv.cluster import verdicts
    from cudaenv.cluster.kubernetes import read_kubernetes

    files = sorted(NODE_FIXTURES.glob("*.json"))
    assert files, "no Kubernetes node fixtures in tests/fixtures/k8s-nodes"
    compared = 0
    for path in files:
        document = json.loads(path.read_text())
        if document.get("kind") not in ("List", "NodeList", "Node"):
            continue
        items = document.get("items") if document.get("kind") != "Node" else [document]
        for obj, facts in zip(items, read_kubernetes(str(path), document)):
            labels = obj["metadata"].get("labels") or {}
            if COMPUTE_KEYS[0] not in labels:
                continue  # judged by its product name there; the affinity needs the capability labels
            for name, stack in REAL_STACKS.items():
                if stack.driver_compatibility == drv.FORWARD:
                    continue  # forward compatibility needs a data-center flag that labels do not carry
                judged = verdicts.judge(MATRIX, stack, facts).compatible
                assert affinity_selects(node_affinity(MATRIX, stack), labels) == judged, (path.name, facts.name, name)
                compared += 1
    assert compared, "no node with GFD compute-capability labels in the fixtures"


SWEEP_DRIVERS = [("450", "80", "02"), ("470", "82", "01"), ("525", "60", "13"), ("535", "104", "05"),
                 ("550", "54", "15"), ("560", "35", "03"), ("570", "86", "10"), ("580", "65", "06"), ("590", "44", "01")]


SWEEP_STACKS = {
    **REAL_STACKS,
    # PTX for 3.5 on CUDA 11.8 (whose libraries run from sm_35): every capability above it runs by
    # JIT on a native driver, majors no GPU has (4) included, so the gaps between named majors count
    "ptx-3.5-cuda-11.8": dataclasses.replace(REAL_STACKS["torch-cuda-11.8"], cuda="11.8",
                                             gpu_targets=(("fw0", ("3.5",), ("3.5",)),)),
    # SASS only, with a gap: 5.0 and 8.0 run, 6.x and 7.x do not
    "sass-gap-cuda-12.4": dataclasses.replace(REAL_STACKS["runtime-12.4"],
                                              gpu_targets=(("fw0", ("5.0", "8.0"), ()),)),
}


@pytest.mark.parametrize("name", sorted(SWEEP_STACKS))
def test_affinity_agrees_with_check_stack_on_every_capability_label_a_node_could_carry(name):
    """Deterministically, every compute capability from 0.0 to 15.9 (also majors no GPU has, such as
    4 or 15: a label is only a string) on drivers across the branches: the generated tests above
    sample this space, this one walks it, so a capability range no sample hit cannot hide."""
    stack = SWEEP_STACKS[name]
    affinity = node_affinity(MATRIX, stack)
    disagree = []
    for driver in SWEEP_DRIVERS:
        for major in range(16):
            for minor in range(10):
                labels = node_labels(driver, (major, minor), "new")
                if affinity_selects(affinity, labels) != check_stack(MATRIX, stack, host_for(labels)).compatible:
                    disagree.append((".".join(driver), f"{major}.{minor}"))
    assert disagree == []


def _terms(cells):
    from cudaenv.export.kubernetes import _capability_terms

    return [[(r.key.rsplit(".", 1)[1], r.operator, r.values) for r in term] for term in _capability_terms(cells)]


def test_capability_terms_are_the_fewest_the_labels_allow():
    """Whole majors next to each other merge into one range (12 and every major above: one Gt), a
    range of 16 majors or more is Gt/Lt rather than a list of 17 values, a shorter one a list, and
    majors apart stay one In list (what kubectl shows the user, and what the golden files pin)."""
    from cudaenv.export.kubernetes import _Cells

    assert _terms([_Cells("exact", 12, 0), _Cells("tail", 12, 1), _Cells("span", 13, 0, None)]) == \
        [[("major", "Gt", ("11",))]]
    assert _terms([_Cells("span", 0, 0, 16)]) == [[("major", "Gt", ("-1",)), ("major", "Lt", ("17",))]]
    assert _terms([_Cells("span", 0, 0, 15)]) == [[("major", "In", tuple(str(m) for m in range(16)))]]
    assert _terms([_Cells("exact", 5, 0), _Cells("tail", 5, 1), _Cells("span", 7, 0, 7), _Cells("span", 9, 0, None)]) == \
        [[("major", "In", ("5", "7"))], [("major", "Gt", ("8",))]]


def test_the_lower_driver_threshold_is_compared_as_a_version(monkeypatch):
    """525.60.13 is below 525.105.17 (as text it is above), and without either bound there is none."""
    from cudaenv.export.kubernetes import _driver_thresholds
    from cudaenv.resolver import driver as driver_rules

    monkeypatch.setattr(driver_rules, "native_requirement", lambda matrix, cuda: "525.105.17")
    monkeypatch.setattr(driver_rules, "minor_version_floor", lambda matrix, cuda: "525.60.13")
    assert _driver_thresholds(MATRIX, REAL_STACKS["runtime-12.4"]) == ("525.105.17", "525.60.13")
    monkeypatch.setattr(driver_rules, "native_requirement", lambda matrix, cuda: None)
    monkeypatch.setattr(driver_rules, "minor_version_floor", lambda matrix, cuda: None)
    assert _driver_thresholds(MATRIX, REAL_STACKS["runtime-12.4"]) == (None, None)


def test_an_arm64_image_is_not_placed_on_a_jetson_orin():
    """An aarch64 stack's affinity asks for arm64 nodes; among those, sm_87 is a Jetson Orin, whose
    CUDA is Jetson Linux's and not the server image's: `check --nodes` refuses it, so must the
    affinity (Xavier's 7.2 falls below the builds' lists anyway)."""
    stack = resolve(MATRIX, Constraints(cuda=parse_specifier("13.0"), flavor="runtime"), Host(arch="aarch64")).stack
    assert stack.arch == "aarch64"
    affinity = node_affinity(MATRIX, stack)

    def arm64(cc):
        return {**node_labels(("580", "95", "05"), cc, "new"), "kubernetes.io/arch": "arm64"}

    assert not affinity_selects(affinity, arm64((8, 7)))
    assert all(affinity_selects(affinity, arm64(cc)) for cc in ((8, 0), (8, 6), (8, 9), (9, 0), (12, 1)))
    assert not affinity_selects(affinity, node_labels(("580", "95", "05"), (9, 0), "new"))  # an amd64 node
