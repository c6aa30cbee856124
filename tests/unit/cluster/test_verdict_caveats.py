"""Caveats accumulate: what the GPU's name said (MIG slice, shared GPU, a GRES type name) is kept
beside what the node's resources say, whether or not the GPU could be judged; and the GPU the
resolver sees is built from whatever the node reports (a capability alone, one newer than the matrix)."""

from __future__ import annotations

from cudaenv.cluster.kubernetes import read_kubernetes
from cudaenv.cluster.slurm import read_slurm
from cudaenv.cluster.verdicts import judge, known_hosts, node_gpu
from cudaenv.resolver.model import Host
from tests.unit.cluster.helpers import as_list, configured_torch_stack, node

MIG = "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb"


def read_one(obj: dict):
    [facts] = read_kubernetes("nodes.json", as_list(obj))
    return facts


def with_product(name: str, product: str) -> dict:
    obj = node(name)
    obj["metadata"]["labels"]["nvidia.com/gpu.product"] = product
    return obj


def test_a_shared_gpu_the_matrix_does_not_list_keeps_its_caveat_when_it_cannot_be_judged(matrix):
    obj = with_product("l4-r570", "NVIDIA-Z9000-SHARED")
    for key in ("nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor"):
        del obj["metadata"]["labels"][key]
    verdict = judge(matrix, configured_torch_stack(matrix), read_one(obj))
    assert not verdict.compatible and verdict.host is None
    assert verdict.caveats == ("NVIDIA-Z9000-SHARED: the node shares each NVIDIA-Z9000 between pods (time-slicing "
                               "or MPS)",)


def test_a_mig_node_without_the_gpu_resource_gets_both_caveats(matrix):
    """GFD labelled the node but no device plugin offers nvidia.com/gpu: pods cannot ask for it,
    and what it offers are MIG slices; both are said."""
    obj = with_product("a100-r535", MIG)
    for section in ("capacity", "allocatable"):
        del obj["status"][section]["nvidia.com/gpu"]
    verdict = judge(matrix, configured_torch_stack(matrix), read_one(obj))
    assert verdict.caveats[:2] == (
        f"{MIG}: the node offers MIG slices of a NVIDIA-A100-80GB-PCIe, judged as a NVIDIA-A100-80GB-PCIe",
        "the node offers no nvidia.com/gpu resource (is the device plugin running?): pods cannot request its GPUs")


def test_a_shared_gpu_with_none_allocatable_gets_both_caveats(matrix):
    obj = with_product("rtx4090-r580", "NVIDIA-GeForce-RTX-4090-SHARED")
    obj["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    verdict = judge(matrix, configured_torch_stack(matrix), read_one(obj))
    assert verdict.caveats[:2] == (
        "NVIDIA-GeForce-RTX-4090-SHARED: the node shares each NVIDIA-GeForce-RTX-4090 between pods (time-slicing "
        "or MPS)",
        "no GPU is allocatable on this node now (status.allocatable nvidia.com/gpu is 0)")


def test_a_gres_type_naming_a_mig_slice_gets_both_caveats(matrix):
    """A GRES type is the site's name: that it was used is said beside what the name itself says."""
    [facts] = read_slurm("n.txt", "NodeName=g1 Arch=x86_64 Gres=gpu:a100-MIG-3g.40gb:2\n")
    verdict = judge(matrix, configured_torch_stack(matrix), facts)
    assert verdict.caveats[:2] == (
        "a100-MIG-3g.40gb: the node offers MIG slices of a a100, judged as a a100",
        "GPU taken from the GRES type name 'a100-MIG-3g.40gb', a name the site chose")


def test_a_gpu_known_only_by_its_compute_capability_is_judged(matrix):
    """No product label: the capability GFD read from NVML is enough to judge."""
    obj = node("l4-r570")
    del obj["metadata"]["labels"]["nvidia.com/gpu.product"]
    gpu, caveats = node_gpu(matrix, read_one(obj))
    assert (gpu.compute_capability, gpu.name, gpu.architecture, caveats) == ("8.9", None, "ada", ())
    assert judge(matrix, configured_torch_stack(matrix), read_one(obj)).host.gpus == (gpu,)


def test_a_compute_capability_newer_than_the_matrix_has_no_architecture(matrix):
    """A GPU newer than the matrix is judged by its capability, with no architecture to name."""
    obj = with_product("l4-r570", "NVIDIA-Z9000")
    obj["metadata"]["labels"].update({"nvidia.com/gpu.compute.major": "15", "nvidia.com/gpu.compute.minor": "0"})
    gpu, _ = node_gpu(matrix, read_one(obj))
    assert (gpu.compute_capability, gpu.name, gpu.architecture) == ("15.0", "NVIDIA-Z9000", None)


def test_a_node_whose_resources_show_no_gpu_is_a_host_without_gpus(matrix):
    """Stale GFD labels (product, capability, driver) on a node whose device plugin counts 0 GPUs:
    the count decides, so the stack is not resolved for a GPU the node does not offer."""
    obj = node("a100-r535")
    del obj["metadata"]["labels"]["nvidia.com/gpu.count"]
    obj["status"]["capacity"]["nvidia.com/gpu"] = obj["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    facts = read_one(obj)
    assert not facts.has_gpu and facts.product is not None
    assert known_hosts(matrix, (facts,)) == (Host("535.154.05", (), "x86_64"),)
