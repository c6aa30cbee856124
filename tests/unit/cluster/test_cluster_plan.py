"""Several projects on one cluster, in process (the CLI tests run `plan --nodes` as a subprocess,
where a mutation tool cannot see the rules): projects grouped by the nodes their stacks run on,
widest group first, projects with no node last; a shared stack judged once; the hosts a stack flag
is resolved against are the nodes whose driver is known."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.cluster.plan import ProjectOnCluster, plan_cluster
from cudaenv.cluster.read import read_nodes
from cudaenv.cluster.verdicts import NodeVerdict, judge_nodes, known_hosts
from cudaenv.resolver.model import Host
from tests.unit.cluster.helpers import NODES, configured_torch_stack


@pytest.fixture(scope="module")
def nodes():
    return read_nodes(str(NODES))[2]


@pytest.fixture(scope="module")
def stack(matrix):
    return configured_torch_stack(matrix)


def test_projects_on_one_stack_share_one_group_of_nodes(matrix, nodes, stack):
    plan = plan_cluster(matrix, [("a", "lock", stack, None), ("b", "lock", stack, None)], nodes)
    runnable = tuple(v.name for v in judge_nodes(matrix, stack, nodes) if v.compatible)
    assert plan.groups == ((runnable, ("a", "b")),)
    assert plan.projects[0].verdicts is plan.projects[1].verdicts  # judged once for both
    assert plan.ok and plan.as_dict()["ok"] is True


def test_groups_are_widest_first_and_a_project_with_no_node_comes_last(matrix, nodes, stack):
    narrow = replace(stack, cuda="13.0", min_driver="580.65.06", min_driver_compat="580")
    plan = plan_cluster(matrix, [("none", "config", None, "no stack"), ("narrow", "lock", narrow, None),
                                 ("wide", "lock", stack, None)], nodes)

    def runnable(s):
        return tuple(v.name for v in judge_nodes(matrix, s, nodes) if v.compatible)

    assert 0 < len(runnable(narrow)) < len(runnable(stack))
    assert plan.groups == ((runnable(stack), ("wide",)), (runnable(narrow), ("narrow",)), ((), ("none",)))
    assert plan.ok is False  # a project runs on no node
    reordered = plan_cluster(matrix, [("wide", "lock", stack, None), ("narrow", "lock", narrow, None)], nodes)
    assert reordered.groups == plan.groups[:2]  # by width, not by the order projects were given


def test_a_project_without_a_stack_says_why_and_lists_no_node(matrix, nodes):
    plan = plan_cluster(matrix, [("broken", "cudaenv.toml", None, "no stack fits torch 9")], nodes)
    [project] = plan.as_dict()["projects"]
    assert project == {"name": "broken", "ok": False, "source": "cudaenv.toml", "stack": None,
                       "error": "no stack fits torch 9", "nodes": [], "refused": {}}
    assert plan.as_dict()["groups"] == [{"nodes": [], "projects": ["broken"]}]


def test_the_project_report_names_its_stack_its_nodes_and_why_the_others_refuse(matrix, nodes, stack):
    [project] = plan_cluster(matrix, [("p", "cudaenv.lock", stack, None)], nodes).as_dict()["projects"]
    assert project["stack"] == {"python": stack.python, "cuda": stack.cuda, "frameworks": dict(stack.frameworks),
                                "base_image": stack.base_image, "driver_compatibility": stack.driver_compatibility}
    verdicts = {v.name: v for v in judge_nodes(matrix, stack, nodes)}
    assert project["nodes"] == [n for n, v in verdicts.items() if v.compatible]
    assert project["refused"] == {n: list(v.reasons) for n, v in verdicts.items() if not v.compatible}
    assert project["ok"] is True and project["error"] is None and project["source"] == "cudaenv.lock"


def test_known_hosts_are_the_nodes_whose_driver_is_known(matrix, nodes):
    hosts = known_hosts(matrix, nodes)
    with_driver = [n for n in nodes if n.driver]
    assert [h.driver for h in hosts] == [n.driver for n in with_driver]
    assert all(isinstance(h, Host) and len(h.gpus) == 1 for h in hosts)
    a100 = next(h for h, n in zip(hosts, with_driver) if n.name == "a100-r535")
    assert (a100.gpus[0].name, a100.gpus[0].compute_capability, a100.gpus[0].datacenter) == ("A100", "8.0", True)


def test_a_node_with_a_driver_but_no_gpu_is_a_host_without_gpus(matrix, nodes):
    cpu = replace(next(n for n in nodes if n.name == "a100-r535"), name="cpu-drv", gpu_count=0, capacity=0,
                  allocatable=0, product=None, compute_capability=None)
    assert known_hosts(matrix, (cpu,)) == (Host(cpu.driver, (), "x86_64"),)  # the node states its CPU


def test_a_verdict_as_json_names_the_host_judged(matrix, nodes, stack):
    verdict = next(v for v in judge_nodes(matrix, stack, nodes) if v.name == "a100-r535")
    data = verdict.as_dict()
    assert data["name"] == "a100-r535" and data["compatible"] is True and data["mode"] == "minor-version"
    assert data["host"] == {"driver": verdict.facts.driver, "gpus": ["A100 (sm_80)"]}
    assert data["facts"]["arch"] == "x86_64" and data["facts"]["driver"] == verdict.facts.driver
    assert data["reasons"] == [] and data["caveats"] == list(verdict.caveats)
    cpu = next(v for v in judge_nodes(matrix, stack, nodes) if v.name == "cpu-0").as_dict()
    assert cpu["host"] is None and cpu["compatible"] is False and cpu["mode"] is None


def test_groups_are_ordered_by_width_then_by_the_node_listing_not_by_node_names(matrix, nodes, stack):
    """Widest first whatever the nodes are called: listed in reverse, the narrow group's first node
    name would sort before the wide group's."""
    narrow = replace(stack, cuda="13.0", min_driver="580.65.06", min_driver_compat="580")
    backwards = tuple(reversed(nodes))
    plan = plan_cluster(matrix, [("narrow", "lock", narrow, None), ("wide", "lock", stack, None)], backwards)
    wide_nodes = tuple(v.name for v in judge_nodes(matrix, stack, backwards) if v.compatible)
    narrow_nodes = tuple(v.name for v in judge_nodes(matrix, narrow, backwards) if v.compatible)
    assert len(wide_nodes) > len(narrow_nodes) > 0 and narrow_nodes < wide_nodes  # name order says narrow first
    assert plan.groups == ((wide_nodes, ("wide",)), (narrow_nodes, ("narrow",)))


# --- one target of a project of several, judged by the caller ---------------------------------------


def target_entry(name: str, nodes, runs: tuple[str, ...], stack) -> ProjectOnCluster:
    """demo:NAME, already judged: it runs on ``runs`` (the nodes that pick that target)."""
    verdicts = tuple(NodeVerdict(n, n.name in runs, None, () if n.name in runs else ("another target",), (), None)
                     for n in nodes)
    return ProjectOnCluster(f"demo:{name}", "cudaenv.lock", stack, None, verdicts, project="demo", target=name)


def test_a_judged_target_entry_is_kept_as_judged_and_grouped_after_the_one_target_projects(matrix, nodes, stack):
    a100 = target_entry("a100", nodes, ("a100-r535", "l4-r570"), stack)
    laptop = target_entry("laptop", nodes, ("cpu-0",), stack)
    plan = plan_cluster(matrix, [a100, ("wide", "lock", stack, None), laptop], nodes)
    wide = tuple(v.name for v in judge_nodes(matrix, stack, nodes) if v.compatible)
    assert plan.projects[0] is a100 and plan.projects[2] is laptop
    assert plan.groups == ((wide, ("wide",)), (("a100-r535", "l4-r570"), ("demo:a100",)), (("cpu-0",), ("demo:laptop",)))
    assert plan.group_targets == (None, "a100", "laptop")  # one-target projects first, then targets as given


def test_groups_say_their_target_only_when_a_project_has_several(matrix, nodes, stack):
    alone = plan_cluster(matrix, [("wide", "lock", stack, None)], nodes).as_dict()
    assert set(alone["groups"][0]) == {"nodes", "projects"} and set(alone["projects"][0]) == {
        "name", "ok", "source", "stack", "error", "nodes", "refused"}
    mixed = plan_cluster(matrix, [("wide", "lock", stack, None), target_entry("a100", nodes, ("a100-r535",), stack)],
                         nodes).as_dict()
    assert [g["target"] for g in mixed["groups"]] == [None, "a100"]
    assert (mixed["projects"][1]["project"], mixed["projects"][1]["target"]) == ("demo", "a100")
    assert mixed["projects"][1]["refused"]["cpu-0"] == ["another target"]


def test_a_project_of_several_targets_runs_when_one_of_them_runs_somewhere(matrix, nodes, stack):
    runs = plan_cluster(matrix, [target_entry("a100", nodes, ("a100-r535",), stack),
                                 target_entry("h100", nodes, (), stack)], nodes)
    assert runs.ok and runs.groups[-1] == ((), ("demo:h100",))
    nowhere = plan_cluster(matrix, [target_entry("a100", nodes, (), stack), target_entry("h100", nodes, (), stack)],
                           nodes)
    assert not nowhere.ok and nowhere.as_dict()["ok"] is False
    assert nowhere.groups == (((), ("demo:a100",)), ((), ("demo:h100",)))
