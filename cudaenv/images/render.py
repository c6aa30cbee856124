"""Stack + project build settings -> a Dockerfile, through the Jinja templates in ``templates/``.

Rendering is a pure function of plain data (``build_context``), so the Dockerfile `cudaenv build`
uses is exactly what `cudaenv dockerfile` prints, and golden tests can pin it. Templates run with
``StrictUndefined``: a missing value is a bug, never an empty string in a RUN line.

Every user string that reaches the Dockerfile goes through a filter: ``shquote`` for shell words
(POSIX single-quoting), ``dockerquote`` for ENV/LABEL values (Dockerfile double-quoted strings,
with ``$`` escaped against variable substitution). Package names were already checked against
Debian's grammar when the configuration was read.
"""

from __future__ import annotations

import hashlib
import os
import json
import re
import shlex
from dataclasses import dataclass

from cudaenv import __version__
from cudaenv.core.references import with_registry
from cudaenv.core.resources import templates_dir
from cudaenv.resolver import driver as drv
from cudaenv.resolver.model import OCI_ARCH, Stack

UV_IMAGE = "ghcr.io/astral-sh/uv"
DEFAULT_IGNORES = (".git", ".venv", "venv", "**/__pycache__", "**/*.pyc", ".pytest_cache", ".mypy_cache",
                   ".ipynb_checkpoints")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnsafeValue(ValueError):
    """A value that would end a Dockerfile instruction (a newline or another control character)."""


# Pinned, so an image with Jupyter is as reproducible as the rest of it; bump it with cudaenv.
JUPYTERLAB_VERSION = "4.6.6"


def shquote(value) -> str:
    """POSIX single-quoting for a shell word inside a RUN line. A newline cannot be quoted there:
    the Dockerfile parser ends the instruction at it, whatever the shell would make of it."""
    text = str(value)
    if _CONTROL.search(text):
        raise UnsafeValue(f"refusing to put {text!r} into a Dockerfile: it contains a control character")
    return shlex.quote(text)


def dockerquote(value) -> str:
    """A Dockerfile double-quoted string: backslash, quote, ``$`` and newlines escaped."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    text = text.replace("\r", "").replace("\n", "\\n")
    return f'"{text}"'


def uv_version() -> str:
    """The installed uv's version (the image installs the same one). Read from the name of its
    ``uv-X.Y.Z.dist-info`` directory beside the package, as importlib.metadata would find it, without
    importing importlib.metadata and email (a tenth of `cudaenv dockerfile`); anything unusual
    (no such directory, or several) asks importlib.metadata."""
    import sys

    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "uv")):
            try:
                found = [name for name in os.listdir(entry) if name.startswith("uv-") and name.endswith(".dist-info")]
            except OSError:
                break
            if len(found) == 1:
                return found[0][len("uv-"):-len(".dist-info")]
            break
    from importlib.metadata import version

    return version("uv")


# The NVML brands NVIDIA's own nvidia/cuda images accept for forward compatibility (12.5+ images):
# data-center boards report "nvidia" or "tesla" depending on the driver, vGPU ones the others.
FORWARD_BRANDS = ("unknown", "grid", "tesla", "nvidia", "quadro", "quadrortx", "nvidiartx", "vapps", "vpc", "vcs",
                  "vws", "cloudgaming")


def compat_entrypoint_b64() -> str:
    import base64

    return base64.b64encode((templates_dir() / "compat-entrypoint.sh").read_bytes()).decode()


def nvidia_require_cuda(stack: Stack, forward_branches: tuple[int, ...] = ()) -> str:
    """The image's NVIDIA_REQUIRE_CUDA, from the same rules the resolver uses.

    Space-separated constraints are alternatives (libnvidia-container ORs them; commas AND):
    a driver that runs the CUDA natively; or, for CUDA >= 11, one at or above the major's
    minor-version-compatibility floor; or, when the image carries cuda-compat, a data-center GPU
    on a branch that package supports.
    """
    parts = [f"cuda>={stack.cuda}"]
    if stack.min_driver_compat:
        parts.append(f"driver>={stack.min_driver_compat}")
    for branch in forward_branches:
        parts += [f"brand={brand},driver>={branch},driver<{branch + 1}" for brand in FORWARD_BRANDS]
    return " ".join(parts)


@dataclass(frozen=True)
class BuildSettings:
    """What the image needs beyond the stack: from the project's [build] and [run] tables and the lock."""

    project: str
    base_registry: str = ""
    python_index: str = "https://pypi.org/simple"
    framework_index: str | None = None
    system_packages: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    ca_cert: bool = False  # a CA bundle is passed as the BuildKit secret "cudaenv_ca"
    netrc: bool = False  # index credentials are passed as the BuildKit secret "cudaenv_netrc"
    buildkit: bool = True  # cache mounts and secrets need BuildKit
    lock_hash: str = ""
    # The stack base to start FROM (``cudaenv-base:hash-<content hash>``, see cudaenv.images.stackbase):
    # layers 1-3 prebuilt and shared by identity. None renders them inline (a standalone file).
    stack_base: str | None = None
    stack_base_name: str = ""  # its readable name, for the Dockerfile's comment
    jupyter: bool = False  # JupyterLab in a layer of its own, after the frameworks (shared stack stays shared)
    # [build] build_from_source: the only packages the requirements layer may compile (everything
    # else, in every layer, installs from wheels only), and the GPUs' capabilities for CUDA extensions
    build_from_source: tuple[str, ...] = ()
    cuda_arch_list: tuple[str, ...] = ()
    # what the project's requirement files steer the install with (the lock's record): --find-links
    # (URLs; folders in the project, bind-mounted from the build context), --extra-index-url, and
    # the project's own code, installed from /workspace after the copy
    find_links: tuple[str, ...] = ()
    extra_index_urls: tuple[str, ...] = ()
    own_code: tuple[str, ...] = ()
    # the OCI platform the image is for when the build machine is another ("linux/arm64" on x86_64:
    # cudaenv.images.publish.build_platform); None for a native build. Not part of what an image holds
    # (a stack base's content hash is of the native render): it decides where its steps run
    platform: str | None = None
    # the project's target this image serves ([targets.NAME]; "default" for a single [target]): a
    # label, so `cudaenv images` and `check --image` can say which target an image is for; None for
    # a stack base, which every project and target on its stack shares
    target: str | None = None


LABEL_TARGET = "io.cudaenv.target"  # the project's target an image serves (not on a stack base)
LOCAL_LINKS = "/tmp/cudaenv-find-links"  # where a project's local --find-links folders are mounted


def flavor_reason(stack: Stack) -> str:
    if stack.cpu:
        return "a target without a GPU: CPU-only framework builds, no CUDA library in the image"
    if stack.flavor == "wheels":
        return "every framework brings its own CUDA libraries as wheels, so no CUDA toolkit image is needed"
    if stack.driver_compatibility == drv.FORWARD:
        return "forward compatibility needs NVIDIA's cuda-compat package from the CUDA image's repository"
    if stack.flavor == "devel":
        return "the CUDA toolkit (nvcc, headers) for projects that compile CUDA extensions"
    if not stack.frameworks:
        return "a plain CUDA runtime for a project without a framework"
    if stack.brings_own_cuda:
        return "asked for in cudaenv.toml (the frameworks would also run on a slim Python image)"
    return "a framework loads the system CUDA and cuDNN, which the nvidia/cuda image provides"


def stack_label(stack: Stack) -> str:
    return json.dumps(stack.as_dict(), sort_keys=True, separators=(",", ":"))


def _build_env(stack: Stack, settings: BuildSettings) -> list[tuple[str, str]]:
    """The environment of the step that builds [build] build_from_source packages: on the devel
    flavor (nvcc in the image), CUDA extensions compile for the target GPUs (TORCH_CUDA_ARCH_LIST,
    read by torch.utils.cpp_extension; the builds' own SASS list when no GPU is declared)."""
    if not settings.build_from_source or stack.flavor != "devel":
        return []
    archs = settings.cuda_arch_list or stack.compute_capabilities
    env = [("CUDA_HOME", "/usr/local/cuda")]
    if archs:
        env.append(("TORCH_CUDA_ARCH_LIST", ";".join(sorted(set(archs), key=lambda c: tuple(map(int, c.split(".")))))))
    return env


_CROSS_PLATFORMS = {f"linux/{oci}": arch for arch, oci in OCI_ARCH.items()}  # "linux/arm64" -> "aarch64"


def venv_delta_b64() -> str:
    import base64

    return base64.b64encode((templates_dir() / "venv-delta.py").read_bytes()).decode()


_UBUNTU_TAG = re.compile(r"nvidia/cuda:[^:/]*-ubuntu(?P<release>\d\d\.\d\d)")


def build_os_image(base_image: str) -> str:
    """The image a cross build's build-machine stages start FROM (registry-less): the same OS release
    as the stack's base image, for the build machine's CPU. An nvidia/cuda tag is built FROM
    ``ubuntu:<release>`` (gitlab.com/nvidia/container-images/cuda, dist/<version>/ubuntu2204/base/
    Dockerfile: ``FROM ubuntu:22.04``), a multi-platform image of a few dozen MB, where the
    amd64 half of the CUDA image itself would be GBs that only apt and uv run in; a python:X.Y-slim
    base is multi-platform and small, so it serves itself."""
    match = _UBUNTU_TAG.fullmatch(base_image)
    return f"ubuntu:{match['release']}" if match else base_image


def cross_build(stack: Stack, settings: BuildSettings) -> dict | None:
    """A cross build's plan (templates/layers/cross.j2), or None for a native one.

    An image for another CPU than the build machine's runs its RUN steps under emulation (qemu
    through binfmt_misc), several times slower than natively. Fetching, resolving and unpacking
    does not need the target's CPU, so those steps move to stages FROM the same images for
    $BUILDPLATFORM: apt resolves and downloads the target's packages there, and uv installs the
    target's wheels (``--python-platform``) and compiles their bytecode there; the image only
    installs the .debs and takes the files. Needs BuildKit (``$BUILDPLATFORM``, bind mounts from
    other stages): the classic builder emulates every step, as before.

    The build machine's stages build from source only what the stack itself builds (pure-Python
    sdists of frameworks' dependencies; a wheel for the wrong CPU fails the build there): the
    packages of [build] build_from_source compile in the image, emulated, as they do natively.
    """
    if not settings.platform or not settings.buildkit:
        return None
    if _CROSS_PLATFORMS.get(settings.platform) != stack.arch:
        raise ValueError(f"a build for {settings.platform!r} cannot make an image for a {stack.arch} stack")
    from cudaenv.core.references import check_reference
    from cudaenv.project.wheels import manylinux_platform, no_build_options, requirement_name, uv_python_version

    compiled_here = {requirement_name(name) for name in settings.build_from_source}
    return {
        "os_image": check_reference(with_registry(build_os_image(stack.base_image), settings.base_registry),
                                    "the cross build's OS image"),
        "arch": stack.arch,  # a wheel's platform tag ends with it
        "dpkg_arch": OCI_ARCH[stack.arch],  # Debian's architecture names are the OCI ones (amd64, arm64)
        "python_platform": manylinux_platform(stack),  # as the lock pinned them
        "python_version": uv_python_version(stack),
        "pinned": [pin for pin in settings.pinned if requirement_name(pin) not in compiled_here],
        # with packages left to compile in the image, the build machine installs exactly the other
        # pins (the lock's closure), so nothing there resolves to the ones it may not build
        "no_deps": bool(compiled_here),
        "requirements_build": no_build_options(stack.source_builds),
        "venv_delta_b64": venv_delta_b64(),
    }


def build_context(stack: Stack, settings: BuildSettings, *, forward_branches: tuple[int, ...] = ()) -> dict:
    """Plain data for the templates (no objects, so the render is a pure function of it)."""
    frameworks = ", ".join(f"{n} {v}" for n, v in stack.frameworks) or "none (CUDA runtime)"
    cudnn = f", cuDNN {stack.cudnn_version}" if stack.cudnn_version else ""
    device = "CPU only" if stack.cpu else f"CUDA {stack.cuda}{cudnn}"
    compat_package = (f"cuda-compat-{stack.cuda.replace('.', '-')}"
                      if stack.driver_compatibility == drv.FORWARD else None)
    labels = {
        "io.cudaenv.version": __version__,
        "io.cudaenv.project": settings.project,
        "io.cudaenv.stack": stack_label(stack),
        "io.cudaenv.lock-hash": settings.lock_hash,
        "io.cudaenv.cuda": "none" if stack.cpu else stack.cuda,
        "io.cudaenv.python": stack.python,
        "org.opencontainers.image.title": settings.project,
        "org.opencontainers.image.description": f"{frameworks} on {device}, Python {stack.python}",
        "org.opencontainers.image.version": settings.lock_hash[:12] or "unlocked",
        "org.opencontainers.image.base.name": with_registry(stack.base_image, settings.base_registry),
        "org.opencontainers.image.vendor": "built with cudaenv",
    }
    if settings.target is not None:
        labels[LABEL_TARGET] = settings.target
    from cudaenv.project.wheels import no_build_options  # one definition for the lock and the image
    from cudaenv.core.references import check_reference

    base_image = check_reference(with_registry(stack.base_image, settings.base_registry), "the stack's base image")
    uv_image = check_reference(with_registry(f"{UV_IMAGE}:{uv_version()}", settings.base_registry), "the uv image")
    if settings.stack_base:
        check_reference(settings.stack_base, "the stack base image")
    return {
        "cudaenv_version": __version__,
        "project": settings.project,
        "summary": f"{frameworks} | {device} | Python {stack.python}",
        "flavor": stack.flavor,
        "flavor_reason": flavor_reason(stack),
        "driver_line": "none (CPU only: no NVIDIA driver or GPU is used)" if stack.cpu else (f"needs {drv.requirement_text(stack.min_driver, stack.min_driver_compat)}"
                        + ("; forward compatibility via cuda-compat" if compat_package else "")),
        "base_image": base_image,  # every FROM value is exactly one image reference
        "uv_image": uv_image,
        "python": stack.python,
        "buildkit": settings.buildkit,
        "ca_cert": settings.ca_cert,
        "netrc": settings.netrc,
        # a compiler only for a project that builds something from source
        "system_packages": list(settings.system_packages) + (
            ["build-essential"] if settings.build_from_source and "build-essential" not in settings.system_packages
            else []),
        "no_build": no_build_options(),
        # the frameworks' sdist-only dependencies (gast for tensorflow 1.15) build; nothing else does
        "framework_build": no_build_options(stack.source_builds),
        "requirements_build": no_build_options(tuple(dict.fromkeys(settings.build_from_source + stack.source_builds))),
        "build_env": _build_env(stack, settings),
        "compat_package": compat_package,
        "python_packages": list(stack.python_packages),
        "init": stack.init,
        "compat_entrypoint_b64": compat_entrypoint_b64() if compat_package else "",
        "python_index": settings.python_index,
        "framework_index": settings.framework_index,
        "find_links": list(stack.find_links),
        "framework_requirements": list(stack.requirements),
        "pinned": list(settings.pinned),
        "requirements_extra_indexes": list(settings.extra_index_urls),
        "requirements_find_links": [link if "://" in link else f"{LOCAL_LINKS}/{n}"
                                    for n, link in enumerate(settings.find_links)],
        "requirements_binds": [(link, f"{LOCAL_LINKS}/{n}") for n, link in enumerate(settings.find_links)
                               if "://" not in link],
        "own_code": list(settings.own_code),
        # a CPU image asks the NVIDIA runtime for nothing: no GPU, no CUDA requirement
        "nvidia_require_cuda": None if stack.cpu else nvidia_require_cuda(stack, forward_branches if compat_package else ()),
        "labels": labels,
        "command": list(settings.command),
        "stack_base": settings.stack_base,
        "stack_base_name": settings.stack_base_name,
        "base_registry": settings.base_registry,
        "jupyter": [f"jupyterlab=={JUPYTERLAB_VERSION}"] if settings.jupyter else [],
        "cross": cross_build(stack, settings),
    }


def _bytecode_cache():
    """Compiled templates kept in cudaenv's private cache directory (compiling the layer templates
    is most of a render). Compiled code is only ever loaded from a directory and file this user
    owns and nobody else can write, as for the matrix cache; ``CUDAENV_NO_CACHE=1`` turns it off."""
    import io

    import jinja2

    from cudaenv.core import cache

    if not cache.enabled():
        return None

    class PrivateBytecodeCache(jinja2.BytecodeCache):
        def __init__(self, directory: str) -> None:
            self.directory = directory

        def _path(self, bucket) -> str:
            return os.path.join(self.directory, f"{bucket.key}.jinja")  # the key is a hex digest

        def load_bytecode(self, bucket) -> None:
            data = cache.read_private(self._path(bucket))  # None unless it and its directory are private
            if data is not None:
                bucket.load_bytecode(io.BytesIO(data))  # jinja checks its own magic and the source checksum

        def dump_bytecode(self, bucket) -> None:
            compiled = io.BytesIO()
            bucket.write_bytecode(compiled)
            cache.write_private(self._path(bucket), compiled.getvalue())  # one that cannot be written is only slower

    return PrivateBytecodeCache(os.path.join(cache.root(), "templates"))


_ENVIRONMENT: list = []  # one per process: templates loaded once, shared by the base and the project


def _environment():
    if _ENVIRONMENT:
        return _ENVIRONMENT[0]
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # a Dockerfile, not HTML: quoting is explicit through the filters below
    )
    env.filters["shquote"] = shquote
    env.filters["dockerquote"] = dockerquote
    env.filters["tojson"] = lambda value: json.dumps(value)
    env.filters["label"] = lambda item: f"{item[0]}={dockerquote(item[1])}"
    _ENVIRONMENT.append(env)
    return env


# What ends a Dockerfile line for Docker's parser, or for a reader's: a value holding one of these
# could close a comment or an instruction and start another, quoted or not.
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def _refuse_line_breaks(value, path: str) -> None:
    """Every string the templates can see, wherever it lands (a comment, a label, a RUN line),
    holds no character that could end a line: the whole class, not one template at a time."""
    if isinstance(value, str):
        if _LINE_BREAKING.search(value):
            raise UnsafeValue(f"{path}: {value[:60]!r} contains a line break or another control character, "
                              "which cannot be written into a Dockerfile safely")
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_line_breaks(key, path)
            _refuse_line_breaks(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _refuse_line_breaks(item, f"{path}[{index}]")


def render_dockerfile(context: dict, template: str = "Dockerfile.j2") -> str:
    """A project Dockerfile, or with ``template="base.Dockerfile.j2"`` a publishable base."""
    from cudaenv.errors import UserError

    try:
        _refuse_line_breaks({k: v for k, v in context.items() if k != "command"}, "the image's inputs")
        text = _environment().get_template(template).render(**context)
    except UnsafeValue as exc:
        raise UserError(str(exc)) from exc
    return re.sub(r"\n{3,}", "\n\n", text)


def render_dockerignore(user_text: str | None, *, secrets: list[str] = ()) -> str:
    """cudaenv's ignore rules, the project's, and last (so no ``!`` rule can re-include them) the
    secrets that live inside the project, such as a CA bundle passed as a BuildKit secret."""
    from cudaenv.secrets.context import SECRET_IGNORES

    lines = ["# cudaenv defaults (never part of the image)", *DEFAULT_IGNORES,
             "# files that commonly hold secrets (a `!` rule in the project's .dockerignore takes one back)",
             *SECRET_IGNORES]
    if user_text:
        lines += ["# the project's .dockerignore", user_text.rstrip("\n")]
    if secrets:
        lines += ["# build secrets that live in the project: never in the context", *secrets]
    return "\n".join(lines) + "\n"


def lock_hash(lock_text: str | None) -> str:
    return hashlib.sha256((lock_text or "").encode()).hexdigest()[:32]
