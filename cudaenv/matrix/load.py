"""Reading and validating ``matrix/*.toml`` into frozen rows.

Every problem is reported as a ``MatrixError`` whose one-line message names the file, the row and
the field and says what was expected — the matrix is data a user can extend (overlays), so a
broken row must read like a form error, never like a traceback.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaenv.errors import MatrixError
from cudaenv.matrix import model
from cudaenv.versions import is_numeric, parse_specifier, parse_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# a field's default when the row must have it: a builder that gives no default makes the field required
REQUIRED: Any = object()


class RowReader:
    """Typed access to one TOML table, remembering which keys were read to reject the rest.

    A field is required unless the builder gives the value an absent field stands for
    (``r.str("note", default="")``): one argument says both, so they cannot disagree."""

    def __init__(self, table: Any, where: str) -> None:
        self.where = where
        if not isinstance(table, dict):
            raise MatrixError(f"{where}: expected a table, got {type(table).__name__}")
        self.table = table
        self.used: set[str] = set()

    def fail(self, key: str, expected: str, value: Any) -> MatrixError:
        from cudaenv.errors import shown

        return MatrixError(f"{self.where}: field {key!r}: expected {expected}, got {shown(value)}")

    def _get(self, key: str, default: Any) -> Any:
        """The field's value; None when it is absent and has a default (TOML has no null)."""
        self.used.add(key)
        if key not in self.table:
            if default is REQUIRED:
                typo = difflib.get_close_matches(key, [k for k in self.table if k not in self.used], n=1)
                if typo:  # a misspelt field is reported as such, not as a missing one
                    raise MatrixError(f"{self.where}: unknown field {typo[0]!r} (did you mean {key!r}?)")
                raise MatrixError(f"{self.where}: missing required field {key!r}")
            return None
        return self.table[key]

    def str(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "a non-empty string", value)
        return value

    def source(self, key: str = "source", *, default: Any = REQUIRED) -> Any:
        value = self.str(key, default=default)
        if value is not None and "read " not in value:
            raise self.fail(key, 'a source with the date it was read ("<URL or document> ; read YYYY-MM-DD")', value)
        return value

    def int(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "an integer", value)
        return value

    def bool(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def numeric(self, key: str, *, parts: int | None = None, min_parts: int = 1, default: Any = REQUIRED,
                what: str = "a dotted version") -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        if not is_numeric(value, parts, min_parts):
            raise self.fail(key, what, value)
        return value

    def cuda_xy(self, key: str, *, default: Any = REQUIRED) -> Any:
        return self.numeric(key, parts=2, default=default, what='a CUDA version "X.Y"')

    def cc(self, key: str, *, default: Any = REQUIRED) -> Any:
        return self.numeric(key, parts=2, default=default, what='a compute capability "X.Y"')

    def version(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        parsed = parse_version(value) if isinstance(value, str) else None
        if parsed is None or parsed.local is not None:  # a release, not one build of it (+cu124)
            raise self.fail(key, "a PEP 440 version string", value)
        return value

    def specifier(self, key: str, *, default: Any = REQUIRED) -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        spec = parse_specifier(value) if isinstance(value, str) and value.strip() else None
        if spec is None:  # an empty specifier would admit every version
            raise self.fail(key, 'a PEP 440 specifier such as ">=12.0,<13"', value)
        return spec

    def list(self, key: str, item: Callable[[Any], bool], expected: str, *, default: Any = REQUIRED) -> Any:
        value = self._get(key, default)
        if value is None:
            return default
        if not isinstance(value, list) or not all(item(v) for v in value):
            raise self.fail(key, expected, value)
        if len(set(value)) != len(value):
            raise self.fail(key, f"{expected} without duplicates", value)
        return tuple(value)

    def python_list(self, key: str = "python", *, default: Any = REQUIRED) -> Any:
        pythons = self.list(key, lambda v: is_numeric(v, 2), 'a list of Python versions like ["3.11"]', default=default)
        if key in self.table and not pythons:  # a build no Python can install is not a build
            raise self.fail(key, 'at least one Python version like ["3.11"]', [])
        return pythons

    def cc_list(self, key: str, *, default: Any = REQUIRED) -> Any:
        return self.list(key, lambda v: is_numeric(v, 2), 'a list of compute capabilities like ["8.0", "9.0"]',
                         default=default)

    def platforms(self, key: str = "platforms") -> Any:
        """The CPU architectures a build or image is published for; x86_64 alone when not said."""
        value = self.list(key, lambda v: v in model.HOST_ARCHES,
                          "a list of CPU architectures from " + ", ".join(repr(a) for a in model.HOST_ARCHES),
                          default=("x86_64",))
        if not value:
            raise self.fail(key, 'at least one CPU architecture like ["x86_64"]', [])
        return value

    def source_builds(self, key: str = "source_builds") -> Any:
        """Package names with an optional marker (``"termcolor; python_version < '3.7'"``): what the
        framework layer may build from source (model.SOURCE_BUILDS)."""
        from packaging.requirements import InvalidRequirement, Requirement

        def plain(value: Any) -> bool:
            try:
                requirement = Requirement(value)
            except (InvalidRequirement, TypeError):
                return False
            return not (requirement.specifier or requirement.extras or requirement.url)

        return self.list(key, plain, "package names with an optional marker, like \"gast\" or "
                                     "\"termcolor; python_version < '3.7'\"", default=())

    def str_list(self, key: str, *, default: Any = REQUIRED) -> Any:
        return self.list(key, lambda v: isinstance(v, str) and bool(v.strip()), "a list of strings", default=default)

    def requires(self, key: str) -> Any:
        """A table of package name -> PEP 440 specifier (``"nvidia-cudnn-cu12" = "==9.1.0.70"``)."""
        value = self._get(key, ())
        if value is None:
            return ()
        if not isinstance(value, dict):
            raise self.fail(key, "a table of package = specifier", value)
        for name, spec in value.items():
            if not isinstance(spec, str) or parse_specifier(spec) is None:
                raise MatrixError(f"{self.where}: field {key}.{name!r}: expected a PEP 440 specifier, got {spec!r}")
        return tuple(sorted(value.items()))

    def yanked(self, key: str = "yanked") -> str | None:
        """PEP 592: ``yanked = true`` (PyPI gives no reason) or ``yanked = "the reason"``; absent: not
        yanked. Returned as the reason, ``""`` when there is none, None when not yanked."""
        value = self._get(key, None)
        if value is None:
            return None
        if value is True:
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "true or PyPI's reason for the yank (a non-empty string)", value)
        return value

    def rows(self, key: str, build: Callable[["RowReader"], Any]) -> tuple:
        value = self._get(key, ())
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(key, f"an array of tables ([[...{key}]])", value)
        return tuple(build(RowReader(item, f"{self.where} {key}[{i}]")) for i, item in enumerate(value))

    def finish(self, row: Any) -> Any:
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            key = unknown[0]
            raise MatrixError(f"{self.where}: unknown field {key!r}{_did_you_mean(key, self.used)}")
        return row


# --- one builder per row kind -------------------------------------------------------------------


def cuda_major(r: RowReader) -> model.CudaMajor:
    return r.finish(model.CudaMajor(
        major=r.int("major"), minor_version_floor=r.numeric("minor_version_floor", what="a driver version"),
        source=r.source(), note=r.str("note", default=""),
    ))


def cuda_release(r: RowReader) -> model.CudaRelease:
    return r.finish(model.CudaRelease(
        version=r.numeric("version", parts=3, what='a CUDA release "X.Y.Z"'),
        released=r.str("released", default=None),
        min_driver=r.numeric("min_driver", default=None, min_parts=2, what="a driver version like 535.104.05"),
        min_compute_capability=r.cc("min_compute_capability"),
        max_compute_capability=r.cc("max_compute_capability"),
        forward_compat_branches=r.list("forward_compat_branches", lambda v: isinstance(v, int) and not isinstance(v, bool),
                                       "a list of driver branches like [535, 550]", default=()),
        source=r.source(), note=r.str("note", default=""),
    ))


def _branch_number(r: RowReader) -> int:
    branch = r.int("branch")
    if not 0 < branch < 10_000:  # NVIDIA's branches are three digits; room for a fourth, nothing absurd
        raise r.fail("branch", "a driver branch number like 535", branch)
    return branch


def driver_branch(r: RowReader) -> model.DriverBranch:
    return r.finish(model.DriverBranch(
        branch=_branch_number(r), type=r.str("type", default=None), max_cuda=r.cuda_xy("max_cuda"),
        architectures=r.str_list("architectures"), eol=r.str("eol", default=None),
        source=r.source(), note=r.str("note", default=""),
    ))


def architecture(r: RowReader) -> model.Architecture:
    return r.finish(model.Architecture(
        name=r.str("name"), compute_capabilities=r.cc_list("compute_capabilities"),
        source=r.source(), note=r.str("note", default=""),
    ))


def gpu(r: RowReader) -> model.Gpu:
    host_arch = r.str("host_arch", default="x86_64")
    if host_arch not in model.HOST_ARCHES:
        raise r.fail("host_arch", " or ".join(repr(a) for a in model.HOST_ARCHES), host_arch)
    return r.finish(model.Gpu(
        name=r.str("name"), aliases=r.str_list("aliases", default=()),
        compute_capability=r.cc("compute_capability"), architecture=r.str("architecture"),
        datacenter=r.bool("datacenter"), host_arch=host_arch, l4t=_l4t(r, host_arch), source=r.source(),
        note=r.str("note", default=""),
    ))


def _l4t(r: RowReader, host_arch: str) -> bool:
    value = r.bool("l4t", default=False)
    if value and host_arch != "aarch64":  # Jetson Linux runs on Jetson's Arm cores only
        raise r.fail("l4t", 'l4t = true only with host_arch = "aarch64"', value)
    return value


def cudnn_release(r: RowReader) -> model.CudnnRelease:
    return r.finish(model.CudnnRelease(
        version=r.numeric("version", parts=3, what='a cuDNN release "X.Y.Z" like "9.1.0"'), cuda=r.specifier("cuda"),
        min_compute_capability=r.cc("min_compute_capability", default=None),
        max_compute_capability=r.cc("max_compute_capability", default=None),
        source=r.source(), note=r.str("note", default=""),
    ))


def torch_variant(r: RowReader) -> model.TorchVariant:
    row = r.finish(model.TorchVariant(
        cuda=r.cuda_xy("cuda"), index_url=r.str("index_url"),
        cudnn=r.numeric("cudnn", default=None, min_parts=2, what='a cuDNN version like "9.1.0.70"'),
        compute_capabilities=r.cc_list("compute_capabilities", default=()), ptx=r.cc_list("ptx", default=()),
        established=r.bool("established", default=True), platforms=r.platforms(),
        source=r.source(default=None), note=r.str("note", default=""),
    ))
    if not row.established and not row.note:
        # a doubtful build must say why: which source is missing (a wheel index record, a build matrix)
        raise r.fail("note", "a note naming what is missing when established = false", "")
    return row


def _spec_text(r: RowReader, key: str) -> str | None:
    """An optional PEP 440 specifier, checked, kept as the file spells it."""
    return None if r.specifier(key, default=None) is None else r.str(key)


def yanked_companion(r: RowReader) -> model.YankedCompanion:
    package = r.str("package")
    if package not in ("torchvision", "torchaudio"):
        raise r.fail("package", "'torchvision' or 'torchaudio'", package)
    reason = r.yanked("reason")
    if reason is None:
        raise MatrixError(f"{r.where}: missing required field 'reason'")
    variant = r.str("variant", default=None)
    if variant is not None and not re.fullmatch(r"cu[0-9]{2,4}", variant):
        raise r.fail("variant", 'a CUDA build tag like "cu117"', variant)
    return r.finish(model.YankedCompanion(package=package, version=r.version("version"), reason=reason,
                                          variant=variant, source=r.source()))


def cpu_build(r: RowReader) -> model.CpuBuild:
    index_url = r.str("index_url")
    if not re.fullmatch(r"https://[A-Za-z0-9.-]+/[A-Za-z0-9._/-]*", index_url):
        raise r.fail("index_url", "an https:// URL of a package index", index_url)
    return r.finish(model.CpuBuild(index_url=index_url, platforms=r.platforms(), python=r.python_list(default=()),
                                   source=r.source(), note=r.str("note", default="")))


def torch_release(r: RowReader) -> model.TorchRelease:
    return r.finish(model.TorchRelease(
        version=r.version("version"), released=r.str("released", default=None), python=r.python_list(),
        torchvision=r.version("torchvision", default=None), torchaudio=r.version("torchaudio", default=None),
        torchvision_range=_spec_text(r, "torchvision_range"),
        torchvision_source=r.source("torchvision_source", default=None),
        pypi_cuda=r.cuda_xy("pypi_cuda", default=None), pypi_platforms=r.platforms("pypi_platforms"),
        pypi_requires=r.requires("pypi_requires"),
        variants=r.rows("variant", torch_variant), source=r.source(), pypi_source=r.source("pypi_source", default=None),
        yanked=r.yanked(), yanked_companions=r.rows("yanked_companion", yanked_companion),
        source_builds=r.source_builds(), note=r.str("note", default=""), cpu=r.rows("cpu", cpu_build),
    ))


def tensorflow_release(r: RowReader) -> model.TensorflowRelease:
    return r.finish(model.TensorflowRelease(
        version=r.version("version"), python=r.python_list(), cuda=r.cuda_xy("cuda"),
        cudnn=r.numeric("cudnn", min_parts=2, what='a cuDNN version like "8.9"'),
        keras=r.str("keras", default=None), compute_capabilities=r.cc_list("compute_capabilities", default=()),
        ptx=r.cc_list("ptx", default=()), and_cuda=r.requires("and_cuda"),
        and_cuda_uninstallable=r.str("and_cuda_uninstallable", default=None),
        ptx_unusable_on=r.cc_list("ptx_unusable_on", default=()),
        ptx_unusable_source=r.source("ptx_unusable_source", default=None),
        source=r.source(), pypi_source=r.source("pypi_source", default=None),
        yanked=r.yanked(), gpu_package=_gpu_package(r), gpu_route=r.str("gpu_route", default=None),
        gpu_route_source=r.source("gpu_route_source", default=None), platforms=r.platforms(),
        source_builds=r.source_builds(), gpu_alias=_gpu_package(r, "gpu_alias"),
        note=r.str("note", default=""),
    ))


GPU_PACKAGES = ("tensorflow-gpu",)  # the only separate GPU distribution TensorFlow published on PyPI


def _gpu_package(r: RowReader, key: str = "gpu_package") -> str | None:
    value = r.str(key, default=None)
    if value is not None and value not in GPU_PACKAGES:
        raise r.fail(key, " or ".join(repr(p) for p in GPU_PACKAGES), value)
    if key == "gpu_alias" and value is not None and r.table.get("gpu_package") is not None:
        raise r.fail(key, "no gpu_alias beside gpu_package (the GPU build has one package then)", value)
    return value


def jax_variant(r: RowReader) -> model.JaxVariant:
    return r.finish(model.JaxVariant(
        extra=r.str("extra"), cuda=r.specifier("cuda"), cudnn=r.specifier("cudnn", default=None),
        packages=r.str_list("packages", default=()), index_url=r.str("index_url", default=None),
        compute_capabilities=r.cc_list("compute_capabilities", default=()), ptx=r.cc_list("ptx", default=()),
        requires=r.requires("requires"), no_extra=r.bool("no_extra", default=False), platforms=r.platforms(),
        note=r.str("note", default=""),
    ))


def jax_release(r: RowReader) -> model.JaxRelease:
    return r.finish(model.JaxRelease(
        version=r.version("version"), jaxlib=r.version("jaxlib"), python=r.python_list(),
        released=r.str("released", default=None), variants=r.rows("variant", jax_variant),
        source=r.source(), pypi_source=r.source("pypi_source", default=None),
        yanked=r.yanked(), uninstallable=r.str("uninstallable", default=None), source_builds=r.source_builds(),
        note=r.str("note", default=""),
    ))


def mxnet_variant(r: RowReader) -> model.MxnetVariant:
    return r.finish(model.MxnetVariant(
        package=r.str("package"), cuda=r.cuda_xy("cuda"),
        cudnn=r.numeric("cudnn", default=None, min_parts=2, what='a cuDNN version like "8.1"'),
        python=r.python_list(default=()), note=r.str("note", default=""),
    ))


def mxnet_release(r: RowReader) -> model.MxnetRelease:
    return r.finish(model.MxnetRelease(
        version=r.version("version"), python=r.python_list(), variants=r.rows("variant", mxnet_variant),
        source=r.source(), note=r.str("note", default=""),
    ))


def os_release(r: RowReader) -> model.OsRelease:
    from cudaenv.core.debian import is_debian_package

    packages = r.list("packages", is_debian_package, "Debian package names (lower-case letters, digits, + - .)",
                      default=())
    init = r.str("init", default=None)
    if init is not None and init not in INITS:
        raise r.fail("init", " or ".join(repr(i) for i in INITS), init)
    pythons = r.python_list(default=())
    versions = r.list("python_versions", lambda v: is_numeric(v, 3), 'Python releases like ["3.6.9"]', default=())
    if sorted(v.rsplit(".", 1)[0] for v in versions) != sorted(pythons) and versions:
        raise r.fail("python_versions", "one X.Y.Z for each entry of python", list(versions))
    return r.finish(model.OsRelease(
        name=_tag_part(r, "name"), init=init, python=pythons, packages=packages, python_versions=versions,
        source=r.source(), note=r.str("note", default=""),
    ))


INITS = model.INITS


def _tag_part(r: RowReader, key: str) -> str:
    """A piece of an image tag (``12.4.1``, ``cudnn9``, ``ubuntu22.04``): these rows are joined into
    a FROM line, so an overlay must not smuggle a space, a newline or another instruction in."""
    from cudaenv.core.references import is_tag

    value = r.str(key)
    if not is_tag(value) or len(value) > 64:
        raise r.fail(key, "a tag piece of letters, digits, _ . - (Docker's tag grammar)", value)
    return value


def _tag_parts(r: RowReader, key: str, default: Any = REQUIRED) -> tuple:
    from cudaenv.core.references import is_tag

    values = r.str_list(key, default=default)
    for value in values or ():
        if not is_tag(value) or len(value) > 64:
            raise r.fail(key, "tag pieces of letters, digits, _ . - (Docker's tag grammar)", value)
    return values


IMAGE_CUDNN_VERSION = 'a cuDNN build "X.Y.Z.B" like "9.1.0.70" (or "X.Y.Z" for cuDNN 5 and 6, like "5.1.10")'


def _image_cudnn_version(r: RowReader) -> str:
    value = r.numeric("version", min_parts=3, what=IMAGE_CUDNN_VERSION)
    parts = value.split(".")
    if len(parts) > 4 or (len(parts) == 3 and int(parts[0]) > 6):
        raise r.fail("version", IMAGE_CUDNN_VERSION, value)
    return value


def image_cudnn(r: RowReader) -> model.ImageCudnn:
    return r.finish(model.ImageCudnn(
        # four parts (the image's CUDNN_VERSION); cuDNN 5.1.10 and 6.0.21 were numbered with three
        tag=_tag_part(r, "tag"), version=_image_cudnn_version(r),
        os=_tag_parts(r, "os"),
    ))


def _repository(r: RowReader, key: str) -> str:
    from cudaenv.core.references import is_repository

    value = r.str(key)
    if not is_repository(value):
        raise r.fail(key, "an image repository like nvidia/cuda (Docker's reference grammar)", value)
    return value


def base_image(r: RowReader) -> model.BaseImage:
    return r.finish(model.BaseImage(
        cuda=r.numeric("cuda", parts=3, what='a CUDA release "X.Y.Z"'), repository=_repository(r, "repository"),
        tag_version=_tag_part(r, "tag_version"), os=_tag_parts(r, "os"), cudnn=r.rows("cudnn", image_cudnn),
        removed=r.bool("removed", default=False), source=r.source(), note=r.str("note", default=""),
        superseded=r.bool("superseded", default=False), aarch64_os=_tag_parts(r, "aarch64_os", default=()),
        aarch64_cudnn_os=_tag_parts(r, "aarch64_cudnn_os", default=None),
    ))


@dataclass(frozen=True)
class TableSpec:
    """One ``[[table]]`` kind inside one matrix file: how to build a row and what identifies it."""

    attribute: str  # Matrix field the rows land in
    build: Callable[[RowReader], Any]
    key: Callable[[Any], Any]
    describe: Callable[[Any], str]


FILES: dict[str, dict[str, TableSpec]] = {
    "cuda.toml": {
        "major": TableSpec("cuda_majors", cuda_major, lambda r: r.major, lambda r: f"major = {r.major}"),
        "release": TableSpec("cuda_releases", cuda_release, lambda r: r.version, lambda r: f"version = {r.version!r}"),
    },
    "drivers.toml": {
        "branch": TableSpec("driver_branches", driver_branch, lambda r: r.branch, lambda r: f"branch = {r.branch}"),
    },
    "gpus.toml": {
        "architecture": TableSpec("architectures", architecture, lambda r: r.name, lambda r: f"name = {r.name!r}"),
        "gpu": TableSpec("gpus", gpu, lambda r: r.name.lower(), lambda r: f"name = {r.name!r}"),
    },
    "cudnn.toml": {
        "release": TableSpec("cudnn", cudnn_release, lambda r: (r.version, str(r.cuda)),
                             lambda r: f"version = {r.version!r}, cuda = {str(r.cuda)!r}"),
    },
    "torch.toml": {
        "release": TableSpec("torch", torch_release, lambda r: r.version, lambda r: f"version = {r.version!r}"),
    },
    "tensorflow.toml": {
        "release": TableSpec("tensorflow", tensorflow_release, lambda r: r.version, lambda r: f"version = {r.version!r}"),
    },
    "jax.toml": {
        "release": TableSpec("jax", jax_release, lambda r: r.version, lambda r: f"version = {r.version!r}"),
    },
    "mxnet.toml": {
        "release": TableSpec("mxnet", mxnet_release, lambda r: r.version, lambda r: f"version = {r.version!r}"),
    },
    "images.toml": {
        "image": TableSpec("images", base_image, lambda r: r.cuda, lambda r: f"cuda = {r.cuda!r}"),
        "os": TableSpec("os_releases", os_release, lambda r: r.name, lambda r: f"name = {r.name!r}"),
    },
}


def read_toml(path: Path, data: bytes | None = None) -> dict:
    """The TOML in ``path`` (or in ``data``, its bytes already read), as a one-line MatrixError when
    it is unreadable, not UTF-8, or not TOML."""
    try:
        if data is None:
            data = path.read_bytes()
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MatrixError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(f"{path}: invalid TOML: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # an integer past Python's digit limit, nesting past the stack
        raise MatrixError(f"{path}: invalid TOML: {str(exc)[:120] or 'nested too deeply'}") from exc
    except OSError as exc:
        raise MatrixError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def load_file(path: Path, data: bytes | None = None) -> dict[str, tuple]:
    """Rows of one matrix file by Matrix attribute; raises MatrixError on the first problem.
    ``data``: the file's bytes when the caller has already read them (to hash them)."""
    specs = FILES.get(path.name)
    if specs is None:
        raise MatrixError(f"{path}: not a matrix file (expected one of {', '.join(sorted(FILES))})")
    data = read_toml(path, data)
    unknown = sorted(set(data) - set(specs))
    if unknown:
        raise MatrixError(f"{path}: unknown table {unknown[0]!r}{_did_you_mean(unknown[0], specs)}; "
                          f"expected {', '.join(f'[[{k}]]' for k in specs)}")
    result: dict[str, tuple] = {}
    for table, spec in specs.items():
        items = data.get(table, [])
        if not isinstance(items, list):
            raise MatrixError(f"{path}: {table!r} must be an array of tables ([[{table}]])")
        rows = []
        seen: dict[Any, int] = {}
        for index, item in enumerate(items):
            where = f"{path}: [[{table}]] #{index + 1}"
            if isinstance(item, dict):
                hint = _row_hint(item)
                if hint:
                    where += f" ({hint})"
            row = spec.build(RowReader(item, where))
            key = spec.key(row)
            if key in seen:
                raise MatrixError(f"{where}: duplicate of row #{seen[key] + 1} ({spec.describe(row)})")
            seen[key] = index
            rows.append(row)
        result[spec.attribute] = tuple(rows)
    return result


def _row_hint(item: dict) -> str:
    for key in ("version", "name", "branch", "major", "cuda"):
        if key in item:
            return f"{key} = {item[key]!r}"
    return ""
