"""Several projects on one host: resolve each, then make them share what they can.

Each project keeps its newest framework versions; among the stacks that give it those versions
(other CUDA x.y, Python, flavor), the plan prefers the base images other projects use too, so the
host pulls and stores the big layers once. Projects that cannot run get the smallest single driver
upgrade after which every project fits.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cudaenv.matrix import Matrix
from cudaenv.resolver.model import Constraints, Host, Problem, Resolution, Stack
from cudaenv.resolver.resolve import resolve, smallest_driver, warnings_for


@dataclass(frozen=True)
class PlannedProject:
    name: str
    resolution: Resolution
    stack: Stack | None  # the stack the plan picked (may differ from the project's own first choice)
    problems: tuple[Problem, ...] = ()  # about that stack (or why there is none)

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.stack is not None,
                "stack": self.stack.as_dict() if self.stack else None,
                "valid_cuda": list(self.resolution.valid_cuda),
                "problems": [p.as_dict() for p in self.problems]}


@dataclass(frozen=True)
class Plan:
    projects: tuple[PlannedProject, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]  # base image -> project names, largest group first
    driver_upgrade: str | None  # smallest driver with which every project fits (None: not needed or none found)

    @property
    def ok(self) -> bool:
        return all(p.stack is not None for p in self.projects)

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "distinct_bases": len(self.groups),
            "groups": [{"base_image": base, "projects": list(names)} for base, names in self.groups],
            "projects": [p.as_dict() for p in self.projects],
            "driver_upgrade": self.driver_upgrade,
        }


def _same_frameworks(stack: Stack, best: Stack) -> bool:
    return stack.frameworks == best.frameworks


def _choose_shared(resolutions: dict[str, Resolution]) -> dict[str, Stack]:
    options = {  # a resolution without alternatives (a CPU stack's) still has its own stack
        name: [s for s in r.alternatives if _same_frameworks(s, r.stack)] or [r.stack]
        for name, r in resolutions.items() if r.ok
    }
    chosen: dict[str, Stack] = {}
    unassigned = set(options)
    while unassigned:
        counts = Counter(base for name in unassigned for base in {s.base_image for s in options[name]})
        first_choices = Counter(options[name][0].base_image for name in unassigned)
        # most projects first; then the base most projects would pick anyway; then a stable name order
        base = max(counts, key=lambda b: (counts[b], first_choices[b], b))
        for name in sorted(unassigned):
            fitting = [s for s in options[name] if s.base_image == base]
            if fitting:
                chosen[name] = fitting[0]  # the project's own preference among stacks on that base
        unassigned -= set(chosen)
    return chosen


def plan(matrix: Matrix, projects: list[tuple[str, Constraints]], host: Host,
         refused: dict[str, Resolution] | None = None) -> Plan:
    """``refused``: projects known to have no stack for a reason outside the matrix (no Python
    every requirement has wheels for), with the resolution that says why."""
    # a fleet repeats itself: each distinct constraint set is resolved (and warned about) once
    by_constraints: dict[Constraints, Resolution] = {}
    for _, constraints in projects:
        if constraints not in by_constraints:
            by_constraints[constraints] = resolve(matrix, constraints, host)
    resolutions = {name: (refused or {}).get(name) or by_constraints[constraints] for name, constraints in projects}
    chosen = _choose_shared(resolutions)
    warned: dict[tuple[Constraints, Stack], tuple[Problem, ...]] = {}

    def problems_of(name: str, constraints: Constraints) -> tuple[Problem, ...]:
        if name not in chosen:
            return resolutions[name].problems
        key = (constraints, chosen[name])
        if key not in warned:
            warned[key] = tuple(warnings_for(matrix, constraints, host, chosen[name]))
        return warned[key]

    planned = tuple(
        PlannedProject(name, resolutions[name], chosen.get(name), problems_of(name, constraints))
        for name, constraints in projects
    )
    groups: dict[str, list[str]] = {}
    for project in planned:
        if project.stack is not None:
            groups.setdefault(project.stack.base_image, []).append(project.name)
    ordered = tuple(sorted(((b, tuple(n)) for b, n in groups.items()), key=lambda item: (-len(item[1]), item[0])))
    upgrade = None
    if not all(p.stack is not None for p in planned) and not refused:  # no driver brings a missing wheel
        # the failing sets first: they are what rejects a too-old driver
        ordered_sets = sorted(by_constraints, key=lambda c: by_constraints[c].ok)
        upgrade = smallest_driver(matrix, ordered_sets, host)
    return Plan(projects=planned, groups=ordered, driver_upgrade=upgrade)
