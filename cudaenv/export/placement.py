"""Placement rules as data: where a stack may run, in the integer comparisons schedulers offer.

Kubernetes node affinity compares one integer per label (``Gt``/``Lt``) and ORs its
``nodeSelectorTerms``; "driver >= 525.60.13" therefore becomes several terms. The rules come
from the resolver (minimum driver, the builds' SASS/PTX lists); templates only print them.
"""
from __future__ import annotations

from dataclasses import dataclass

from cudaenv.cluster.facts import goarch
from cudaenv.resolver.gpu import build_runs_on
from cudaenv.versions import numeric_key


@dataclass(frozen=True)
class Requirement:
    """One node-selector requirement: ``key operator values`` (Kubernetes spelling)."""

    key: str
    operator: str  # In | NotIn | Gt | Lt | Exists
    values: tuple[str, ...] = ()


Term = tuple[Requirement, ...]  # requirements ANDed; a list of terms is ORed


def integer_equal(key: str, value: int) -> Term:
    """``label == value`` as integers: ``Gt value-1`` and ``Lt value+1``. ``In`` compares text, and
    label values such as a driver's revision keep their leading zeros (``535.104.05`` -> ``05``)."""
    return (Requirement(key, "Gt", (str(value - 1),)), Requirement(key, "Lt", (str(value + 1),)))


def at_least_terms(version: str, keys: tuple[str, ...], *, integers: bool = False) -> tuple[Term, ...]:
    """ORed terms meaning ``version(labels at keys) >= version``, component by component.

    ``525.60.13`` over (major, minor, rev) is: major > 525, or major = 525 and minor > 60,
    or major = 525, minor = 60 and rev >= 13. With ``integers``, equality is compared as integers
    (``integer_equal``) and every bound parses its label as one, so the terms mean exactly the
    tuple comparison of the labels' numbers, whatever zeros pad them.
    """
    parts = [int(p) for p in version.split(".")]
    if len(parts) > len(keys):
        raise ValueError(f"version {version!r} has more components than labels {keys!r}")
    terms: list[Term] = []
    for index, part in enumerate(parts):
        if integers:
            equal = tuple(r for i in range(index) for r in integer_equal(keys[i], parts[i]))
        else:
            equal = tuple(Requirement(keys[i], "In", (str(parts[i]),)) for i in range(index))
        last = index == len(parts) - 1
        if last:
            bound = (Requirement(keys[index], "Gt", (str(part - 1),)) if part > 0 or integers
                     else Requirement(keys[index], "Exists"))
        else:
            bound = Requirement(keys[index], "Gt", (str(part),))
        terms.append(equal + (bound,))
    return tuple(terms)


def runnable_capabilities(gpu_targets: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...],
                          known: tuple[str, ...], *, ptx_jit: bool) -> tuple[str, ...]:
    """The known compute capabilities on which every build with a recorded SM list runs.

    NVIDIA's rule (via the resolver's ``build_runs_on``): SASS for X.y runs on X.z with z >= y;
    PTX is JIT-compiled on newer GPUs unless minor-version compatibility forbids it.
    """
    result = []
    for cc in sorted(set(known), key=numeric_key):
        verdicts = [build_runs_on(sass, ptx, cc, ptx_jit=ptx_jit) for _, sass, ptx in gpu_targets]
        if all(v is not False for v in verdicts):
            result.append(cc)
    return tuple(result)


def capability_terms(capabilities: tuple[str, ...], major_key: str, minor_key: str) -> tuple[Term, ...]:
    """ORed terms, one per major: ``major In [M] and minor In [its minors]``."""
    by_major: dict[int, list[int]] = {}
    for cc in capabilities:
        major, minor = numeric_key(cc)
        by_major.setdefault(major, []).append(minor)
    return tuple((Requirement(major_key, "In", (str(major),)),
                  Requirement(minor_key, "In", tuple(str(m) for m in sorted(minors))))
                 for major, minors in sorted(by_major.items()))


def and_terms(left: tuple[Term, ...], right: tuple[Term, ...]) -> tuple[Term, ...]:
    """(a OR b) AND (c OR d) as ORed terms: every pairing, since Kubernetes has no nested AND."""
    return tuple(a + b for a in left for b in right)


ARCH_LABEL = "kubernetes.io/arch"  # set by every kubelet from its GOARCH (amd64, arm64)


def architecture_terms(arches: tuple[str, ...]) -> tuple[Term, ...]:
    """One term: the node's CPU is one the image is built for. Without it a pod lands on a Grace
    (GH200, GB200) or Jetson node whose GPU labels fit, and fails with ``exec format error``."""
    return ((Requirement(ARCH_LABEL, "In", tuple(goarch(a) for a in arches)),),)
