"""The matrix's rows as frozen values: one dataclass per kind of row in ``matrix/*.toml``.

Field names follow the TOML schema (``matrix/README.md``) so a row reads the same in both places.
Versions stay strings in their published spelling; ``cudaenv.versions`` orders them.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet

from cudaenv.versions import major_minor

# package name -> PEP 440 specifier, as sorted pairs so rows stay hashable ("nvidia-cudnn-cu12", "==9.1.0.70")
Requires = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CudaMajor:
    major: int
    minor_version_floor: str
    source: str
    note: str = ""


@dataclass(frozen=True)
class CudaRelease:
    version: str  # x.y.z
    min_compute_capability: str
    max_compute_capability: str
    source: str
    min_driver: str | None = None  # Linux x86_64, native use; None where NVIDIA's table gives no row
    released: str | None = None
    forward_compat_branches: tuple[int, ...] = ()
    note: str = ""

    @property
    def xy(self) -> str:
        return major_minor(self.version)

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


@dataclass(frozen=True)
class DriverBranch:
    branch: int
    max_cuda: str
    architectures: tuple[str, ...]
    source: str
    type: str | None = None
    eol: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Architecture:
    name: str
    compute_capabilities: tuple[str, ...]
    source: str
    note: str = ""


HOST_ARCHES = ("x86_64", "aarch64")


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str
    architecture: str
    datacenter: bool
    source: str
    aliases: tuple[str, ...] = ()
    # the CPU architecture of every host this GPU comes in: Grace superchips (GH200, GB200, GB300,
    # GB10) and Jetson modules only exist with an Arm (aarch64) host
    host_arch: str = "x86_64"
    # its CUDA comes from NVIDIA's Jetson Linux (L4T / JetPack), not the server (SBSA) CUDA that
    # framework wheels and nvidia/cuda images are built for: Jetson modules before Thor
    l4t: bool = False
    note: str = ""


@dataclass(frozen=True)
class CudnnRelease:
    version: str
    cuda: SpecifierSet
    source: str
    min_compute_capability: str | None = None
    max_compute_capability: str | None = None
    note: str = ""


@dataclass(frozen=True)
class CpuBuild:
    """A framework release's CPU-only build (no CUDA library in it): what a target without a GPU
    installs. torch's comes from PyTorch's own CPU index (torch==X+cpu)."""

    index_url: str
    source: str
    platforms: tuple[str, ...] = ("x86_64",)
    python: tuple[str, ...] = ()  # the Pythons it has wheels for; empty: the release's own list
    note: str = ""


@dataclass(frozen=True)
class TorchVariant:
    cuda: str  # x.y
    index_url: str
    compute_capabilities: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()  # compute capabilities whose PTX is embedded (TORCH_CUDA_ARCH_LIST "+PTX")
    cudnn: str | None = None
    # False: no primary source establishes that this build was published (the note says what is
    # missing); the resolver never prefers it over a build that is established
    established: bool = True
    # the CPU architectures this build's wheels are published for (HOST_ARCHES); an aarch64 build
    # whose GPU list differs is a row of its own with the same cuda
    platforms: tuple[str, ...] = ("x86_64",)
    source: str | None = None  # where this build's facts come from, when not the release's own source
    note: str = ""

    @property
    def tag(self) -> str:
        """The local version label and index suffix: ``"12.4"`` -> ``"cu124"``."""
        return "cu" + self.cuda.replace(".", "")


@dataclass(frozen=True)
class YankedCompanion:
    """A torchvision/torchaudio release PyPI yanked that was made for this torch release (PEP 592):
    installable only by its exact pin, and only with the torch build its metadata requires."""

    package: str  # "torchvision"
    version: str  # "0.15.0"
    reason: str  # PyPI's reason, "" when it gives none
    source: str
    variant: str | None = None  # the torch build its Requires-Dist names by local version ("cu117")


@dataclass(frozen=True)
class TorchRelease:
    version: str
    python: tuple[str, ...]
    source: str
    variants: tuple[TorchVariant, ...] = ()
    released: str | None = None
    torchvision: str | None = None
    # torchvision releases whose published Requires-Dist admits this torch when none pins it exactly
    # (torchvision 0.29.1 and 0.29.2 require only torch>=2.14.0): a specifier, with its own source
    torchvision_range: str | None = None
    torchvision_source: str | None = None
    torchaudio: str | None = None
    pypi_cuda: str | None = None
    # the platforms whose PyPI wheel is that CUDA build (before 2.11 PyPI's aarch64 torch was CPU-only)
    pypi_platforms: tuple[str, ...] = ("x86_64",)
    pypi_requires: Requires = ()
    pypi_source: str | None = None
    yanked: str | None = None  # PEP 592: yanked on PyPI, with PyPI's reason ("" when none is given)
    yanked_companions: tuple[YankedCompanion, ...] = ()
    source_builds: tuple[str, ...] = ()  # see SOURCE_BUILDS below
    note: str = ""
    cpu: tuple[CpuBuild, ...] = ()  # [[release.cpu]]: its CPU-only builds, where a source shows them


@dataclass(frozen=True)
class TensorflowRelease:
    version: str
    python: tuple[str, ...]
    cuda: str
    cudnn: str
    source: str
    keras: str | None = None
    compute_capabilities: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    and_cuda: Requires = ()
    # why the `tensorflow[and-cuda]` extra cannot be installed from PyPI, with its sources; the
    # release is then installed as plain tensorflow on the CUDA + cuDNN image
    and_cuda_uninstallable: str | None = None
    # compute capabilities where the embedded PTX is reported not to run (TensorFlow's own kernels
    # fail to load with CUDA_ERROR_INVALID_PTX on sm_120): the release runs there only from SASS
    ptx_unusable_on: tuple[str, ...] = ()
    ptx_unusable_source: str | None = None
    pypi_source: str | None = None
    yanked: str | None = None
    # the PyPI package of this release's CUDA build, where plain `tensorflow` was CPU-only (before
    # 1.15, and 2.0): "tensorflow-gpu"; the row's python/cuda/cudnn/capabilities describe that wheel
    gpu_package: str | None = None
    # what runs this release's code on a GPU its builds have no native code for (TensorFlow 1.x on
    # Ampere and newer: NVIDIA's nvidia-tensorflow), said whenever such a GPU is the target
    gpu_route: str | None = None
    gpu_route_source: str | None = None
    # another PyPI package that is the same GPU build (tensorflow-gpu 1.15.0 and 2.1-2.11, beside the
    # tensorflow that is the GPU build itself): a project that names it gets it
    gpu_alias: str | None = None
    source_builds: tuple[str, ...] = ()  # see SOURCE_BUILDS below
    # the CPU architectures whose wheel of this release is the CUDA build (TensorFlow's aarch64
    # wheels are CPU-only: its [and-cuda] extra is x86_64-only)
    platforms: tuple[str, ...] = ("x86_64",)
    note: str = ""


@dataclass(frozen=True)
class JaxVariant:
    extra: str
    cuda: SpecifierSet
    packages: tuple[str, ...] = ()
    cudnn: SpecifierSet | None = None
    index_url: str | None = None
    compute_capabilities: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    requires: Requires = ()
    # jax declares no such extra (0.2.0-0.2.10): the CUDA jaxlib is installed by its exact pin in
    # ``packages`` from the find-links page, beside plain jax
    no_extra: bool = False
    platforms: tuple[str, ...] = ("x86_64",)  # where its CUDA wheels (jaxlib, the plugins) are published
    note: str = ""


@dataclass(frozen=True)
class JaxRelease:
    version: str
    jaxlib: str
    python: tuple[str, ...]
    source: str
    variants: tuple[JaxVariant, ...] = ()
    released: str | None = None
    pypi_source: str | None = None
    yanked: str | None = None
    # why no CUDA extra of this release can be installed (jax 0.3.18 pins a jaxlib never published):
    # the release is never chosen, and a pin of it is answered with this
    uninstallable: str | None = None
    source_builds: tuple[str, ...] = ()  # see SOURCE_BUILDS below
    note: str = ""


# SOURCE_BUILDS: dependencies of a release that PyPI publishes only as source distributions for the
# Pythons it runs on (tensorflow 1.15 pins gast==0.2.2, a tarball): the framework layer, and the lock,
# let exactly these build (all pure Python), everything else stays wheels only. Each entry is a
# package name with an optional PEP 508 marker ("termcolor; python_version < '3.7'").


@dataclass(frozen=True)
class MxnetVariant:
    package: str
    cuda: str
    cudnn: str | None = None
    python: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class MxnetRelease:
    version: str
    python: tuple[str, ...]
    source: str
    variants: tuple[MxnetVariant, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class ImageCudnn:
    tag: str
    version: str
    os: tuple[str, ...]


@dataclass(frozen=True)
class BaseImage:
    cuda: str
    repository: str
    tag_version: str
    os: tuple[str, ...]
    source: str
    cudnn: tuple[ImageCudnn, ...] = ()
    removed: bool = False  # NVIDIA deleted these tags from Docker Hub (EOL cleanup)
    note: str = ""
    superseded: bool = False  # the tags now carry a later release's contents (rebuilt in place): history only
    # the OSes whose tags also hold an arm64 (SBSA) image: the tags are multi-platform since 2021-07;
    # empty: x86_64 only. The cuDNN tags' arm64 OSes, where fewer (None: the same as aarch64_os)
    aarch64_os: tuple[str, ...] = ()
    aarch64_cudnn_os: tuple[str, ...] | None = None

    @property
    def platforms(self) -> tuple[str, ...]:
        return ("x86_64", "aarch64") if self.aarch64_os else ("x86_64",)

    def os_for(self, platform: str) -> tuple[str, ...]:
        """The OSes its base/runtime/devel tags exist for on ``platform``."""
        return self.os if platform == "x86_64" else tuple(o for o in self.os if o in self.aarch64_os)

    def cudnn_os_for(self, offered: "ImageCudnn", platform: str) -> tuple[str, ...]:
        """The OSes a cuDNN tag exists for on ``platform``."""
        if platform == "x86_64":
            return offered.os
        arm = self.aarch64_os if self.aarch64_cudnn_os is None else self.aarch64_cudnn_os
        return tuple(o for o in offered.os if o in arm)

    def tag(self, flavor: str, os_name: str, cudnn_tag: str | None = None) -> str:
        """``flavor`` is base/runtime/devel; with ``cudnn_tag`` the cuDNN-flavoured spelling."""
        if cudnn_tag:
            return f"{self.tag_version}-{cudnn_tag}-{flavor}-{os_name}"
        return f"{self.tag_version}-{flavor}-{os_name}"


INITS = ("tini", "dumb-init")  # the init programs an image's ENTRYPOINT may run (/usr/bin/<init> --)


@dataclass(frozen=True)
class OsRelease:
    """An Ubuntu release nvidia/cuda images are built on, and what its own apt archive gives an image:
    the init process, and the CPython versions uv cannot download (3.6, 3.7)."""

    name: str  # the tag spelling: "ubuntu18.04"
    source: str
    # the init the image's ENTRYPOINT runs, as the archive's package of that name (/usr/bin/<init>):
    # tini from Ubuntu 20.04 on, dumb-init on 18.04 (no tini there); None: the archive has neither
    init: str | None = None
    python: tuple[str, ...] = ()  # X.Y installable as the package pythonX.Y (only those uv cannot download)
    packages: tuple[str, ...] = ()  # installed beside pythonX.Y so uv can use it (python3-distutils)
    # the X.Y.Z the archive's pythonX.Y is (3.6.9): what the lock tells uv, since a bare "3.6" is 3.6.0
    # to uv and torch 1.6-1.10 require Python >= 3.6.1 / 3.6.2
    python_versions: tuple[str, ...] = ()
    note: str = ""

    def python_version(self, python: str) -> str | None:
        return next((v for v in self.python_versions if v.rsplit(".", 1)[0] == python), None)


_REQUIRES_FIELDS = {"pypi_requires", "and_cuda", "requires"}
_TOML_NAMES = {"variants": "variant", "yanked_companions": "yanked_companion"}  # a dataclass holds many; the TOML spells each [[release.variant]]


def row_as_dict(row) -> dict:
    """A row as plain JSON-ready data, field names as in the TOML files."""
    from dataclasses import fields, is_dataclass

    out: dict = {}
    for f in fields(row):
        value = getattr(row, f.name)
        if f.name == "yanked" and value is not None:
            out["yanked"] = value or True  # the file spells a reasonless yank `yanked = true`
            continue
        if f.name in _REQUIRES_FIELDS:
            value = dict(value)
        elif isinstance(value, SpecifierSet):
            value = str(value)
        elif isinstance(value, tuple):
            value = [row_as_dict(v) if is_dataclass(v) else v for v in value]
        if value is None or (value in ("", [], {}) and f.name != "source"):  # an empty source is still shown
            continue
        if f.name in ("platforms", "pypi_platforms") and value == ["x86_64"]:
            continue  # what an absent key means: the row need not say it
        out[_TOML_NAMES.get(f.name, f.name)] = value
    return out
