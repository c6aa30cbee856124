"""The shipped matrix: complete, sourced, and consistent across its files."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from cudaenv.matrix import load_matrix
from cudaenv.resolver.driver import native_min_driver
from cudaenv.versions import numeric_key

READ_DATE = re.compile(r"read \d{4}-\d{2}-\d{2}")


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


ROW_KINDS = ["cuda_majors", "cuda_releases", "driver_branches", "architectures", "gpus", "cudnn",
             "torch", "tensorflow", "jax", "mxnet", "images"]


@pytest.mark.parametrize("attribute", ROW_KINDS)
def test_every_row_names_its_source_and_read_date(matrix, attribute):
    rows = getattr(matrix, attribute)
    assert rows, f"no {attribute} rows"
    for row in rows:
        assert READ_DATE.search(row.source), f"{attribute} row without a dated source: {row}"


def test_cuda_releases_run_from_8_0_to_13(matrix):
    versions = [r.version for r in matrix.cuda_releases]
    assert versions[:2] == ["8.0.44", "8.0.61"]  # 8.0 targets Fermi (sm_20): gpus.toml has the architecture for it
    assert numeric_key(versions[-1]) >= (13, 0)
    for xy in ["8.0", "9.0", "9.1", "9.2", "10.0", "10.2", "11.0", "11.8", "12.0", "12.4", "12.8", "13.0"]:
        assert xy in matrix.cuda_minors


@pytest.mark.parametrize(("xy", "driver"), [("11.8", "520.61.05"), ("12.0", "525.60.13"), ("12.4", "550.54.14"),
                                             ("10.2", "440.33"), ("11.0", "450.51.05")])
def test_native_minimum_drivers_match_nvidia_table(matrix, xy, driver):
    # NVIDIA CUDA Toolkit release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions" (Linux).
    assert native_min_driver(matrix, xy) == driver


def test_minor_version_floors_per_major(matrix):
    # NVIDIA CUDA Compatibility guide: 11.x >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580.
    assert {m.major: m.minor_version_floor for m in matrix.cuda_majors} == {11: "450.80.02", 12: "525.60.13", 13: "580"}


def test_driver_branch_max_cuda_agrees_with_cuda_table(matrix):
    """A branch's highest native CUDA is the newest x.y whose GA minimum driver is in that branch or older —
    or the driver API version the branch reports when no toolkit carries it (R565 reports 12.7; no 12.7
    toolkit exists), never a toolkit x.y whose GA driver belongs to a newer branch."""
    for branch in matrix.driver_branches:
        ga = {}
        for xy in matrix.cuda_minors:
            minimum = native_min_driver(matrix, xy)
            if minimum is not None:
                ga[xy] = numeric_key(minimum)[0]
        reachable = [xy for xy, b in ga.items() if b <= branch.branch]
        if not reachable or numeric_key(branch.max_cuda) > numeric_key(max(ga, key=numeric_key)):
            continue  # newer than every CUDA row with a known minimum driver
        newest = max(reachable, key=numeric_key)
        assert numeric_key(newest) <= numeric_key(branch.max_cuda), f"R{branch.branch}"
        beyond = [xy for xy in ga if numeric_key(newest) < numeric_key(xy) <= numeric_key(branch.max_cuda)]
        assert not beyond, f"R{branch.branch}: max_cuda {branch.max_cuda} claims toolkits of newer branches: {beyond}"


def test_kepler_ends_at_r470_and_maxwell_pascal_volta_at_r580(matrix):
    with_kepler = [b.branch for b in matrix.driver_branches if "kepler" in b.architectures]
    assert max(with_kepler) == 470
    for arch in ("maxwell", "pascal", "volta"):
        assert max(b.branch for b in matrix.driver_branches if arch in b.architectures) == 580


@pytest.mark.parametrize("name", ["K80", "P100", "P40", "V100", "T4", "A10", "A30", "A40", "A100", "L4", "L40S",
                                  "H100", "H200", "B200", "GTX 1080", "GTX 1080 Ti", "RTX 2080 Ti", "RTX 3090",
                                  "RTX 4090", "RTX 5090", "RTX A6000", "RTX 6000 Ada"])
def test_required_gpu_models_are_present(matrix, name):
    assert matrix.find_gpu(name) is not None


def _contiguous_from(rows, first: str) -> list[str]:
    versions = [r.version for r in rows]
    assert versions[0] == first
    assert versions == sorted(versions, key=Version)
    return versions


def test_torch_covers_every_release_from_1_0(matrix):
    versions = _contiguous_from(matrix.torch, "1.0.0")
    for v in ["1.0.1", "1.1.0", "1.4.0", "1.7.1", "1.9.1", "1.11.0", "1.12.0", "1.12.1", "1.13.0", "1.13.1", "2.0.0", "2.0.1", "2.1.2", "2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.0",
              "2.7.1", "2.8.0", "2.9.1"]:
        assert v in versions
    for row in matrix.torch:
        assert row.python, row.version
        assert row.variants, f"torch {row.version} lists no CUDA build"


def test_tensorflow_covers_every_release_from_1_0(matrix):
    versions = _contiguous_from(matrix.tensorflow, "1.0.0")
    for v in ["1.4.1", "1.12.3", "1.14.0", "1.15.0", "1.15.5", "2.0.4", "2.3.4", "2.4.4", "2.5.3", "2.6.5", "2.8.4", "2.11.1", "2.12.1", "2.13.1", "2.14.1", "2.15.1", "2.16.1",
              "2.17.1", "2.18.0"]:
        assert v in versions


def test_torch_pypi_pins_agree_with_the_pypi_cuda(matrix):
    for row in matrix.torch:
        runtime = [spec for name, spec in row.pypi_requires if name.startswith("nvidia-cuda-runtime") or name == "cuda-toolkit"]
        if runtime:
            assert runtime[0].lstrip("=").startswith(row.pypi_cuda + "."), row.version


def test_tensorflow_and_cuda_pins_agree_with_cuda_and_cudnn(matrix):
    for row in matrix.tensorflow:
        pins = dict(row.and_cuda)
        runtime = next((s for n, s in pins.items() if n.startswith("nvidia-cuda-runtime")), None)
        if runtime:
            assert re.sub(r"^[=<>~!]+", "", runtime.split(",")[-1] if runtime.startswith("<") else runtime).startswith(row.cuda), row.version


def test_every_cuda_release_with_images_has_valid_tags(matrix):
    for image in matrix.images:
        assert image.os
        assert image.tag("runtime", image.os[0]).startswith(image.tag_version + "-runtime-")
        for cudnn in image.cudnn:
            assert cudnn.os and set(cudnn.os) <= set(image.os), image.cuda


def test_cudnn_tag_spelling_changed_at_12_4(matrix):
    def tags(version):
        image = next(i for i in matrix.images if i.cuda == version)
        return {c.tag for c in image.cudnn}
    assert tags("11.8.0") == {"cudnn8"}
    assert tags("12.4.1") == {"cudnn"}
