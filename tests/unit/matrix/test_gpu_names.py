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
        # rows added from NVIDIA's CUDA GPUs table (issue #16), as the driver names them
        ("NVIDIA RTX PRO 5000 Blackwell", "RTX PRO 5000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 5000 72GB Blackwell", "RTX PRO 5000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 4500 Blackwell", "RTX PRO 4500 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 4500 Blackwell Server Edition", "RTX PRO 4500 Blackwell Server Edition", "12.0"),
        ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "RTX PRO 4000 Blackwell SFF Edition", "12.0"),
        ("NVIDIA RTX PRO 2000 Blackwell", "RTX PRO 2000 Blackwell", "12.0"),
        ("NVIDIA GeForce RTX 5050", "RTX 5050", "12.0"),
        ("NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada", "8.9"),
        ("NVIDIA RTX 4500 Ada Generation", "RTX 4500 Ada", "8.9"),
        ("NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada", "8.9"),
        ("NVIDIA RTX 4000 SFF Ada Generation", "RTX 4000 SFF Ada", "8.9"),  # not the Turing Quadro RTX 4000
        ("NVIDIA RTX 2000 Ada Generation", "RTX 2000 Ada", "8.9"),
        ("NVIDIA RTX A4500", "RTX A4500", "8.6"),
        ("NVIDIA RTX A2000 12GB", "RTX A2000", "8.6"),
        ("NVIDIA GeForce RTX 3050", "RTX 3050", "8.6"),
        ("NVIDIA A800-SXM4-80GB", "A800", "8.0"),
        ("NVIDIA A800 80GB PCIe", "A800", "8.0"),
        ("NVIDIA H800", "H800", "9.0"),
        ("NVIDIA H800 PCIe", "H800", "9.0"),
        ("NVIDIA L20", "L20", "8.9"),
        ("NVIDIA L2", "L2", "8.9"),
        ("NVIDIA GeForce RTX 2060 SUPER", "RTX 2060", "7.5"),
        ("NVIDIA GeForce GTX 1650", "GTX 1650", "7.5"),
        ("NVIDIA GeForce GTX 1660 Ti", "GTX 1660", "7.5"),
        ("NVIDIA T1000 8GB", "T1000", "7.5"),
        ("NVIDIA T600", "T600", "7.5"),
        ("NVIDIA T400 4GB", "T400", "7.5"),
        ("Quadro RTX 5000", "Quadro RTX 5000", "7.5"),
        ("Quadro RTX 4000", "Quadro RTX 4000", "7.5"),
        ("NVIDIA TITAN RTX", "TITAN RTX", "7.5"),
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


@pytest.mark.parametrize(
    ("query", "name", "cc"),
    [
        # laptop and embedded parts, as the driver names them (NVIDIA's open-gpu-kernel-modules README)
        ("NVIDIA GeForce RTX 4050 Laptop GPU", "RTX 4050", "8.9"),
        ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", "RTX 3050", "8.6"),
        ("NVIDIA GeForce RTX 3050Ti Laptop GPU", "RTX 3050", "8.6"),
        ("NVIDIA GeForce RTX 5050 Laptop GPU", "RTX 5050", "12.0"),
        ("NVIDIA RTX A3000 Laptop GPU", "RTX A3000", "8.6"),
        ("NVIDIA RTX A2000 8GB Laptop GPU", "RTX A2000", "8.6"),
        ("NVIDIA RTX 5000 Ada Generation Laptop GPU", "RTX 5000 Ada", "8.9"),  # not the Turing Quadro RTX 5000
        ("NVIDIA RTX 4000 Ada Generation Laptop GPU", "RTX 4000 Ada", "8.9"),
        ("NVIDIA RTX PRO 5000 Blackwell Generation Laptop GPU", "RTX PRO 5000 Blackwell", "12.0"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "RTX 3060", "8.6"),
        ("NVIDIA GeForce GTX 1650 Ti with Max-Q Design", "GTX 1650", "7.5"),
        ("NVIDIA T600 Laptop GPU", "T600", "7.5"),
    ],
)
def test_laptop_names_resolve_to_their_gpu(matrix, query, name, cc):
    gpu = matrix.find_gpu(query)
    assert gpu is not None, f"{query!r} matched nothing"
    assert (gpu.name, gpu.compute_capability) == (name, cc)


@pytest.mark.parametrize(
    ("query", "name", "cc"),
    [
        # vGPU type names, '<board>-<profile>' (g_nv_name_released.h in NVIDIA's open-gpu-kernel-modules)
        ("GRID T4-16Q", "T4", "7.5"),
        ("GRID T4-8C", "T4", "7.5"),
        ("GRID A100-40C", "A100", "8.0"),
        ("GRID A100D-80C", "A100", "8.0"),
        ("NVIDIA A100D-80C", "A100", "8.0"),
        ("GRID A100DX-80C", "A100", "8.0"),
        ("GRID A100X-1-5C", "A100", "8.0"),
        ("NVIDIA A30-24C", "A30", "8.0"),
        ("NVIDIA A10-24Q", "A10", "8.6"),
        ("NVIDIA L40S-48C", "L40S", "8.9"),
        ("NVIDIA L20-48C", "L20", "8.9"),
        ("NVIDIA H100XM-1-10CME", "H100", "9.0"),
        ("NVIDIA H800L-94C", "H800", "9.0"),
        ("GRID A800DX-80C", "A800", "8.0"),
        ("NVIDIA RTXA6000-48Q", "RTX A6000", "8.6"),
        ("NVIDIA RTX6000-Ada-48Q", "RTX 6000 Ada", "8.9"),
        ("NVIDIA RTX5000-Ada-32Q", "RTX 5000 Ada", "8.9"),
        ("NVIDIA RTX Pro 6000 Blackwell DC-4-96C", "RTX PRO 6000 Blackwell Server Edition", "12.0"),
    ],
)
def test_vgpu_type_names_resolve_to_the_physical_gpu(matrix, query, name, cc):
    gpu = matrix.find_gpu(query)
    assert gpu is not None, f"{query!r} matched nothing"
    assert (gpu.name, gpu.compute_capability) == (name, cc)


def test_a_vgpu_board_suffix_is_not_a_prefix_of_another_board(matrix):
    assert matrix.find_gpu("NVIDIA A10M-20C") is None  # A10M is a board of its own, not an A10
    assert matrix.find_gpu("GRID RTX T10-16") is None  # a GRID board the matrix does not know
