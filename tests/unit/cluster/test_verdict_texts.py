"""What `check --nodes` says about each node, word for word: the reasons a node is refused and the
caveats of one that runs the stack are the report's contract (and a CI annotation each)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.cluster.facts import NodeFacts
from cudaenv.cluster.verdicts import judge, node_gpu
from tests.unit.cluster.helpers import configured_torch_stack

K8S = NodeFacts(name="n", source="kubernetes", driver="550.54.15", product="NVIDIA-A100-SXM4-80GB",
                compute_capability="8.0", gpu_count=8, capacity=8, allocatable=8, labels="new", arch="x86_64")
SLURM = NodeFacts(name="s", source="slurm", driver="550.54.15", product="a100", gpu_count=4, gres="gpu:a100:4",
                  mapped_feature="r550-a100", arch="x86_64")


@pytest.fixture(scope="module")
def stack(matrix):
    return configured_torch_stack(matrix)


def test_a_node_that_runs_it_natively_has_no_reason_and_no_caveat(matrix, stack):
    verdict = judge(matrix, stack, K8S)
    assert (verdict.compatible, verdict.mode, verdict.reasons, verdict.caveats) == (True, "native", (), ())
    assert verdict.host.gpus[0].datacenter is True and verdict.host.driver == "550.54.15"


@pytest.mark.parametrize("facts, why", [
    (replace(K8S, gpu_count=0, capacity=0, product=None, compute_capability=None), "no nvidia.com/gpu capacity, no "
     "GPU Feature Discovery labels"),
    (replace(SLURM, gpu_count=0, product=None), "no gpu GRES"),
])
def test_a_node_without_a_gpu_is_refused_saying_what_its_source_lacks(matrix, stack, facts, why):
    verdict = judge(matrix, stack, facts)
    assert (verdict.compatible, verdict.mode, verdict.reasons, verdict.caveats, verdict.host) == (
        False, None, (f"no NVIDIA GPU on this node ({why})",), (), None)


def test_an_unknown_product_without_a_capability_is_refused_by_name(matrix, stack):
    facts = replace(K8S, product="NVIDIA-Z9000", compute_capability=None)
    verdict = judge(matrix, stack, facts)
    assert verdict.compatible is False and verdict.host is None and verdict.mode is None
    assert verdict.reasons == ("GPU 'NVIDIA-Z9000' is not in the matrix and the node reports no compute capability",)


def test_an_unknown_product_with_a_capability_is_judged_by_it_as_no_data_center_gpu(matrix, stack):
    gpu, caveats = node_gpu(matrix, replace(K8S, product="NVIDIA-Z9000"))
    assert (gpu.name, gpu.compute_capability, gpu.architecture, gpu.datacenter) == ("NVIDIA-Z9000", "8.0", "ampere",
                                                                                     False)
    assert caveats == ("GPU NVIDIA-Z9000 is not in the matrix: judged by its compute capability, as a "
                       "non-data-center GPU (no forward compatibility)",)


def test_a_gres_type_with_underscores_is_looked_up_with_spaces(matrix):
    gpu, caveats = node_gpu(matrix, replace(SLURM, product="tesla_t4", compute_capability=None))
    assert (gpu.name, gpu.compute_capability, gpu.datacenter, caveats) == ("T4", "7.5", True, ())


def test_what_the_source_cannot_know_is_the_reason_and_the_driver_is_not_asked_for_again(matrix, stack):
    facts = replace(K8S, driver=None, unknown=("driver: no label",))
    verdict = judge(matrix, stack, facts)
    assert verdict.reasons == ("cannot be known: driver: no label",) and verdict.compatible is False
    unexplained = judge(matrix, stack, replace(K8S, driver=None))
    assert [r.startswith("no NVIDIA driver found or declared") for r in unexplained.reasons] == [True]


def test_a_slurm_gpu_named_only_by_its_gres_type_says_the_site_chose_the_name(matrix, stack):
    verdict = judge(matrix, stack, replace(SLURM, mapped_feature=None))
    assert verdict.caveats == ("GPU taken from the GRES type name 'a100', a name the site chose",)
    assert judge(matrix, stack, SLURM).caveats == ()  # a mapped feature named the GPU: no caveat


def test_a_kubernetes_node_without_the_device_plugin_or_with_nothing_allocatable_says_so(matrix, stack):
    bare = judge(matrix, stack, replace(K8S, capacity=None, allocatable=None))
    assert bare.compatible and bare.caveats == (
        "the node offers no nvidia.com/gpu resource (is the device plugin running?): pods cannot request its GPUs",)
    busy = judge(matrix, stack, replace(K8S, allocatable=0))
    assert busy.compatible and busy.caveats == (
        "no GPU is allocatable on this node now (status.allocatable nvidia.com/gpu is 0)",)
    assert judge(matrix, stack, replace(K8S, allocatable=0, capacity=0, gpu_count=8)).caveats == ()


def test_caveats_of_the_node_come_before_those_of_the_stack(matrix, stack):
    verdict = judge(matrix, stack, replace(K8S, driver="535.104.05", allocatable=0))
    assert verdict.mode == "minor-version"
    assert verdict.caveats[0].startswith("no GPU is allocatable") and "minor-version" in verdict.caveats[1]


def test_an_aarch64_grace_node_is_refused_once_for_its_cpu(matrix, stack):
    facts = replace(K8S, product="NVIDIA-GH200-480GB", compute_capability="9.0", arch="aarch64")
    verdict = judge(matrix, stack, facts)
    assert verdict.reasons == ("the node's CPU is aarch64; the image is built for x86_64 (its base image and "
                               "framework wheels), so it cannot start there",)
    unlabelled = judge(matrix, stack, replace(facts, arch=None))  # the GH200 implies the Grace CPU
    assert unlabelled.reasons == ("the stack is built for x86_64 and the host's CPU is aarch64: its image and wheels "
                                  "do not run there (lock the project for that CPU: [target] arch = \"aarch64\" in "
                                  "cudaenv.toml, then `cudaenv lock`)",)


@pytest.mark.parametrize("facts, said", [(K8S, "kubernetes.io/arch label"), (SLURM, "Arch= in scontrol show node")],
                         ids=["kubernetes", "slurm"])
def test_a_node_that_states_no_cpu_is_checked_as_the_images_cpu_and_says_so(matrix, stack, facts, said):
    verdict = judge(matrix, stack, replace(facts, arch=None))
    assert verdict.compatible
    assert verdict.caveats[0] == (f"the node states no CPU architecture (no {said}): checked as x86_64, the CPU the "
                                  "image is built for")
    assert not any("CPU architecture" in c for c in judge(matrix, stack, facts).caveats)
