"""Several projects on one cluster: which nodes each project's stack runs on, and the projects
grouped by that set of nodes.

Why group by node set: that is what a scheduler is asked for (one nodeSelector / affinity, one
``--constraint``) and what an operator acts on ("these three projects need the R550 pool"). Each
project is judged with its own stack (its lock, else what ``cudaenv lock`` would pin), node by node,
through ``check_stack``; nothing is re-resolved per node.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudaenv.cluster.facts import NodeFacts
from cudaenv.cluster.verdicts import NodeVerdict, judge_nodes
from cudaenv.matrix import Matrix
from cudaenv.resolver.model import Stack


@dataclass(frozen=True)
class ProjectOnCluster:
    name: str
    source: str  # where the stack came from (lock or configuration), or why there is none
    stack: Stack | None
    error: str | None  # why the project has no stack to judge
    verdicts: tuple[NodeVerdict, ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.verdicts if v.compatible)

    def as_dict(self) -> dict:
        stack = None
        if self.stack is not None:
            stack = {"python": self.stack.python, "cuda": self.stack.cuda, "frameworks": dict(self.stack.frameworks),
                     "base_image": self.stack.base_image, "driver_compatibility": self.stack.driver_compatibility}
        return {"name": self.name, "ok": bool(self.nodes), "source": self.source, "stack": stack, "error": self.error,
                "nodes": list(self.nodes),
                "refused": {v.name: list(v.reasons) for v in self.verdicts if not v.compatible}}


@dataclass(frozen=True)
class ClusterPlan:
    projects: tuple[ProjectOnCluster, ...]
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # (node names, project names), widest first

    @property
    def ok(self) -> bool:
        return all(p.nodes for p in self.projects)

    def as_dict(self) -> dict:
        return {"ok": self.ok,
                "groups": [{"nodes": list(nodes), "projects": list(names)} for nodes, names in self.groups],
                "projects": [p.as_dict() for p in self.projects]}


def plan_cluster(matrix: Matrix, projects: list[tuple[str, str, Stack | None, str | None]],
                 nodes: tuple[NodeFacts, ...]) -> ClusterPlan:
    """``projects``: (name, source, stack or None, error or None), in the order given."""
    judged = []
    by_stack: dict[Stack, tuple[NodeVerdict, ...]] = {}  # projects sharing a lock's stack are judged once
    for name, source, stack, error in projects:
        verdicts = ()
        if stack is not None:
            if stack not in by_stack:
                by_stack[stack] = judge_nodes(matrix, stack, nodes)
            verdicts = by_stack[stack]
        judged.append(ProjectOnCluster(name, source, stack, error, verdicts))
    order = {n.name: i for i, n in enumerate(nodes)}
    groups: dict[tuple[str, ...], list[str]] = {}
    for project in judged:
        key = tuple(sorted(project.nodes, key=order.__getitem__))
        groups.setdefault(key, []).append(project.name)
    ordered = tuple(sorted(((k, tuple(v)) for k, v in groups.items() if k),
                           key=lambda item: (-len(item[0]), [order[n] for n in item[0]])))
    if () in groups:
        ordered += (((), tuple(groups[()])),)
    return ClusterPlan(tuple(judged), ordered)
