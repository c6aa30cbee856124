"""Can the whole project be installed from wheels, and on which Python?

The resolver picks a Python from the frameworks' wheels alone (the matrix); the project's other
requirements (``numpy==1.26.4``) publish wheels for their own range of Pythons. An image whose
Python is outside that range would compile them from source in a slim image with no compiler, or
fail deep inside the build. So the lock asks uv, with source builds disabled, for each candidate
Python from the newest down; the first that installs is the stack's Python, and the framework
release moves with it where the project's pins allow (``torch>=2.4`` with ``numpy==1.21.0``:
torch 2.8.0 on Python 3.9). uv names the package that has no wheel; where the project pins that
package exactly, its wheel tags on the index (the same simple page uv read; no wheel is
downloaded) say which Pythons it covers, so Pythons it cannot cover are not tried. When no Python
works, the answer is a resolver-style "no" that names that package, the Pythons its wheels cover,
what the frameworks need, and the nearest fix.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cudaenv.errors import CudaenvError, IndexUnreachable, LockError
from cudaenv.resolver.model import Problem, Resolution, Stack
from cudaenv.versions import numeric_key, specifier_contains

# the CPython minors whose wheel tags are looked at when saying what a package covers
PYTHON_MINORS = tuple(f"3.{minor}" for minor in range(6, 17))

# End of life (last security release) of each CPython minor, from its release-schedule PEP.
PYTHON_EOL = {
    "3.6": ("2021-12-23", "PEP 494"),
    "3.7": ("2023-06-27", "PEP 537"),
    "3.8": ("2024-10-07", "PEP 569"),
    "3.9": ("2025-10-31", "PEP 596"),
    "3.10": ("2026-10-31", "PEP 619"),
    "3.11": ("2027-10-31", "PEP 664"),
    "3.12": ("2028-10-31", "PEP 693"),
    "3.13": ("2029-10-31", "PEP 719"),
    "3.14": ("2030-10-31", "PEP 745"),
}


def no_build_options(build_from_source: tuple[str, ...] = ()) -> list[str]:
    """uv's options for "install wheels only", the same for the lock and the image: ``--no-build``;
    with packages the project lets build ([build] build_from_source), wheels for everything but
    those, which come from their source distribution (``--no-binary``)."""
    if not build_from_source:
        return ["--no-build"]
    return ["--only-binary", ":all:", *(arg for name in build_from_source for arg in ("--no-binary", name))]


class NoWheels(CudaenvError):
    """uv found no wheel for ``requirement`` on ``python`` with source builds disabled. Caught by
    ``choose``, which turns the tries into a resolution (whose problem code is "no-wheels")."""

    def __init__(self, requirement: str, python: str, detail: str) -> None:
        super().__init__(f"{requirement} has no wheel for Python {python}:\n{detail}")
        self.requirement, self.python, self.detail = requirement, python, detail

    @property
    def name(self) -> str:
        return requirement_name(self.requirement)


def requirement_name(text: str) -> str:
    """``"numpy>=1.20,<1.22"`` -> ``"numpy"`` (normalized): the package a requirement uv printed names."""
    return canonicalize_name(re.split(r"[\s<>=!~\[;@]", text.strip(), maxsplit=1)[0])


# "Because numpy==1.26.4 has no usable wheels and ...", "... numpy>=1.20.0,<=1.21.6 has no wheels
# with a matching Python ABI tag ...", and uv's hint "Wheels are required for `numpy` because ..."
_NO_WHEELS = re.compile(r"(?:Because |and |, )(?:there is no version of )?(?P<req>[A-Za-z0-9][A-Za-z0-9._-]*"
                        r"(?:\[[^\]]*\])?(?:[<>=!~]=?[^\s,]+(?:,[<>=!~]=?[^\s,]+)*)?) has no (?:usable )?wheels")
_HINT = re.compile(r"Wheels are required for `(?P<name>[^`]+)`")


def missing_wheel(stderr: str) -> str | None:
    """The requirement uv says has no usable wheel ("numpy==1.26.4"), or None when the failure is
    something else (a conflict, an unknown package)."""
    match = _NO_WHEELS.search(stderr)
    if match:
        return match.group("req")
    hint = _HINT.search(stderr)
    return hint.group("name") if hint else None


# --- which Pythons a wheel covers ---------------------------------------------------------------


def glibc_of(platform: str) -> tuple[str, int, int]:
    """``x86_64-manylinux_2_28`` (uv's --python-platform) -> ("x86_64", 2, 28)."""
    match = re.fullmatch(r"(?P<arch>x86_64|aarch64)-manylinux_(?P<major>\d+)_(?P<minor>\d+)", platform)
    if not match:
        raise ValueError(f"not a manylinux platform: {platform!r}")
    return match.group("arch"), int(match.group("major")), int(match.group("minor"))


def platform_tags(platform: str) -> list[str]:
    """The wheel platform tags an image on ``platform`` installs, newest glibc first (PEP 600, with
    the legacy manylinux2014/2010/1 aliases), as pip and uv accept them."""
    arch, major, minor = glibc_of(platform)
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    out = []
    for glibc in range(minor, 4, -1):
        out.append(f"manylinux_{major}_{glibc}_{arch}")
        if glibc in legacy:
            out.append(f"{legacy[glibc]}_{arch}")
    return out + [f"linux_{arch}"]


@functools.lru_cache(maxsize=256)
def supported_tags(python: str, platform: str) -> frozenset:
    """Every tag a CPython ``python`` (e.g. "3.12") on ``platform`` installs."""
    from packaging.tags import compatible_tags, cpython_tags

    version = tuple(int(p) for p in python.split("."))
    platforms = platform_tags(platform)
    return frozenset(cpython_tags(version, platforms=platforms)) | frozenset(
        compatible_tags(version, f"cp{version[0]}{version[1]}", platforms=platforms))


def pythons_of_wheel(filename: str, platform: str, pythons=PYTHON_MINORS) -> set[str]:
    """The Pythons among ``pythons`` a wheel file installs on (empty for an sdist or another platform)."""
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return set()
    return {p for p in pythons if tags & supported_tags(p, platform)}


@dataclass(frozen=True)
class Release:
    """One version of a package on the index: the Pythons its wheels cover, and whether it has an sdist."""

    version: Version
    pythons: frozenset[str]
    sdist: bool


def releases(filenames: list[str], name: str, platform: str) -> list[Release]:
    """The package's releases on an index page, oldest first."""
    wanted = canonicalize_name(name)
    found: dict[Version, tuple[set[str], bool]] = {}
    for filename in filenames:
        if filename.endswith(".whl"):
            try:
                wheel_name, version, _, _ = parse_wheel_filename(filename)
            except (InvalidWheelFilename, InvalidVersion):
                continue
            if wheel_name != wanted:
                continue
            found.setdefault(version, (set(), False))[0].update(pythons_of_wheel(filename, platform))
        else:
            match = re.fullmatch(r"(?P<stem>.+?)\.(?:tar\.gz|zip|tar\.bz2)", filename)
            if not match or "-" not in match.group("stem"):
                continue
            sdist_name, _, text = match.group("stem").rpartition("-")
            try:
                version = Version(text)
            except InvalidVersion:
                continue
            if canonicalize_name(sdist_name) != wanted:
                continue
            pythons, _ = found.get(version, (set(), False))
            found[version] = (pythons, True)
    return [Release(v, frozenset(p), s) for v, (p, s) in sorted(found.items())]


def coverage(found: list[Release], spec: SpecifierSet | None) -> frozenset[str]:
    """The Pythons some release matching ``spec`` has a wheel for."""
    return frozenset(p for r in found if spec is None or spec.contains(r.version, prereleases=True)
                     for p in r.pythons)


# --- the index page (the simple page uv read) ---------------------------------------------------


def page_files(text: str) -> list[str]:
    """File names linked from a PEP 503 project page."""
    import html.parser
    import urllib.parse

    class Anchors(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def handle_starttag(self, tag, attrs) -> None:
            if tag == "a":
                path = urllib.parse.urlsplit(dict(attrs).get("href") or "").path
                self.names.append(urllib.parse.unquote(path.rsplit("/", 1)[-1]))

    parser = Anchors()
    parser.feed(text)
    return [n for n in parser.names if n]


# (index URL, project name) -> file names on that page, or None when the index does not have it
PageReader = Callable[[str, str], "tuple[str, ...] | None"]


def http_page_reader(ca_bundle: str | None = None, credentials: dict | None = None) -> PageReader:
    """Reads ``<index>/<name>/`` as uv does (credentials from the same netrc, the same CA bundle)."""
    import ssl
    import urllib.parse
    import urllib.request

    context = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else None

    @functools.lru_cache(maxsize=64)  # the same page serves the pruning and the "no"
    def read(index: str, name: str) -> tuple[str, ...] | None:
        url = index.rstrip("/") + "/" + canonicalize_name(name) + "/"
        request = urllib.request.Request(url, headers={"Accept": "text/html", "User-Agent": "cudaenv"})
        host = urllib.parse.urlsplit(url).hostname
        if credentials and host in credentials:
            request.add_header("Authorization", credentials[host])
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return tuple(page_files(response.read().decode("utf-8", "replace")))
        except (OSError, ValueError):  # 404 (not on this index), unreachable: the next index, or no answer
            return None

    return read


def index_releases(name: str, indexes: list[str], platform: str, read: PageReader) -> list[Release] | None:
    """The package's releases from the first index that has it (uv's first-index strategy: the
    framework index before the Python index), or None when no index answered."""
    for index in indexes:
        files = read(index, name)
        if files:
            return releases(files, name, platform)
    return None


# --- choosing the Python ------------------------------------------------------------------------


def python_text(pythons) -> str:
    ordered = sorted(set(pythons), key=numeric_key)
    if not ordered:
        return "none"
    runs, start, previous = [], ordered[0], ordered[0]
    for python in ordered[1:]:
        if numeric_key(python)[:1] == numeric_key(previous)[:1] and numeric_key(python)[1] == numeric_key(previous)[1] + 1:
            previous = python
            continue
        runs.append((start, previous))
        start = previous = python
    runs.append((start, previous))
    return ", ".join(a if a == b else f"{a}–{b}" for a, b in runs)


def eol_caveat(python: str, today: date | None = None) -> Problem | None:
    """A note when the chosen Python no longer gets security fixes."""
    row = PYTHON_EOL.get(python)
    if row is None:
        return None
    when, source = row
    if (today or date.today()).isoformat() < when:
        return None
    return Problem("python-end-of-life", f"Python {python} reached its end of life on {when} ({source}): "
                                         "it gets no security fixes; the project's pins keep it there")


@dataclass(frozen=True)
class Attempt:
    python: str
    stack: Stack
    missing: NoWheels


@dataclass(frozen=True)
class Inputs:
    """What the choice needs besides the resolution: how to pin a stack, where uv looked."""

    compile: Callable[[Stack], list[str]]  # pins the project for a stack, wheels only; raises NoWheels
    indexes: tuple[str, ...]  # framework index first, then the Python index
    read_page: PageReader
    exact_pins: dict  # canonical name -> Version the project's own requirement files pin exactly


def candidate_pythons(matrix, constraints, result: Resolution) -> list[str]:
    """The Pythons worth trying, newest first: every Python a candidate framework build has wheels
    for (within the project's own Python constraint), not newer than the resolver's choice."""
    from cudaenv.resolver.resolve import candidate_builds

    builds = candidate_builds(matrix, constraints)
    pythons = {p for rows in builds.values() for b in rows for p in b.python} if builds else set()
    pythons |= {s.python for s in result.alternatives}
    if constraints.python is not None:
        pythons = {p for p in pythons if specifier_contains(constraints.python, p)}
    ceiling = numeric_key(result.stack.python)
    return sorted((p for p in pythons if numeric_key(p) <= ceiling), key=numeric_key, reverse=True)


def stack_for_python(matrix, constraints, host, python: str) -> Resolution:
    """The resolver's best stack on exactly this Python (the framework release moves with it)."""
    from cudaenv.resolver.resolve import resolve

    return resolve(matrix, replace(constraints, python=SpecifierSet(f"=={python}")), host, explain=False)


def choose(matrix, constraints, host, result: Resolution, inputs: Inputs) -> tuple[Resolution, list[str] | None]:
    """The resolution whose stack the whole project installs on from wheels, and its pins; or a
    "no" resolution (pins None) naming the package no candidate Python has wheels for."""
    attempts: list[Attempt] = []
    conflicts: list[tuple[str, LockError]] = []  # (Python, what uv said) where the requirements clash
    skip: set[str] = set()
    for python in candidate_pythons(matrix, constraints, result):
        if python in skip:
            continue
        here = result if python == result.stack.python else stack_for_python(matrix, constraints, host, python)
        if not here.ok:
            continue
        try:
            pinned = inputs.compile(here.stack)
        except NoWheels as missing:
            attempts.append(Attempt(python, here.stack, missing))
            covered = _pinned_coverage(missing, inputs)
            if covered is not None:  # the project pins it exactly: only Pythons it covers can work
                skip |= {p for p in PYTHON_MINORS if p not in covered}
            continue
        except IndexUnreachable:
            raise  # nothing was resolved: no other Python would fare better
        except LockError as clash:  # grain has no cp315 wheel and uv says so as a conflict: try older
            conflicts.append((python, clash))
            continue
        if not attempts and not conflicts:
            return here, pinned
        return _moved(here, attempts, conflicts), pinned
    if attempts:  # a package without wheels blocks every Python tried: that is the answer, before a
        return no_python(matrix, constraints, host, result, attempts, inputs), None  # clash at an old one
    if conflicts:
        raise conflicts[0][1]  # the newest Python's clash: what the project most likely meant
    return no_python(matrix, constraints, host, result, attempts, inputs), None


# the most a stack's image accepts (its newest glibc): pruning by it never skips a Python some
# candidate stack could use
WIDEST_PLATFORM = "x86_64-manylinux_2_28"


def _pinned_coverage(missing: NoWheels, inputs: Inputs) -> frozenset[str] | None:
    """The Pythons an exactly pinned culprit has wheels for (None: not pinned exactly by the
    project, or its page unreadable: then nothing is skipped)."""
    version = inputs.exact_pins.get(missing.name)
    if version is None:
        return None
    found = index_releases(missing.name, list(inputs.indexes), WIDEST_PLATFORM, inputs.read_page)
    if found is None:
        return None
    return coverage(found, SpecifierSet(f"=={version}"))


def _moved(here: Resolution, attempts: list[Attempt], conflicts=()) -> Resolution:
    """The chosen resolution, saying why its Python is older than the frameworks allow."""
    newer = ", ".join([f"{a.missing.requirement} has none for {a.python}" for a in attempts[:3]]
                      + [f"the requirements conflict on {python}" for python, _ in conflicts[:3]])
    note = Problem("python-from-wheels", f"Python {here.stack.python}: the newest on which every requirement has "
                                         f"wheels ({newer})")
    caveat = eol_caveat(here.stack.python)
    return replace(here, problems=here.problems + (note,) + ((caveat,) if caveat else ()))


def _framework_pythons(matrix, constraints) -> list[tuple[str, frozenset[str]]]:
    from cudaenv.resolver.resolve import candidate_builds

    out = []
    for name, builds in candidate_builds(matrix, constraints).items():
        spec = constraints.spec(name)
        text = name if spec is None or not str(spec) else (
            f"{name} {str(spec)[2:]}" if str(spec).startswith("==") and "," not in str(spec) else f"{name}{spec}")
        pythons = frozenset(p for b in builds for p in b.python)
        if constraints.python is not None:
            pythons = frozenset(p for p in pythons if specifier_contains(constraints.python, p))
        out.append((text, pythons))
    return out


def no_python(matrix, constraints, host, result: Resolution, attempts: list[Attempt], inputs: Inputs) -> Resolution:
    """The "no": the package no candidate Python has a wheel for, the Pythons its wheels cover,
    what the frameworks need, and the nearest change that would make them meet."""
    if not attempts:  # nothing was tried: the resolver's own stacks all vanished per Python
        return Resolution(stack=None, valid_cuda=(), problems=(Problem("no-wheels", "no candidate Python resolves"),))
    platform = _platform(attempts[0].stack)
    tried = sorted({a.python for a in attempts}, key=numeric_key)
    frameworks = _framework_pythons(matrix, constraints)
    framework_pythons = frozenset.union(*(p for _, p in frameworks)) if frameworks else frozenset(tried)
    culprit, found, spec = _culprit(attempts, inputs, platform, framework_pythons)
    needs = "; ".join(f"{text} for {python_text(pythons)}" for text, pythons in frameworks)
    if found:
        covered = coverage(found, spec or None)
        has = f"has wheels for Python {python_text(covered)}" if covered else \
            f"has no wheels for {platform} on any Python"
    else:
        covered, has = frozenset(), f"has no wheels for Python {python_text(tried)} (its index page could not be read)"
    message = f"{culprit.requirement} {has}" + (f"; {needs}" if needs else f"; the stack needs Python {python_text(tried)}")
    problems = [Problem("no-wheels", message + f" (tried with source builds disabled, for {platform})")]
    parent = _brought_by(culprit)
    if parent is not None:  # not the project's own pin: relax what brings it
        problems.append(Problem("fix-requirement", f"{culprit.name} comes from {parent[0]} (which requires "
                                                   f"{parent[1]}): relax or replace {requirement_name(parent[0])}"))
    elif found:
        nearest, op = _nearest_release(found, spec, framework_pythons)
        if nearest is not None and not (spec and spec.contains(nearest.version, prereleases=True)):  # else in effect
            problems.append(Problem("fix-requirement", f"relax {culprit.name} to {op} {nearest.version} "
                                                       f"(wheels for {python_text(nearest.pythons)})"))
    if constraints.python is not None and covered:
        excluded = frozenset(p for p in covered if not specifier_contains(constraints.python, p))
        if excluded and not covered - excluded:
            problems.append(Problem("fix-python", f"or widen [project] python ({constraints.python}): "
                                                  f"{culprit.name} has wheels for Python {python_text(excluded)}, "
                                                  "which it excludes"))
    for name, ceiling in _framework_fixes(matrix, constraints, host, covered):
        problems.append(Problem("fix-framework", f"or {name} to ≤ {ceiling} (wheels for Python "
                                                 f"{python_text(covered)})"))
    if found and any(r.sdist for r in found if not spec or spec.contains(r.version, prereleases=True)):
        problems.append(Problem("fix-build-from-source",
                                f'or let it compile: [build] build_from_source = ["{culprit.name}"] (a '
                                'compiler joins the image; flavor = "devel" only for CUDA extensions)'))
    return Resolution(stack=None, valid_cuda=(), problems=tuple(problems))


# uv: "… and hydra-core==1.3.2 depends on antlr4-python3-runtime==4.9.*, we can conclude …", with
# the extras a requirement names ("jax[cuda12]==0.4.23 depends on nvidia-cudnn-cu12>=8.9")
_DEPENDS_ON = re.compile(r"(?P<parent>[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]\s]*\])?(?:[=<>!~]=?[^\s,]+)?) depends on "
                         r"(?P<child>[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]\s]*\])?(?:[=<>!~]=?[^\s,]+)?)")


def _brought_by(missing: NoWheels) -> tuple[str, str] | None:
    """(the requirement that depends on the package, what it requires) when uv's account shows the
    package arrives through another one, not through a pin the project wrote."""
    if re.search(rf"you require {re.escape(missing.name)}\b", missing.detail, re.I):
        return None  # the project pins it itself: relaxing that pin is the fix
    for match in _DEPENDS_ON.finditer(missing.detail):
        if canonicalize_name(requirement_name(match.group("child"))) == canonicalize_name(missing.name):
            parent = match.group("parent")
            if canonicalize_name(requirement_name(parent)) != canonicalize_name(missing.name):
                return parent, match.group("child")
    return None


def _culprit(attempts: list[Attempt], inputs: Inputs, platform: str, pythons: frozenset[str]):
    """The package to name: one whose wheels miss every Python the frameworks allow, when a failed
    try found one (it alone rules out every candidate); else the first that failed. Returns
    (NoWheels, its releases or None, the version range uv tried)."""
    seen, first = set(), None
    for attempt in attempts:
        missing = attempt.missing
        if missing.name in seen:
            continue
        seen.add(missing.name)
        found = index_releases(missing.name, list(inputs.indexes), platform, inputs.read_page)
        try:
            spec = Requirement(missing.requirement).specifier
        except InvalidRequirement:
            spec = SpecifierSet()
        if first is None:
            first = (missing, found, spec)
        if found is not None and not coverage(found, spec or None) & pythons:
            return missing, found, spec
    return first


def _plain(text: str) -> bool:
    try:
        Version(text)
        return True
    except InvalidVersion:
        return False


def manylinux_platform(stack: Stack) -> str:
    """uv's --python-platform for the image's CPU and C library (Ubuntu 18.04 / CentOS 7 are glibc
    2.17-2.27): the target's platform, never the locking machine's."""
    old = any(marker in stack.base_image for marker in ("ubuntu18.04", "ubuntu16.04", "centos7", "ubi7"))
    return f"{stack.arch}-manylinux_2_17" if old else f"{stack.arch}-manylinux_2_28"


# The last release of each CPython minor that has reached its end of life (python.org's release
# pages: 3.6.15 of 2021-09-04, 3.7.17 of 2023-06-06, 3.8.20 of 2024-09-06; PEP 494, 537, 569): what a
# python:X.Y-slim image, or uv, installs for that minor, and so what uv must resolve for.
FINAL_RELEASES = {"3.6": "3.6.15", "3.7": "3.7.17", "3.8": "3.8.20"}


def uv_python_version(stack: Stack) -> str:
    """``--python-version`` for uv: the X.Y.Z of a Python the image takes from its OS archive (3.6.9
    on ubuntu18.04: a bare "3.6" is 3.6.0 to uv, which torch 1.6-1.10's Requires-Python >= 3.6.1
    refuses), else the stack's X.Y (uv installs that minor's newest release)."""
    if not stack.python_packages:
        return FINAL_RELEASES.get(stack.python, stack.python)
    from cudaenv.matrix import load_matrix

    os_name = stack.base_image.rsplit("-", 1)[-1]
    release = next((r for r in load_matrix().os_releases if r.name == os_name), None)
    return (release.python_version(stack.python) if release else None) or stack.python


def _platform(stack: Stack) -> str:
    return manylinux_platform(stack)


def _nearest_release(found: list[Release], spec: SpecifierSet, pythons: frozenset[str]) -> tuple[Release | None, str]:
    """The release closest to what the project asks for whose wheels meet the frameworks' Pythons:
    the oldest newer one ("≥"), else the newest older one ("≤")."""
    fitting = [r for r in found if r.pythons & pythons and not r.version.is_prerelease]
    if not fitting:
        return None, ""
    pins = [Version(s.version) for s in spec if _plain(s.version)]
    anchor = max(pins) if pins else found[-1].version
    above = [r for r in fitting if r.version > anchor]
    return (above[0], "≥") if above else (fitting[-1], "≤")


def _framework_fixes(matrix, constraints, host, covered: frozenset[str]) -> list[tuple[str, str]]:
    """For each framework the project constrains: the newest release that fits the host on a
    Python the culprit covers (what "relax torch to ≤ X" offers)."""
    if not covered:
        return []
    from cudaenv.resolver.model import FRAMEWORKS
    from cudaenv.resolver.resolve import resolve

    out = []
    for name, spec in constraints.frameworks:
        if name not in FRAMEWORKS or spec is None or not str(spec):
            continue
        best = None
        for python in sorted(covered, key=numeric_key, reverse=True):
            relaxed = replace(constraints, python=SpecifierSet(f"=={python}"),
                              frameworks=tuple((n, SpecifierSet() if n == name else s) for n, s in constraints.frameworks))
            found = resolve(matrix, relaxed, host, explain=False)
            version = found.stack.framework(name) if found.ok else None
            if version and (best is None or Version(version) > Version(best)):
                best = version
        if best is not None:
            out.append((name, best))
    return out


# --- what the project pins exactly --------------------------------------------------------------


def exact_pins(project) -> dict:
    """canonical name -> Version for every ``name==version`` line the project's files require (as
    ``cudaenv.project.inputs`` reads them: includes followed, pyproject.toml and a conda pip list
    included): requirements that do not depend on which Python is tried, so none behind a marker."""
    from cudaenv.project.inputs import read_project_requirements

    pins = {}
    for line in read_project_requirements(project.root, project.requirements).lines:
        requirement = line.requirement
        if requirement is None or line.constraint or requirement.url:
            continue
        specs = list(requirement.specifier)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version \
                and requirement.marker is None and _plain(specs[0].version):
            pins[canonicalize_name(requirement.name)] = Version(specs[0].version)
    return pins
