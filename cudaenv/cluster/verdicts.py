"""Which nodes run a stack, and why each other one cannot: node facts -> ``Host`` ->
``check_stack``, the resolver's own verdict.

Only the translation lives here: a GPU named by its product label or GRES type is looked up in the
matrix (for its data-center flag, which forward compatibility needs), and the compute capability
GFD read from NVML wins over the matrix's when both are there. A node with no GPU, or whose GPU
or driver the source cannot tell, is a "no" with its reason, as ``cudaenv check`` says "no" for a
host without a driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from cudaenv.cluster.facts import SLURM, NodeFacts
from cudaenv.matrix import Matrix
from cudaenv.resolver.check import WRONG_CPU
from cudaenv.resolver.model import Host, Stack, TargetGpu, arch_name

# check_stack's reason for a host without a driver speaks of --driver; for a node the source's
# own explanation (in NodeFacts.unknown) replaces it.
_NO_DRIVER_REASON = "no NVIDIA driver found or declared"
_PRODUCT_SUFFIX = re.compile(r"(?:-MIG-[A-Za-z0-9.]+)?(?:-SHARED)?$")


@dataclass(frozen=True)
class NodeVerdict:
    facts: NodeFacts
    compatible: bool
    mode: str | None
    reasons: tuple[str, ...]
    caveats: tuple[str, ...]
    host: Host | None  # what the resolver judged; None when there was nothing to judge

    @property
    def name(self) -> str:
        return self.facts.name

    def as_dict(self) -> dict:
        return {"name": self.name, "compatible": self.compatible, "mode": self.mode, "reasons": list(self.reasons),
                "caveats": list(self.caveats),
                "host": ({"driver": self.host.driver, "gpus": [g.label for g in self.host.gpus]}
                         if self.host else None),
                "facts": self.facts.as_dict()}


def node_gpu(matrix: Matrix, facts: NodeFacts) -> tuple[TargetGpu | None, tuple[str, ...]]:
    """The node's GPU as the resolver sees it, and caveats about how it was identified."""
    caveats = []
    row = None
    if facts.product:
        base = _PRODUCT_SUFFIX.sub("", facts.product)
        if "-MIG-" in facts.product:
            caveats.append(f"{facts.product}: the node offers MIG slices of a {base}, judged as a {base}")
        if facts.product.endswith("-SHARED"):
            caveats.append(f"{facts.product}: the node shares each {base} between pods (time-slicing or MPS)")
        row = matrix.find_gpu(base)  # underscores (GRES type names: tesla_t4) are separators to find_gpu
    cc = facts.compute_capability or (row.compute_capability if row else None)
    if cc is None:
        return None, tuple(caveats)
    if row is not None and facts.compute_capability and row.compute_capability != facts.compute_capability:
        caveats.append(f"the matrix lists {row.name} as sm_{row.compute_capability.replace('.', '')}; the node "
                       f"reports sm_{cc.replace('.', '')}, which is what was checked")
    arch = matrix.architecture_of(cc)
    if row is None and facts.product:
        caveats.append(f"GPU {facts.product} is not in the matrix: judged by its compute capability, as a "
                       "non-data-center GPU (no forward compatibility)")
    name = row.name if row else facts.product
    row = row or matrix.jetson_only(cc)  # GFD's "Orin": sm_87 is a Jetson module on Jetson Linux
    return (TargetGpu(cc, name, arch.name if arch else None, row.datacenter if row else False,
                      row.host_arch if row else None, row.l4t if row else False), tuple(caveats))


def arch_reason(facts: NodeFacts, stack: Stack) -> str | None:
    """Why a node's CPU cannot run the image: it is built for one CPU architecture (``stack.arch``),
    and a node of another would fail at ``exec format error``, not in the check."""
    if facts.arch is None or facts.arch == stack.arch:
        return None
    return (f"the node's CPU is {facts.arch}; the image is built for {stack.arch} (its base image and "
            "framework wheels), so it cannot start there")


def unstated_arch_caveats(facts: NodeFacts, stack: Stack) -> tuple[str, ...]:
    """A node that does not say its CPU is checked as one of the image's CPU, which it may not be."""
    if facts.arch is not None:
        return ()
    said = "Arch= in scontrol show node" if facts.source == SLURM else "kubernetes.io/arch label"
    return (f"the node states no CPU architecture (no {said}): checked as {stack.arch}, the CPU the image is "
            "built for",)


def node_host(facts: NodeFacts, gpus: tuple[TargetGpu, ...]) -> Host:
    """The node as the resolver sees it: its driver, its GPU, and its CPU where the node states one
    wheels exist for (an arm64 node is aarch64; a ppc64le one is left to its GPU to imply)."""
    return Host(facts.driver, gpus, arch_name(facts.arch) if facts.arch else None)


def judge(matrix: Matrix, stack: Stack, facts: NodeFacts) -> NodeVerdict:
    from cudaenv.resolver.check import check_stack

    if not facts.has_gpu:
        why = ("no gpu GRES" if facts.source == SLURM else
               f"its nvidia.com/gpu count is 0; the GPU Feature Discovery labels naming {facts.product} are taken "
               "as stale" if facts.product else "no nvidia.com/gpu capacity, no GPU Feature Discovery labels")
        return NodeVerdict(facts, False, None, (f"no NVIDIA GPU on this node ({why})",), (), None)
    gpu, caveats = node_gpu(matrix, facts)
    wrong_cpu = arch_reason(facts, stack)
    reasons = ([wrong_cpu] if wrong_cpu else []) + [f"cannot be known: {u}" for u in facts.unknown]
    if gpu is None:
        if not facts.unknown:
            reasons.append(f"GPU {facts.product!r} is not in the matrix and the node reports no compute capability")
        return NodeVerdict(facts, False, None, tuple(reasons), caveats, None)
    host = node_host(facts, (gpu,))
    verdict = check_stack(matrix, stack, host)
    if wrong_cpu:  # said once, in the node's own words: not again as the stack's or the GPU's CPU
        verdict = replace(verdict, reasons=tuple(r for r in verdict.reasons
                                                 if "only comes in" not in r and not r.startswith(WRONG_CPU)))
    explained = facts.driver is None and facts.unknown  # the source already said why the driver is unknown
    reasons += [r for r in verdict.reasons if not (explained and r.startswith(_NO_DRIVER_REASON))]
    caveats += unstated_arch_caveats(facts, stack)
    if facts.source == SLURM and facts.product and not facts.mapped_feature:
        caveats += (f"GPU taken from the GRES type name {facts.product!r}, a name the site chose",)
    if facts.source != SLURM and facts.capacity is None and facts.allocatable is None:
        caveats += ("the node offers no nvidia.com/gpu resource (is the device plugin running?): pods cannot "
                    "request its GPUs",)
    elif facts.allocatable == 0 and facts.capacity:
        caveats += ("no GPU is allocatable on this node now (status.allocatable nvidia.com/gpu is 0)",)
    return NodeVerdict(facts, not reasons, verdict.mode if not reasons else None, tuple(reasons),
                       tuple(caveats) + verdict.caveats, host)


def judge_nodes(matrix: Matrix, stack: Stack, nodes: tuple[NodeFacts, ...]) -> tuple[NodeVerdict, ...]:
    return tuple(judge(matrix, stack, n) for n in nodes)


def known_hosts(matrix: Matrix, nodes: tuple[NodeFacts, ...]) -> tuple[Host, ...]:
    """The hosts whose driver is known: what stack flags are resolved against (the weakest)."""
    hosts = []
    for facts in nodes:
        gpu, _ = node_gpu(matrix, facts) if facts.has_gpu else (None, ())
        if facts.driver:
            hosts.append(node_host(facts, (gpu,) if gpu else ()))
    return tuple(hosts)
