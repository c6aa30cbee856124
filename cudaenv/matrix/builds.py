"""Every installable framework build, in one shape, whatever the framework (a view of the matrix).

PyTorch publishes one wheel per CUDA variant, TensorFlow one wheel per release (with an optional
``[and-cuda]`` extra), JAX one release with several CUDA extras, MXNet one package per CUDA. The
resolver compares them all the same way, so the matrix rows are flattened here into ``Build``
values once per loaded matrix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet

from typing import TYPE_CHECKING

from cudaenv.versions import numeric_key, specifier_contains

if TYPE_CHECKING:
    from cudaenv.matrix import Matrix


@dataclass(frozen=True)
class Build:
    framework: str
    version: str
    variant: str  # "cu124", "and-cuda", "cuda12", "mxnet-cu112" — how this build is named
    cuda: tuple[str, ...]  # CUDA x.y this build runs with (one, except JAX's ranges)
    python: frozenset[str]
    sass: tuple[str, ...]  # compute capabilities with native code (empty: not recorded)
    ptx: tuple[str, ...]
    cudnn: str | None  # version the build pins or bundles (None: not recorded, or a range)
    cudnn_range: SpecifierSet | None  # JAX: the cuDNN range the plugin accepts
    requirements: tuple[str, ...]  # pip requirement lines
    companions: tuple[tuple[str, str], ...]  # ("torchvision", "0.21.0"), ("keras", ">=3.5.0")
    index_url: str | None
    find_links: str | None
    pins: tuple[tuple[str, str], ...]  # nvidia-* requirements as declared
    brings_own_cuda: bool  # installs CUDA libraries as wheels (no CUDA toolkit image needed)
    established: bool = True  # False: no primary source shows this build was published (matrix note says why)
    caveat: str = ""  # what a user of this build must know (a warning whenever it is chosen)
    on_pypi: bool = False  # an index build that PyPI also serves (torch: the release's pypi_cuda variant)
    ptx_unusable_on: tuple[str, ...] = ()  # capabilities where its PTX is reported not to run: SASS only there
    ptx_unusable_source: str = ""  # the reports that say so
    # PEP 592: the release was yanked on PyPI (the reason, "" when PyPI gives none). pip and uv
    # install a yanked release only for an exact pin (==X / ===X), so only such a pin chooses it
    yanked: str | None = None
    # why this build cannot be installed at all (jax 0.3.18's extras pin a jaxlib never published)
    uninstallable: str | None = None
    gpu_route: str = ""  # what runs the framework on a GPU this build has no native code for
    # companion releases PyPI yanked that pair with this build: (name, version, reason, needs the
    # build's local version label) — an exact pin of one is answered with this build, with the yank
    # as a warning; one that requires torch==X+cuXYZ cannot come with PyPI's unlabelled wheel
    yanked_companions: tuple[tuple[str, str, str, bool], ...] = ()
    platform: str = "x86_64"  # the CPU architecture of its wheels (one Build per platform it exists for)
    source_builds: tuple[str, ...] = ()  # dependencies PyPI has only as source for it (model.SOURCE_BUILDS)
    # the PyPI packages that install this build, the first as ``requirements`` names it: ("tensorflow",
    # "tensorflow-gpu") where both are the GPU build; empty: the framework's own name only
    packages: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.framework} {self.version} ({self.variant})"

    def companion(self, name: str) -> str | None:
        return next((v for n, v in self.companions if n == name), None)


def _torch(matrix: "Matrix") -> list[Build]:
    out = []
    for release in matrix.torch:
        companions = tuple((n, v) for n, v in (("torchvision", release.torchvision), ("torchaudio", release.torchaudio)) if v)
        # torchvision / torchaudio are packages of their own: the resolver adds them when asked for
        requirements = (f"torch=={release.version}",)
        if not release.torchvision and release.torchvision_range:
            # no torchvision pins this torch exactly; the range PyPI admits is checked like keras's
            companions += (("torchvision", release.torchvision_range),)
        for variant in release.variants:
            for platform in variant.platforms:
                # PyPI's wheel for a platform is this build when the release's PyPI CUDA is this one there
                on_pypi = variant.cuda == release.pypi_cuda and platform in release.pypi_platforms
                out.append(Build(
                    framework="torch", version=release.version, variant=variant.tag, cuda=(variant.cuda,),
                    python=frozenset(release.python), sass=variant.compute_capabilities, ptx=variant.ptx,
                    cudnn=variant.cudnn, cudnn_range=None, requirements=requirements, companions=companions,
                    index_url=variant.index_url, find_links=None, pins=release.pypi_requires if on_pypi else (),
                    brings_own_cuda=True, established=variant.established, on_pypi=on_pypi,
                    yanked=release.yanked, platform=platform, source_builds=release.source_builds,
                    # a yanked companion that requires one build by local version pairs with that build only
                    yanked_companions=tuple((y.package, y.version, y.reason, y.variant is not None)
                                            for y in release.yanked_companions if y.variant in (None, variant.tag)),
                ))
    return out


def _tensorflow(matrix: "Matrix") -> list[Build]:
    out = []
    for release in matrix.tensorflow:
        # an extra that cannot be installed is no build: the release runs as plain tensorflow on the
        # CUDA + cuDNN image, as releases before the extra existed do
        with_cuda = bool(release.and_cuda) and not release.and_cuda_uninstallable
        # before 1.15 (and in 2.0) plain tensorflow was the CPU build: the GPU one is its own package
        name = "tensorflow[and-cuda]" if with_cuda else (release.gpu_package or "tensorflow")
        companions = (("keras", release.keras),) if release.keras else ()
        caveat = (f"tensorflow {release.version} runs as plain tensorflow on the CUDA {release.cuda} + cuDNN "
                  f"{release.cudnn} image: its [and-cuda] extra cannot be installed from PyPI "
                  f"({release.and_cuda_uninstallable})") if release.and_cuda_uninstallable else ""
        out.extend(Build(
            framework="tensorflow", version=release.version, variant="and-cuda" if with_cuda else f"cuda{release.cuda}",
            cuda=(release.cuda,), python=frozenset(release.python), sass=release.compute_capabilities, ptx=release.ptx,
            cudnn=release.cudnn, cudnn_range=None, requirements=(f"{name}=={release.version}",), companions=companions,
            index_url=None, find_links=None, pins=release.and_cuda if with_cuda else (), brings_own_cuda=with_cuda,
            caveat=caveat, ptx_unusable_on=release.ptx_unusable_on, ptx_unusable_source=release.ptx_unusable_source or "",
            yanked=release.yanked, gpu_route=release.gpu_route or "", platform=platform,
            source_builds=release.source_builds,
            packages=(release.gpu_package or "tensorflow",) + ((release.gpu_alias,) if release.gpu_alias else ()),
        ) for platform in release.platforms)
    return out


_JAX_EXTRA_PREFERENCE = ("cuda13", "cuda12", "cuda11", "cuda12_pip", "cuda11_pip", "cuda", "cuda13-local",
                         "cuda13_local", "cuda12_local", "cuda11_local")


def _jax_rank(extra: str) -> int:
    return _JAX_EXTRA_PREFERENCE.index(extra) if extra in _JAX_EXTRA_PREFERENCE else len(_JAX_EXTRA_PREFERENCE)


def _cuda_floor_of_pins(requires) -> tuple[int, ...]:
    """The lowest CUDA x.y a set of ``nvidia-cuda-*`` lower bounds lets pip install: JAX's wheels
    pin ``nvidia-cuda-nvcc-cu12>=12.6.85``, so the environment gets at least 12.6 whatever the
    docs' range says."""
    floor = (0,)
    for name, spec in requires:
        if not name.startswith("nvidia-cuda-"):
            continue
        for clause in spec.split(","):
            clause = clause.strip()
            if clause.startswith((">=", "==")):
                parts = clause.lstrip(">=").split(".")
                if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                    floor = max(floor, (int(parts[0]), int(parts[1])))
    return floor


_EXTRA_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508 extra names


def _jax(matrix: "Matrix") -> list[Build]:
    out = []
    for release in matrix.jax:
        # Several extras are aliases of one build ("cuda", "cuda12", "cuda12_pip"): keep one per
        # (CUDA range, cuDNN range, wheels-or-local, source).
        chosen: dict[tuple, object] = {}
        for variant in sorted(release.variants, key=lambda v: _jax_rank(v.extra)):
            if not variant.no_extra and not _EXTRA_NAME.fullmatch(variant.extra):
                continue  # declared but unreadable (0.2.23's "cuda=11,cudnn=82"): pip cannot install it
            local = "local" in variant.extra or not variant.requires
            key = (str(variant.cuda), str(variant.cudnn), local, variant.index_url)
            chosen.setdefault(key, variant)
        for variant in chosen.values():
            local = "local" in variant.extra or not variant.requires
            floor = (0,) if local else _cuda_floor_of_pins(variant.requires)
            cudas = tuple(xy for xy in matrix.cuda_minors
                          if specifier_contains(variant.cuda, xy) and numeric_key(xy) >= floor)
            if not cudas:
                continue
            # without an extra (0.2.0-0.2.10) the CUDA jaxlib is its own exact pin beside plain jax
            requirements = ((f"jax=={release.version}", *variant.packages) if variant.no_extra
                            else (f"jax[{variant.extra}]=={release.version}",))
            out.extend(Build(
                framework="jax", version=release.version, variant=variant.extra, cuda=cudas,
                python=frozenset(release.python), sass=variant.compute_capabilities, ptx=variant.ptx, cudnn=None,
                cudnn_range=variant.cudnn, requirements=requirements,
                companions=(("jaxlib", release.jaxlib),), index_url=None, find_links=variant.index_url,
                pins=variant.requires, brings_own_cuda=not local, yanked=release.yanked,
                uninstallable=release.uninstallable, platform=platform, source_builds=release.source_builds,
            ) for platform in variant.platforms)
    return out


def _mxnet(matrix: "Matrix") -> list[Build]:
    out = []
    for release in matrix.mxnet:
        for variant in release.variants:
            out.append(Build(
                framework="mxnet", version=release.version, variant=variant.package, cuda=(variant.cuda,),
                python=frozenset(variant.python or release.python), sass=(), ptx=(), cudnn=variant.cudnn,
                cudnn_range=None, requirements=(f"{variant.package}=={release.version}",), companions=(),
                index_url=None, find_links=None, pins=(), brings_own_cuda=False,
            ))
    return out


class _OnPlatform(Mapping):
    """``framework_builds`` for one CPU architecture: each framework's rows filtered on first use
    (the cached matrix decodes a framework's rows only when asked for)."""

    def __init__(self, every, platform: str) -> None:
        self._every, self._platform, self._done = every, platform, {}

    def __getitem__(self, name: str) -> tuple[Build, ...]:
        if name not in self._done:
            self._done[name] = tuple(b for b in self._every[name] if b.platform == self._platform)
        return self._done[name]

    def __iter__(self):
        return iter(self._every)

    def __len__(self) -> int:
        return len(self._every)


def framework_builds(matrix: "Matrix", platform: str = "x86_64") -> "_OnPlatform":
    """The builds per framework whose wheels exist for ``platform`` (x86_64 or aarch64), newest
    version first."""
    memo = matrix.memo
    key = f"resolver.builds.{platform}"
    if key not in memo:
        memo[key] = _OnPlatform(every_build(matrix), platform)
    return memo[key]


def every_build(matrix: "Matrix") -> dict[str, tuple[Build, ...]]:
    """All builds per framework on every platform, newest version first (computed once per loaded
    matrix, and cached with it)."""
    memo = matrix.memo
    if "resolver.builds" not in memo:
        from packaging.version import Version

        def order(build: Build):
            # newest release first; within a release established builds, then the newest CUDA, wheels
            # before local installs
            return (Version(build.version), build.established, numeric_key(build.cuda[-1]), build.brings_own_cuda,
                    "mkl" not in build.variant)

        memo["resolver.builds"] = {
            name: tuple(sorted(rows, key=order, reverse=True))
            for name, rows in (("torch", _torch(matrix)), ("tensorflow", _tensorflow(matrix)),
                               ("jax", _jax(matrix)), ("mxnet", _mxnet(matrix)))
        }
    return memo["resolver.builds"]
