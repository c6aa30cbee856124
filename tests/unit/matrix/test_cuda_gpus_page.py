"""The GPU table knows every GPU on NVIDIA's CUDA GPUs pages, at the compute capability the page gives.

The pages are recorded in tests/fixtures/nvidia-cuda-gpus/ (issue #25): the stored copies of
developer.nvidia.com/cuda-gpus and /cuda-legacy-gpus, and, for the rows those copies do not reach,
the published transcriptions named in after-the-cut.md. Each listed name must resolve the way a
``--gpu`` value does (``Matrix.find_gpu``) to a row with that capability, so a card dropped from the
table, or a row given another capability, fails here.
"""

from __future__ import annotations

import pytest

from cudaenv.matrix import load_matrix
from tests.support.cuda_gpus_page import FIXTURES, every_listed, split_names, stored_copy, transcribed

LISTED = every_listed()


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.mark.parametrize("listed", LISTED, ids=[f"{x.compute_capability}-{x.name}" for x in LISTED])
def test_every_gpu_on_the_page_is_in_the_table_at_its_compute_capability(matrix, listed):
    row = matrix.find_gpu(listed.name)
    assert row is not None, f"{listed.where}: {listed.name!r} ({listed.compute_capability}) is not in matrix/gpus.toml"
    assert row.compute_capability == listed.compute_capability, (
        f"{listed.where}: {listed.name!r} is {listed.compute_capability} on the page, "
        f"but matrix/gpus.toml row {row.name!r} says {row.compute_capability}")


def test_the_recorded_pages_list_every_capability_row_they_reach():
    """The parse is not silently empty: each recorded compute capability row yields its GPUs."""
    current = {x.compute_capability for x in stored_copy(FIXTURES / "cuda-gpus.md")}
    legacy = {x.compute_capability for x in stored_copy(FIXTURES / "cuda-legacy-gpus.md")}
    tail = {x.compute_capability for x in transcribed(FIXTURES / "after-the-cut.md")}
    assert current == {"12.1", "12.0", "11.0", "10.3", "10.0", "9.0", "8.9", "8.7", "8.6"}
    assert legacy == {"7.2", "7.0", "6.2", "6.1", "6.0", "5.3", "5.2", "5.0"}
    assert tail == {"8.6", "8.0", "7.5", "5.0", "3.7", "3.5", "3.0"}
    assert len(LISTED) == 226


def test_a_row_cut_short_loses_only_its_unfinished_name():
    legacy = [x.name for x in stored_copy(FIXTURES / "cuda-legacy-gpus.md") if x.compute_capability == "5.0"]
    assert legacy[0] == "Quadro K2200" and legacy[-1] == "GeForce GTX 950M"  # "GeForce 940M G" is cut
    current = [x.name for x in stored_copy(FIXTURES / "cuda-gpus.md") if x.compute_capability == "8.6"]
    assert current[-1] == "NVIDIA RTX A2000"  # "GeForce RTX 3" is cut


@pytest.mark.parametrize(
    ("cell", "names"),
    [
        ("Tesla P40 Tesla P4", ["Tesla P40", "Tesla P4"]),
        ("Quadro P400 P620 P520 NVIDIA TITAN Xp", ["Quadro P400", "P620", "P520", "NVIDIA TITAN Xp"]),
        ("Quadro M6000 24GB Quadro M6000", ["Quadro M6000 24GB", "Quadro M6000"]),
        ("NVIDIA GB10 (DGX Spark)", ["NVIDIA GB10 (DGX Spark)"]),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition NVIDIA RTX PRO 5000 Blackwell",
         ["NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "NVIDIA RTX PRO 5000 Blackwell"]),
    ],
)
def test_run_together_names_are_split_where_a_product_name_starts(cell, names):
    assert split_names(cell) == names


@pytest.mark.parametrize(
    ("driver_name", "cc"),
    [  # the names nvidia-smi / NVML print for the cards issue #25 names, and the H100 read on 2026-11-26
        ("NVIDIA GeForce GTX 980", "5.2"),
        ("Quadro M4000", "5.2"),
        ("NVIDIA TITAN Xp", "6.1"),
        ("Quadro P4000", "6.1"),
        ("NVIDIA GeForce MX450", "7.5"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA TITAN X (Pascal)", "6.1"),
        ("NVIDIA GeForce GTX TITAN X", "5.2"),  # Maxwell: not the Pascal TITAN X
        ("Quadro P4000 with Max-Q Design", "6.1"),
        ("GeForce GTX 760 (192-bit)", "3.0"),
    ],
)
def test_names_the_driver_prints_resolve(matrix, driver_name, cc):
    row = matrix.find_gpu(driver_name)
    assert row is not None and row.compute_capability == cc
