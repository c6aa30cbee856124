"""Pick a stack for one project on one target host, or prove why none exists.

The search runs per CUDA x.y (every x.y a requested framework is built for): the host's driver
and GPUs either accept that CUDA or not (axes 1 and 2); the frameworks' builds for it are tried
newest first, sharing one Python and non-conflicting nvidia-* pins (axis 3). The best stack is the
one with the newest framework versions, then the newest CUDA, then the newest Python — except
that forward compatibility (a cuda-compat package in the image, data-center GPUs only) is used
only when nothing runs natively or through minor-version compatibility.

When nothing fits, ``explain`` walks the same filters one at a time and reports the first that
empties the field, then re-resolves with one constraint relaxed at a time to say what would fix
it — a short proof, not a dump of every rejected candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import chain, islice, product

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudaenv.errors import UserError
from cudaenv.matrix import Matrix
from cudaenv.resolver import driver as drv
from cudaenv.resolver import gpu as gpu_rules
from cudaenv.matrix.builds import Build, every_build, framework_builds
from cudaenv.resolver.images import UV_LOWEST_PYTHON, UV_OLDEST_PYTHON, BaseChoice, cuda_base, uv_installs, wheels_base
from cudaenv.resolver.model import (ADD_ONS, COMPANIONS, DEFAULT_ARCH, FRAMEWORKS, PYPI, PYPI_INDEX, Constraints, Host,
                                    Problem, Resolution, Stack)
from cudaenv.versions import (contains_at_clause_precision, driver_branch, major_minor, numeric_key, parse_version,
                              specifier_contains)

MODE_RANK = {drv.NATIVE: 2, drv.MINOR_VERSION: 1, drv.FORWARD: 0, None: 2}
UNESTABLISHED = "unestablished:"  # Stack.notes prefix: a chosen build no primary source shows was published
CAVEAT = "caveat:"  # Stack.notes prefix: what the matrix says a user of a chosen build must know
ROUTE = "route:"  # Stack.notes prefix: "framework:text", what runs it on a GPU its build has no native code for


class UnknownVersion(UserError):
    """A framework version or specifier that matches nothing in the matrix (exit 2). ``field`` is
    the configuration key it would come from, so a project's error can name its file and key."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _py_key(python: str) -> tuple[int, ...]:
    return numeric_key(python)


def _fmt_versions(values) -> str:
    return ", ".join(sorted(set(values), key=numeric_key))


def _fmt_python(values) -> str:
    ordered = sorted(set(values), key=_py_key)
    if len(ordered) > 2:
        return f"{ordered[0]}–{ordered[-1]}"
    return ", ".join(ordered)


def _spec_text(spec: SpecifierSet | None) -> str:
    """How a constraint reads in a sentence: ``==3.8`` as ``3.8``, ``>=2.4`` as is."""
    if spec is None or not str(spec):
        return "(any)"
    items = list(spec)
    if len(items) == 1 and items[0].operator == "==":
        return items[0].version
    return str(spec)


# --- step 1: which builds each requested framework offers -------------------------------------


# companions a framework release may not declare at all: keras for TensorFlow 1.x-2.5, whose metadata
# has no keras requirement (standalone keras 2.2.4 ran on tensorflow-gpu 1.13 as its backend); a build
# that names none leaves the project's keras pin to the lock, not to the matrix
UNDECLARED_FREE = ("keras",)


def _companion_ok(build: Build, constraints: Constraints) -> bool:
    for name, spec in constraints.frameworks:
        if COMPANIONS.get(name) != build.framework:
            continue
        have = build.companion(name)
        if have is None:
            if name in UNDECLARED_FREE:  # TensorFlow before 2.6 declares no keras: a standalone keras installs beside it
                continue
            return False
        if have[0].isdigit():
            if not specifier_contains(spec, have) and not _yanked_companion(build, name, spec):
                return False
        else:  # a range the framework declares (keras for TensorFlow): the user's spec must meet it
            if not specs_overlap(SpecifierSet(have), spec):
                return False
    return True


def _yanked_companion(build: Build, name: str, spec: SpecifierSet | None) -> tuple[str, str, str, bool] | None:
    """The yanked ``name`` release of ``build`` that ``spec`` pins exactly (torchvision==0.15.0 for torch
    2.0.0's cu117 build), or None: only an exact pin installs a yanked release (PEP 592)."""
    return next((y for y in build.yanked_companions if y[0] == name and pins_exactly(spec, y[1])), None)


def specs_overlap(a: SpecifierSet, b: SpecifierSet) -> bool:
    """Whether some version satisfies both: tried at every bound either names, and just past it
    (``>=3`` and ``>=2.15.0,<2.16`` share nothing; ``<3`` and ``>=2.15.0,<2.16`` share 2.15.0)."""
    points = {"0", "9999"}
    for spec in (*a, *b):
        text = spec.version.rstrip(".*")
        parts = [int(x) for x in re.findall(r"[0-9]+", text)] or [0]
        points.add(".".join(map(str, parts)))
        for i in range(len(parts)):
            bumped = parts[: i + 1]
            bumped[-1] += 1
            points.add(".".join(map(str, bumped)))
        points.add(".".join(map(str, parts + [1])))
    return any(specifier_contains(a, v) and specifier_contains(b, v) for v in points)


def nearest_versions(wanted: str, known: list[str]) -> list[str]:
    """What to suggest for a version the matrix does not have, by version order rather than by
    spelling (torch 2.4.99 is near 2.4.1 and 2.5.0, not 2.14.1): the releases of the same
    major.minor series, else the nearest release below and above."""
    target = parse_version(wanted.removesuffix(".*"))
    if target is None:
        return []
    ordered = sorted(known, key=Version)
    major_minor_wanted = (target.release + (0,))[:2]  # "2" is 2.0, as PEP 440 pads it
    series = [v for v in ordered if (Version(v).release + (0,))[:2] == major_minor_wanted]
    if series:  # the three releases of the series nearest to it in order (jax 0.4.0: 0.4.1, 0.4.2, …)
        below = sum(1 for v in series if Version(v) < target)
        start = max(0, min(below - 1, len(series) - 3))
        return series[start:start + 3]
    below = [v for v in ordered if Version(v) < target]
    above = [v for v in ordered if Version(v) > target]
    return below[-1:] + above[:1]


def below_floor(spec: SpecifierSet, floor: str) -> bool:
    """Whether ``spec`` only admits releases older than ``floor``, the oldest release the matrix
    records: then the answer is where the matrix stops, not a typo to correct (torch==1.11.0 is real;
    the matrix covers torch from 1.12.0, every release from there on, which a network test checks
    against PyPI)."""
    bounds = [Version(s.version.removesuffix(".*")) for s in spec if s.operator in ("==", "===", "~=", "<", "<=")
              and parse_version(s.version.removesuffix(".*")) is not None]
    return bool(bounds) and min(bounds) < Version(floor)


def check_versions_exist(matrix: Matrix, constraints: Constraints) -> None:
    """Unknown framework versions (or image OS names) are bad input (exit 2), named with the nearest known ones."""
    if constraints.os is not None:
        known_os = sorted({o for image in matrix.images for o in image.os})
        if constraints.os not in known_os:
            import difflib  # only for a suggestion when the name is unknown

            near = difflib.get_close_matches(constraints.os, known_os, n=3)
            raise UnknownVersion(f"os {constraints.os!r} is not an nvidia/cuda image OS in the matrix"
                                 + (f"; nearest: {', '.join(near)}" if near else f"; known: {', '.join(known_os)}"),
                                 field="build.os")
        from cudaenv.resolver.images import apt_based

        if not apt_based(constraints.os):
            raise UnknownVersion(f"os {constraints.os!r}: cudaenv's image layers install packages with apt-get, so the "
                                 "base must be an Ubuntu nvidia/cuda image (known: "
                                 f"{', '.join(o for o in known_os if apt_based(o))})", field="build.os")
    builds = every_build(matrix)  # a release exists if it exists for any platform
    for name, spec in constraints.frameworks:
        framework = name if name in FRAMEWORKS else COMPANIONS.get(name)
        if framework is None:
            raise UnknownVersion(f"unknown framework {name!r} (known: {', '.join(FRAMEWORKS + tuple(COMPANIONS))})")
        if name in FRAMEWORKS:
            known = sorted({b.version for b in builds[framework]}, key=Version)
        else:
            known = sorted({b.companion(name) for b in builds[framework] if b.companion(name) and b.companion(name)[0].isdigit()}
                           | {y[1] for b in builds[framework] for y in b.yanked_companions
                              if y[0] == name and pins_exactly(spec, y[1])}, key=Version)
            if not known:
                continue  # only ranges recorded (keras): nothing to check against
            ranges = {b.companion(name) for b in builds[framework] if b.companion(name) and not b.companion(name)[0].isdigit()}
            if any(specs_overlap(SpecifierSet(r), spec) for r in ranges):
                continue  # a range PyPI admits (torchvision_range for torch 2.14.1) covers it
        if name in FRAMEWORKS:
            check_not_only_yanked(builds[framework], name, spec)
        if not any(specifier_contains(spec, v) for v in known):
            if name not in FRAMEWORKS:
                check_companion_not_only_yanked(builds[framework], name, spec)
            wanted = next((s.version for s in spec if s.operator in ("==", "===")), None)
            near = nearest_versions(wanted, known) if wanted else []
            hint = f"; nearest known: {', '.join(near)}" if near else f"; known: {known[0]} … {known[-1]}"
            series_known = wanted is not None and parse_version(wanted.removesuffix(".*")) is not None and any(
                Version(v).release[:2] == Version(wanted.removesuffix(".*")).release[:2] for v in known)
            if below_floor(spec, known[0]) and not series_known:  # a series older than the matrix: say where it stops
                hint = (f"; the matrix records every {name} release from {known[0]} on, and none older "
                        f"(pin {name}>={known[0]}, or add the older release's row in a matrix overlay)")
            raise UnknownVersion(f"{name} {_spec_text(spec)} matches no release in the matrix{hint} "
                                 f"(see `cudaenv matrix list {framework}`)", field=f"frameworks.{name}")
    for name, tag in constraints.variants:
        check_variant_exists(builds, constraints, name, tag)


def check_not_only_yanked(builds, name: str, spec: SpecifierSet) -> None:
    """A range that only yanked releases satisfy is bad input naming the yank: pip and uv install a
    yanked release only for an exact pin, so the range alone can never be installed."""
    matching = [b for b in builds if specifier_contains(spec, b.version)]
    if matching and all(b.uninstallable is not None for b in matching):
        newest = max(matching, key=lambda b: Version(b.version))
        raise UnknownVersion(f"{name} {_spec_text(spec)}: {name} {newest.version} cannot be installed: "
                             f"{newest.uninstallable} (pin another release)", field=f"frameworks.{name}")
    matching = [b for b in matching if b.uninstallable is None]
    if not matching or any(b.yanked is None or pins_exactly(spec, b.version) for b in matching):
        return
    newest = max(matching, key=lambda b: Version(b.version))
    raise UnknownVersion(f"{name} {_spec_text(spec)} matches only releases yanked from PyPI: "
                         f"{yanked_text(newest.framework, newest.version, newest.yanked)}"
                         + (f" (and {len({b.version for b in matching}) - 1} more)" if len({b.version for b in matching}) > 1 else "")
                         + f"; pip and uv install a yanked release only for an exact pin (pin {name}=={newest.version} "
                         "to use it anyway, or allow a release that was not yanked)", field=f"frameworks.{name}")


def check_companion_not_only_yanked(builds, name: str, spec: SpecifierSet) -> None:
    """A companion range (``torchvision>=0.15.0,<0.15.1``) that only yanked releases satisfy says so,
    with the exact pin to write, as a framework range does: the release is in the matrix, not unknown."""
    yanked = {y[1]: y[2] for b in builds for y in b.yanked_companions if y[0] == name and specifier_contains(spec, y[1])}
    if not yanked:
        return
    newest = max(yanked, key=Version)
    more = f" (and {len(yanked) - 1} more)" if len(yanked) > 1 else ""
    raise UnknownVersion(f"{name} {_spec_text(spec)} matches only releases yanked from PyPI: "
                         f"{yanked_text(name, newest, yanked[newest])}{more}; pip and uv install a yanked release only "
                         f"for an exact pin (pin {name}=={newest} to use it anyway, or allow a release that was not "
                         "yanked)", field=f"frameworks.{name}")


def check_variant_exists(builds: dict, constraints: Constraints, name: str, tag: str) -> None:
    """A pin naming a build by its local version (``torch==2.12.0+cu129``) is bad input when no
    such build was published: the error lists the builds that were, per matching release."""
    framework = name if name in FRAMEWORKS else COMPANIONS.get(name)
    if framework is None:
        return
    spec = constraints.spec(name)

    def version_of(build: Build) -> str | None:
        """The pinned package's version in this build; None where the build records a range of it."""
        version = build.version if name == framework else build.companion(name)
        return version if version and version[0].isdigit() else None

    if name != framework and not any(version_of(b) for b in builds[framework]):
        # keras: the framework's metadata names a range of it, and it has no per-CUDA builds
        raise UnknownVersion(f"{name} {_spec_text(spec) if spec is not None else ''}+{tag}: {name} is not built "
                             f"per CUDA, so no local version names one of its builds (pin {name} without +{tag})",
                             field=f"frameworks.{name}")

    def pinned(build: Build) -> bool:
        if spec is None:
            return True
        version = version_of(build)
        return version is not None and specifier_contains(spec, version)

    matching = [b for b in builds[framework] if pinned(b)]
    if not matching or any(b.variant == tag for b in matching):
        return
    per_release: dict[str, dict[str, bool]] = {}  # release -> build tag -> established on some platform
    for build in matching:
        tags = per_release.setdefault(build.companion(name) if name != framework else build.version, {})
        tags[build.variant] = tags.get(build.variant, False) or build.established
    shown = "; ".join(f"{name} {version} is built for "
                      f"{', '.join(t + ('' if ok else ' (existence not established)') for t, ok in sorted(tags.items()))}"
                      for version, tags in sorted(per_release.items(), key=lambda kv: Version(kv[0]), reverse=True)[:3])
    raise UnknownVersion(f"{name} {_spec_text(spec)}+{tag}: no such build was published; {shown} "
                         f"(see `cudaenv matrix list {framework}`)", field=f"frameworks.{name}")


def served_build(build: Build, index: str | None) -> Build | None:
    """``build`` as the framework index serves it, or None when that index does not serve it.

    The index decides which builds exist: PyPI serves one CUDA build per torch release (the
    matrix's ``pypi_cuda``), whose own index is then PyPI; ``download.pytorch.org/whl/cu126`` (or a
    mirror of it) serves only its cu126 builds. A build that comes from no index (TensorFlow, JAX,
    MXNet from PyPI) is what it is."""
    if index is None or build.index_url is None:
        return build
    if index == PYPI:  # PyPI's wheel has no +cuXYZ label: a yanked companion requiring one cannot come with it
        return replace(build, index_url=PYPI_INDEX,
                       yanked_companions=tuple(y for y in build.yanked_companions if not y[3])) if build.on_pypi else None
    return build if build.index_url == index else None


def pins_exactly(spec: SpecifierSet | None, version: str) -> bool:
    """Whether ``spec`` names ``version`` by an exact pin (``==X`` without a wildcard, or ``===X``):
    the only request PEP 592 lets an installer answer with a yanked release, and the only one uv does."""
    if spec is None:
        return False
    return any((c.operator == "===" and c.version == version)
               or (c.operator == "==" and not c.version.endswith(".*") and parse_version(c.version) == Version(version))
               for c in spec)


def yanked_text(name: str, version: str, reason: str) -> str:
    """``jax 0.4.32 was yanked from PyPI`` with PyPI's reason in quotes where it gives one."""
    why = f" ({reason!r})" if reason else " (PyPI gives no reason)"
    return f"{name} {version} was yanked from PyPI{why}"


def _admit_yanked(build: Build, spec: SpecifierSet | None) -> Build | None:
    """A yanked build stays a candidate only for an exact pin of its version, carrying the yank as a
    caveat (a warning whenever it is chosen); a range never chooses it, as pip and uv do not."""
    if build.uninstallable is not None:
        return None  # no pin can install it (check_not_only_yanked says why when nothing else matches)
    if build.yanked is None:
        return build
    if not pins_exactly(spec, build.version):
        return None
    caveat = f"{yanked_text(build.framework, build.version, build.yanked)}; the exact pin installs it anyway (PEP 592)"
    return replace(build, caveat=f"{build.caveat}; {caveat}" if build.caveat else caveat)


def candidate_builds(matrix: Matrix, constraints: Constraints, platform: str = DEFAULT_ARCH) -> dict[str, list[Build]]:
    """The builds of each framework the project names that its pins, index, flavor and companions
    admit, among those published for ``platform`` (the target's CPU architecture)."""
    builds = framework_builds(matrix, platform)
    out = {}
    for name in constraints.framework_names:
        spec = constraints.spec(name)
        tags = pinned_variants(constraints, name)
        served = (served_build(b, constraints.framework_index) for b in builds[name])
        packaged = (as_package(b, constraints) for b in served if b is not None)
        admitted = (_admit_yanked(b, spec) for b in packaged if b is not None)
        out[name] = [b for b in admitted
                     if b is not None and (spec is None or specifier_contains(spec, b.version))
                     and all(b.variant == tag for tag in tags)
                     and _companion_ok(b, constraints) and (constraints.flavor != "wheels" or b.brings_own_cuda)]
    return out


def package_for(constraints: Constraints, framework: str) -> str | None:
    """The package the project installs ``framework`` as, where it names another (tensorflow-gpu)."""
    return next((p for n, p in constraints.packages if n == framework), None)


def as_package(build: Build, constraints: Constraints) -> Build | None:
    """``build`` installed as the package the project names (``tensorflow-gpu==2.10.0`` for the
    tensorflow 2.10.0 build, the same files), or None when that package does not carry it (no
    tensorflow-gpu after 2.11.0). A project that names the framework itself changes nothing."""
    package = package_for(constraints, build.framework)
    if package is None or build.requirements[:1] == (f"{package}=={build.version}",):
        return build if package is None or package in build.packages else None
    if package not in build.packages:
        return None
    return replace(build, requirements=(f"{package}=={build.version}",) + build.requirements[1:])


def pinned_variants(constraints: Constraints, framework: str) -> set[str]:
    """The builds a pin names by local version for ``framework``, its own or a companion's
    (``torch==2.10.0+cu126``, ``torchvision==0.25.0+cu126``): only that build of the release will do."""
    return {tag for name, tag in constraints.variants if name == framework or COMPANIONS.get(name) == framework}


def own_indexes(matrix: Matrix) -> tuple[str, ...]:
    """Every framework build's own index in the matrix (what ``framework_index_mirrors`` may name)."""
    return tuple(sorted({b.index_url for rows in every_build(matrix).values() for b in rows if b.index_url}))


def index_text(index: str) -> str:
    return "PyPI" if index == PYPI else index


# --- step 2: the search -------------------------------------------------------------------------


def _near(version: str) -> list[str]:
    """A version and its neighbours just above (``1.0`` -> ``1.0``, ``1.0.1``, ``1.1``)."""
    parts = version.rstrip(".*").split(".")
    if not all(p.isdigit() for p in parts):
        return [version]
    bumped = parts[:-1] + [str(int(parts[-1]) + 1)]
    return [version, ".".join(parts + ["1"]), ".".join(bumped)]


def _pins_compatible(a: str, b: str) -> bool:
    """Whether two specifiers for one package can both hold (tested at and just above the
    versions they name: ``>1.0`` and ``<2.0`` meet at 1.1)."""
    sa, sb = SpecifierSet(a), SpecifierSet(b)
    points = [p for s in chain(sa, sb) for p in _near(s.version)]
    if not points:
        return True
    if any(specifier_contains(sa, p) and specifier_contains(sb, p) for p in points):
        return True
    # two open-ended ranges in the same direction always meet
    ops = {s.operator for s in chain(sa, sb)}
    return ops <= {">=", ">"} or ops <= {"<=", "<"}


def _cudnn_demands(build: Build) -> list[tuple[str, str]]:
    """What a build says about the cuDNN in its environment, as (label, specifier) pairs."""
    demands = [(name, spec) for name, spec in build.pins if name.startswith("nvidia-cudnn")]
    if build.cudnn and build.brings_own_cuda and not demands:
        demands.append(("cuDNN", f"=={build.cudnn}"))
    if build.cudnn_range is not None and str(build.cudnn_range):
        demands.append(("cuDNN", str(build.cudnn_range)))
    return demands


def pin_conflicts(chosen: list[Build]) -> list[tuple[str, Build, str, Build, str]]:
    """nvidia-* pins two builds cannot both satisfy; and, since one environment holds one cuDNN,
    a cuDNN one build bundles that another's range or pin excludes (checked per pair unless the
    pair's nvidia-cudnn pins already conflict, so one clash is not reported twice)."""
    conflicts = []
    for i, first in enumerate(chosen):
        for second in chosen[i + 1:]:
            mine = dict(first.pins)
            pair = [(name, first, mine[name], second, spec) for name, spec in second.pins
                    if name in mine and not _pins_compatible(mine[name], spec)]
            if not any(name.startswith("nvidia-cudnn") for name, *_ in pair):
                pair += [("cuDNN", first, spec_a, second, spec_b)
                         for _, spec_a in _cudnn_demands(first) for _, spec_b in _cudnn_demands(second)
                         if not _pins_compatible(spec_a, spec_b)]
            conflicts += pair
    return conflicts


@dataclass(frozen=True)
class _Context:
    matrix: Matrix
    constraints: Constraints
    host: Host

    @property
    def platform(self) -> str:
        return self.host.platform


def _gpu_ok_for_build(ctx: _Context, build: Build, ptx_jit: bool) -> bool:
    for gpu in ctx.host.gpus:
        if gpu_rules.build_runs_on(build.sass, build.ptx, gpu.compute_capability, ptx_jit=ptx_jit,
                                   ptx_unusable_on=build.ptx_unusable_on) is False:
            return False
    return True


_ISSUE = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)/issues/(\d+)")


def reports(source: str) -> str:
    """``owner/repo#N, #M, …`` for the GitHub issues a matrix source cites (the reports, not the fixes)."""
    out, last = [], None
    for repo, number in dict.fromkeys(_ISSUE.findall(source)):
        out.append(f"#{number}" if repo == last else f"{repo}#{number}")
        last = repo
    return ", ".join(out) or source


def ptx_fails_text(build: Build, cc: str) -> str:
    """Why a build whose PTX would cover ``cc`` still does not run there (the matrix's reports)."""
    ptx = ", ".join("compute_" + p.replace(".", "") for p in build.ptx)
    return (f"its {ptx} PTX does not run on sm_{cc.replace('.', '')}: {build.framework}'s kernels are reported "
            f"failing to load there from PTX, CUDA_ERROR_INVALID_PTX; {reports(build.ptx_unusable_source)}")


def _mode_for(ctx: _Context, xy: str) -> tuple[bool, str | None]:
    """(runs at all, mode) for CUDA x.y on the host's driver; mode None when the driver is unknown."""
    if ctx.host.driver is None:
        return True, None
    mode = drv.driver_mode(ctx.matrix, ctx.host.driver, xy, all_datacenter=ctx.host.all_datacenter)
    return mode is not None, mode


def _ptx_jit(ctx: _Context, xy: str) -> bool:
    """PTX is JIT-compiled by the driver, except under minor-version compatibility."""
    return _mode_for(ctx, xy)[1] != drv.MINOR_VERSION


def _toolkit_ok(ctx: _Context, xy: str) -> bool:
    """The release's own libraries run on every GPU (see gpu.toolkit_runs_on: not nvcc's range)."""
    ptx_jit = _ptx_jit(ctx, xy)
    return all(gpu_rules.toolkit_runs_on(ctx.matrix, xy, g.compute_capability, ptx_jit=ptx_jit) for g in ctx.host.gpus)


def _range_floor(spec: SpecifierSet | None) -> str | None:
    lows = [s.version for s in spec or () if s.operator in (">=", "==", "~=")]
    return max(lows, key=numeric_key) if lows else None


def _stack_cudnn(chosen: list[Build]) -> tuple[str | None, str | None]:
    """(the cuDNN the stack loads, what a system cuDNN in the base image must provide).

    Builds that bring their own CUDA bundle or pin their cuDNN; the others (TensorFlow before
    2.14, JAX's ``*_local`` extras, MXNet) load the system cuDNN, which must be the same major and
    at least the version they were built with.
    """
    system = [b.cudnn or _range_floor(b.cudnn_range) for b in chosen if not b.brings_own_cuda]
    system = [v for v in system if v]
    need = max(system, key=numeric_key) if system else None
    exact = [b.cudnn for b in chosen if b.cudnn and b.brings_own_cuda]
    ranges = [_range_floor(b.cudnn_range) for b in chosen if b.cudnn_range is not None and b.brings_own_cuda]
    version = exact[0] if exact else need or next((r for r in ranges if r), None)
    return version, need


def _flavor_for(ctx: _Context, chosen: list[Build], mode: str | None) -> str | None:
    requested = ctx.constraints.flavor
    own = bool(chosen) and all(b.brings_own_cuda for b in chosen)
    if requested == "auto":
        return "wheels" if own and mode != drv.FORWARD else "runtime"
    if requested == "wheels" and (not own or mode == drv.FORWARD):
        return None
    return requested


def _base_for(ctx: _Context, flavor: str, xy: str, python: str, system_cudnn: str | None) -> BaseChoice | None:
    if flavor == "wheels":
        return wheels_base(python)
    cudnn_need, exact = system_cudnn, False
    if cudnn_need is None and not ctx.constraints.framework_names and ctx.constraints.cudnn is not None:
        # no framework: the cuDNN asked for is the one the image must carry, not a floor
        cudnn_need, exact = _cudnn_for_constraint(ctx, xy), True
        if cudnn_need is None:
            return None
    return cuda_base(ctx.matrix, flavor, xy, cudnn=cudnn_need, os_name=ctx.constraints.os, exact_cudnn=exact,
                     python=python, platform=ctx.platform)


def _cudnn_for_constraint(ctx: _Context, xy: str) -> str | None:
    for image in sorted(ctx.matrix.images_for(xy), key=lambda i: numeric_key(i.cuda), reverse=True):
        for offered in image.cudnn:
            if contains_at_clause_precision(ctx.constraints.cudnn, offered.version):
                return offered.version
    return None


def runtime_pythons(matrix) -> set[str]:
    """The Pythons a project without a framework may use: every minor from the oldest to the newest
    that the frameworks' newest builds run on (each one some build ran on, so no gap opens where no
    framework's newest build happens to be), and that uv can install in the CUDA image. Memoized per
    matrix: _pythons asks for every CUDA candidate of a project without a framework."""
    memo = matrix.memo.setdefault("resolve.runtime_pythons", {})
    if "answer" not in memo:
        memo["answer"] = frozenset(_runtime_pythons(matrix))
    return set(memo["answer"])


def _runtime_pythons(matrix) -> set[str]:
    builds = framework_builds(matrix)
    newest = {p for rows in builds.values() for b in rows[:1] for p in b.python}
    low, high = max(min(newest, key=_py_key), UV_LOWEST_PYTHON, key=_py_key), max(newest, key=_py_key)
    return {p for rows in builds.values() for b in rows for p in b.python if _py_key(low) <= _py_key(p) <= _py_key(high)}


def _pythons(ctx: _Context, chosen: list[Build]) -> list[str]:
    if chosen:
        common = set.intersection(*(set(b.python) for b in chosen))
    else:
        common = runtime_pythons(ctx.matrix)
    spec = ctx.constraints.python
    return sorted((p for p in common if (spec is None or specifier_contains(spec, p))
                   and _py_key(p) >= _py_key(UV_OLDEST_PYTHON)), key=_py_key, reverse=True)


def _make_stack(ctx: _Context, xy: str, chosen: list[Build], python: str, mode: str | None) -> Stack | None:
    cudnn, system_cudnn = _stack_cudnn(chosen)
    if ctx.constraints.cudnn is not None:
        if cudnn is None or not contains_at_clause_precision(ctx.constraints.cudnn, cudnn):
            if chosen:
                return None
    flavor = _flavor_for(ctx, chosen, mode)
    if flavor is None:  # (a Python uv cannot install needs an OS archive that has it: _base_for)
        return None
    base = _base_for(ctx, flavor, xy, python, system_cudnn)
    if base is None:
        return None
    if base.cudnn and (not chosen or cudnn == system_cudnn):
        cudnn = base.cudnn  # the image's own, more precise version
    frameworks, extra_requirements, yank_caveats = [], [], []
    for build in chosen:
        frameworks.append((build.framework, build.version))
        for name, version in build.companions:
            pin = ctx.constraints.spec(name)
            if name in ADD_ONS and pin is None:
                continue  # torchvision / torchaudio: only in a project that asks for them
            yanked = _yanked_companion(build, name, pin) if version[:1].isdigit() else None
            if yanked is not None and not specifier_contains(pin, version):
                version = yanked[1]  # the exact pin of a yanked release: that one, with the yank said
                yank_caveats.append(f"{yanked_text(name, version, yanked[2])}; the exact pin installs it anyway (PEP 592)"
                                    + (f", with the {build.variant} build of {build.framework} {build.version} "
                                       f"its metadata requires" if yanked[3] else ""))
            if version[:1].isdigit():
                frameworks.append((name, version))
                if name in ADD_ONS:
                    extra_requirements.append(f"{name}=={version}")
            elif pin is not None and str(pin):
                # a range the framework declares (keras for TensorFlow): install the project's own pin
                extra_requirements.append(f"{name}{pin}")
            elif name in ADD_ONS:
                extra_requirements.append(f"{name}{version}")  # the range PyPI admits for this release
    sass_sets = [set(b.sass) for b in chosen if b.sass]
    sass = tuple(sorted(set.intersection(*sass_sets), key=numeric_key)) if sass_sets else ()
    index_urls = tuple(dict.fromkeys(b.index_url for b in chosen if b.index_url))
    find_links = tuple(dict.fromkeys(b.find_links for b in chosen if b.find_links))
    requires = tuple(sorted({(n, s) for b in chosen for n, s in b.pins}))
    release = base.cuda_release or _newest_release(ctx.matrix, xy)
    return Stack(
        python=python, cuda=xy, cuda_release=release, cudnn=major_minor(cudnn) if cudnn else None, cudnn_version=cudnn,
        frameworks=tuple(frameworks),
        requirements=tuple(chain.from_iterable(b.requirements for b in chosen)) + tuple(extra_requirements),
        index_urls=index_urls, find_links=find_links, flavor=flavor, base_image=base.reference,
        driver_compatibility=mode, min_driver=drv.native_requirement(ctx.matrix, xy),
        min_driver_compat=drv.minor_version_floor(ctx.matrix, xy), compute_capabilities=sass,
        brings_own_cuda=bool(chosen) and all(b.brings_own_cuda for b in chosen), nvidia_requires=requires,
        gpu_targets=tuple((b.framework, b.sass, b.ptx) for b in chosen),
        python_packages=base.python_packages, init=base.init, arch=ctx.platform,
        source_builds=source_builds_for(chosen, python, ctx.platform),
        notes=(("base-image-removed",) if base.removed else ())
        + tuple(f"{UNESTABLISHED}{b.label}" for b in chosen if not b.established)
        + tuple(f"{CAVEAT}{b.caveat}" for b in chosen if b.caveat)
        + tuple(f"{CAVEAT}{text}" for text in yank_caveats)
        + tuple(f"{ROUTE}{b.framework}:{b.gpu_route}" for b in chosen if b.gpu_route),
    )


def source_builds_for(chosen: list[Build], python: str, platform: str) -> tuple[str, ...]:
    """The names among the builds' ``source_builds`` whose marker holds for this Python and platform."""
    from packaging.requirements import Requirement

    from cudaenv.versions import marker_holds

    names = set()
    for build in chosen:
        for entry in build.source_builds:
            requirement = Requirement(entry)  # the loader checked it
            if requirement.marker is None or marker_holds(requirement.marker, python, platform):
                names.add(requirement.name)
    return tuple(sorted(names))


def _newest_release(matrix: Matrix, xy: str) -> str:
    return max((r.version for r in matrix.cuda_releases_for(xy)), key=numeric_key)


def _stack_key(stack: Stack, framework_order: tuple[str, ...]):
    """A stack of builds known to be published before any stack with a build whose existence is
    not established (matrix ``established = false``), whatever else it offers; then forward
    compatibility only when nothing runs otherwise; then the newest framework versions;
    then, between builds of those versions, one the driver runs natively over one it runs only
    through minor-version compatibility (NVIDIA documents that mode's limits: no PTX JIT, some
    APIs unavailable); then the newest CUDA, the newest Python, and wheels images. A `--cuda` /
    `[cuda] version` constraint is how a user asks for a newer CUDA anyway."""
    versions = tuple(Version(stack.framework(name) or "0") for name in framework_order)
    established = not any(n.startswith(UNESTABLISHED) for n in stack.notes)
    return (established, stack.driver_compatibility != drv.FORWARD, versions, MODE_RANK[stack.driver_compatibility],
            numeric_key(stack.cuda), _py_key(stack.python), stack.flavor == "wheels")


def _search_xy(ctx: _Context, xy: str, candidates: dict[str, list[Build]]) -> list[Stack]:
    """Stacks for one CUDA x.y: the newest framework combination, for every Python it allows."""
    if ctx.constraints.cuda is not None and not specifier_contains(ctx.constraints.cuda, xy):
        return []
    if not _toolkit_ok(ctx, xy):
        return []
    runs, mode = _mode_for(ctx, xy)
    if not runs:
        return []
    ptx_jit = mode != drv.MINOR_VERSION
    names = list(candidates)
    # established builds first (a stable sort keeps newest-first within each group): a build no
    # source shows was published is tried only when no published one fits
    per = [sorted((b for b in candidates[n] if xy in b.cuda and _gpu_ok_for_build(ctx, b, ptx_jit)),
                  key=lambda b: not b.established) for n in names]
    if any(not options for options in per):
        return []

    def dfs(index: int, chosen: list[Build]) -> list[Stack]:
        if index == len(per):
            stacks = []
            for python in _pythons(ctx, chosen):
                stack = _make_stack(ctx, xy, chosen, python, mode)
                if stack is not None:
                    stacks.append(stack)
            return stacks
        for build in per[index]:
            trial = chosen + [build]
            if not _pythons(ctx, trial) or pin_conflicts(trial):
                continue
            found = dfs(index + 1, trial)
            if found:
                return found
        return []

    return dfs(0, [])


def _cuda_candidates(ctx: _Context, candidates: dict[str, list[Build]]) -> list[str]:
    if candidates:
        xys = set.intersection(*({xy for b in builds for xy in b.cuda} for builds in candidates.values()))
    else:
        xys = {major_minor(i.cuda) for i in ctx.matrix.images}
    return sorted(xys, key=numeric_key, reverse=True)


def host_problems(matrix: Matrix, host: Host) -> list[Problem]:
    """Problems with the host itself, whatever the stack: a Jetson module (its CUDA is Jetson
    Linux's, not the server CUDA wheels and images are built for); a CPU architecture its GPUs
    never come with (a GH200 declared x86_64); a driver branch that does not support a GPU's
    architecture — too old for a new GPU, or past the architecture's last branch."""
    problems = []
    for gpu in dict.fromkeys(host.gpus):
        if gpu.l4t:
            problems.append(Problem(
                "host-platform-unsupported",
                f"{gpu.label} is a Jetson module: its CUDA comes with NVIDIA's Jetson Linux (L4T, JetPack), and "
                f"the framework wheels and nvidia/cuda images cudaenv builds with are the server (SBSA) ones, "
                f"which do not run there",
                fix="use NVIDIA's JetPack containers (nvcr.io/nvidia/l4t-*) and the Jetson wheels NVIDIA publishes "
                    "for this module",
            ))
    arches = {g.host_arch for g in host.gpus if g.host_arch is not None and g.host_arch != DEFAULT_ARCH}
    for gpu in dict.fromkeys(host.gpus):
        only = gpu.host_arch if gpu.host_arch in arches else None
        if only is not None and host.platform != only:
            problems.append(Problem(
                "host-arch-mismatch",
                f"{gpu.label} only comes in {only} hosts (its CPU is part of the same superchip or module), "
                f"but the target's CPU is {host.platform}",
                fix=f"declare the target's CPU as {only} (--arch {only}, [target] arch = \"{only}\"), "
                    f"or name the GPUs of the {host.platform} host",
            ))
    if host.driver is None:
        return problems
    branch = driver_branch(host.driver)
    for gpu in host.gpus:
        if gpu_rules.driver_supports_architecture(matrix, host.driver, gpu) is not False:
            continue
        arch = gpu_rules.architecture_name(matrix, gpu) or "?"
        first, last = gpu_rules.first_branch_for(matrix, arch), gpu_rules.last_branch_for(matrix, arch)
        if first is not None and branch < first:
            problems.append(Problem(
                "driver-predates-architecture",
                f"driver {host.driver} (R{branch}) predates {arch.capitalize()} GPUs such as {gpu.label}: "
                f"they need driver branch R{first} or newer",
                fix=f"upgrade the driver to branch R{first} or newer",
            ))
        else:
            problems.append(Problem(
                "driver-drops-architecture",
                f"driver {host.driver} (R{branch}) no longer supports {arch.capitalize()} GPUs such as {gpu.label}; "
                f"the last driver branch that does is R{last}",
                fix=f"install a driver from branch R{last} or older for this GPU{_branch_cuda_note(matrix, last)}"
                if last else None,
            ))
    return problems


def _branch_cuda_note(matrix: Matrix, branch: int) -> str:
    """``; R470 runs CUDA 11.4 and older natively``: what a stack on that older branch can use
    (``branch`` is a row of the matrix: gpu_rules.last_branch_for answers with one)."""
    return f"; R{branch} runs CUDA {matrix.driver_branch(branch).max_cuda} and older natively"


def resolve(matrix: Matrix, constraints: Constraints, host: Host, *, explain: bool = True) -> Resolution:
    """The best stack for ``constraints`` on ``host``, every valid CUDA, and the problems found.
    A host declared without a GPU (``host.cpu``) gets CPU builds only (``cudaenv.resolver.cpu``);
    any other host gets CUDA builds only, and is told when a CPU build is all that would fit."""
    cpu_pins = tuple((n, v) for n, v in constraints.variants if v == "cpu")  # torch==2.6.0+cpu
    check_versions_exist(matrix, replace(constraints, variants=tuple(v for v in constraints.variants
                                                                    if v not in cpu_pins)))
    if host.cpu:
        from cudaenv.resolver.cpu import resolve_cpu

        return resolve_cpu(matrix, constraints, host)
    if cpu_pins:
        names = ", ".join(n for n, _ in cpu_pins)
        return Resolution(stack=None, valid_cuda=(), problems=(Problem(
            "cpu-pin-on-gpu-target", f"{names} is pinned to its CPU build (+cpu): a GPU target never gets a CPU build",
            fix=f"drop the +cpu label from the {names} pin, or declare a target without a GPU (gpus = \"none\")"),))
    fatal = host_problems(matrix, host)
    if fatal:
        if explain and any(p.code == "driver-predates-architecture" for p in fatal):
            needed = smallest_driver(matrix, [constraints], host)
            if needed is not None:
                fatal.append(_driver_fix(needed))
        if explain and constraints.cuda is not None:
            for gpu in host.gpus:
                if gpu_rules.driver_supports_architecture(matrix, host.driver, gpu) is not False:
                    continue
                last = gpu_rules.last_branch_for(matrix, gpu_rules.architecture_name(matrix, gpu) or "?")
                if last is None or last >= driver_branch(host.driver):
                    continue  # a driver too old for the GPU: the driver fix above
                row = matrix.driver_branch(last)
                older = [xy for xy in matrix.cuda_minors if numeric_key(xy) <= numeric_key(row.max_cuda)]
                if older and not any(specifier_contains(constraints.cuda, xy) for xy in older):
                    fatal.append(Problem("fix-cuda", f"relax the cuda constraint ({_spec_text(constraints.cuda)}): "
                                                     f"on R{last} a stack needs CUDA {row.max_cuda} or older",
                                         fix=f"allow cuda {row.max_cuda}"))
                    break
        return Resolution(stack=None, valid_cuda=(), problems=tuple(fatal))
    ctx = _Context(matrix, constraints, host)
    candidates = candidate_builds(matrix, constraints, host.platform)
    stacks: list[Stack] = []
    valid: list[str] = []
    if all(candidates.values()) or not candidates:
        for xy in _cuda_candidates(ctx, candidates):
            found = _search_xy(ctx, xy, candidates)
            if found:
                valid.append(xy)
                stacks.extend(found)
    order = constraints.framework_names
    stacks.sort(key=lambda s: _stack_key(s, order), reverse=True)
    if not stacks:
        problems = explain_failure(ctx, candidates) if explain else [Problem("no-stack", "no valid stack")]
        if explain:
            from cudaenv.resolver.cpu import cpu_only_problem

            cpu_only = cpu_only_problem(matrix, constraints, host)
            if cpu_only is not None:
                problems = [cpu_only] + list(problems)
        return Resolution(stack=None, valid_cuda=(), problems=tuple(problems))
    best = stacks[0]
    return Resolution(stack=best, valid_cuda=tuple(sorted(valid, key=numeric_key)),
                      problems=tuple(stack_warnings(ctx, best)), alternatives=tuple(stacks))


# --- warnings on a good answer ------------------------------------------------------------------


def warnings_for(matrix: Matrix, constraints: Constraints, host: Host, stack: Stack) -> list[Problem]:
    """The caveats of running ``stack`` on ``host`` (minor-version or forward compatibility, an
    unknown driver or GPU, a removed base image) — for any stack, not only the best one."""
    return stack_warnings(_Context(matrix, constraints, host), stack)


def ptx_jit_caveat(framework: str, version: str | None, sass, ptx, gpu) -> str:
    """A build with no native code for a GPU runs there only as PTX the driver compiles at first use:
    nothing in the build was compiled for that GPU, so this is never a plain yes."""
    built = ", ".join("sm_" + c.replace(".", "") for c in sass)
    return (f"{gpu.label} runs {framework} {version} only through its "
            f"{', '.join('compute_' + p.replace('.', '') for p in ptx)} PTX, JIT-compiled by the driver at first use: "
            f"the build has no native code for it (built for {built})")


def stack_warnings(ctx: _Context, stack: Stack) -> list[Problem]:
    out = []
    if ctx.host.driver is None:
        out.append(Problem("driver-unknown", f"no driver version given or detected: this stack needs a driver "
                                             f"{drv.requirement_text(stack.min_driver, stack.min_driver_compat)}"))
    elif stack.driver_compatibility == drv.MINOR_VERSION:
        out.append(Problem("minor-version-compatibility",
                           f"driver {ctx.host.driver} runs CUDA {stack.cuda} only through minor-version compatibility: "
                           f"{drv.MINOR_VERSION_LIMITS}", fix=f"upgrade the driver to >= {stack.min_driver} to run it natively"))
    elif stack.driver_compatibility == drv.FORWARD:
        out.append(Problem("forward-compatibility",
                           f"driver {ctx.host.driver} runs CUDA {stack.cuda} through forward compatibility: the image "
                           f"carries NVIDIA's cuda-compat package, which works on data-center GPUs only",
                           fix=f"upgrade the driver to >= {stack.min_driver} to run it natively"))
    routes = dict(n[len(ROUTE):].split(":", 1) for n in stack.notes if n.startswith(ROUTE))
    for g in dict.fromkeys(ctx.host.gpus):  # eight of one board: one caveat
        for framework, sass, ptx in stack.gpu_targets:
            if not sass and not ptx:  # nothing recorded to judge it by: say so, never a silent yes
                out.append(Problem("gpu-unchecked", f"the {framework} {stack.framework(framework)} build's GPU list "
                                                    f"is not recorded in the matrix: {g.label} was not checked"))
            elif gpu_rules.only_through_ptx(sass, ptx, g.compute_capability):
                out.append(Problem("ptx-jit-only", ptx_jit_caveat(framework, stack.framework(framework), sass, ptx, g)))
                if framework in routes:
                    out.append(Problem("gpu-route", routes.pop(framework)))
    if not ctx.host.gpus:
        sms = ", ".join("sm_" + c.replace(".", "") for c in stack.compute_capabilities)
        out.append(Problem("gpu-unknown", "no GPU given or detected: compute capabilities were not checked"
                                          + (f"; the builds carry {sms}" if sms else "")))
    for note in stack.notes:
        if note.startswith(UNESTABLISHED):
            out.append(Problem("variant-unestablished",
                               f"{note[len(UNESTABLISHED):]}: no primary source shows this build was published "
                               f"(see the matrix row's note); chosen only because no established build fits",
                               fix="allow another CUDA version or framework release"))
        elif note.startswith(CAVEAT):
            out.append(Problem("build-caveat", note[len(CAVEAT):]))
    if "base-image-removed" in stack.notes:
        out.append(Problem("base-image-removed",
                           f"NVIDIA deleted the {stack.base_image} tags from Docker Hub in its EOL cleanup",
                           fix="set build.base_registry to a mirror that kept them, or allow a newer CUDA"))
    return out


# --- explaining a "no" --------------------------------------------------------------------------


def _framework_desc(name: str, constraints: Constraints) -> str:
    spec = constraints.spec(name)
    return f"{name} {_spec_text(spec)}" if spec is not None and str(spec) else name


def _cuda_list(builds: list[Build]) -> str:
    return _fmt_versions({xy for b in builds for xy in b.cuda})


def explain_failure(ctx: _Context, candidates: dict[str, list[Build]]) -> list[Problem]:
    m, c, host = ctx.matrix, ctx.constraints, ctx.host
    problems: list[Problem] = []

    # pins naming different builds of one framework (torch==2.10.0+cu126, torchvision==0.25.0+cu128)
    for name in candidates:
        named = sorted(f"{n} +{t}" for n, t in c.variants if n == name or COMPANIONS.get(n) == name)
        if len(pinned_variants(c, name)) > 1:
            problems.append(Problem("conflicting-pins", f"the pins name different builds of {name} ({', '.join(named)}): "
                                                        "one environment installs one build"))
    if problems:
        return problems + _fixes(ctx)

    # releases the project allows that publish no CUDA build for the target's CPU (TensorFlow's
    # aarch64 wheels are CPU-only; torch's aarch64 CUDA wheels start later than its x86_64 ones)
    for name in candidates:
        if candidates[name]:
            continue
        problem = _platform_problem(ctx, name)
        if problem is not None:
            problems.append(problem)
    if problems:
        return problems + _fixes(ctx)

    # the package the project names carries none of the releases it allows (tensorflow-gpu stops at 2.11.0)
    for name in candidates:
        package = package_for(c, name)
        if candidates[name] or package is None:
            continue
        spec = c.spec(name)
        carried = sorted({b.version for b in ctx_builds(ctx, name) if package in b.packages and b.yanked is None},
                         key=Version)
        allowed = [b for b in ctx_builds(ctx, name) if spec is None or specifier_contains(spec, b.version)]
        if allowed and not any(package in b.packages for b in allowed):
            span = f"{carried[0]} .. {carried[-1]}" if carried else "none"
            problems.append(Problem("package-lacks-release",
                                    f"{package} {_spec_text(spec) if spec else ''}".rstrip() + f": no {name} release "
                                    f"the project allows is published as {package} (its GPU builds there: {name} "
                                    f"{span}); later releases are the {name} package itself",
                                    fix=f"pin {package}<={carried[-1]}, or write {name} instead of {package}"
                                    if carried else f"write {name} instead of {package}"))
    if problems:
        return problems + _fixes(ctx)

    # the framework index serves none of the builds the project allows (PyPI has no torch 2.10.0+cu126)
    if c.framework_index is not None:
        for name in candidates:
            spec, tags = c.spec(name), pinned_variants(c, name)
            allowed = [b for b in ctx_builds(ctx, name) if (spec is None or specifier_contains(spec, b.version))
                       and all(b.variant == tag for tag in tags) and _companion_ok(b, c)
                       and (c.cuda is None or any(specifier_contains(c.cuda, xy) for xy in b.cuda))]
            if not allowed or any(served_build(b, c.framework_index) for b in allowed):
                continue
            versions = {b.version for b in allowed}
            served = [f"{s.version} for CUDA {s.cuda[0]}" for b in ctx_builds(ctx, name) if b.version in versions
                      and (s := served_build(b, c.framework_index)) is not None]
            where = "; ".join(f"{b.version} for CUDA {b.cuda[0]} from {b.index_url}" for b in allowed[:3])
            has = f"; it serves {', '.join(served)}" if served else ""
            problems.append(Problem("index-lacks-build",
                                    f"the framework index ({index_text(c.framework_index)}) serves no build of "
                                    f"{_framework_desc(name, c)} that the project allows ({where}){has}"))
        if problems:
            return problems + _fixes(ctx)

    # a companion pin the framework's own metadata excludes (tensorflow 2.15 requires keras < 2.16)
    for name, spec in c.frameworks:
        framework = COMPANIONS.get(name)
        if framework is None or framework not in candidates or candidates[framework]:
            continue
        fw_spec = c.spec(framework)
        releases = [b for b in ctx_builds(ctx, framework) if fw_spec is None or specifier_contains(fw_spec, b.version)]
        ranges = sorted({b.companion(name) for b in releases if b.companion(name)})
        if ranges:
            shown = "; ".join(ranges[:3]) + ("; …" if len(ranges) > 3 else "")
            problems.append(Problem("companion-clash",
                                    f"{_framework_desc(framework, c)} requires {name} {shown} (its published metadata); "
                                    f"{name} {_spec_text(spec)} admits none of it"))
        elif releases:  # torch 2.12 with torchaudio: no torchaudio release pairs with it at all
            paired = sorted({b.version for b in ctx_builds(ctx, framework) if b.companion(name)}, key=Version)
            known = f"; {name} pairs with {framework} {paired[0]} .. {paired[-1]}" if paired else ""
            problems.append(Problem("companion-missing",
                                    f"{_framework_desc(framework, c)} has no {name} release that pairs with it{known}"))
    if problems:
        return problems + _fixes(ctx)

    # flavor 'wheels' needs a build that brings its own CUDA libraries
    if c.flavor == "wheels":
        for name, builds in candidates.items():
            if builds:
                continue
            spec = c.spec(name)
            matching = [b for b in ctx_builds(ctx, name) if spec is None or specifier_contains(spec, b.version)]
            if matching:
                why = next((b.caveat for b in matching if b.caveat), "")
                problems.append(Problem("flavor-unavailable",
                                        f"{_framework_desc(name, c)} has no build that brings its own CUDA libraries, "
                                        f"which flavor 'wheels' needs" + (f"; {why}" if why else "")))
        if problems:
            return problems + _fixes(ctx)

    # Python
    if c.python is not None:
        for name, builds in candidates.items():
            pythons = {p for b in builds for p in b.python}
            if not any(specifier_contains(c.python, p) for p in pythons):
                problems.append(Problem("python-unavailable",
                                        f"{_framework_desc(name, c)} publishes Linux wheels for Python {_fmt_python(pythons)}, "
                                        f"not Python {_spec_text(c.python)}"))
        if not candidates:
            pythons = runtime_pythons(m)
            if not any(specifier_contains(c.python, p) for p in pythons):
                problems.append(Problem("python-unavailable", f"without a framework, the image gets Python "
                                                              f"{_fmt_python(pythons)}, not Python {_spec_text(c.python)}"))
        if problems:
            return problems + _fixes(ctx)
        candidates = {n: [b for b in bs if any(specifier_contains(c.python, p) for p in b.python)] for n, bs in candidates.items()}
    # the Python an nvidia/cuda image gets comes from uv, or below uv's downloads from the OS's own
    # archive (wheels bring python:X.Y-slim with their own, unless the flavor asks for an nvidia/cuda image)
    admitted = {p for bs in candidates.values() for b in bs for p in b.python
                if c.python is None or specifier_contains(c.python, p)}
    wheels_possible = c.flavor not in ("runtime", "devel") and all(
        any(b.brings_own_cuda for b in bs) for bs in candidates.values())
    from_apt = {p: [o.name for o in m.os_releases if p in o.python] for p in admitted}
    if admitted and not any(uv_installs(p) or from_apt[p] for p in admitted) and not wheels_possible:
        archives = "; ".join(f"{o.name}'s archive has Python {_fmt_python(o.python)}" for o in m.os_releases if o.python)
        uv = (f"uv installs its Python, and uv's downloads start at {UV_LOWEST_PYTHON}"
              + (f"; below that only an Ubuntu archive can ({archives})" if archives else ""))
        if c.python is not None:
            text = f"Python {_spec_text(c.python)} cannot be installed in an nvidia/cuda image: {uv}"
        else:
            text = (f"{', '.join(_framework_desc(n, c) for n in candidates)} runs on Python {_fmt_python(admitted)} "
                    f"only, which an nvidia/cuda image cannot get: {uv}")
        problems.append(Problem("python-uv", text))
        return problems + _fixes(ctx)
    if admitted and all(_py_key(p) < _py_key(UV_OLDEST_PYTHON) for p in admitted):  # python:2.7-slim for wheels
        problems.append(Problem("python-uv", f"Python {_fmt_python(admitted)} cannot be locked or installed: uv, which "
                                             f"pins the lock and makes the image's environment, works with Python "
                                             f"{UV_OLDEST_PYTHON} and newer only"))
        return problems + _fixes(ctx)

    # a CUDA the frameworks share
    if len(candidates) > 1 and not _cuda_candidates(ctx, candidates):
        detail = "; ".join(f"{_framework_desc(n, c)} for CUDA {_cuda_list(bs)}" for n, bs in candidates.items())
        problems.append(Problem("no-common-cuda", f"the frameworks share no CUDA version: {detail}"))
        return problems + _fixes(ctx)

    xys = _cuda_candidates(ctx, candidates)
    if c.cuda is not None:
        allowed = [xy for xy in xys if specifier_contains(c.cuda, xy)]
        if not allowed:
            what = "the frameworks are built for" if candidates else "with an nvidia/cuda image in the matrix"
            problems.append(Problem("cuda-constraint", f"CUDA {c.cuda} admits none of the CUDA versions {what} "
                                                        f"({_fmt_versions(xys)})"))
            return problems + _fixes(ctx)
        xys = allowed

    for g in host.gpus:
        toolkit_ok = [xy for xy in xys if gpu_rules.toolkit_runs_on(m, xy, g.compute_capability, ptx_jit=_ptx_jit(ctx, xy))]
        if not toolkit_ok:
            ranges = {xy: gpu_rules.toolkit_range(m, xy) for xy in xys}
            supporting = [xy for xy in m.cuda_minors if gpu_rules.toolkit_runs_on(m, xy, g.compute_capability, ptx_jit=True)]
            need = (f"CUDA {supporting[0]}–{supporting[-1]} run on it" if len(supporting) > 1
                    else f"only CUDA {supporting[0]} runs on it" if supporting else "no CUDA in the matrix runs on it")
            what = ", ".join(f"{xy} (sm_{r[0].replace('.', '')}–sm_{r[1].replace('.', '')})" for xy, r in ranges.items() if r)
            problems.append(Problem("gpu-unsupported-by-cuda",
                                    f"{g.label} cannot run the libraries of CUDA {_fmt_versions(xys)} ({what}); {need}"))
    if problems:
        return problems + _fixes(ctx)
    xys = [xy for xy in xys if _toolkit_ok(ctx, xy)]

    if host.driver is not None:
        runnable = [xy for xy in xys if _mode_for(ctx, xy)[0]]
        if not runnable:
            support = drv.driver_support(m, host.driver)
            wanted = "; ".join(f"{_framework_desc(n, c)} is built for CUDA {_cuda_list(bs)}" for n, bs in candidates.items()) \
                or f"the CUDA versions allowed need more ({_fmt_versions(xys)})"
            if c.cuda is not None:
                wanted += f"; of those, CUDA {_spec_text(c.cuda)} (as configured) leaves {_fmt_versions(xys)}"
            problems.append(Problem("driver-too-old", f"driver {host.driver} supports {support.cuda_text}; {wanted}"))
            return problems + _fixes(ctx)
        xys = runnable

    if host.gpus:
        for name, builds in candidates.items():
            usable = [b for b in builds if any(xy in b.cuda for xy in xys)]
            failing = [g for g in host.gpus
                       if not any(_gpu_ok_for_build(replace(ctx, host=Host(host.driver, (g,))), b, _ptx_jit(ctx, xy))
                                  for b in usable for xy in b.cuda if xy in xys)]
            for g in failing:
                sms = sorted({s for b in usable for s in b.sass}, key=numeric_key)
                with_gpu = [b for b in ctx_builds(ctx, name)
                            if gpu_rules.build_runs_on(b.sass, b.ptx, g.compute_capability, ptx_jit=True,
                                                       ptx_unusable_on=b.ptx_unusable_on)]
                newest = f"; the newest {name} build that includes it is {with_gpu[0].label}" if with_gpu else \
                    f"; no {name} build in the matrix includes it"
                ptx_only = [b for b in usable if gpu_rules.build_runs_on(b.sass, b.ptx, g.compute_capability, ptx_jit=True,
                                                                         ptx_unusable_on=b.ptx_unusable_on)]
                ptx_fails = [b for b in usable if g.compute_capability in b.ptx_unusable_on
                             and gpu_rules.only_through_ptx(b.sass, b.ptx, g.compute_capability)]
                why = (" (only its PTX covers it, and PTX cannot be JIT-compiled under minor-version compatibility)"
                       if ptx_only else f" ({ptx_fails_text(ptx_fails[0], g.compute_capability)})" if ptx_fails else "")
                problems.append(Problem("gpu-unsupported-by-build",
                                        f"{g.label} is not in the SM list of {_framework_desc(name, c)} for CUDA "
                                        f"{_fmt_versions(xys)} (built for {', '.join('sm_' + s.replace('.', '') for s in sms) or 'unknown'})"
                                        f"{why}{newest}"))
                # the route is said only where every build the project allows has it (TensorFlow 1.x):
                # a project that also admits TensorFlow 2 is not pointed at NVIDIA's TF1
                routes = {b.gpu_route for b in usable}
                if len(routes) == 1 and "" not in routes and not any(p.code == "gpu-route" for p in problems):
                    problems.append(Problem("gpu-route", routes.pop()))
        if problems:
            return problems + _fixes(ctx)

    # combinations: Python shared by all frameworks, non-conflicting nvidia-* pins
    usable = {n: [b for b in bs if any(xy in b.cuda for xy in xys)] for n, bs in candidates.items()}
    if len(usable) > 1:
        pythons = [{p for b in bs for p in b.python} for bs in usable.values()]
        if not set.intersection(*pythons):
            detail = "; ".join(f"{n} for Python {_fmt_python({p for b in bs for p in b.python})}" for n, bs in usable.items())
            problems.append(Problem("no-common-python", f"the frameworks share no Python version: {detail}"))
            return problems + _fixes(ctx)
        conflict = _first_pin_conflict(ctx, usable, xys)
        if conflict is not None:
            name, a, spec_a, b, spec_b = conflict
            problems.append(Problem("conflicting-pins", f"{a.label} requires {name}{spec_a} but {b.label} requires "
                                                         f"{name}{spec_b}: they cannot share one environment"))
            return problems + _fixes(ctx)

    if c.cudnn is not None and not c.framework_names:
        problems.append(Problem("cudnn-constraint", f"no nvidia/cuda image of the CUDA versions allowed here carries "
                                                    f"cuDNN {c.cudnn}"))
    elif c.cudnn is not None:
        problems.append(Problem("cudnn-constraint", f"cuDNN {c.cudnn} is not what the matching builds use"))
    elif c.flavor == "wheels":
        problems.append(Problem("flavor-constraint", "flavor 'wheels' needs every framework to install its own CUDA "
                                                     "libraries (and no forward compatibility); these builds do not"))
    else:
        # images of those CUDA versions exist, but only on systems cudaenv cannot build on: say which
        from cudaenv.resolver.images import os_init

        systems = sorted({o for xy in xys for image in m.images_for(xy) for o in image.os})
        unbuildable = [o for o in systems if o.startswith("ubuntu") and os_init(m, o) is None]
        why = (f" (their images are on {', '.join(systems)}; cudaenv builds only on an Ubuntu whose own archive has "
               f"an init, tini or dumb-init, which {', '.join(unbuildable)} lack)") if systems and unbuildable else ""
        problems.append(Problem("no-base-image", f"no nvidia/cuda base image in the matrix fits CUDA {_fmt_versions(xys)} "
                                                 f"with the cuDNN these builds need{why}"))
    return problems + _fixes(ctx)


def _first_pin_conflict(ctx: _Context, usable: dict[str, list[Build]], xys: list[str], cap: int = 20000):
    """The best-ranked pin conflict, when every combination sharing a CUDA and a Python conflicts."""
    first = None
    for xy in xys:
        per = [[b for b in builds if xy in b.cuda] for builds in usable.values()]
        if any(not options for options in per):
            continue
        for combo in islice(product(*per), cap):
            chosen = list(combo)
            if not _pythons(ctx, chosen):
                continue
            conflicts = pin_conflicts(chosen)
            if not conflicts:
                return None  # some combination is fine: pins are not what stands in the way
            first = first or conflicts[0]
    return first


def _platform_problem(ctx: _Context, name: str) -> Problem | None:
    """``tensorflow 2.20.0 publishes no CUDA build for aarch64 …`` when the releases the project
    allows have CUDA builds for other CPUs only; with the newest release that has one for this
    CPU, if any does."""
    spec, platform = ctx.constraints.spec(name), ctx.platform
    tags = pinned_variants(ctx.constraints, name)  # torch==2.8.0+cu128: that build of the release only
    allowed = [b for b in every_build(ctx.matrix)[name] if (spec is None or specifier_contains(spec, b.version))
               and all(b.variant == tag for tag in tags)]
    if not allowed or any(b.platform == platform for b in allowed):
        return None
    others = sorted({b.platform for b in allowed})
    versions = sorted({b.version for b in allowed}, key=Version)
    shown = _fmt_release(versions) + "".join(f"+{tag}" for tag in sorted(tags))
    here = [b for b in ctx_builds(ctx, name) if b.yanked is None and b.uninstallable is None]
    same_release = sorted({b.variant for b in here if b.version in versions and b.variant}) if tags else []
    if same_release:  # the release the pin names has other builds for this CPU
        tail = (f"; {name} {_fmt_release(versions)} is built for {platform} as "
                f"{', '.join('+' + v for v in same_release)}")
    elif here:
        newest = max(here, key=lambda b: Version(b.version))
        cudas = ", ".join(sorted({xy for b in here if b.version == newest.version for xy in b.cuda}, key=numeric_key))
        tail = f"; {name} {newest.version} does (CUDA {cudas}), and so may other releases (`cudaenv matrix show {name}`)"
    else:
        tail = f"; no {name} release in the matrix does"
    return Problem("no-build-for-platform",
                   f"{name} {shown} publishes no CUDA build for {platform} (only for {', '.join(others)}){tail}")


def _fmt_release(versions: list[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]} .. {versions[-1]}"


def ctx_builds(ctx: _Context, name: str) -> tuple[Build, ...]:
    """``name``'s builds for the target's CPU architecture."""
    return framework_builds(ctx.matrix, ctx.platform)[name]


def _fixes(ctx: _Context) -> list[Problem]:
    """What would make a stack exist: one relaxation at a time, each checked by resolving again."""
    m, c, host = ctx.matrix, ctx.constraints, ctx.host
    fixes: list[Problem] = []

    if host.driver is not None:
        needed = smallest_driver(m, [c], host)
        if needed is not None:
            fixes.append(_driver_fix(needed))
    if c.python is not None:
        relaxed = resolve(m, replace(c, python=None), host, explain=False)
        if relaxed.ok:
            pythons = sorted({s.python for s in relaxed.alternatives}, key=_py_key)
            fixes.append(Problem("fix-python", f"use Python {_fmt_python(pythons)} instead of {_spec_text(c.python)}",
                                 fix=f"set python to {relaxed.stack.python}"))
    for name, spec in c.frameworks:
        # the pin goes with the build it named (+cu126), and a companion's framework stays in the project
        relaxed_c = replace(c, frameworks=tuple((n, s) for n, s in c.frameworks if n != name),
                            variants=tuple((n, t) for n, t in c.variants if n != name))
        if name in FRAMEWORKS:
            relaxed_c = replace(relaxed_c, frameworks=relaxed_c.frameworks + ((name, SpecifierSet()),))
        elif COMPANIONS[name] not in relaxed_c.framework_names:
            relaxed_c = replace(relaxed_c, frameworks=relaxed_c.frameworks + ((COMPANIONS[name], SpecifierSet()),))
        relaxed = resolve(m, relaxed_c, host, explain=False)
        if relaxed.ok:
            framework = name if name in FRAMEWORKS else COMPANIONS[name]
            got = relaxed.stack.framework(name)
            nearest = _nearest_fitting(ctx, relaxed_c, name, spec) if name in FRAMEWORKS else None
            pin = _spec_text(spec) + "".join(f"+{t}" for n, t in c.variants if n == name)  # as the user wrote it
            pin = pin if pin.startswith("(") else f"({pin})"
            if got is None:  # a companion the relaxed stack leaves out (torchvision): name the framework release
                got = relaxed.stack.framework(framework)
                if any(b.version == got and b.companion(name) for b in ctx_builds(ctx, framework)):
                    fixes.append(Problem("fix-relax-pin", f"relax the {name} pin {pin}: {framework} {got} fits "
                                                          f"this host, with the {name} it pairs with",
                                         fix=f"allow the {name} that {framework} {got} pairs with"))
                else:
                    fixes.append(Problem("fix-relax-pin", f"leave {name} out: {framework} {got} fits this host "
                                                          f"without it (no {name} release pairs with it)",
                                         fix=f"remove {name} from the project"))
            elif nearest and nearest != got:  # the smallest move from what the user pinned comes first
                text = (f"relax the {name} pin {pin}: {name} {nearest} fits this host"
                        f"{_jit_only(ctx, relaxed_c, name, nearest)} (newest that fits: {got})")
                fixes.append(Problem("fix-relax-pin", text, fix=f"allow {name} {nearest}"))
            else:
                fixes.append(Problem("fix-relax-pin", f"relax the {name} pin {pin}: {name} {got} fits this host"
                                                      f"{_jit_only(ctx, relaxed_c, name, got)}",
                                     fix=f"allow {name} {got}"))
    if c.framework_index is not None:
        relaxed = resolve(m, replace(c, framework_index=None), host, explain=False)
        if relaxed.ok and relaxed.stack.index_urls:
            own = relaxed.stack.index_urls[0]
            fits = ", ".join(f"{n} {v}" for n, v in relaxed.stack.frameworks)
            fixes.append(Problem("fix-framework-index",
                                 f"use a framework index that serves {fits} for CUDA {relaxed.stack.cuda}: {own} "
                                 f"(or a mirror of it, with [build] framework_index_mirrors = \"{own}\")",
                                 fix=f"point [build] framework_index at {own}"))
    for field_name in ("cuda", "cudnn"):
        if getattr(c, field_name) is not None:
            relaxed = resolve(m, replace(c, **{field_name: None}), host, explain=False)
            if relaxed.ok:
                value = relaxed.stack.cuda if field_name == "cuda" else relaxed.stack.cudnn
                if value is None:  # the stack that fits carries no cuDNN at all
                    series = _series_fix(ctx, c.cudnn)
                    if series is not None:
                        fixes.append(series)
                    fixes.append(Problem(f"fix-{field_name}", f"drop the {field_name} constraint ({getattr(c, field_name)}): "
                                                              f"CUDA {relaxed.stack.cuda} without cuDNN fits",
                                         fix=f"remove {field_name}"))
                    continue
                # where the build that fits comes from another index (PyTorch's whl/cu111), say which
                source = (f" ({', '.join(f'{n} {v}' for n, v in relaxed.stack.frameworks)} from "
                          f"{relaxed.stack.index_urls[0]})" if field_name == "cuda" and relaxed.stack.index_urls
                          and relaxed.stack.index_urls[0] != PYPI_INDEX else "")
                fixes.append(Problem(f"fix-{field_name}", f"relax the {field_name} constraint ({getattr(c, field_name)}): "
                                                          f"{field_name} {value} fits{source}", fix=f"allow {field_name} {value}"))
    if c.flavor != "auto":
        relaxed = resolve(m, replace(c, flavor="auto"), host, explain=False)
        if relaxed.ok:
            fixes.append(Problem("fix-flavor", f"flavor {c.flavor!r} cannot work here; flavor {relaxed.stack.flavor!r} does",
                                 fix=f"set flavor to {relaxed.stack.flavor}"))
    return fixes


def _series_fix(ctx: _Context, spec: SpecifierSet) -> Problem | None:
    """For ``cudnn = "8.0.2.39"`` that no image carries any more: the same major.minor series, when
    an image carries one of its builds (the cuDNN ABI holds within a series' builds)."""
    exact = [clause.version for clause in spec if clause.operator == "==" and not clause.version.endswith(".*")]
    if len(exact) != 1 or len(exact) != len(spec) or len(Version(exact[0]).release) <= 2:
        return None
    series = major_minor(exact[0])
    relaxed = resolve(ctx.matrix, replace(ctx.constraints, cudnn=SpecifierSet(f"=={series}")), ctx.host, explain=False)
    if not relaxed.ok or relaxed.stack.cudnn_version is None:
        return None
    return Problem("fix-cudnn", f"relax the cudnn constraint ({_spec_text(spec)}) to its series {series}: cudnn "
                                f"{relaxed.stack.cudnn_version} fits", fix=f"allow cudnn {series}")


def _jit_only(ctx: _Context, relaxed: Constraints, name: str, version: str) -> str:
    """`` only through PTX JIT`` when the release a fix suggests reaches a target GPU by PTX alone
    (torch 1.5.1 on an A100): a weaker yes than a build with native code, so the fix says so."""
    others = tuple((n, s) for n, s in relaxed.frameworks if n != name)
    trial = resolve(ctx.matrix, replace(relaxed, frameworks=others + ((name, SpecifierSet(f"=={version}")),)),
                    ctx.host, explain=False)
    if trial.ok and any(p.code == "ptx-jit-only" for p in stack_warnings(ctx, trial.stack)):
        return " only through PTX JIT"
    return ""


def _nearest_fitting(ctx: _Context, relaxed: Constraints, name: str, spec: SpecifierSet, tries: int = 40) -> str | None:
    """The release of ``name`` closest to what ``spec`` asked for that resolves on this host
    (torch 1.13.1 on an H100 -> 2.0.1, not the newest 2.x)."""
    anchors = [Version(s.version.rstrip(".*")) for s in spec if parse_version(s.version.rstrip(".*"))]
    if not anchors:
        return None
    import bisect

    # a yanked release is never suggested: only an exact pin of it installs, and the user asked for another
    known = sorted({b.version for b in ctx_builds(ctx, name) if b.yanked is None}, key=Version)
    where = bisect.bisect_left([Version(v) for v in known], anchors[0])  # the pin's place among the releases

    def distance(version: str) -> tuple:
        """Releases away from the pin (1.13.1 -> 2.0.0 is one step, 2.13.0 many); newer first on a tie."""
        index = known.index(version)
        steps = where - index if index < where else index - where + 1
        return steps, -index

    others = tuple((n, s) for n, s in relaxed.frameworks if n != name)
    for version in sorted(known, key=distance)[:tries]:
        trial = replace(relaxed, frameworks=others + ((name, SpecifierSet(f"=={version}")),))
        if resolve(ctx.matrix, trial, ctx.host, explain=False).ok:
            return version
    return None


def _driver_fix(needed: str) -> Problem:
    return Problem("fix-driver", f"upgrade the driver to {driver_wording(needed)}",
                   fix=f"upgrade the NVIDIA driver to {driver_wording(needed)}")


def driver_wording(driver: str) -> str:
    """``535.54.03`` -> ``>= 535.54.03``; a bare branch ``615`` -> ``branch R615 or newer``."""
    return f">= {driver}" if "." in driver else f"branch R{driver} or newer"


def driver_candidates(matrix: Matrix) -> list[str]:
    """Every driver version at which what the matrix allows changes: native minimums and floors."""
    values = {r.min_driver for r in matrix.cuda_releases if r.min_driver}
    values |= {m.minor_version_floor for m in matrix.cuda_majors}
    values |= {str(b) for xy in matrix.cuda_minors if (b := drv.native_min_branch(matrix, xy)) is not None}
    return sorted(values, key=numeric_key)


def smallest_driver(matrix: Matrix, projects: list[Constraints], host: Host) -> str | None:
    """The lowest driver above the host's with which every project has a stack and every GPU
    stays supported by the driver branch."""
    current = numeric_key(host.driver) if host.driver else (0,)
    pending = list(dict.fromkeys(projects))  # each distinct constraint set once
    for candidate in driver_candidates(matrix):
        if numeric_key(candidate) <= current:
            continue
        trial = replace(host, driver=candidate)
        if host_problems(matrix, trial):
            continue
        # incremental: the set that failed the last candidate is tried first, so a driver that is
        # still too old is usually rejected after one resolution instead of one per project
        for index, constraints in enumerate(pending):
            if not resolve(matrix, constraints, trial, explain=False).ok:
                pending.insert(0, pending.pop(index))
                break
        else:
            return candidate
    return None
