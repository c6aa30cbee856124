"""GPU names match leniently, the way nvidia-smi and people spell them."""

from __future__ import annotations

import pytest

from cudaenv.matrix import load_matrix


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.mark.parametrize(
    ("query", "name", "cc"),
    [
        ("a100", "A100", "8.0"),
        ("NVIDIA A100-SXM4-80GB", "A100", "8.0"),
        ("NVIDIA A100 80GB PCIe", "A100", "8.0"),
        ("Tesla T4", "T4", "7.5"),
        ("t4", "T4", "7.5"),
        ("Tesla K80", "K80", "3.7"),
        ("K80", "K80", "3.7"),
        ("NVIDIA H100 80GB HBM3", "H100", "9.0"),
        ("h100", "H100", "9.0"),
        ("NVIDIA H200", "H200", "9.0"),
        ("NVIDIA B200", "B200", "10.0"),
        ("NVIDIA GeForce RTX 3090", "RTX 3090", "8.6"),
        ("rtx 3090", "RTX 3090", "8.6"),
        ("NVIDIA GeForce RTX 5090", "RTX 5090", "12.0"),
        ("RTX 5090", "RTX 5090", "12.0"),
        ("GeForce GTX 1080 Ti", "GTX 1080 Ti", "6.1"),
        ("gtx 1080 ti", "GTX 1080 Ti", "6.1"),
        ("GTX 1080", "GTX 1080", "6.1"),
        ("Tesla P100-PCIE-16GB", "P100", "6.0"),
        ("Tesla P100", "P100", "6.0"),
        ("Tesla V100-SXM2-16GB", "V100", "7.0"),
        ("NVIDIA RTX A6000", "RTX A6000", "8.6"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "8.9"),
        ("NVIDIA L40S", "L40S", "8.9"),
        ("NVIDIA L4", "L4", "8.9"),
        ("NVIDIA A10G", "A10G", "8.6"),
        ("NVIDIA A10", "A10", "8.6"),
        ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti", "7.5"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", "8.9"),
    ],
)
def test_name_resolves_to_gpu_with_compute_capability(matrix, query, name, cc):
    gpu = matrix.find_gpu(query)
    assert gpu is not None, f"{query!r} matched nothing"
    assert (gpu.name, gpu.compute_capability) == (name, cc)


@pytest.mark.parametrize("query", ["", "Radeon RX 7900", "A1000000", "nvidia"])
def test_unknown_names_match_nothing(matrix, query):
    assert matrix.find_gpu(query) is None


def test_a_suffix_letter_is_a_different_gpu_not_a_prefix(matrix):
    assert matrix.find_gpu("A10").name == "A10"
    assert matrix.find_gpu("A10G").name == "A10G"
    assert matrix.find_gpu("RTX 3090 Ti").name == "RTX 3090 Ti"
