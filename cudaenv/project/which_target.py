"""Which of a project's targets a host runs: the one rule ``build``, ``run``, ``shell`` and
``check --nodes`` share, so a node and this machine are matched the same way.

A host with an NVIDIA GPU runs a GPU target whose locked stack the resolver's own check passes on
it (driver, GPU architecture, CPU); a host without one runs a CPU target of its CPU. A CPU target
is never picked on a GPU host, nor a GPU target on a host without a GPU: that is how a CPU build
would be picked silently (conda/conda#14761). Among the targets that fit, one that declares this
host's GPUs (by compute capability) comes first, then the configuration's order; ``--target NAME``
always wins and is checked by nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from cudaenv.resolver.model import Host, Stack


@dataclass(frozen=True)
class TargetFit:
    """One target judged for one host."""

    name: str
    fits: bool
    reasons: tuple[str, ...]  # why it does not fit (empty when it does)
    declares_host_gpus: bool  # the target names this host's GPUs: preferred among those that fit
    cpu: bool  # a CPU-only target

    def as_dict(self) -> dict:
        return {"target": self.name, "fits": self.fits, "reasons": list(self.reasons), "cpu": self.cpu}


def fit_target(matrix, name: str, stack: Stack, declared: Host, host: Host, *, where: str = "this host") -> TargetFit:
    """Does ``host`` run target ``name``, whose locked stack is ``stack`` and which was declared as
    ``declared``? The GPU check is ``check_stack``, what `cudaenv check` says for this host.
    ``where``: how the reasons name the host ("this node" for a cluster's)."""
    if stack.cpu:
        return fit_cpu_target(name, stack, gpu=gpu_words(host), arch=host.arch, where=where)
    if not host.gpus:
        why = f"no NVIDIA GPU on {where}" if host.driver is None else "no GPU this driver reports is in the matrix"
        return TargetFit(name, False, (why,), False, False)
    from cudaenv.resolver.check import check_stack

    verdict = check_stack(matrix, stack, host)
    return TargetFit(name, verdict.compatible, tuple(verdict.reasons), declares_host_gpus(declared, host), False)


def gpu_words(host: Host) -> str | None:
    """The host's GPU in a few words, None when it has none: a host with an NVIDIA driver counts as a
    GPU host even when no GPU it reports is identified (a board the matrix does not know, or a
    declared driver without --gpu), so a CPU target is never picked there silently."""
    if host.gpus:
        return host.gpus[0].label
    return "an NVIDIA driver, GPU not identified" if host.driver is not None else None


def fit_cpu_target(name: str, stack: Stack, *, gpu: str | None, arch: str | None, where: str,
                   named: bool = False) -> TargetFit:
    """A CPU target (``stack.cpu``) on a host with ``gpu`` (its first GPU's label; None: no GPU) and
    CPU ``arch`` (None: not stated, so not held against it). ``named``: asked for with --target
    NAME, which wins over the rule, so only the CPU is left to judge: CPU builds run on a GPU host
    too, leaving its GPUs unused."""
    reasons = []
    if gpu is not None and not named:
        reasons.append(f"a CPU target, and {where} has a GPU ({gpu}): it is picked only with --target {name}")
    if arch is not None and arch != stack.arch:
        reasons.append(f"built for {stack.arch} and {where}'s CPU is {arch}")
    return TargetFit(name, not reasons, tuple(reasons), False, True)


def fit_named(matrix, name: str, stack: Stack, declared: Host, host: Host, *, where: str = "this host") -> TargetFit:
    """Target ``name`` asked for with --target NAME: it is not picked, so the rule's CPU/GPU split
    does not apply; what is left is whether its stack runs on ``host`` at all (a GPU stack still
    needs a GPU and a driver it runs on: never a silent CPU fallback)."""
    if stack.cpu:
        return fit_cpu_target(name, stack, gpu=gpu_words(host), arch=host.arch, where=where, named=True)
    return fit_target(matrix, name, stack, declared, host, where=where)


def declares_host_gpus(declared: Host, host: Host) -> bool:
    """The target names every GPU of ``host`` (by compute capability): preferred among those that fit."""
    wanted = {g.compute_capability for g in declared.gpus}
    return bool(wanted) and bool(host.gpus) and {g.compute_capability for g in host.gpus} <= wanted


def choose_fit(fits: Sequence[TargetFit]) -> TargetFit | None:
    """The target a host runs among those judged (in the configuration's order); None: none fits."""
    fitting = [f for f in fits if f.fits]
    if not fitting:
        return None
    return next((f for f in fitting if f.declares_host_gpus), fitting[0])


def no_fit_message(where: str, host_words: str, fits: Sequence[TargetFit]) -> str:
    """One line: the host, every target and why it does not fit, and the way out."""
    each = "; ".join(f"{f.name}: {', '.join(f.reasons) or 'does not fit'}" for f in fits)
    return (f"{where}: no target fits {host_words} ({each}); pass --target NAME to use one anyway "
            f"(targets: {', '.join(f.name for f in fits)})")


def describe_host(host: Host) -> str:
    """This host in a few words, for messages: its driver, GPUs and CPU."""
    gpus = ", ".join(g.label for g in host.gpus) or ("GPU not identified" if host.driver else "no GPU")
    driver = f"driver {host.driver}" if host.driver else "no NVIDIA driver"
    return f"this host ({driver}, {gpus}, {host.platform})"


def judge_targets(matrix, project, lock_file, host: Host) -> tuple[TargetFit, ...]:
    """Every target the lock holds, judged for ``host``, in the configuration's order (which decides
    among targets that fit alike, whatever order the lock was written in)."""
    from cudaenv.hosts.target import project_targets

    declared = project_targets(matrix, project)
    order = {name: n for n, (name, _) in enumerate(declared)}
    views = sorted(lock_file.targets, key=lambda view: order.get(view.name, len(order)))
    hosts = dict(declared)
    return judge_stacks(matrix, [(view.name, view.resolved_stack(), hosts[view.name].host if view.name in hosts
                                  else Host()) for view in views], host)


def judge_stacks(matrix, targets, host: Host, *, named: bool = False) -> tuple[TargetFit, ...]:
    """``targets``: (name, stack, declared host) in the configuration's order, each judged for
    ``host``; ``named``: the one target --target NAME asked for (``fit_named``)."""
    fit = fit_named if named else fit_target
    return tuple(fit(matrix, name, stack, declared, host) for name, stack, declared in targets)
