"""Which of a project's targets a cluster node runs (cudaenv/project/node_targets.py): which_target's
rule with the node's facts as the host, on the issue's three targets (laptop CPU; a100: CUDA 12.6
locked for 535.104.05; h100: CUDA 13.0 locked for 580.65.06)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.cluster.facts import KUBERNETES, SLURM, NodeFacts
from cudaenv.hosts.target import project_targets
from cudaenv.project import load_project
from cudaenv.project.config import resolve_project
from cudaenv.cluster.verdicts import NodeVerdict, judge
from cudaenv.project import node_targets
from cudaenv.project.node_targets import TargetStack, judge_node, judge_nodes
from cudaenv.project.which_target import TargetFit
from tests.support.targets import THREE_TARGETS
from tests.unit.resolver.helpers import matrix


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    root = tmp_path_factory.mktemp("three")
    (root / "cudaenv.toml").write_text(THREE_TARGETS)
    project = load_project(root)
    return tuple(TargetStack(name, resolve_project(matrix(), project, t.host).stack, t.host, "test")
                 for name, t in project_targets(matrix(), project))


def gpu_node(name: str, driver: str | None, product: str | None, cc: str | None = None, *, arch="x86_64",
             source=KUBERNETES, unknown=()) -> NodeFacts:
    return NodeFacts(name, source, driver=driver, product=product, compute_capability=cc, gpu_count=1,
                     capacity=1 if source == KUBERNETES else None, allocatable=1 if source == KUBERNETES else None,
                     arch=arch, unknown=tuple(unknown))


def cpu_node(name: str = "cpu-0", arch: str | None = "x86_64") -> NodeFacts:
    return NodeFacts(name, KUBERNETES, arch=arch)


def fits_of(judged) -> dict:
    return {f.name: f for f in judged.fits}


def one(targets, name):
    return tuple(t for t in targets if t.name == name)


def test_an_a100_node_on_r550_runs_a100_and_says_why_the_others_do_not(targets):
    judged = judge_node(matrix(), targets, gpu_node("a", "550.54.15", "NVIDIA-A100-80GB-PCIe", "8.0"))
    assert judged.chosen == "a100" and judged.compatible and judged.reasons == ()
    fits = fits_of(judged)
    assert fits["laptop"].reasons == ("a CPU target, and this node has a GPU (A100 (sm_80)): it is picked only with "
                                      "--target laptop",)
    assert fits["h100"].reasons[0].startswith("driver 550.54.15 runs")
    assert judged.verdict("a100").mode == "minor-version"


def test_an_h100_node_on_r580_runs_the_target_that_declares_the_h100(targets):
    judged = judge_node(matrix(), targets, gpu_node("h", "580.65.06", "NVIDIA-H100-80GB-HBM3", "9.0"))
    assert fits_of(judged)["a100"].fits  # CUDA 12.6 runs there too: the declaration decides
    assert judged.chosen == "h100" and judged.verdict("h100").mode == "native"


def test_a_node_without_a_gpu_runs_the_cpu_target(targets):
    judged = judge_node(matrix(), targets, cpu_node())
    assert judged.chosen == "laptop" and judged.host is None
    assert fits_of(judged)["a100"].reasons == (
        "no NVIDIA GPU on this node (no nvidia.com/gpu capacity, no GPU Feature Discovery labels)",)
    assert judged.verdict("laptop").caveats == ()


def test_a_node_without_a_gpu_of_another_cpu_runs_no_target(targets):
    judged = judge_node(matrix(), targets, cpu_node("arm-0", "aarch64"))
    assert judged.chosen is None and not judged.compatible
    assert "laptop: built for x86_64 and this node's CPU is aarch64" in judged.reasons


def test_a_node_that_states_no_cpu_runs_the_cpu_target_with_a_caveat(targets):
    judged = judge_node(matrix(), targets, cpu_node(arch=None))
    assert judged.chosen == "laptop"
    assert judged.verdict("laptop").caveats == (
        "the node states no CPU architecture (no kubernetes.io/arch label): checked as x86_64, the CPU the image "
        "is built for",)


def test_a_gpu_node_whose_gpu_nothing_identifies_never_runs_the_cpu_target(targets):
    judged = judge_node(matrix(), targets, NodeFacts("nvidia1", KUBERNETES, capacity=1, arch="x86_64"))
    assert judged.chosen is None
    assert fits_of(judged)["laptop"].reasons == ("a CPU target, and this node has a GPU (model unknown): it is picked "
                                                 "only with --target laptop",)


def test_a_gpu_targets_reasons_are_the_nodes_own_words(targets):
    unknown = ("driver: Slurm records no driver version",)
    judged = judge_node(matrix(), targets, gpu_node("s", None, "a100", source=SLURM, unknown=unknown))
    assert judged.chosen is None
    assert fits_of(judged)["a100"].reasons == ("cannot be known: driver: Slurm records no driver version",)
    assert "a100: cannot be known: driver: Slurm records no driver version" in judged.reasons


def test_a_cpu_target_asked_for_by_name_runs_on_a_gpu_node_with_a_caveat(targets):
    judged = judge_node(matrix(), one(targets, "laptop"), gpu_node("a", "550.54.15", "NVIDIA-A100-80GB-PCIe", "8.0"),
                        named=True)
    assert judged.chosen == "laptop"
    assert judged.verdict("laptop").caveats == ("a CPU target on a node with a GPU (A100 (sm_80)): the GPU goes unused",)


def test_a_gpu_target_asked_for_by_name_does_not_run_on_a_node_without_a_gpu(targets):
    judged = judge_node(matrix(), one(targets, "a100"), cpu_node(), named=True)
    assert judged.chosen is None and [f.name for f in judged.fits] == ["a100"]


def test_the_json_names_the_target_and_every_targets_fit(targets):
    a100, t4 = judge_nodes(matrix(), targets, (gpu_node("a", "550.54.15", "NVIDIA-A100-80GB-PCIe", "8.0"),
                                                gpu_node("t", "470.129.06", "Tesla-T4", "7.5")))
    data = a100.as_dict()
    assert data["target"] == "a100" and data["compatible"] and data["mode"] == "minor-version"
    assert [t["target"] for t in data["targets"]] == ["laptop", "a100", "h100"]
    assert data["targets"][1] == {"target": "a100", "fits": True, "reasons": [], "cpu": False}
    assert data["targets"][0]["cpu"] is True and data["targets"][0]["fits"] is False
    assert data["host"] == {"driver": "550.54.15", "gpus": ["A100 (sm_80)"]}
    refused = t4.as_dict()
    assert refused["target"] is None and refused["mode"] is None and refused["caveats"] == []
    assert [r.split(": ")[0] for r in refused["reasons"]] == ["laptop", "a100", "h100"]


# --- whole values: every field of each target's fit and verdict, and of the JSON -------------------------

A100_NODE = dict(name="a", driver="550.54.15", product="NVIDIA-A100-80GB-PCIe", cc="8.0")
NO_ARCH_CAVEAT = ("the node states no CPU architecture (no kubernetes.io/arch label): checked as x86_64, the CPU "
                  "the image is built for")
GPU_UNUSED = "a CPU target on a node with a GPU (A100 (sm_80)): the GPU goes unused"


def a100_node(**kw) -> NodeFacts:
    return gpu_node(A100_NODE["name"], A100_NODE["driver"], A100_NODE["product"], A100_NODE["cc"], **kw)


def node_view(targets, facts):
    """The node as the resolver sees it, from cluster.verdicts itself: what a CPU target's verdict on a GPU
    node carries too."""
    a100 = one(targets, "a100")[0]
    host = judge(matrix(), a100.stack, facts).host
    assert host.driver == "550.54.15" and [g.label for g in host.gpus] == ["A100 (sm_80)"]
    return host


def test_a_cpu_target_the_rule_refuses_on_a_gpu_node_has_no_caveat_even_when_the_node_states_no_cpu(targets):
    facts = a100_node(arch=None)
    judged = judge_node(matrix(), targets, facts)
    reason = "a CPU target, and this node has a GPU (A100 (sm_80)): it is picked only with --target laptop"
    assert judged.fits[0] == TargetFit("laptop", False, (reason,), False, True)
    assert judged.verdict("laptop") == NodeVerdict(facts, False, None, (reason,), (), node_view(targets, facts))
    assert judged.chosen == "a100" and judged.verdict("a100").caveats[0] == NO_ARCH_CAVEAT


def test_a_cpu_target_named_on_a_gpu_node_that_states_no_cpu_keeps_both_caveats(targets):
    facts = a100_node(arch=None)
    judged = judge_node(matrix(), one(targets, "laptop"), facts, named=True)
    assert judged.fits == (TargetFit("laptop", True, (), False, True),)
    assert judged.verdicts == (NodeVerdict(facts, True, None, (), (NO_ARCH_CAVEAT, GPU_UNUSED),
                                           node_view(targets, facts)),)
    assert judged.as_dict() == {
        "name": "a", "compatible": True, "target": "laptop", "mode": None, "reasons": [],
        "caveats": [NO_ARCH_CAVEAT, GPU_UNUSED],
        "targets": [{"target": "laptop", "fits": True, "reasons": [], "cpu": True}],
        "host": {"driver": "550.54.15", "gpus": ["A100 (sm_80)"]},
        "facts": facts.as_dict()}
    assert judged.as_dict()["facts"]["gpu_product"] == "NVIDIA-A100-80GB-PCIe"


def test_a_cpu_target_named_on_a_node_whose_gpu_nothing_identifies_runs_with_no_host(targets):
    facts = NodeFacts("nvidia1", KUBERNETES, capacity=1, arch="x86_64")
    judged = judge_node(matrix(), one(targets, "laptop"), facts, named=True)
    caveat = "a CPU target on a node with a GPU (model unknown): the GPU goes unused"
    assert judged.verdicts == (NodeVerdict(facts, True, None, (), (caveat,), None),)
    assert judged.host is None and judged.as_dict()["host"] is None


def test_a_cpu_target_on_a_node_of_another_cpu_is_refused_with_the_nodes_words(targets):
    facts = cpu_node("arm-0", "aarch64")
    judged = judge_node(matrix(), one(targets, "laptop"), facts)
    reason = "built for x86_64 and this node's CPU is aarch64"
    assert judged.verdicts == (NodeVerdict(facts, False, None, (reason,), (), None),)
    assert judged.reasons == (f"laptop: {reason}",)


def test_a_gpu_target_on_a_node_without_a_gpu_is_refused_whole(targets):
    facts = cpu_node()
    judged = judge_node(matrix(), targets, facts)
    reason = "no NVIDIA GPU on this node (no nvidia.com/gpu capacity, no GPU Feature Discovery labels)"
    assert judged.fits[1:] == (TargetFit("a100", False, (reason,), False, False),
                               TargetFit("h100", False, (reason,), False, False))
    assert judged.verdict("a100") == NodeVerdict(facts, False, None, (reason,), (), None)
    assert judged.as_dict() == {
        "name": "cpu-0", "compatible": True, "target": "laptop", "mode": None, "reasons": [], "caveats": [],
        "targets": [{"target": "laptop", "fits": True, "reasons": [], "cpu": True},
                    {"target": "a100", "fits": False, "reasons": [reason], "cpu": False},
                    {"target": "h100", "fits": False, "reasons": [reason], "cpu": False}],
        "host": None, "facts": facts.as_dict()}


def test_judge_nodes_passes_the_named_target_to_every_node(targets):
    gpu, cpu = a100_node(), cpu_node()
    named = judge_nodes(matrix(), one(targets, "laptop"), (gpu, cpu), named=True)
    assert [n.name for n in named] == ["a", "cpu-0"] and [n.chosen for n in named] == ["laptop", "laptop"]
    assert named[0].verdict("laptop").caveats == (GPU_UNUSED,)
    by_rule = judge_nodes(matrix(), one(targets, "laptop"), (gpu, cpu))
    assert [n.chosen for n in by_rule] == [None, "laptop"]


# --- the rule has the last word on a GPU target: a stand-in rule that refuses what the node check passes.
# With the real engines both come down to the same check_stack, so only a stand-in shows the hand-over.

def refusing_rule(calls: list):
    def rule(matrix, name, stack, declared, host, *, where="this host"):
        calls.append((name, stack, declared, host, where))
        return TargetFit(name, False, (f"refused on {where}",), True, False)
    return rule


@pytest.mark.parametrize("named, rule_name", [(False, "fit_target"), (True, "fit_named")])
def test_a_gpu_target_the_rule_refuses_is_refused_in_the_rules_words(targets, monkeypatch, named, rule_name):
    calls = []
    monkeypatch.setattr(node_targets, rule_name, refusing_rule(calls))
    a100, facts = one(targets, "a100")[0], a100_node()
    node_says = judge(matrix(), a100.stack, facts)
    assert node_says.compatible and node_says.mode == "minor-version" and node_says.reasons == ()
    judged = judge_node(matrix(), (a100,), facts, named=named)
    assert calls == [("a100", a100.stack, a100.declared, node_says.host, "this node")]
    assert judged.fits == (TargetFit("a100", False, ("refused on this node",), True, False),)
    assert judged.verdicts == (replace(node_says, compatible=False, mode=None, reasons=("refused on this node",)),)
    assert judged.chosen is None and judged.reasons == ("a100: refused on this node",)


def test_a_gpu_target_the_node_already_refuses_keeps_the_nodes_words(targets, monkeypatch):
    monkeypatch.setattr(node_targets, "fit_target", refusing_rule([]))
    h100, facts = one(targets, "h100")[0], a100_node()
    node_says = judge(matrix(), h100.stack, facts)
    assert not node_says.compatible and node_says.reasons[0].startswith("driver 550.54.15 runs")
    judged = judge_node(matrix(), (h100,), facts)
    assert judged.verdicts == (node_says,)
    assert judged.fits == (TargetFit("h100", False, node_says.reasons, True, False),)
