"""Which base image a stack builds on.

* ``wheels``: the official ``python:X.Y-slim`` image; the framework wheels bring CUDA and cuDNN.
* ``runtime`` / ``devel``: ``nvidia/cuda`` for the stack's CUDA, in the exact tag spelling of that
  release, with the cuDNN-flavoured tag when a framework needs the system cuDNN (same major,
  minor at least the one it was built with).

References are registry-less (``nvidia/cuda:…``); the render step applies ``base_registry``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudaenv.matrix import Matrix
from cudaenv.matrix.model import BaseImage, ImageCudnn
from cudaenv.versions import numeric_key

OS_PREFERENCE = ("ubuntu22.04", "ubuntu24.04", "ubuntu20.04", "ubuntu18.04")
# The oldest Python uv can install in an nvidia/cuda image (which has none of its own): the CPython
# downloads uv 0.13.9 knows (`uv python list --all-versions --only-downloads`) start at 3.8.2.
# tests/unit/resolver/test_base_images.py asks the installed uv again.
UV_LOWEST_PYTHON = "3.8"
# The oldest Python uv works with at all: `uv pip compile --python-version 2.7` (the lock) answers
# "Python <3.6 is not supported", and uv makes every image's virtual environment, the wheels flavor's
# python:X.Y-slim included; older Pythons (2.7, 3.5) that old framework wheels list cannot be a stack
UV_OLDEST_PYTHON = "3.6"


def uv_installs(python: str) -> bool:
    """Whether the image's Python layer can install that Python with uv (a python:X.Y-slim base, the
    wheels flavor, brings its own)."""
    return numeric_key(python) >= numeric_key(UV_LOWEST_PYTHON)


@dataclass(frozen=True)
class BaseChoice:
    reference: str
    cuda_release: str | None  # the toolkit release inside (None for wheels images)
    cudnn: str | None  # cuDNN inside the image, when it has one
    removed: bool = False  # tags deleted from Docker Hub: needs a mirror that kept them
    # Debian packages that give the image its Python where uv cannot download it (pythonX.Y from the
    # Ubuntu archive, and what uv needs beside it): installed with the OS essentials
    python_packages: tuple[str, ...] = ()
    init: str = "tini"  # the init package the image's ENTRYPOINT runs (python:X.Y-slim is Debian: tini)


def wheels_base(python: str) -> BaseChoice:
    return BaseChoice(reference=f"python:{python}-slim", cuda_release=None, cudnn=None)


def apt_based(os_name: str) -> bool:
    """Whether cudaenv's image layers can build on that nvidia/cuda OS: they install packages with
    apt-get (templates/layers/_macros.j2), which the Ubuntu images have and the CentOS, Rocky, UBI,
    Amazon Linux and openSUSE ones do not."""
    return os_name.startswith("ubuntu")


def apt_python(matrix: Matrix, os_name: str, python: str) -> tuple[str, ...] | None:
    """The packages that install CPython ``python`` from ``os_name``'s own archive (``python3.7``
    and ``python3-distutils`` on ubuntu18.04), or None where that archive has no such Python."""
    release = next((r for r in matrix.os_releases if r.name == os_name), None)
    if release is None or python not in release.python:
        return None
    return (f"python{python}",) + release.packages


def _os_order(available: tuple[str, ...], wanted: str | None) -> list[str]:
    if wanted is not None:
        return [wanted] if wanted in available and apt_based(wanted) else []
    ranked = [o for o in OS_PREFERENCE if o in available]
    return ranked + [o for o in available if o not in ranked and apt_based(o)]


def os_init(matrix: Matrix, os_name: str) -> str | None:
    """The init an image of ``os_name`` gets from its own archive (``[[os]]``), or None where the
    archive has none or the matrix does not record the OS: cudaenv does not build on it."""
    return next((r.init for r in matrix.os_releases if r.name == os_name), None)


def _python_from(matrix: Matrix, os_name: str, python: str | None) -> tuple[str, ...] | None:
    """How an image of ``os_name`` gets ``python``: () when uv installs it (or no Python is asked
    about), the archive's packages when only apt has it, None when neither does."""
    if python is None or uv_installs(python):
        return ()
    return apt_python(matrix, os_name, python)


def _cudnn_fits(offered: ImageCudnn, need: str, exact: bool = False) -> bool:
    have, want = numeric_key(offered.version), numeric_key(need)
    if exact:
        return have[: len(want)] == want
    return have[0] == want[0] and have[: len(want)] >= want


def cuda_base(matrix: Matrix, flavor: str, cuda_xy: str, *, cudnn: str | None, os_name: str | None,
              exact_cudnn: bool = False, python: str | None = None, platform: str = "x86_64") -> BaseChoice | None:
    """The newest nvidia/cuda image of that CUDA x.y (with a fitting cuDNN when ``cudnn`` is set: that
    version or a later one of its major, which a framework's build runs on; with ``exact_cudnn`` that
    version itself, which a project without a framework asked for) that can get ``python``: uv
    installs 3.8 and later anywhere; an older one only comes from the OS's archive (``[[os]]``), and
    only an OS whose archive has an init (tini, dumb-init) is built on. Only images published for
    ``platform`` (the target's CPU architecture) count.
    Memoized per matrix: the resolver asks the same question for every candidate build."""
    memo = matrix.memo.setdefault("images.cuda_base", {})
    needs_apt = python if python is not None and not uv_installs(python) else None
    key = (flavor, cuda_xy, cudnn, os_name, exact_cudnn, needs_apt, platform)
    if key not in memo:
        memo[key] = _cuda_base(matrix, flavor, cuda_xy, cudnn=cudnn, os_name=os_name, exact_cudnn=exact_cudnn,
                               python=needs_apt, platform=platform)
    return memo[key]


def _cuda_base(matrix: Matrix, flavor: str, cuda_xy: str, *, cudnn: str | None, os_name: str | None,
               exact_cudnn: bool = False, python: str | None = None, platform: str = "x86_64") -> BaseChoice | None:
    images: list[BaseImage] = sorted((i for i in matrix.images_for(cuda_xy) if platform in i.platforms),
                                     key=lambda i: (not i.removed, numeric_key(i.cuda)), reverse=True)
    for image in images:
        if cudnn is None:
            for os_choice in _os_order(image.os_for(platform), os_name):
                packages, init = _python_from(matrix, os_choice, python), os_init(matrix, os_choice)
                if packages is not None and init is not None:
                    return BaseChoice(f"{image.repository}:{image.tag(flavor, os_choice)}", image.cuda, None,
                                      image.removed, packages, init)
            continue
        for offered in sorted(image.cudnn, key=lambda c: numeric_key(c.version), reverse=True):
            if not _cudnn_fits(offered, cudnn, exact_cudnn):
                continue
            for os_choice in _os_order(image.cudnn_os_for(offered, platform), os_name):
                packages, init = _python_from(matrix, os_choice, python), os_init(matrix, os_choice)
                if packages is not None and init is not None:
                    return BaseChoice(f"{image.repository}:{image.tag(flavor, os_choice, offered.tag)}", image.cuda,
                                      offered.version, image.removed, packages, init)
    return None
