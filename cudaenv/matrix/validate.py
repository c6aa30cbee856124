"""Cross-reference checks over the merged matrix.

A row can be well-formed and still point at nothing: a PyTorch variant for a CUDA release the
matrix does not know, a GPU whose compute capability belongs to no architecture. The resolver
relies on these links, so they are checked once, at load, and reported by file and row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudaenv.errors import MatrixError
from cudaenv.matrix.gpus import normalize_gpu_name
from cudaenv.versions import major_minor, numeric_key, specifier_contains

MAX_TAG = 128  # Docker's limit on an image tag

if TYPE_CHECKING:
    from cudaenv.matrix import Matrix


def _where(matrix: "Matrix", attribute: str, key, label: str) -> str:
    return f"{matrix.origins.get((attribute, key), attribute)}: {label}"


def check_cross_references(m: "Matrix") -> None:
    known_cc = {cc for a in m.architectures for cc in a.compute_capabilities}
    arch_names = {a.name for a in m.architectures}
    cuda_xy = set(m.cuda_minors)
    cuda_versions = {r.version for r in m.cuda_releases}

    def need_cc(where: str, field: str, values) -> None:
        for cc in values:
            if cc not in known_cc:
                raise MatrixError(f"{where}: field {field!r}: compute capability {cc} belongs to no architecture in gpus.toml")

    def need_cuda(where: str, field: str, xy: str) -> None:
        if xy not in cuda_xy:
            raise MatrixError(f"{where}: field {field!r}: CUDA {xy} is not a release in cuda.toml "
                              f"(known: {', '.join(sorted(cuda_xy, key=numeric_key))})")

    def need_cudnn(where: str, field: str, version: str, cuda: str) -> None:
        supported = m.cudnn_supports_cuda(version, cuda)
        if supported is None:
            raise MatrixError(f"{where}: field {field!r}: cuDNN {version} is not a release in cudnn.toml")
        if not supported:
            raise MatrixError(f"{where}: field {field!r}: cuDNN {version} has no build for CUDA {cuda} in cudnn.toml")

    for release in m.cuda_releases:
        where = _where(m, "cuda_releases", release.version, f"[[release]] version = {release.version!r}")
        need_cc(where, "min_compute_capability", [release.min_compute_capability])
        need_cc(where, "max_compute_capability", [release.max_compute_capability])
        if m.cuda_major(release.major) is None and release.major >= 11:
            raise MatrixError(f"{where}: CUDA {release.major}.x has no [[major]] row (minor-version floor)")

    for branch in m.driver_branches:
        where = _where(m, "driver_branches", branch.branch, f"[[branch]] branch = {branch.branch}")
        for name in branch.architectures:
            if name not in arch_names:
                raise MatrixError(f"{where}: field 'architectures': unknown architecture {name!r} "
                                  f"(known: {', '.join(sorted(arch_names))})")

    seen_names: dict[str, str] = {}
    for gpu in m.gpus:
        where = _where(m, "gpus", gpu.name.lower(), f"[[gpu]] name = {gpu.name!r}")
        arch = next((a for a in m.architectures if a.name == gpu.architecture), None)
        if arch is None:
            raise MatrixError(f"{where}: field 'architecture': unknown architecture {gpu.architecture!r}")
        if gpu.compute_capability not in arch.compute_capabilities:
            raise MatrixError(f"{where}: field 'compute_capability': {gpu.compute_capability} is not a "
                              f"{arch.name} compute capability ({', '.join(arch.compute_capabilities)})")
        for name in (gpu.name, *gpu.aliases):
            key = normalize_gpu_name(name)
            if key in seen_names and seen_names[key] != gpu.name:
                raise MatrixError(f"{where}: name or alias {name!r} also names {seen_names[key]!r}")
            seen_names[key] = gpu.name

    for release in m.torch:
        base = _where(m, "torch", release.version, f"[[release]] version = {release.version!r}")
        if release.pypi_cuda:
            need_cuda(base, "pypi_cuda", release.pypi_cuda)
        built: set[tuple[str, str]] = set()
        for variant in release.variants:
            where = f"{base} variant {variant.tag}"
            need_cuda(where, "cuda", variant.cuda)
            need_cc(where, "compute_capabilities", variant.compute_capabilities)
            need_cc(where, "ptx", variant.ptx)
            if variant.cudnn:
                need_cudnn(where, "cudnn", variant.cudnn, variant.cuda)
            for platform in variant.platforms:  # one build per CUDA and CPU: two would contradict each other
                if (variant.cuda, platform) in built:
                    raise MatrixError(f"{where}: field 'platforms': a {variant.tag} build for {platform} is already "
                                      "listed for this release (one row per CUDA and platform)")
                built.add((variant.cuda, platform))
        for platform in release.pypi_platforms:  # a row that names other platforms than the default names their builds
            if release.pypi_platforms != ("x86_64",) and release.pypi_cuda and (release.pypi_cuda, platform) not in built:
                raise MatrixError(f"{base}: field 'pypi_platforms': PyPI's {platform} wheel is the CUDA "
                                  f"{release.pypi_cuda} build, but no variant lists that build for {platform}")

    for release in m.tensorflow:
        where = _where(m, "tensorflow", release.version, f"[[release]] version = {release.version!r}")
        need_cuda(where, "cuda", release.cuda)
        need_cc(where, "compute_capabilities", release.compute_capabilities)
        need_cc(where, "ptx", release.ptx)
        need_cc(where, "ptx_unusable_on", release.ptx_unusable_on)
        if bool(release.ptx_unusable_on) != bool(release.ptx_unusable_source):
            raise MatrixError(f"{where}: fields 'ptx_unusable_on' and 'ptx_unusable_source': expected both "
                              "(where the PTX fails, and the reports that say so) or neither")
        if release.ptx_unusable_on and not release.ptx:
            raise MatrixError(f"{where}: field 'ptx_unusable_on': the release records no ptx to fail")
        need_cudnn(where, "cudnn", release.cudnn, release.cuda)

    for release in m.jax:
        base = _where(m, "jax", release.version, f"[[release]] version = {release.version!r}")
        for variant in release.variants:
            where = f"{base} variant {variant.extra!r}"
            if not any(specifier_contains(variant.cuda, xy) for xy in cuda_xy):
                raise MatrixError(f"{where}: field 'cuda': no CUDA release in cuda.toml satisfies {variant.cuda}")
            need_cc(where, "compute_capabilities", variant.compute_capabilities)

    for release in m.mxnet:
        base = _where(m, "mxnet", release.version, f"[[release]] version = {release.version!r}")
        for variant in release.variants:
            need_cuda(f"{base} variant {variant.package!r}", "cuda", variant.cuda)

    for image in m.images:
        where = _where(m, "images", image.cuda, f"[[image]] cuda = {image.cuda!r}")
        if image.cuda not in cuda_versions:
            raise MatrixError(f"{where}: field 'cuda': CUDA {image.cuda} is not a release in cuda.toml")
        if not image.tag_version.startswith(major_minor(image.cuda)):
            raise MatrixError(f"{where}: field 'tag_version': {image.tag_version!r} does not spell CUDA {image.cuda}")
        # each piece is checked alone; the tag they compose must fit Docker's 128 characters too
        tags = [image.tag("runtime", os_name) for os_name in image.os]
        tags += [image.tag("runtime", os_name, line.tag) for line in image.cudnn for os_name in line.os]
        longest = max(tags, key=len, default="")
        if len(longest) > MAX_TAG:
            raise MatrixError(f"{where}: the tag {longest[:40]}… has {len(longest)} characters; Docker allows "
                              f"{MAX_TAG} (shorten tag_version, os or a cudnn tag)")
