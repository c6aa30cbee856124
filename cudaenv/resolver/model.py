"""Values the resolver takes and returns. Frozen, plain, and JSON-ready through ``as_dict``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet

FRAMEWORKS = ("torch", "tensorflow", "jax", "mxnet")
_PACKAGE_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?")  # PEP 508 names
COMPANIONS = {"torchvision": "torch", "torchaudio": "torch", "keras": "tensorflow", "jaxlib": "jax"}
# Companions that are packages of their own, not dependencies of their framework: installed only when
# the project names them (each costs image size, and one without a wheel for the stack's Python
# breaks the lock). keras and jaxlib come with their framework whatever the project says.
ADD_ONS = ("torchvision", "torchaudio")
# PyPI's simple index: the "own index" of a framework build that PyPI serves (``Constraints.framework_index``)
PYPI_INDEX = "https://pypi.org/simple"
PYPI = "pypi"
FLAVORS = ("auto", "wheels", "runtime", "devel")
# The CPU architecture a target has when nothing says otherwise: no --arch / [target] arch, and no
# GPU that only comes with an Arm host (Grace superchips)
DEFAULT_ARCH = "x86_64"
ARCHES = ("x86_64", "aarch64")  # the CPU architectures framework wheels and nvidia/cuda images exist for
# other spellings of them: Docker/Go's and Apple's (arm64, amd64)
ARCH_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "armv8": "aarch64"}


DEVICES = ("cuda", "cpu")  # what a stack runs its frameworks on (Stack.device)

OCI_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}  # the OCI / Go spelling of each, as image platforms say it


def arch_name(value: str) -> str | None:
    """``arm64`` -> ``aarch64``, ``x86_64`` -> ``x86_64``; None for anything else (ppc64le, i386)."""
    value = value.strip().lower()
    value = ARCH_ALIASES.get(value, value)
    return value if value in ARCHES else None


@dataclass(frozen=True)
class Constraints:
    """What a project asks for. Every field may be left open."""

    python: SpecifierSet | None = None
    frameworks: tuple[tuple[str, SpecifierSet], ...] = ()  # ("torch", >=2.4) and companions ("torchvision", ==0.21.0)
    cuda: SpecifierSet | None = None
    cudnn: SpecifierSet | None = None
    flavor: str = "auto"
    os: str | None = None  # nvidia/cuda OS suffix for runtime/devel images, e.g. "ubuntu22.04"
    # build variants a pin names by its local version (torch==2.12.1+cu129 -> ("torch", "cu129")):
    # such a build must exist, or the pin is bad input
    variants: tuple[tuple[str, str], ...] = ()
    # which framework builds the framework index serves: None, every build from its own index
    # (download.pytorch.org/whl/cuXYZ); PYPI, the builds PyPI serves (one CUDA per torch release); or
    # one own-index URL, that index's builds only. Builds that come from no index are unaffected.
    framework_index: str | None = None
    # the package a project installs a framework as, where it is not the framework's name
    # (("tensorflow", "tensorflow-gpu")): only builds published under that package, installed by it
    packages: tuple[tuple[str, str], ...] = ()

    def spec(self, name: str) -> SpecifierSet | None:
        return next((s for n, s in self.frameworks if n == name), None)

    def merged(self, override: "Constraints") -> "Constraints":
        """These constraints with ``override``'s set fields on top (flags over a config file)."""
        names = {n for n, _ in override.frameworks}
        return Constraints(
            python=override.python if override.python is not None else self.python,
            frameworks=tuple((n, s) for n, s in self.frameworks if n not in names) + override.frameworks,
            cuda=override.cuda if override.cuda is not None else self.cuda,
            cudnn=override.cudnn if override.cudnn is not None else self.cudnn,
            flavor=override.flavor if override.flavor != "auto" else self.flavor,
            os=override.os or self.os,
            variants=tuple((n, v) for n, v in self.variants if n not in names) + override.variants,
            framework_index=override.framework_index or self.framework_index,
            packages=override.packages or self.packages,
        )

    @property
    def framework_names(self) -> tuple[str, ...]:
        names = {n for n, _ in self.frameworks if n in FRAMEWORKS}
        names |= {COMPANIONS[n] for n, _ in self.frameworks if n in COMPANIONS}
        return tuple(f for f in FRAMEWORKS if f in names)


@dataclass(frozen=True)
class TargetGpu:
    """One GPU of the target host: from a model name, or just a compute capability."""

    compute_capability: str
    name: str | None = None
    architecture: str | None = None
    datacenter: bool = False
    host_arch: str | None = None  # the CPU architecture of the hosts it comes in; None: not known
    l4t: bool = False  # a Jetson module: CUDA from Jetson Linux, not the server builds cudaenv uses

    @property
    def label(self) -> str:
        sm = "sm_" + self.compute_capability.replace(".", "")
        return f"{self.name} ({sm})" if self.name else sm


@dataclass(frozen=True)
class Host:
    """The target host. Unknown parts (no driver, no GPUs) are resolved around, not guessed."""

    driver: str | None = None
    gpus: tuple[TargetGpu, ...] = ()
    # its CPU architecture as declared (--arch, [target] arch) or detected (uname -m); None: not
    # said, so a Grace GPU's host decides, else DEFAULT_ARCH
    arch: str | None = None
    # declared without a GPU (a project's gpus = "none"): resolved to CPU framework builds only,
    # never a CUDA stack. Not the same as no GPUs known (gpus=()), which is resolved around.
    cpu: bool = False

    @property
    def all_datacenter(self) -> bool:
        return bool(self.gpus) and all(g.datacenter for g in self.gpus)

    @property
    def platform(self) -> str:
        """The CPU architecture the stack is for: what the host says, else what its GPUs imply."""
        if self.arch is not None:
            return self.arch
        implied = {g.host_arch for g in self.gpus if g.host_arch is not None and g.host_arch != DEFAULT_ARCH}
        return implied.pop() if len(implied) == 1 else DEFAULT_ARCH


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    fix: str | None = None

    @property
    def is_fix(self) -> bool:
        """A suggestion ("fix-driver", "fix-python", ...) rather than a reason."""
        return self.code.startswith("fix-")

    def as_dict(self) -> dict:
        data = {"code": self.code, "message": self.message}
        if self.fix:
            data["fix"] = self.fix
        return data


@dataclass(frozen=True)
class Stack:
    """A resolved environment: everything the image and the driver check need."""

    python: str
    cuda: str  # x.y
    cuda_release: str  # x.y.z of the base image / toolkit
    cudnn: str | None  # x.y, e.g. "9.1"
    cudnn_version: str | None  # as precise as the build or image states, e.g. "9.1.0.70"
    frameworks: tuple[tuple[str, str], ...]  # ("torch", "2.6.0"), ("torchvision", "0.21.0"), ...
    requirements: tuple[str, ...]  # pip requirement lines for the framework layer
    index_urls: tuple[str, ...]  # extra wheel indexes (first is the framework build's own)
    find_links: tuple[str, ...]
    flavor: str  # wheels | runtime | devel
    base_image: str  # registry-less reference, e.g. nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
    driver_compatibility: str | None  # native | minor-version | forward; None when the driver is unknown
    min_driver: str | None  # lowest driver that runs this CUDA natively
    min_driver_compat: str | None  # lowest driver through minor-version compatibility (CUDA >= 11)
    compute_capabilities: tuple[str, ...]  # SASS the framework builds carry (intersection), for labels
    brings_own_cuda: bool  # every framework installs its CUDA libraries as wheels
    nvidia_requires: tuple[tuple[str, str], ...] = ()
    # per framework build: (framework, SASS capabilities, PTX capabilities), for checking GPUs later
    gpu_targets: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    # Debian packages that give an nvidia/cuda image a Python uv cannot download (python3.7 and
    # python3-distutils on ubuntu18.04); empty where uv installs the Python or the base has it
    python_packages: tuple[str, ...] = ()
    init: str = "tini"  # what the image's ENTRYPOINT runs: tini, or dumb-init where the OS has no tini (18.04)
    arch: str = DEFAULT_ARCH  # the CPU architecture of the image and every wheel in it (x86_64, aarch64)
    # the frameworks' dependencies that PyPI has only as source for this Python (gast for tensorflow
    # 1.15): the framework layer and the lock let exactly these build
    source_builds: tuple[str, ...] = ()
    # "cuda", or "cpu" for a target without a GPU: CPU framework builds, no CUDA (cuda and
    # cuda_release are None, flavor is "cpu", the base a plain OS image)
    device: str = "cuda"
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def cpu(self) -> bool:
        return self.device == "cpu"

    def framework(self, name: str) -> str | None:
        return next((v for n, v in self.frameworks if n == name), None)

    @classmethod
    def from_dict(cls, data: dict) -> "Stack":
        """The inverse of ``as_dict``, tolerant of absent keys (a lock's TOML has no null).
        Raises KeyError/TypeError/ValueError on what is not a stack (callers turn it into exit 2)."""
        if not isinstance(data, dict):
            raise TypeError(f"a stack is a table, not {type(data).__name__}")
        device = data.get("device") or "cuda"
        if device not in DEVICES:  # it decides whether CUDA is in the image at all
            raise ValueError(f"stack.device must be one of {', '.join(DEVICES)}, got {device!r}")
        for key in ("python", "cuda", "flavor", "base_image"):
            if key == "cuda" and device == "cpu" and data.get(key) is None:
                continue
            if not isinstance(data.get(key), str):
                raise ValueError(f"stack.{key} must be a string, got {data.get(key)!r}")
        for key in ("frameworks", "nvidia_requires", "gpu_targets"):
            if not isinstance(data.get(key) or {}, dict):
                raise ValueError(f"stack.{key} must be a table")
        if not all(isinstance(t, dict) for t in (data.get("gpu_targets") or {}).values()):
            raise ValueError("stack.gpu_targets entries must be tables")
        python_packages = data.get("python_packages") or []
        from cudaenv.core.debian import is_debian_package

        if not isinstance(python_packages, list) or not all(is_debian_package(p) for p in python_packages):
            # they reach the image's apt-get install: Debian package names only
            raise ValueError(f"stack.python_packages must be a list of Debian package names, got {python_packages!r}")
        from cudaenv.matrix.model import INITS

        init = data.get("init") or "tini"
        if init not in INITS:  # it names the ENTRYPOINT's program and an apt package
            raise ValueError(f"stack.init must be one of {', '.join(INITS)}, got {init!r}")
        source_builds = data.get("source_builds") or []
        if not isinstance(source_builds, list) or not all(isinstance(n, str) and _PACKAGE_NAME.fullmatch(n)
                                                          for n in source_builds):
            # they reach uv's --no-binary in the image and the lock: package names only
            raise ValueError(f"stack.source_builds must be a list of package names, got {source_builds!r}")
        arch = data.get("arch") or DEFAULT_ARCH
        if arch not in ARCHES:  # it picks the wheels' platform and the image's
            raise ValueError(f"stack.arch must be one of {', '.join(ARCHES)}, got {arch!r}")
        return cls(
            python=data["python"], cuda=data.get("cuda"), cuda_release=data.get("cuda_release") or data.get("cuda"),
            cudnn=data.get("cudnn"), cudnn_version=data.get("cudnn_version"),
            frameworks=tuple((data.get("frameworks") or {}).items()), requirements=tuple(data.get("requirements", [])),
            index_urls=tuple(data.get("index_urls", [])), find_links=tuple(data.get("find_links", [])),
            flavor=data["flavor"], base_image=data["base_image"], driver_compatibility=data.get("driver_compatibility"),
            min_driver=data.get("min_driver"), min_driver_compat=data.get("min_driver_compat"),
            compute_capabilities=tuple(data.get("compute_capabilities", [])),
            brings_own_cuda=bool(data.get("brings_own_cuda")),
            nvidia_requires=tuple(sorted((data.get("nvidia_requires") or {}).items())),
            gpu_targets=tuple((name, tuple(t.get("sass", [])), tuple(t.get("ptx", [])))
                              for name, t in (data.get("gpu_targets") or {}).items()),
            python_packages=tuple(python_packages), init=init, arch=arch, source_builds=tuple(source_builds),
            device=device,
        )

    def as_dict(self) -> dict:
        return {
            "python": self.python,
            "cuda": self.cuda,
            "cuda_release": self.cuda_release,
            "cudnn": self.cudnn,
            "cudnn_version": self.cudnn_version,
            "frameworks": dict(self.frameworks),
            "requirements": list(self.requirements),
            "index_urls": list(self.index_urls),
            "find_links": list(self.find_links),
            "flavor": self.flavor,
            "base_image": self.base_image,
            "driver_compatibility": self.driver_compatibility,
            "min_driver": self.min_driver,
            "min_driver_compat": self.min_driver_compat,
            "compute_capabilities": list(self.compute_capabilities),
            "brings_own_cuda": self.brings_own_cuda,
            "nvidia_requires": dict(self.nvidia_requires),
            "gpu_targets": {name: {"sass": list(sass), "ptx": list(ptx)} for name, sass, ptx in self.gpu_targets},
            **({"python_packages": list(self.python_packages)} if self.python_packages else {}),
            **({"init": self.init} if self.init != "tini" else {}),
            **({"arch": self.arch} if self.arch != DEFAULT_ARCH else {}),
            **({"source_builds": list(self.source_builds)} if self.source_builds else {}),
            **({"device": self.device} if self.device != "cuda" else {}),
        }


@dataclass(frozen=True)
class Resolution:
    """The answer: the chosen stack (or None), every CUDA that works, and what went wrong."""

    stack: Stack | None
    valid_cuda: tuple[str, ...]
    problems: tuple[Problem, ...]
    alternatives: tuple[Stack, ...] = field(default=(), compare=False)  # every valid stack, best first

    @property
    def ok(self) -> bool:
        return self.stack is not None

    @property
    def reasons(self) -> tuple[str, ...]:
        """The problems' messages without the suggested fixes: why there is no stack."""
        return tuple(p.message for p in self.problems if not p.is_fix)

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "stack": self.stack.as_dict() if self.stack else None,
            "valid_cuda": list(self.valid_cuda),
            "problems": [p.as_dict() for p in self.problems],
        }
