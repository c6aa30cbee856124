"""Which of a project's targets each node of a cluster runs: ``which_target``'s rule with the node's
facts as the host, so `cudaenv check --nodes`, `cudaenv plan --nodes` and `cudaenv build` on that
node agree.

The node's host is what ``cluster.verdicts`` makes of its facts (``node_gpu``, ``node_host``). A GPU
target's verdict is ``cluster.verdicts.judge`` — the same check as ``fit_target``'s, said in the
node's own words (why its driver or GPU model cannot be known, a node of another CPU) — and the
rule's own ``fit_target`` must agree that it fits. A node that has a GPU never runs a CPU target,
even when its GPU cannot be identified; a node without one runs a CPU target of its CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from cudaenv.cluster.facts import NodeFacts
from cudaenv.cluster.verdicts import NodeVerdict, judge, node_gpu, node_host, unstated_arch_caveats
from cudaenv.project.which_target import TargetFit, choose_fit, fit_cpu_target, fit_named, fit_target
from cudaenv.resolver.model import Host, Stack

WHERE = "this node"


@dataclass(frozen=True)
class TargetStack:
    """One target to judge: its stack (locked, or what `cudaenv lock` would pin) and declared host."""

    name: str
    stack: Stack
    declared: Host
    source: str  # where the stack came from, for the report


@dataclass(frozen=True)
class NodeTargets:
    """One node judged against every target: each target's fit and verdict, and the one it runs."""

    facts: NodeFacts
    fits: tuple[TargetFit, ...]  # in the configuration's order
    verdicts: tuple[NodeVerdict, ...]  # the same order: compatible when the target fits (mode, caveats, host)
    chosen: str | None  # the target the node runs; None: none fits

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def compatible(self) -> bool:
        return self.chosen is not None

    def verdict(self, target: str) -> NodeVerdict:
        return next(v for f, v in zip(self.fits, self.verdicts) if f.name == target)

    @property
    def host(self) -> Host | None:
        return next((v.host for v in self.verdicts if v.host is not None), None)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why no target fits, each reason after its target's name (empty when one does)."""
        if self.chosen is not None:
            return ()
        return tuple(f"{f.name}: {reason}" for f in self.fits for reason in f.reasons)

    def as_dict(self) -> dict:
        chosen = self.verdict(self.chosen) if self.chosen else None
        host = self.host
        return {"name": self.name, "compatible": self.compatible, "target": self.chosen,
                "mode": chosen.mode if chosen else None, "reasons": list(self.reasons),
                "caveats": list(chosen.caveats) if chosen else [],
                "targets": [f.as_dict() for f in self.fits],
                "host": {"driver": host.driver, "gpus": [g.label for g in host.gpus]} if host else None,
                "facts": self.facts.as_dict()}


def judge_node(matrix, targets: Sequence[TargetStack], facts: NodeFacts, *, named: bool = False) -> NodeTargets:
    """``facts`` against every target; ``named``: ``targets`` is the one --target NAME asked for,
    which wins over the rule (``fit_named``)."""
    fits, verdicts = [], []
    for target in targets:
        fit, verdict = (_cpu_target(matrix, target, facts, named) if target.stack.cpu
                        else _gpu_target(matrix, target, facts, named))
        fits.append(fit)
        verdicts.append(verdict)
    chosen = choose_fit(fits)
    return NodeTargets(facts, tuple(fits), tuple(verdicts), chosen.name if chosen else None)


def judge_nodes(matrix, targets: Sequence[TargetStack], nodes: Sequence[NodeFacts], *,
                named: bool = False) -> tuple[NodeTargets, ...]:
    return tuple(judge_node(matrix, targets, n, named=named) for n in nodes)


def _gpu_target(matrix, target: TargetStack, facts: NodeFacts, named: bool) -> tuple[TargetFit, NodeVerdict]:
    verdict = judge(matrix, target.stack, facts)
    if verdict.host is None:  # no GPU, or one nothing identifies: nothing for the rule to judge
        return TargetFit(target.name, False, verdict.reasons, False, False), verdict
    fit = (fit_named if named else fit_target)(matrix, target.name, target.stack, target.declared, verdict.host,
                                               where=WHERE)
    if verdict.compatible and not fit.fits:  # the rule has the last word; the node's words come first
        verdict = replace(verdict, compatible=False, mode=None, reasons=fit.reasons)
    return TargetFit(target.name, verdict.compatible, verdict.reasons, fit.declares_host_gpus, False), verdict


def _cpu_target(matrix, target: TargetStack, facts: NodeFacts, named: bool) -> tuple[TargetFit, NodeVerdict]:
    gpu, host = None, None
    if facts.has_gpu:  # a GPU node: never a CPU target's, even when nothing identifies its GPU
        found, _ = node_gpu(matrix, facts)
        host = node_host(facts, (found,)) if found else None
        gpu = found.label if found else (facts.product or "model unknown")
    fit = fit_cpu_target(target.name, target.stack, gpu=gpu, arch=facts.arch, where=WHERE, named=named)
    caveats = unstated_arch_caveats(facts, target.stack) if fit.fits else ()
    if fit.fits and gpu is not None:  # a GPU node runs a CPU target only when it is asked for by name
        caveats += (f"a CPU target on a node with a GPU ({gpu}): the GPU goes unused",)
    return fit, NodeVerdict(facts, fit.fits, None, fit.reasons, caveats, host)
