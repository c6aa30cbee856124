"""Every way a GPU Feature Discovery label or a node object can be bad input, each with its exact
one-line message and the JSON field it names (the contract: file, node, label, what was expected,
what was found), and label sets that disagree named with both labels and both values."""

from __future__ import annotations

import pytest

from cudaenv.cluster.facts import NodesInputError
from cudaenv.cluster.kubernetes import read_kubernetes
from tests.unit.cluster.helpers import as_list, node

DIGITS = "digits like 535 or 05"

# (label, bad value, what the message says was expected); node p400-r550 carries both label sets
BAD_VALUES = [
    ("cuda.driver-version.full", "535", "a driver version like 535.154.05"),
    ("cuda.driver-version.minor", "5x", f"the driver version's {DIGITS}"),
    ("cuda.driver.major", "５５０", f"the driver version's {DIGITS}"),
    ("cuda.driver.major", "", f"the driver version's {DIGITS}"),  # only a revision may be empty
    ("cuda.runtime-version.full", "12", "a CUDA version like 12.2"),
    ("cuda.runtime-version.major", "v12", f"the CUDA version's {DIGITS}"),
    ("cuda.runtime.minor", "4.0", f"the CUDA version's {DIGITS}"),
    ("gpu.compute.major", "８", "a compute capability component like 8"),
    ("gpu.product", "Quadro P400", "a GPU product like NVIDIA-A100-SXM4-80GB"),
    ("gpu.count", "one", "a whole number of GPUs"),
    ("gpu.count", "", "a whole number of GPUs"),
]


@pytest.mark.parametrize("label,value,expected", BAD_VALUES,
                         ids=[f"{label}-{i}" for i, (label, _v, _e) in enumerate(BAD_VALUES)])
def test_a_bad_label_value_says_which_label_what_was_expected_and_what_it_got(label, value, expected):
    """The user fixes the label from the message alone: it names the label, the grammar and the value."""
    obj = node("p400-r550")
    obj["metadata"]["labels"]["nvidia.com/" + label] = value
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == (f"c.json: node p400-r550: label nvidia.com/{label}: expected {expected}, "
                                 f"got {value!r}")
    assert caught.value.field == f'items[0].metadata.labels["nvidia.com/{label}"]'


def test_a_long_bad_value_is_shown_whole_up_to_60_characters_and_cut_after():
    """A hostile value is named, not echoed back: its repr is cut to 45 characters past 60."""
    def message(value):
        obj = node("p400-r550")
        obj["metadata"]["labels"]["nvidia.com/gpu.product"] = value
        with pytest.raises(NodesInputError) as caught:
            read_kubernetes("c.json", as_list(obj))
        return str(caught.value).split(", got ", 1)[1]

    fits = "NVIDIA A100 " + "x" * 46  # repr: 58 characters and two quotes
    assert len(repr(fits)) == 60 and message(fits) == repr(fits)
    long = fits + "y"
    assert message(long) == f"{repr(long)[:45]}… (61 chars)"


# (labels changed on p400-r550, the label that disagrees, its value, the label it disagrees with, that value)
DISAGREEING = [
    ({"cuda.driver-version.minor": "90"}, "cuda.driver-version.major", "driver 550.90.15",
     "cuda.driver-version.full", "550.54.15"),
    ({"cuda.driver.rev": "14"}, "cuda.driver.major", "driver 550.54.14", "cuda.driver-version.full", "550.54.15"),
    ({"cuda.runtime-version.major": "11"}, "cuda.runtime-version.major", "CUDA 11.4",
     "cuda.runtime-version.full", "12.4"),
    ({"cuda.runtime.minor": "2"}, "cuda.runtime.major", "CUDA 12.2", "cuda.runtime-version.full", "12.4"),
]


@pytest.mark.parametrize("changed,label,says,first,first_says", DISAGREEING,
                         ids=["new-driver", "old-driver", "new-cuda", "old-cuda"])
def test_label_sets_that_disagree_name_both_labels_and_both_values(changed, label, says, first, first_says):
    """GFD writes every set from one NVML reading: sets that differ mean a stale or edited label,
    and which one is true cannot be known."""
    obj = node("p400-r550")
    obj["metadata"]["labels"].update({"nvidia.com/" + k: v for k, v in changed.items()})
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == (f"c.json: node p400-r550: label nvidia.com/{label} says {says}, but "
                                 f"nvidia.com/{first} says {first_says}")
    assert caught.value.field == f'items[0].metadata.labels["nvidia.com/{label}"]'


@pytest.mark.parametrize("present,missing,what", [
    ("cuda.driver.major", "cuda.driver.minor", "driver version"),
    ("cuda.driver.minor", "cuda.driver.major", "driver version"),
    ("cuda.runtime-version.minor", "cuda.runtime-version.major", "CUDA version"),
], ids=["driver-minor", "driver-major", "cuda-major"])
def test_a_version_component_alone_names_the_missing_one(present, missing, what):
    """Half a version is no version: the message names the label that is missing."""
    obj = node("t4-r470")
    labels = obj["metadata"]["labels"]
    for key in [k for k in labels if k.startswith(("nvidia.com/cuda.driver", "nvidia.com/cuda.runtime"))]:
        del labels[key]
    labels["nvidia.com/" + present] = "12"
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == (f"c.json: node t4-r470: label nvidia.com/{missing}: missing or empty beside the "
                                 f"other {what} labels")
    assert caught.value.field == f'items[0].metadata.labels["nvidia.com/{missing}"]'


@pytest.mark.parametrize("present,missing", [("gpu.compute.major", "gpu.compute.minor"),
                                             ("gpu.compute.minor", "gpu.compute.major")], ids=["minor", "major"])
def test_a_compute_capability_component_alone_names_the_missing_one(present, missing):
    """GFD writes both components or neither."""
    obj = node("a100-r535")
    del obj["metadata"]["labels"]["nvidia.com/" + missing]
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == (f"c.json: node a100-r535: label nvidia.com/{missing}: missing beside the other "
                                 "compute capability label")
    assert caught.value.field == f'items[0].metadata.labels["nvidia.com/{missing}"]'


def without_arch(obj: dict) -> dict:
    for key in ("kubernetes.io/arch", "beta.kubernetes.io/arch"):
        obj["metadata"]["labels"].pop(key)
    return obj


@pytest.mark.parametrize("key", ["kubernetes.io/arch", "beta.kubernetes.io/arch"])
def test_a_bad_arch_label_alone_is_bad_input_with_its_value(key):
    """Either kubelet label alone decides the CPU, so a bad one is never read as an architecture."""
    obj = without_arch(node("a100-r535"))
    obj["metadata"]["labels"][key] = "ARM 64"
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == (f"c.json: node a100-r535: label {key}: expected a CPU architecture like amd64 or "
                                 "arm64, got 'ARM 64'")
    assert caught.value.field == f'items[0].metadata.labels["{key}"]'


def test_arch_labels_that_disagree_name_the_beta_label_and_both_values():
    obj = node("a100-r535")
    obj["metadata"]["labels"].update({"kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "amd64"})
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == ("c.json: node a100-r535: label beta.kubernetes.io/arch says amd64, but "
                                 "kubernetes.io/arch says arm64")
    assert caught.value.field == 'items[0].metadata.labels["beta.kubernetes.io/arch"]'


def test_an_error_in_a_single_node_document_names_the_node_object():
    """`kubectl get node NAME -o json` prints one Node, not a List: its fields have no items[] index."""
    obj = node("l4-r570")
    obj["metadata"]["labels"]["nvidia.com/gpu.count"] = "many"
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("node.json", obj)
    assert str(caught.value).startswith("node.json: node l4-r570: label nvidia.com/gpu.count: ")
    assert caught.value.field == 'Node.metadata.labels["nvidia.com/gpu.count"]'


def test_an_item_of_another_kind_is_named_with_its_kind():
    obj = node("l4-r570")
    obj["kind"] = "Pod"
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(node("t4-r470"), obj))
    assert (str(caught.value), caught.value.field) == ("c.json: items[1]: expected kind Node, got 'Pod'",
                                                       "items[1].kind")


def test_a_huge_integer_is_named_by_its_path_as_written():
    """The path is the document's own keys, whatever characters they start with (a hand-edited or
    tool-extended node object may carry keys of its own at the top)."""
    from cudaenv.cluster.facts import Oversized

    obj = node("l4-r570")
    obj["X-Inventory-Id"] = Oversized("9" * 5000)
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(obj))
    assert str(caught.value) == ("c.json: node l4-r570: X-Inventory-Id: a number of more digits than can be read")
    assert caught.value.field == "items[0].X-Inventory-Id"
