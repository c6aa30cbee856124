"""What a node's labels and status say, and what they leave unknown: which label families make a
node a GPU Feature Discovery node, which GFD label set was read, and the node objects the API
server prints in shapes other than kubectl's (no kind per item, no labels, no status, numbers)."""

from __future__ import annotations

import pytest

from cudaenv.cluster.kubernetes import read_kubernetes
from tests.unit.cluster.helpers import as_list, node

NO_GFD = ("driver and GPU model: the node offers nvidia.com/gpu but carries no GPU Feature Discovery labels "
          "(deploy GFD: the GPU Operator, or the device plugin's chart with gfd.enabled=true)")
NO_DRIVER = "driver: no nvidia.com/cuda.driver-version.* or nvidia.com/cuda.driver.* label"
NO_MODEL = "GPU model: no nvidia.com/gpu.product or nvidia.com/gpu.compute.* label"


def read_one(obj: dict):
    [facts] = read_kubernetes("nodes.json", as_list(obj))
    return facts


def keep_labels(obj: dict, *prefixes: str) -> dict:
    """The node with only the nvidia.com/ labels that start with one of ``prefixes`` (the kubelet's kept)."""
    labels = obj["metadata"]["labels"]
    obj["metadata"]["labels"] = {k: v for k, v in labels.items()
                                 if not k.startswith("nvidia.com/") or k.startswith(prefixes)}
    return obj


def test_nodes_without_any_gpu_sign_have_nothing_unknown():
    """A CPU node is not a node whose GPU is unknown: nothing to explain."""
    assert read_one(node("cpu-0")).unknown == ()
    assert read_one(node("nvidia1")).unknown == (NO_GFD,)


def test_driver_labels_alone_make_a_gfd_node_whose_gpu_model_is_unknown():
    """cuda.* labels are GFD's: the node is labelled, and the missing model is said, not the missing GFD."""
    facts = read_one(keep_labels(node("l4-r570"), "nvidia.com/cuda."))
    assert (facts.driver, facts.compute_capability, facts.product) == ("570.133.20", None, None)
    assert facts.unknown == (NO_MODEL,)


def test_compute_labels_alone_make_a_gfd_node_whose_driver_is_unknown():
    facts = read_one(keep_labels(node("l4-r570"), "nvidia.com/gpu.compute."))
    assert (facts.driver, facts.compute_capability, facts.product) == (None, "8.9", None)
    assert facts.unknown == (NO_DRIVER,)


@pytest.mark.parametrize("kept,model", [("nvidia.com/gpu.product", ("NVIDIA-L4", None)),
                                        ("nvidia.com/gpu.compute.", (None, "8.9"))], ids=["product", "compute"])
def test_either_the_product_or_the_compute_capability_names_the_gpu_model(kept, model):
    """One of the two is enough to judge the GPU: only a node with neither has an unknown model."""
    facts = read_one(keep_labels(node("l4-r570"), "nvidia.com/cuda.", kept))
    assert (facts.product, facts.compute_capability) == model and facts.unknown == ()


def test_a_gpu_count_label_alone_is_a_gfd_label():
    facts = read_one(keep_labels(node("l4-r570"), "nvidia.com/gpu.count"))
    assert facts.gpu_count == 1 and facts.unknown == (NO_DRIVER, NO_MODEL)


def test_capacity_without_allocatable_gpus_still_asks_for_gfd():
    """A device plugin that sees a GPU it cannot hand out (unhealthy: allocatable 0) still shows a GPU."""
    obj = node("nvidia1")
    obj["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    facts = read_one(obj)
    assert (facts.capacity, facts.allocatable, facts.unknown) == (1, 0, (NO_GFD,))


def test_the_full_driver_label_alone_is_the_new_label_set():
    """driver-version.full is one of the new keys even without its components."""
    obj = keep_labels(node("p400-r550"), "nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver.",
                      "nvidia.com/gpu.")
    facts = read_one(obj)
    assert (facts.driver, facts.labels) == ("550.54.15", "new+old")
    obj = keep_labels(node("p400-r550"), "nvidia.com/cuda.driver-version.full", "nvidia.com/gpu.")
    assert read_one(obj).labels == "new"


def test_kubernetes_nodes_say_their_source():
    assert read_one(node("l4-r570")).source == "kubernetes"
    assert read_one(node("l4-r570")).as_dict()["gfd_labels"] == "new+old"


def test_items_without_a_kind_are_nodes():
    """The API server's NodeList (`kubectl get --raw /api/v1/nodes`) leaves out each item's kind."""
    obj = node("l4-r570")
    del obj["kind"]
    document = {"kind": "NodeList", "apiVersion": "v1", "items": [obj]}
    assert [f.name for f in read_kubernetes("nodes.json", document)] == ["l4-r570"]


def test_a_node_object_without_labels_or_status_is_a_node_without_gpus():
    """A node just registered carries no labels and may carry no status yet."""
    facts = read_one({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "new-node"}})
    assert (facts.name, facts.has_gpu, facts.capacity, facts.arch, facts.unknown) == ("new-node", False, None,
                                                                                      None, ())


def test_a_node_name_may_be_as_long_as_a_dns_subdomain():
    """253 characters is the Kubernetes limit for a node name; one more is not a node name."""
    from cudaenv.cluster.facts import NodesInputError

    longest = ".".join(["a" * 63] * 3 + ["b" * 61])
    assert len(longest) == 253
    obj = node("cpu-0")
    obj["metadata"]["name"] = longest
    assert read_one(obj).name == longest
    obj["metadata"]["name"] = longest + "b"
    with pytest.raises(NodesInputError, match="expected a node name"):
        read_one(obj)


def test_a_gpu_count_written_as_a_json_number_is_read_zero_included():
    """Tools that build node objects themselves write numbers; 0 allocatable GPUs is a real state."""
    obj = node("l4-r570")
    obj["status"]["capacity"]["nvidia.com/gpu"] = 1
    obj["status"]["allocatable"]["nvidia.com/gpu"] = 0
    facts = read_one(obj)
    assert (facts.capacity, facts.allocatable) == (1, 0)
