"""Which fixture nodes run a stack, and why the others cannot: the resolver's check_stack, node by node.

The stack is what `cudaenv lock` pins for tests/fixtures/projects/configured-torch (torch >=2.4,<2.6 for
A100 + 550.54.15): torch 2.5.1 built for CUDA 12.4, SASS sm_50-sm_90 (no sm_89: Ada runs the sm_86 code by
binary compatibility). CUDA 12.4 needs driver >= 550.54.14 natively and >= 525.60.13 through CUDA 12's
minor-version compatibility (NVIDIA's CUDA Compatibility guide; both in matrix/cuda.toml).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.cluster.read import read_nodes
from cudaenv.cluster.verdicts import judge, judge_nodes
from cudaenv.resolver.check import check_stack
from cudaenv.resolver.model import Host
from tests.unit.cluster.helpers import NODES, configured_torch_stack

EXPECTED = {
    # R470 tops out at CUDA 11.4 (11.8 through minor-version compatibility): below 12.x's 525.60.13 floor
    "t4-r470": (False, None),
    # R535 < 550.54.14 but >= 525.60.13: CUDA 12.4 through minor-version compatibility; sm_80 is in the SASS list
    "a100-r535": (True, "minor-version"),
    # same driver branch; sm_90 is in the SASS list
    "h100-r535": (True, "minor-version"),
    # 550.54.15 >= 550.54.14: native; sm_61 runs the sm_60 SASS (same major, lower minor)
    "p400-r550": (True, "native"),
    # R570 and R580 are newer than CUDA 12.4's own driver: native; sm_89 runs the sm_86 SASS
    "l4-r570": (True, "native"),
    "rtx4090-r580": (True, "native"),
    # nvidia.com/gpu capacity but no GFD labels: driver and GPU cannot be known, so no vouching
    "nvidia1": (False, None),
    # no GPU at all
    "cpu-0": (False, None),
}


@pytest.fixture(scope="module")
def verdicts(matrix):
    stack = configured_torch_stack(matrix)
    assert (stack.cuda, stack.framework("torch"), stack.driver_compatibility) == ("12.4", "2.5.1", "native")
    return {v.name: v for v in judge_nodes(matrix, stack, read_nodes(str(NODES))[2])}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_node_gets_the_verdict_nvidias_rules_give(verdicts, name):
    verdict = verdicts[name]
    assert (verdict.compatible, verdict.mode) == EXPECTED[name]
    assert bool(verdict.reasons) is not verdict.compatible


def test_the_verdict_is_check_stacks_for_the_nodes_host(matrix, verdicts):
    stack = configured_torch_stack(matrix)
    for verdict in verdicts.values():
        if verdict.host is not None and verdict.host.driver:
            assert check_stack(matrix, stack, verdict.host).reasons == verdict.reasons


def test_the_r470_node_is_refused_for_its_driver_with_the_needed_version(verdicts):
    (reason,) = verdicts["t4-r470"].reasons
    assert "driver 470.129.06" in reason and "CUDA 12.4" in reason and ">= 525.60.13" in reason


def test_minor_version_nodes_carry_the_caveat(verdicts):
    assert any("minor-version compatibility" in c for c in verdicts["a100-r535"].caveats)


def test_a_gpu_the_matrix_does_not_know_is_judged_by_its_compute_capability(matrix):
    """The P400 node's labels with a product no table lists: its compute capability labels decide."""
    p400 = next(n for n in read_nodes(str(NODES))[2] if n.name == "p400-r550")
    unlisted = replace(p400, product="NVIDIA-Unlisted-Board-X1")
    assert matrix.find_gpu(unlisted.product) is None
    verdict = judge(matrix, configured_torch_stack(matrix), unlisted)
    assert verdict.host.gpus[0].compute_capability == "6.1"
    assert any("NVIDIA-Unlisted-Board-X1 is not in the matrix" in c for c in verdict.caveats)


def test_the_quadro_p400_on_nvidias_legacy_page_is_known_by_name(verdicts):
    p400 = verdicts["p400-r550"]
    assert p400.host.gpus[0].name == "Quadro P400"
    assert not any("is not in the matrix" in c for c in p400.caveats)


def test_nodes_without_gpus_or_labels_say_why(verdicts):
    assert verdicts["cpu-0"].reasons == ("no NVIDIA GPU on this node (no nvidia.com/gpu capacity, no GPU Feature "
                                         "Discovery labels)",)
    assert verdicts["nvidia1"].reasons[0].startswith("cannot be known: driver and GPU model")
    assert verdicts["nvidia1"].host is None


def test_a_gpu_older_than_the_build_is_refused_by_the_sm_list(matrix):
    # a Kepler K80 (sm_37) on a driver new enough for CUDA 12.4 would still be refused: no driver branch
    # >= R525 supports Kepler, and torch 2.5.1's build starts at sm_50
    from cudaenv.cluster.facts import NodeFacts

    stack = configured_torch_stack(matrix)
    verdict = judge(matrix, stack, NodeFacts("k80", "kubernetes", driver="550.54.15", product="Tesla-K80",
                                             compute_capability="3.7", gpu_count=1))
    assert not verdict.compatible and any("K80" in r for r in verdict.reasons)


def test_check_stacks_driver_less_wording_is_what_the_node_reasons_replace(matrix):
    # verdicts.py drops check_stack's "pass --driver" reason when the source already says why the
    # driver is unknown; this pins the wording it recognises
    stack = configured_torch_stack(matrix)
    assert check_stack(matrix, stack, Host()).reasons[0].startswith("no NVIDIA driver found or declared")


def test_a_node_whose_labels_lack_the_driver_says_so_instead_of_asking_for_driver(matrix):
    from cudaenv.cluster.facts import NodeFacts

    stack = configured_torch_stack(matrix)
    facts = NodeFacts("l4", "kubernetes", product="NVIDIA-L4", compute_capability="8.9", gpu_count=1,
                      unknown=("driver: no nvidia.com/cuda.driver-version.* or nvidia.com/cuda.driver.* label",))
    verdict = judge(matrix, stack, facts)
    assert not verdict.compatible
    assert verdict.reasons == ("cannot be known: driver: no nvidia.com/cuda.driver-version.* or "
                               "nvidia.com/cuda.driver.* label",)


def test_gfd_labels_without_the_gpu_resource_are_a_caveat(matrix):
    from cudaenv.cluster.facts import NodeFacts

    stack = configured_torch_stack(matrix)
    labelled = NodeFacts("l4", "kubernetes", driver="570.133.20", product="NVIDIA-L4", compute_capability="8.9",
                         gpu_count=1)
    verdict = judge(matrix, stack, labelled)
    assert verdict.compatible and any("offers no nvidia.com/gpu resource" in c for c in verdict.caveats)
    drained = judge(matrix, stack, NodeFacts("l4", "kubernetes", driver="570.133.20", product="NVIDIA-L4",
                                             compute_capability="8.9", gpu_count=1, capacity=1, allocatable=0))
    assert drained.compatible and any("no GPU is allocatable" in c for c in drained.caveats)


def test_a_slurm_gpu_named_only_by_its_gres_type_says_so(matrix):
    from cudaenv.cluster.facts import NodeFacts

    stack = configured_torch_stack(matrix)
    facts = NodeFacts("g1", "slurm", product="tesla_t4", gpu_count=2, unknown=("driver: unknown",))
    verdict = judge(matrix, stack, facts)
    assert verdict.host.gpus[0].name == "T4"
    assert "GPU taken from the GRES type name 'tesla_t4', a name the site chose" in verdict.caveats
