"""Reading `kubectl get nodes -o json`: GPU Feature Discovery's old keys (cuda.driver.*, GFD <= 0.8),
its new keys (cuda.driver-version.*, k8s-device-plugin >= 0.15) or both, the device plugin's
nvidia.com/gpu capacity, and bad values named with file, node and label."""

from __future__ import annotations

import json

import pytest

from cudaenv.cluster.facts import NodesInputError
from cudaenv.cluster.read import parse_document, read_nodes
from cudaenv.cluster.kubernetes import read_kubernetes
from tests.unit.cluster.helpers import NODES, SINGLE_NODE, as_list, node

NEW_KEYS = ("nvidia.com/cuda.driver-version.", "nvidia.com/cuda.runtime-version.")
OLD_KEYS = ("nvidia.com/cuda.driver.", "nvidia.com/cuda.runtime.")


def facts_of(*nodes):
    return {f.name: f for f in read_kubernetes("nodes.json", as_list(*nodes))}


def without(obj: dict, prefixes: tuple[str, ...]) -> dict:
    labels = obj["metadata"]["labels"]
    obj["metadata"]["labels"] = {k: v for k, v in labels.items() if not k.startswith(prefixes)}
    return obj


def test_every_fixture_node_is_read_with_its_driver_and_gpu():
    _, kind, nodes = read_nodes(str(NODES))
    facts = {n.name: (n.driver, n.cuda_driver_api, n.compute_capability, n.product, n.gpu_count, n.labels)
             for n in nodes}
    assert kind == "kubernetes"
    assert facts == {
        "t4-r470": ("470.129.06", "11.4", "7.5", "Tesla-T4", 1, "old"),
        "a100-r535": ("535.154.05", "12.2", "8.0", "NVIDIA-A100-80GB-PCIe", 1, "old"),
        "h100-r535": ("535.129.03", "12.2", "9.0", "NVIDIA-H100-80GB-HBM3", 8, "new"),
        "p400-r550": ("550.54.15", "12.4", "6.1", "Quadro-P400", 1, "new+old"),
        "l4-r570": ("570.133.20", "12.8", "8.9", "NVIDIA-L4", 1, "new+old"),
        "rtx4090-r580": ("580.95.05", "13.0", "8.9", "NVIDIA-GeForce-RTX-4090", 8, "new+old"),
        "nvidia1": (None, None, None, None, None, None),
        "cpu-0": (None, None, None, None, None, None),
    }


def test_the_device_plugin_count_is_read_from_capacity_and_allocatable():
    facts = facts_of(node("rtx4090-r580"), node("cpu-0"))
    assert (facts["rtx4090-r580"].capacity, facts["rtx4090-r580"].allocatable) == (16, 16)  # 8 GPUs x 2 MPS replicas
    assert (facts["cpu-0"].capacity, facts["cpu-0"].has_gpu) == (None, False)


@pytest.mark.parametrize("keep", [NEW_KEYS, OLD_KEYS], ids=["new-keys-only", "old-keys-only"])
def test_either_label_set_alone_gives_the_same_driver(keep):
    both = node("p400-r550")  # GFD >= 0.15 writes both sets
    drop = OLD_KEYS if keep == NEW_KEYS else NEW_KEYS
    alone = facts_of(without(both, drop))["p400-r550"]
    assert (alone.driver, alone.cuda_driver_api) == ("550.54.15", "12.4")
    assert alone.labels == ("new" if keep == NEW_KEYS else "old")


def test_a_two_part_driver_version_has_an_empty_revision_label():
    # GFD's README example: cuda.driver.major "455", minor "06", rev "" (a version without a revision)
    obj = without(node("t4-r470"), NEW_KEYS + OLD_KEYS)
    obj["metadata"]["labels"].update({"nvidia.com/cuda.driver.major": "455", "nvidia.com/cuda.driver.minor": "06",
                                      "nvidia.com/cuda.driver.rev": ""})
    assert facts_of(obj)["t4-r470"].driver == "455.06"


def test_the_full_label_alone_is_enough():
    obj = without(node("h100-r535"), NEW_KEYS)
    obj["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "535.129.03"
    assert facts_of(obj)["h100-r535"].driver == "535.129.03"


def test_a_single_node_object_is_accepted():
    _, kind, nodes = read_nodes(str(SINGLE_NODE))
    assert kind == "kubernetes" and [n.name for n in nodes] == ["t4-r470"]


def test_gpu_capacity_without_gfd_labels_says_what_cannot_be_known():
    facts = facts_of(node("nvidia1"))["nvidia1"]
    assert facts.has_gpu and facts.driver is None
    assert any("no GPU Feature Discovery labels" in u for u in facts.unknown)


def test_gfd_labels_without_a_driver_label_say_so():
    obj = without(node("l4-r570"), NEW_KEYS[:1] + OLD_KEYS[:1])
    facts = facts_of(obj)["l4-r570"]
    assert facts.driver is None and facts.compute_capability == "8.9"
    assert facts.unknown == ("driver: no nvidia.com/cuda.driver-version.* or nvidia.com/cuda.driver.* label",)


BAD_LABELS = [
    ("nvidia.com/cuda.driver.major", "５３５"),  # full-width digits: not ASCII
    ("nvidia.com/cuda.driver.major", "٥٣٥"),  # Arabic-Indic digits
    ("nvidia.com/cuda.driver-version.minor", "1" * 400),  # a number of hundreds of digits
    ("nvidia.com/cuda.driver-version.full", "99999999999999999999.1"),
    ("nvidia.com/cuda.driver-version.full", "535"),
    ("nvidia.com/cuda.driver.major", " 535"),
    ("nvidia.com/cuda.driver.major", 535),  # a number where Kubernetes always has a string
    ("nvidia.com/gpu.compute.major", "８"),
    ("nvidia.com/gpu.compute.minor", "-1"),
    ("nvidia.com/gpu.count", "12345678"),
    ("nvidia.com/gpu.count", "two"),
    ("nvidia.com/gpu.product", "NVIDIA A100"),  # not a label value (spaces)
    ("nvidia.com/cuda.runtime-version.full", "12"),
]


# plain ASCII ids: mutmut (bench/mutation_score.py) selects tests by node id, and one with quotes,
# spaces or escaped characters is not found again (and counted as a kill)
@pytest.mark.parametrize("key,value", BAD_LABELS, ids=[f"{k.removeprefix('nvidia.com/')}-{i}"
                                                       for i, (k, _v) in enumerate(BAD_LABELS)])
def test_a_label_that_is_not_of_its_grammar_is_bad_input_naming_file_node_and_label(key, value):
    obj = node("p400-r550")
    obj["metadata"]["labels"][key] = value
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("cluster.json", as_list(node("t4-r470"), obj))
    message = str(caught.value)
    assert message.startswith("cluster.json: node p400-r550: label ") and key in message
    assert caught.value.file == "cluster.json" and caught.value.field == f'items[1].metadata.labels["{key}"]'
    assert len(message) < 300  # named, never echoed back whole


def test_old_and_new_labels_that_disagree_are_bad_input():
    obj = node("p400-r550")
    obj["metadata"]["labels"]["nvidia.com/cuda.driver.minor"] = "90"
    with pytest.raises(NodesInputError, match=r"nvidia.com/cuda.driver.major says driver 550.90.15, but "
                                               r"nvidia.com/cuda.driver-version.full says 550.54.15"):
        read_kubernetes("c.json", as_list(obj))


def test_a_major_without_its_minor_is_bad_input():
    obj = without(node("t4-r470"), OLD_KEYS)
    obj["metadata"]["labels"]["nvidia.com/cuda.driver.major"] = "470"
    with pytest.raises(NodesInputError, match="nvidia.com/cuda.driver.minor: missing or empty"):
        read_kubernetes("c.json", as_list(obj))


def test_a_bad_gpu_capacity_is_bad_input():
    obj = node("l4-r570")
    obj["status"]["capacity"]["nvidia.com/gpu"] = "1e3"
    with pytest.raises(NodesInputError, match=r"node l4-r570: status.capacity\[nvidia.com/gpu\]: expected a whole"):
        read_kubernetes("c.json", as_list(obj))


@pytest.mark.parametrize("document,expected", [
    ('{"kind": "Pod"}', "got a JSON object with kind 'Pod'"),
    ("[]", "got a JSON list"),
    ("nodes", "not JSON"),
    ('{"kind": "List", "items": {}}', "items: expected the list of Node objects"),
    ('{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]}', "items[0]: expected kind Node"),
    ('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "Bad Name"}}]}',
     "items[0].metadata.name: expected a node name"),
    ('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n", "labels": []}}]}',
     "node n: metadata.labels: expected an object"),
], ids=["pod", "a-list", "not-json", "items-not-a-list", "item-not-a-node", "bad-name", "labels-not-an-object"])
def test_documents_that_are_not_node_lists_are_named(document, expected):
    with pytest.raises(NodesInputError) as caught:
        kind, parsed = parse_document("in.json", document)
        read_kubernetes("in.json", parsed)
    assert str(caught.value).startswith("in.json: ") and expected in str(caught.value)


def test_deeply_nested_json_is_bad_input_not_a_crash():
    with pytest.raises(NodesInputError, match="nested too deeply"):
        parse_document("deep.json", "[" * 100000 + "]" * 100000)


def test_mig_and_shared_products_are_judged_as_their_gpu(matrix):
    from cudaenv.cluster.verdicts import node_gpu

    obj = node("a100-r535")
    obj["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb-SHARED"
    gpu, caveats = node_gpu(matrix, facts_of(obj)["a100-r535"])
    assert (gpu.name, gpu.compute_capability, gpu.datacenter) == ("A100", "8.0", True)
    assert any("MIG slices" in c for c in caveats) and any("shares each" in c for c in caveats)


def test_the_list_fixture_is_what_kubectl_prints():
    document = json.loads(NODES.read_text())
    assert document["kind"] == "List" and all(item["kind"] == "Node" for item in document["items"])
