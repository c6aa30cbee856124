"""The lock asks uv for the Python the image will have, to the patch: a bare ``--python-version 3.6``
is 3.6.0 to uv, and torch 1.6.0-1.10.2 require Python >= 3.6.1 (3.6.2 from 1.7.1), so a Python 3.6
project's lock failed with "the requested Python version does not satisfy Python>=3.6.2" although
its image (python:3.6-slim, 3.6.15; or Ubuntu 18.04's python3.6, 3.6.9) installs torch fine. Found by
running ``uv pip compile`` for every old release and Python against PyPI (2026-11-28)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import load_matrix
from cudaenv.project.lock import uv_binary
from cudaenv.project.wheels import manylinux_platform, uv_python_version
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import resolve


def stack(python: str, **frameworks: str):
    result = resolve(load_matrix(overlays=[]), Constraints(python=SpecifierSet(f"=={python}"), frameworks=tuple(
        (n, SpecifierSet(s)) for n, s in frameworks.items())), Host("450.80.02"))
    assert result.ok, result.problems
    return result.stack


@pytest.mark.parametrize(("python", "frameworks", "expected"), [
    ("3.6", {"torch": "==1.7.1"}, "3.6.15"),  # python:3.6-slim: the minor's last release
    ("3.7", {"torch": "==1.7.1"}, "3.7.17"),
    ("3.8", {"torch": "==1.7.1"}, "3.8.20"),
    ("3.12", {"torch": "==2.6.0"}, "3.12"),  # a living minor: uv and the image take its newest
    ("3.6", {"tensorflow": "==1.15.5"}, "3.6.9"),  # Ubuntu 18.04's python3.6 (bionic-updates)
    ("3.7", {"tensorflow": "==1.15.5"}, "3.7.5"),
], ids=["slim-36", "slim-37", "slim-38", "living-312", "bionic-36", "bionic-37"])
def test_the_python_uv_is_asked_for_is_the_images(python, frameworks, expected):
    assert uv_python_version(stack(python, **frameworks)) == expected


@pytest.mark.network
def test_uv_locks_torch_1_7_1_for_python_3_6_only_with_the_patch(tmp_path):
    torch = stack("3.6", torch="==1.7.1")
    requirements = tmp_path / "in.txt"
    requirements.write_text("torch==1.7.1\n")

    def compile_for(version: str):
        return subprocess.run([uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-build", "--python-version",
                               version, "--python-platform", manylinux_platform(torch),
                               "--index-url", "https://pypi.org/simple", str(requirements)],
                              capture_output=True, text=True, timeout=300,
                              env={**{k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))},
                                   "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never",
                                   "UV_CACHE_DIR": str(Path(tmp_path) / "cache")})

    assert compile_for(uv_python_version(torch)).returncode == 0
    bare = compile_for("3.6")
    assert bare.returncode != 0 and "3.6.2" in bare.stderr


@pytest.mark.parametrize("base_image", ["registry.example/mybase", "nvidia/cuda:11.8.0-runtime-rockylinux9"],
                         ids=["no-dash", "unknown-os"])
def test_an_os_the_matrix_does_not_know_leaves_the_stacks_minor(base_image):
    # a lock's stack may name any base image; Python from an OS archive the matrix has no release
    # for is asked for as the stack's X.Y, never an error
    from dataclasses import replace

    old = replace(stack("3.6", tensorflow="==1.15.5"), base_image=base_image)
    assert old.python_packages and uv_python_version(old) == "3.6"


@pytest.mark.parametrize(("base_image", "arch", "expected"), [
    ("nvidia/cuda:10.0-cudnn7-runtime-ubuntu18.04", "x86_64", "x86_64-manylinux_2_17"),
    ("nvidia/cuda:10.0-runtime-ubuntu16.04", "x86_64", "x86_64-manylinux_2_17"),
    ("nvidia/cuda:10.0-runtime-centos7", "aarch64", "aarch64-manylinux_2_17"),
    ("nvidia/cuda:11.8.0-runtime-ubi7", "x86_64", "x86_64-manylinux_2_17"),
    ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", "x86_64", "x86_64-manylinux_2_28"),
    ("nvidia/cuda:13.0.0-runtime-ubuntu24.04", "aarch64", "aarch64-manylinux_2_28"),
], ids=["bionic", "xenial", "centos7-arm", "ubi7", "jammy", "noble-arm"])
def test_the_platform_uv_locks_for_is_the_images(base_image, arch, expected):
    from dataclasses import replace

    assert manylinux_platform(replace(stack("3.12", torch="==2.6.0"), base_image=base_image, arch=arch)) == expected
