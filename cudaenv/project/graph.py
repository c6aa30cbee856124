"""The frameworks a project reaches only through its dependency graph (ChatGLM-6B's ``icetk`` brings
torch; so does ``transformers[torch]``), found by asking uv to resolve the project's own
requirements once and reading which framework the resolution contains and through what.

Used by ``cudaenv init`` before it resolves a stack (only when it may use the network: not with
``--no-lock``). The carriers in ``cudaenv.project.intent`` answer offline for the common libraries;
this pass finds the rest. A project uv cannot resolve on its own here (an old pin, an unreachable
URL) keeps what was detected from its files: the lock step then names the line that failed.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

# what the graph may contain, and the framework it means; tensorflow-cpu is the CPU (intent.CPU_ONLY)
GRAPH_FRAMEWORKS = {"torch": "torch", "tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow", "jax": "jax",
                    "jaxlib": "jax"}
# a Python that most of a project's pins have wheels for; the stack's own Python is chosen later
GRAPH_PYTHON = "3.12"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;]+)\s*#\s*via\s+(?P<via>.+)$")
# a requirement that caps what it allows (==, <, <=, ~=, ===): a library pinned this way often pins
# its framework too (xformers==0.0.28.post1 requires torch==2.4.1, tf_keras==2.16.0 tensorflow 2.16)
_CAPPING = ("==", "<", "<=", "~=", "===")


def frameworks_in_graph(root: Path, files: list[Path], dependencies: list[str], *,
                        exclude_newer: str | None = None, timeout: int = 180) -> dict[str, str]:
    """framework -> the requirement that brings it ("icetk"), for every framework in the resolved
    graph of ``files`` (requirements files) and ``dependencies`` (pyproject lines); empty when uv
    cannot resolve them (wheels only, nothing built) or is not reachable in ``timeout`` seconds."""
    return {name: via for name, (via, _) in framework_versions_in_graph(
        root, files, dependencies, exclude_newer=exclude_newer, timeout=timeout).items()}


def framework_versions_in_graph(root: Path, files: list[Path], dependencies: list[str], *,
                                exclude_newer: str | None = None, timeout: int = 180) -> dict[str, tuple[str, str]]:
    """framework -> (what brings it, the version uv resolved for it), as ``frameworks_in_graph``."""
    from cudaenv.project.lock import python_index, uv_binary  # noqa: F401 - the same uv and index as the lock

    with tempfile.TemporaryDirectory(prefix="cudaenv-graph-") as tmp:
        inputs = [str(path) for path in files]
        if dependencies:
            extra = Path(tmp) / "pyproject.in"
            extra.write_text("".join(f"{line}\n" for line in dependencies))
            inputs.append(str(extra))
        if not inputs:
            return {}
        argv = [uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-progress", "--annotation-style", "line",
                "--only-binary", ":all:", "--python-version", GRAPH_PYTHON, "--python-platform", "x86_64-manylinux_2_28"]
        if exclude_newer:
            argv += ["--exclude-newer", exclude_newer]
        env = dict(os.environ, UV_NO_CONFIG="1", NO_COLOR="1",
                   UV_DEFAULT_INDEX=os.environ.get("CUDAENV_PYTHON_INDEX") or "https://pypi.org/simple")
        env.pop("UV_INDEX", None)
        env.setdefault("UV_PYTHON_DOWNLOADS", "never")  # wheels only: no interpreter to fetch for a build
        try:
            proc = subprocess.run(argv + inputs, capture_output=True, text=True, env=env, cwd=root, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    if proc.returncode != 0:
        return {}
    return graph_versions(proc.stdout)


def graph_frameworks(compiled: str) -> dict[str, str]:
    """framework -> what brings it, from ``uv pip compile --annotation-style line`` output."""
    return {name: via for name, (via, _) in graph_versions(compiled).items()}


def graph_versions(compiled: str) -> dict[str, tuple[str, str]]:
    """framework -> (what brings it, its resolved version), from ``--annotation-style line`` output."""
    found: dict[str, tuple[str, str]] = {}
    for line in compiled.splitlines():
        match = _PIN.match(line.strip())
        if not match:
            continue
        framework = GRAPH_FRAMEWORKS.get(re.sub(r"[-_.]+", "-", match.group("name")).lower())
        if framework and framework not in found:
            via = [v.strip() for v in match.group("via").split(",") if v.strip()]
            found[framework] = (via[0] if via else "the dependency graph", match.group("version").split("+")[0])
    return found


def _project_lines(root: Path, detected) -> list[str]:
    """Every requirement the project's files make (frameworks included: a graph without the
    project's own jax==0.10.2 would resolve the newest jax), read by the one reader, for uv."""
    from cudaenv.project.inputs import read_project_requirements, uv_lines

    files = list(detected.requirement_files)
    if (root / "pyproject.toml").is_file():
        files.append("pyproject.toml")
    if detected.conda_file:
        files.append(detected.conda_file)
    return uv_lines(read_project_requirements(root, files), root.resolve())


def _admits(spec: str, version: str) -> bool:
    from cudaenv.versions import parse_specifier, specifier_contains

    parsed = parse_specifier(spec)
    return parsed is not None and specifier_contains(parsed, version)


def capped_carriers(detected) -> dict[str, list[str]]:
    """framework -> the requirements that bring it while capping their own version (``xformers==…``,
    ``tf_keras<2.17``): those are the ones that may decide the framework's release."""
    from packaging.requirements import InvalidRequirement, Requirement

    found: dict[str, list[str]] = {}
    for framework, carriers in detected.carriers.items():
        for text, _ in carriers:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if any(spec.operator in _CAPPING for spec in requirement.specifier):
                found.setdefault(framework, []).append(text)
    return found


def series_range(version: str) -> str | None:
    """``>=X.Y.0,<=V``: the release series uv resolved, up to that release (an older patch of it
    may be what the host runs; an older series is what the carrier's pin excludes)."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return f">={parsed.major}.{parsed.minor}.0,<={parsed.public}"


def add_graph_frameworks(root: Path, detected, *, exclude_newer: str | None = None) -> None:
    """When the files name no framework at all (directly or through a known library), the one the
    graph brings is what the project runs on; a framework it asked for on the CPU stays there.

    A library that pins its own version may pin its framework's too (``xformers==0.0.28.post1``
    means torch 2.4.1, ``tf_keras==2.16.0`` TensorFlow 2.16): then the framework's release series
    comes from the resolved graph, so that the resolver does not pick the newest release and uv
    then refuse it."""
    capped = capped_carriers(detected)
    if detected.frameworks and not capped:
        return
    found = framework_versions_in_graph(root, [], _project_lines(root, detected), exclude_newer=exclude_newer)
    unnamed = not detected.frameworks
    for framework, (via, version) in sorted(found.items()):
        if framework in detected.cpu_only:
            continue
        if unnamed:
            detected.frameworks[framework] = ""
            detected.found.append(f"{framework} through {via} (dependency graph)")
            continue
        series = series_range(version)
        if framework in capped and framework in detected.frameworks and series \
                and _admits(detected.frameworks[framework], version):
            own = detected.frameworks[framework]
            detected.frameworks[framework] = ",".join(p for p in (own, series) if p)
            detected.found.append(f"{framework} {series}: what {', '.join(capped[framework])} "
                                  "allows (dependency graph)")
