"""The rules of the wheel question (cudaenv.project.wheels): which Pythons a wheel file installs
on, what uv's refusal names, how a range of Pythons reads, when a Python's end of life is said,
and uv's wheels-only options. The choice itself, with uv and a real index, is in
tests/integration/test_wheel_choice.py."""

from __future__ import annotations

from datetime import date

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.project.wheels import (coverage, eol_caveat, missing_wheel, no_build_options, page_files, platform_tags,
                                    python_text, pythons_of_wheel, releases)

MODERN = "x86_64-manylinux_2_28"
OLD_GLIBC = "x86_64-manylinux_2_17"

# uv 0.13's words when --no-build leaves nothing to install (recorded from `uv pip compile` against PyPI)
UV_PINNED = """error: No solution found when resolving dependencies
  cause: Because numpy==1.21.0 has no usable wheels and you require numpy==1.21.0, we can conclude that your requirements are unsatisfiable.

hint: Wheels are required for `numpy` because building from source is disabled for all packages (i.e., with `--no-build`)
"""
UV_RANGE = """error: No solution found when resolving dependencies
  cause: Because numpy>=1.20.0,<=1.21.6 has no usable wheels and only the following versions of numpy are available:
             numpy<=1.21.6
             numpy>=1.22
         we can conclude that numpy>=1.20.0,<1.22 cannot be used.
"""
UV_CONFLICT = """error: No solution found when resolving dependencies
  cause: Because you require six==1.0 and six==2.0, we can conclude that your requirements are unsatisfiable.
"""


def test_uvs_refusal_of_a_pin_names_the_pin():
    assert missing_wheel(UV_PINNED) == "numpy==1.21.0"


def test_uvs_refusal_of_a_range_names_the_range():
    assert missing_wheel(UV_RANGE) == "numpy>=1.20.0,<=1.21.6"


def test_a_conflict_is_not_a_missing_wheel():
    assert missing_wheel(UV_CONFLICT) is None


def test_only_uvs_hint_still_names_the_package():
    assert missing_wheel("hint: Wheels are required for `pandas` because building is disabled") == "pandas"


# --- which Pythons a wheel file installs on (real file names from PyPI) --------------------------


@pytest.mark.parametrize(("filename", "pythons"), [
    ("numpy-1.21.0-cp39-cp39-manylinux_2_12_x86_64.manylinux2010_x86_64.whl", {"3.9"}),
    ("numpy-1.26.4-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", {"3.12"}),
    ("six-1.16.0-py2.py3-none-any.whl", {f"3.{m}" for m in range(6, 17)}),
    # the stable ABI: one wheel for its CPython and every later one
    ("cryptography-43.0.1-cp39-abi3-manylinux_2_28_x86_64.whl", {f"3.{m}" for m in range(9, 17)}),
    ("numpy-1.26.4-cp312-cp312-musllinux_1_1_x86_64.whl", set()),  # musl, not glibc
    ("numpy-1.26.4-cp312-cp312-macosx_11_0_arm64.whl", set()),
    ("numpy-1.26.4-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl", set()),  # another CPU
    ("numpy-1.26.4.tar.gz", set()),  # an sdist installs only by building
])
def test_wheel_file_installs_on_the_pythons_its_tags_name(filename, pythons):
    assert pythons_of_wheel(filename, MODERN) == pythons


def test_a_wheel_for_a_newer_glibc_than_the_images_does_not_install():
    wheel = "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert pythons_of_wheel(wheel, MODERN) == {"3.12"}
    assert pythons_of_wheel(wheel, OLD_GLIBC) == set()  # ubuntu18.04 / centos7 images: glibc 2.17


def test_platform_tags_include_the_legacy_manylinux_names_down_to_manylinux1():
    tags = platform_tags(OLD_GLIBC)
    assert tags[0] == "manylinux_2_17_x86_64"
    assert {"manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert "manylinux_2_18_x86_64" not in tags


PAGE = """<!DOCTYPE html><html><body>
<a href="../../files/oldpin-1.0-cp39-cp39-manylinux_2_17_x86_64.whl#sha256=00">oldpin-1.0-cp39-cp39-manylinux_2_17_x86_64.whl</a>
<a href="https://files.example/packages/ab/oldpin-1.2-cp311-cp311-manylinux_2_17_x86_64.whl#sha256=11">x</a>
<a href="/files/oldpin-1.2-cp312-cp312-manylinux_2_17_x86_64.whl">oldpin-1.2-cp312-cp312-manylinux_2_17_x86_64.whl</a>
<a href="/files/oldpin-1.2.tar.gz">oldpin-1.2.tar.gz</a>
<a href="/files/otherpkg-9.0-py3-none-any.whl">otherpkg-9.0-py3-none-any.whl</a>
</body></html>"""


def test_releases_from_an_index_page_say_what_each_version_covers_and_whether_it_has_an_sdist():
    found = releases(page_files(PAGE), "oldpin", MODERN)
    assert [(str(r.version), sorted(r.pythons), r.sdist) for r in found] == [
        ("1.0", ["3.9"], False), ("1.2", ["3.11", "3.12"], True)]


def test_coverage_is_of_the_versions_the_requirement_allows():
    found = releases(page_files(PAGE), "oldpin", MODERN)
    assert coverage(found, SpecifierSet("==1.0")) == {"3.9"}
    assert coverage(found, SpecifierSet(">=1.0")) == {"3.9", "3.11", "3.12"}
    assert coverage(found, SpecifierSet("==2.0")) == frozenset()


# --- how Pythons read, and when one is past its end of life --------------------------------------


@pytest.mark.parametrize(("pythons", "text"), [
    ({"3.9"}, "3.9"), ({"3.9", "3.10", "3.11"}, "3.9–3.11"), ({"3.8", "3.9", "3.11"}, "3.8–3.9, 3.11"),
    ({"3.12", "3.10", "3.11"}, "3.10–3.12"), (set(), "none"),
], ids=["one", "run", "run-and-one", "unordered", "empty"])  # plain ids: mutmut finds each test again by its id
def test_python_ranges_read_as_runs_in_numeric_order(pythons, text):
    assert python_text(pythons) == text


def test_a_python_past_its_end_of_life_is_named_with_its_pep():
    caveat = eol_caveat("3.9", today=date(2025, 10, 31))
    assert caveat is not None and caveat.code == "python-end-of-life"
    assert "Python 3.9 reached its end of life on 2025-10-31 (PEP 596)" in caveat.message


def test_a_python_still_supported_gets_no_caveat():
    assert eol_caveat("3.9", today=date(2025, 10, 30)) is None
    assert eol_caveat("3.12", today=date(2026, 11, 26)) is None


# --- uv's wheels-only options ---------------------------------------------------------------------


def test_wheels_only_is_uvs_no_build():
    assert no_build_options() == ["--no-build"]


def test_packages_allowed_to_build_come_from_source_and_nothing_else_does():
    assert no_build_options(("flash-attn", "apex")) == [
        "--only-binary", ":all:", "--no-binary", "flash-attn", "--no-binary", "apex"]


@pytest.mark.parametrize("base, platform", [
    ("nvidia/cuda:11.3.1-cudnn8-runtime-ubuntu18.04", OLD_GLIBC), ("nvidia/cuda:10.2-cudnn7-runtime-ubuntu16.04", OLD_GLIBC),
    ("nvidia/cuda:11.4.3-runtime-centos7", OLD_GLIBC), ("nvidia/cuda:11.4.3-runtime-ubi7", OLD_GLIBC),
    ("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", MODERN), ("nvidia/cuda:11.8.0-runtime-ubuntu20.04", MODERN),
    ("python:3.12-slim", MODERN),
], ids=["ubuntu18.04", "ubuntu16.04", "centos7", "ubi7", "ubuntu22.04", "ubuntu20.04", "slim"])
def test_an_old_glibc_base_image_locks_for_manylinux_2_17(base, platform):
    """glibc 2.27 (Ubuntu 18.04) cannot load a manylinux_2_28 wheel: the lock must not pick one."""
    from dataclasses import replace

    from cudaenv.matrix import load_matrix
    from cudaenv.project.wheels import manylinux_platform
    from cudaenv.resolver.model import Constraints, Host
    from cudaenv.resolver.resolve import resolve

    stack = resolve(load_matrix(overlays=[]), Constraints(), Host(driver="550.54.15")).stack
    assert manylinux_platform(replace(stack, base_image=base)) == platform
