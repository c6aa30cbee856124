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
    project: str | None = None  # for one target of a project of several: the project's name
    target: str | None = None  # ... and the target's

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.verdicts if v.compatible)

    def as_dict(self) -> dict:
        stack = None
        if self.stack is not None:
            stack = {"python": self.stack.python, "cuda": self.stack.cuda, "frameworks": dict(self.stack.frameworks),
                     "base_image": self.stack.base_image, "driver_compatibility": self.stack.driver_compatibility}
        data = {"name": self.name, "ok": bool(self.nodes), "source": self.source, "stack": stack, "error": self.error,
                "nodes": list(self.nodes),
                "refused": {v.name: list(v.reasons) for v in self.verdicts if not v.compatible}}
        if self.target is not None:
            data.update({"project": self.project, "target": self.target})
        return data


@dataclass(frozen=True)
class ClusterPlan:
    projects: tuple[ProjectOnCluster, ...]
    # (node names, project names), widest first; the groups of each target of several-target projects
    # follow, target by target in the order the targets were first given
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    group_targets: tuple[str | None, ...] = ()  # each group's target (None: one-target projects)

    @property
    def ok(self) -> bool:
        """Every project runs on some node: for a project of several targets, one of them does."""
        runs: dict[str, bool] = {}
        for p in self.projects:
            key = p.project if p.target is not None else p.name
            runs[key] = runs.get(key, False) or bool(p.nodes)
        return all(runs.values())

    def as_dict(self) -> dict:
        targets = self.group_targets or (None,) * len(self.groups)
        with_targets = any(t is not None for t in targets)
        return {"ok": self.ok,
                "groups": [{**({"target": target} if with_targets else {}), "nodes": list(nodes),
                            "projects": list(names)} for target, (nodes, names) in zip(targets, self.groups)],
                "projects": [p.as_dict() for p in self.projects]}


def plan_cluster(matrix: Matrix, projects: list, nodes: tuple[NodeFacts, ...]) -> ClusterPlan:
    """``projects``: (name, source, stack or None, error or None), in the order given, or a
    ``ProjectOnCluster`` already judged (one target of a project of several)."""
    judged = []
    by_stack: dict[Stack, tuple[NodeVerdict, ...]] = {}  # projects sharing a lock's stack are judged once
    for entry in projects:
        if isinstance(entry, ProjectOnCluster):
            judged.append(entry)
            continue
        name, source, stack, error = entry
        verdicts = ()
        if stack is not None:
            if stack not in by_stack:
                by_stack[stack] = judge_nodes(matrix, stack, nodes)
            verdicts = by_stack[stack]
        judged.append(ProjectOnCluster(name, source, stack, error, verdicts))
    order = {n.name: i for i, n in enumerate(nodes)}
    targets = list(dict.fromkeys(p.target for p in judged))
    if None in targets:  # the one-target projects' groups first, as without targets
        targets.remove(None)
        targets.insert(0, None)
    ordered, group_targets = (), ()
    for target in targets:
        groups: dict[tuple[str, ...], list[str]] = {}
        for project in judged:
            if project.target == target:
                key = tuple(sorted(project.nodes, key=order.__getitem__))
                groups.setdefault(key, []).append(project.name)
        these = tuple(sorted(((k, tuple(v)) for k, v in groups.items() if k),
                             key=lambda item: (-len(item[0]), [order[n] for n in item[0]])))
        if () in groups:
            these += (((), tuple(groups[()])),)
        ordered += these
        group_targets += (target,) * len(these)
    return ClusterPlan(tuple(judged), ordered, group_targets)
