"""Stacks for a target without a GPU (a project's ``gpus = "none"``): CPU-only framework builds.

A CPU target gets only builds the matrix records as CPU builds (``[[release.cpu]]``: torch from
PyTorch's CPU index), so its image carries no CUDA library; a framework without a recorded CPU build
is refused with that reason, never answered with a CUDA build. The other way round is ``resolve``'s:
a GPU target never gets a CPU build, and when the only build that fits is a CPU one it says so
(``cpu_only_problem``).

Pure functions over the matrix, like ``cudaenv.resolver.resolve``.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudaenv.resolver.images import wheels_base
from cudaenv.resolver.model import COMPANIONS, FRAMEWORKS, Constraints, Host, Problem, Resolution, Stack
from cudaenv.versions import numeric_key

CPU = "cpu"  # Stack.device and Stack.flavor of a CPU stack


@dataclass(frozen=True)
class CpuChoice:
    """One framework release's CPU build for one platform."""

    framework: str
    version: str
    python: frozenset[str]
    index_url: str
    companions: tuple[tuple[str, str], ...]  # ("torchvision", "0.21.0"): exact releases made for it
    yanked: str | None
    platform: str


def cpu_builds(matrix, platform: str) -> dict[str, list[CpuChoice]]:
    """Every CPU build the matrix records for ``platform``, per framework, newest release first."""
    memo = matrix.memo.setdefault("cpu.builds", {})
    if platform not in memo:
        found: dict[str, list[CpuChoice]] = {name: [] for name in FRAMEWORKS}
        for release in matrix.torch:
            companions = tuple((n, v) for n, v in (("torchvision", release.torchvision),
                                                   ("torchaudio", release.torchaudio)) if v)
            for build in release.cpu:
                if platform in build.platforms:
                    found["torch"].append(CpuChoice("torch", release.version,
                                                    frozenset(build.python or release.python), build.index_url,
                                                    companions, release.yanked, platform))
        for rows in found.values():
            rows.sort(key=lambda c: numeric_key(c.version), reverse=True)
        memo[platform] = found
    return memo[platform]


def cpu_label(index_url: str) -> str:
    """The local version label PyTorch's CPU index gives its builds (torch-2.9.1+cpu): the stack
    names the build by it, so an index that serves CUDA builds of the same release too (a mirror
    of several PyTorch indexes, where +cu130 sorts above +cpu) can never hand a CPU target a CUDA
    build. Any other index: no label."""
    return "+cpu" if index_url.rstrip("/").endswith("/whl/cpu") else ""


def _exact(spec: SpecifierSet | None, version: str) -> bool:
    """Whether ``spec`` pins ``version`` exactly (``==X`` without a wildcard, ``==2.6`` for 2.6.0 too, or
    ``===X``): the only request pip and uv answer with a yanked release. The CUDA resolver's rule
    (``resolve.pins_exactly``; not imported: resolve imports this module)."""
    return spec is not None and any((s.operator == "===" and s.version == version)
                                    or (s.operator == "==" and not s.version.endswith(".*")
                                        and Version(s.version) == Version(version)) for s in spec)


def _fits(choice: CpuChoice, constraints: Constraints) -> bool:
    spec = constraints.spec(choice.framework)
    if spec is not None and not spec.contains(choice.version, prereleases=True):
        return False
    if choice.yanked is not None and not _exact(spec, choice.version):  # pip installs a yanked release only by ==
        return False
    for name, wanted in constraints.frameworks:
        if COMPANIONS.get(name) == choice.framework:
            version = dict(choice.companions).get(name)
            if version is None or not wanted.contains(version, prereleases=True):
                return False
    return True


def _pythons(choice: CpuChoice, constraints: Constraints) -> list[str]:
    allowed = [p for p in choice.python if constraints.python is None or constraints.python.contains(p)]
    return sorted(allowed, key=numeric_key, reverse=True)


def _recorded(rows: list[CpuChoice]) -> str:
    return ", ".join(c.version + (" (yanked)" if c.yanked is not None else "") for c in rows[:6]) + (
        " …" if len(rows) > 6 else "")


def _wanted(name: str, constraints: Constraints) -> str:
    """``torch>=2.6``, or ``torch>=2.6 with torchvision==0.20.0`` where its companions are pinned too
    (a companion pin is as much a reason no build fits as the framework's own)."""
    spec = constraints.spec(name)
    companions = [f"{n}{s}" for n, s in constraints.frameworks if COMPANIONS.get(n) == name]
    return (f"{name}{spec}" if spec else name) + (" with " + " and ".join(companions) if companions else "")


def resolve_cpu(matrix, constraints: Constraints, host: Host) -> Resolution:
    """The newest CPU-only stack for ``constraints`` on ``host`` (its CPU architecture), or why none."""
    platform = host.platform
    builds = cpu_builds(matrix, platform)
    names = constraints.framework_names
    problems: list[Problem] = []
    pinned_builds = [(n, v) for n, v in constraints.variants if v != CPU]
    for name, variant in pinned_builds:
        problems.append(Problem("cpu-target-cuda-pin", f"{name} is pinned to its {variant} build (a CUDA build), but "
                                                       "the target has no GPU: a CPU target installs CPU builds only",
                                fix=f"drop the +{variant} label from the {name} pin"))
    if problems:
        return Resolution(stack=None, valid_cuda=(), problems=tuple(problems))
    chosen: list[tuple[CpuChoice, list[str]]] = []
    for name in names:
        rows = builds.get(name, [])
        if not rows:
            problems.append(Problem("no-cpu-build", f"cudaenv's matrix records no CPU-only build of {name} for "
                                                    f"{platform}: a target without a GPU cannot get {name} "
                                                    "(its CUDA builds are never installed there)"))
            continue
        fitting = [c for c in rows if _fits(c, constraints)]
        if not fitting:
            problems.append(Problem("no-cpu-build", f"{_wanted(name, constraints)}: no CPU-only build of it is "
                                                    f"recorded for {platform} (CPU builds recorded: {name} "
                                                    f"{_recorded(rows)})"))
            continue
        with_python = [(c, _pythons(c, constraints)) for c in fitting]
        with_python = [(c, ps) for c, ps in with_python if ps]
        if not with_python:
            problems.append(Problem("cpu-python", f"{name}: its CPU builds that fit ({_recorded(fitting)}) have no "
                                                  f"wheel for Python {constraints.python}"))
            continue
        chosen.append(with_python[0])
    if problems:
        return Resolution(stack=None, valid_cuda=(), problems=tuple(problems))
    if chosen:
        common = set(chosen[0][1])
        for _, pythons in chosen[1:]:
            common &= set(pythons)
        if not common:
            return Resolution(stack=None, valid_cuda=(), problems=(Problem(
                "cpu-python", "the CPU builds chosen share no Python: "
                + "; ".join(f"{c.framework} {c.version}: {', '.join(p)}" for c, p in chosen)),))
        python = max(common, key=numeric_key)
    else:  # no framework: the newest Python the CPU builds know, within the project's range
        known = {p for rows in builds.values() for c in rows for p in c.python}
        allowed = [p for p in known if constraints.python is None or constraints.python.contains(p)]
        if not allowed:
            return Resolution(stack=None, valid_cuda=(), problems=(Problem(
                "cpu-python", f"no Python in {constraints.python} is known to cudaenv's CPU builds"),))
        python = max(allowed, key=numeric_key)
    frameworks: list[tuple[str, str]] = []
    requirements: list[str] = []
    indexes: list[str] = []
    asked = {n for n, _ in constraints.frameworks}
    for choice, _ in chosen:
        frameworks.append((choice.framework, choice.version))
        label = cpu_label(choice.index_url)
        requirements.append(f"{choice.framework}=={choice.version}{label}")
        for name, version in choice.companions:
            if name in asked:
                frameworks.append((name, version))
                requirements.append(f"{name}=={version}{label}")
        if choice.index_url not in indexes:
            indexes.append(choice.index_url)
    stack = Stack(
        python=python, cuda=None, cuda_release=None, cudnn=None, cudnn_version=None, frameworks=tuple(frameworks),
        requirements=tuple(requirements), index_urls=tuple(indexes), find_links=(), flavor=CPU,
        base_image=wheels_base(python).reference, driver_compatibility=None, min_driver=None,
        min_driver_compat=None, compute_capabilities=(), brings_own_cuda=False, arch=platform, device=CPU,
    )
    return Resolution(stack=stack, valid_cuda=(), problems=())


def cpu_only_problem(matrix, constraints: Constraints, host: Host) -> Problem | None:
    """For a GPU target that no CUDA build fits: the reason, when what would fit is a framework
    release that exists for the Python it needs only as a CPU build (the one answer a GPU target
    must never get silently, conda/conda#14761). None where CUDA builds of it exist (then the
    resolver's own reasons say why they do not fit: the driver, the GPU, a CUDA constraint)."""
    from cudaenv.matrix.builds import framework_builds

    found = resolve_cpu(matrix, constraints, Host(arch=host.platform, cpu=True))
    if not found.ok:
        return None
    stack = found.stack
    if not any(name in FRAMEWORKS for name, _ in stack.frameworks):
        return None  # no framework: nothing was built for the CPU instead of a GPU
    builds = framework_builds(matrix, host.platform)
    for name, version in stack.frameworks:
        if name in FRAMEWORKS and any(b.version == version and stack.python in b.python for b in builds.get(name, ())):
            return None  # a CUDA build of it exists for that Python: not a CPU-only answer
    what = ", ".join(f"{n} {v}" for n, v in stack.frameworks) or "the stack"
    return Problem("cpu-build-only", f"the only build of {what} that fits (Python {stack.python}) is a CPU-only build "
                                     f"({', '.join(stack.index_urls) or 'CPU wheels'}): a GPU target never gets a CPU "
                                     "build, so it is refused",
                   fix="allow a release or Python that has a CUDA build, or declare the target without a GPU "
                       "(gpus = \"none\")")
