"""A node's CPU architecture decides as much as its GPU (cudaenv's images are x86_64 only), and a
nodes file that cannot be read as one answer per node is bad input: a JSON integer past Python's
digit limit, or one node listed twice."""

from __future__ import annotations

import json
import re

import pytest

from cudaenv.cluster.facts import NodesInputError
from cudaenv.cluster.kubernetes import read_kubernetes
from cudaenv.cluster.read import parse_document, read_nodes
from cudaenv.cluster.slurm import read_slurm
from cudaenv.cluster.verdicts import judge
from tests.unit.cluster.helpers import SLURM, as_list, configured_torch_stack, node

HUGE = "9" * 5000  # past sys.get_int_max_str_digits() (4300 by default)


def with_labels(obj: dict, **labels) -> dict:
    obj["metadata"]["labels"].update(labels)
    return obj


def read_one(obj: dict):
    [facts] = read_kubernetes("nodes.json", as_list(obj))
    return facts


# --- architecture -------------------------------------------------------------------------------


def test_the_kubelets_arch_label_is_read_in_the_kernels_spelling():
    assert read_one(node("a100-r535")).arch == "x86_64"
    assert read_one(with_labels(node("a100-r535"), **{"kubernetes.io/arch": "arm64",
                                                     "beta.kubernetes.io/arch": "arm64"})).arch == "aarch64"


def test_a_node_without_an_arch_label_has_no_arch():
    obj = node("a100-r535")
    for key in ("kubernetes.io/arch", "beta.kubernetes.io/arch"):
        obj["metadata"]["labels"].pop(key, None)
    assert read_one(obj).arch is None


@pytest.mark.parametrize("labels", [{"kubernetes.io/arch": "ARM 64"},
                                    {"kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "amd64"}])
def test_a_bad_or_contradicting_arch_label_is_bad_input_naming_the_node(labels):
    with pytest.raises(NodesInputError, match=r"^nodes.json: node a100-r535: label .*arch"):
        read_one(with_labels(node("a100-r535"), **labels))


def test_an_arm64_node_is_refused_for_the_x86_64_image_with_its_reason(matrix):
    stack = configured_torch_stack(matrix)
    assert judge(matrix, stack, read_one(node("a100-r535"))).compatible  # on its amd64 CPU, it runs
    grace = judge(matrix, stack, read_one(with_labels(node("a100-r535"), **{"kubernetes.io/arch": "arm64",
                                                                         "beta.kubernetes.io/arch": "arm64"})))
    assert not grace.compatible and grace.mode is None
    assert grace.reasons == ("the node's CPU is aarch64; the image is built for x86_64 (its base image and "
                             "framework wheels), so it cannot start there",)


def test_a_grace_gpu_named_by_its_product_is_refused_even_without_an_arch_label(matrix):
    """GH200 comes only in aarch64 hosts (the matrix's host_arch): the GPU row says so itself."""
    obj = with_labels(node("a100-r535"), **{"nvidia.com/gpu.product": "NVIDIA-GH200-480GB",
                                            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0"})
    for key in ("kubernetes.io/arch", "beta.kubernetes.io/arch"):
        obj["metadata"]["labels"].pop(key, None)
    verdict = judge(matrix, configured_torch_stack(matrix), read_one(obj))
    assert not verdict.compatible and any("aarch64" in r for r in verdict.reasons)


def test_slurm_arch_is_read_from_scontrol_text_and_json():
    text = (SLURM / "scontrol-show-node-22.05.8.txt").read_text()
    assert [f.arch for f in read_slurm("n.txt", text)] == ["x86_64"]
    assert [f.arch for f in read_slurm("n.txt", text.replace("Arch=x86_64", "Arch=aarch64"))] == ["aarch64"]
    document = json.loads((SLURM / "scontrol-show-node-json-23.11.json").read_text())
    document["nodes"][0]["architecture"] = "aarch64"
    arches = [f.arch for f in read_slurm("n.json", document)]
    assert arches[0] == "aarch64" and set(arches[1:]) == {"x86_64"}


def test_a_slurm_aarch64_node_is_refused(matrix):
    from cudaenv.cluster.facts import NodeFacts

    stack = configured_torch_stack(matrix)
    facts = NodeFacts(name="gh", source="slurm", driver="550.54.15", product="a100", gpu_count=4,
                      mapped_feature="a100", arch="aarch64")
    verdict = judge(matrix, stack, facts)
    assert not verdict.compatible and any("CPU is aarch64" in r for r in verdict.reasons)
    assert judge(matrix, stack, NodeFacts(**{**facts.__dict__, "arch": "x86_64"})).compatible


def test_a_bad_slurm_arch_is_bad_input():
    text = (SLURM / "scontrol-show-node-22.05.8.txt").read_text().replace("Arch=x86_64", "Arch=x86-64!")
    with pytest.raises(NodesInputError, match=r"node vm: architecture: expected a CPU architecture"):
        read_slurm("n.txt", text)


# --- numbers past the digit limit -----------------------------------------------------------------


def test_a_huge_integer_in_a_kubernetes_node_is_bad_input_naming_file_and_node(tmp_path):
    obj = node("l4-r570")
    text = json.dumps(as_list(obj)).replace('"capacity": {', f'"capacity": {{"example.com/x": {HUGE}, ', 1)
    path = tmp_path / "nodes.json"
    path.write_text(text)
    with pytest.raises(NodesInputError) as caught:
        read_nodes(str(path))
    assert str(caught.value).startswith(f"{path}: node l4-r570: status.capacity.example.com/x: a number of more")
    assert caught.value.field == "items[0].status.capacity.example.com/x"


def test_a_huge_integer_as_the_whole_document_is_bad_input():
    with pytest.raises(NodesInputError, match="a number of more digits than can be read"):
        parse_document("n.json", HUGE)


def test_a_huge_integer_in_a_slurm_record_is_bad_input_naming_the_node():
    document = json.loads((SLURM / "scontrol-show-node-json-23.11.json").read_text())
    name = document["nodes"][0]["name"]
    text = json.dumps(document).replace('"architecture"', f'"x_huge": {HUGE}, "architecture"', 1)
    _kind, parsed = parse_document("n.json", text)
    with pytest.raises(NodesInputError, match=rf"^n.json: node {name}: "):
        read_slurm("n.json", parsed)


# --- one node, twice ------------------------------------------------------------------------------


def test_a_node_listed_twice_is_bad_input_naming_both_places():
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("nodes.json", as_list(node("l4-r570"), node("a100-r535"), node("l4-r570")))
    assert str(caught.value) == ("nodes.json: node l4-r570: listed twice (items[0] and items[2]); expected each node "
                                 "once, as `kubectl get nodes -o json` prints them")
    assert caught.value.field == "items[2].metadata.name"


# --- compute capability: the node's own labels decide -------------------------------------------------


def test_the_nodes_compute_capability_labels_win_over_the_matrix_row(matrix):
    """GFD reads the capability from NVML on the node; the product name is looked up in a table.
    When they differ, what the node reports is what runs, and what is checked."""
    from cudaenv.cluster.verdicts import node_gpu

    obj = with_labels(node("a100-r535"), **{"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0"})
    gpu, caveats = node_gpu(matrix, read_one(obj))
    assert (gpu.name, gpu.compute_capability, gpu.architecture) == ("A100", "9.0", "hopper")
    assert any("the matrix lists A100 as sm_80; the node reports sm_90" in c for c in caveats)
    same, none = node_gpu(matrix, read_one(node("a100-r535")))
    assert same.compute_capability == "8.0" and not any("the matrix lists" in c for c in none)


@pytest.mark.parametrize("present, missing", [("nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor"),
                                              ("nvidia.com/gpu.compute.minor", "nvidia.com/gpu.compute.major")])
def test_one_compute_capability_label_without_the_other_is_bad_input(present, missing):
    obj = node("a100-r535")
    del obj["metadata"]["labels"][missing]
    with pytest.raises(NodesInputError) as caught:
        read_one(obj)
    assert str(caught.value) == (f"nodes.json: node a100-r535: label {missing}: missing beside the other compute "
                                 "capability label")
    assert caught.value.field == f'items[0].metadata.labels["{missing}"]'
    assert present in obj["metadata"]["labels"]


# --- each structural error of a Kubernetes node names its field exactly ----------------------------

NAMED = {"kind": "Node", "metadata": {"name": "n1", "labels": {}}}
STRUCTURE = [
    (3, "items[0]", "items[0]: expected a Node object, got int"),
    ({"kind": "Pod"}, "items[0].kind", "items[0]: expected kind Node, got 'Pod'"),
    ({"kind": "Node", "metadata": []}, "items[0].metadata", "items[0].metadata: expected an object with the node's name"),
    ({"kind": "Node", "metadata": {"name": "N_1"}}, "items[0].metadata.name",
     "items[0].metadata.name: expected a node name (DNS subdomain), got 'N_1'"),
    ({"kind": "Node", "metadata": {"name": "a" * 254}}, "items[0].metadata.name",
     "items[0].metadata.name: expected a node name (DNS subdomain), got '" + "a" * 44 + "… (256 chars)"),
    ({**NAMED, "metadata": {"name": "n1", "labels": "x"}}, "items[0].metadata.labels",
     "node n1: metadata.labels: expected an object, got str"),
    ({**NAMED, "status": []}, "items[0].status", "node n1: status: expected an object, got list"),
    ({**NAMED, "status": {"capacity": []}}, "items[0].status.capacity", "node n1: status.capacity: expected an object"),
    ({**NAMED, "status": {"allocatable": {"nvidia.com/gpu": True}}}, 'items[0].status.allocatable["nvidia.com/gpu"]',
     "node n1: status.allocatable[nvidia.com/gpu]: expected a whole number of GPUs, got True"),
    ({**NAMED, "status": {"capacity": {"nvidia.com/gpu": 100000}}}, 'items[0].status.capacity["nvidia.com/gpu"]',
     "node n1: status.capacity[nvidia.com/gpu]: expected a whole number of GPUs, got 100000"),
]


@pytest.mark.parametrize("item, field, message", STRUCTURE,
                         ids=[f"{re.sub(r'[^A-Za-z0-9.]+', '-', case[1])}-{i}" for i, case in enumerate(STRUCTURE)])
def test_a_malformed_node_is_named_with_its_exact_field(item, field, message):
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", as_list(item))
    assert (str(caught.value), caught.value.field) == (f"c.json: {message}", field)


def test_items_that_are_not_a_list_are_named():
    with pytest.raises(NodesInputError) as caught:
        read_kubernetes("c.json", {"kind": "NodeList", "items": {}})
    assert (str(caught.value), caught.value.field) == ("c.json: items: expected the list of Node objects of a NodeList",
                                                       "items")


def test_a_single_node_document_is_read_as_one_node():
    [facts] = read_kubernetes("c.json", {**NAMED, "status": {"capacity": {"nvidia.com/gpu": "2"},
                                                             "allocatable": {"nvidia.com/gpu": 1}}})
    assert (facts.name, facts.capacity, facts.allocatable, facts.arch) == ("n1", 2, 1, None)


# --- reading the file itself --------------------------------------------------------------------------


def test_a_nodes_file_that_is_not_utf8_names_the_byte(tmp_path):
    from cudaenv.cluster.read import read_text

    path = tmp_path / "n.json"
    path.write_bytes(b'{"kind": "List"\xff}')
    with pytest.raises(NodesInputError) as caught:
        read_text(str(path))
    assert str(caught.value) == f"{path}: not UTF-8 text (byte 15): expected JSON" and caught.value.field is None


def test_a_nodes_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    from cudaenv.cluster import read

    monkeypatch.setattr(read, "MAX_BYTES", 2 * 1024 * 1024)
    path = tmp_path / "n.json"
    path.write_bytes(b" " * (2 * 1024 * 1024 + 1))
    with pytest.raises(NodesInputError) as caught:
        read.read_text(str(path))
    assert str(caught.value) == f"{path}: larger than 2 MiB: not a nodes listing"
    path.write_bytes(b" " * (2 * 1024 * 1024))
    assert read.read_text(str(path)) == (" " * (2 * 1024 * 1024), str(path))  # the limit itself is fine


def test_dash_reads_standard_input_and_names_it(monkeypatch):
    import io
    import sys

    from cudaenv.cluster.read import read_text

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"kind": "List", "items": []}')))
    assert read_text("-") == ('{"kind": "List", "items": []}', "<stdin>")


def test_an_empty_listing_is_bad_input(tmp_path):
    path = tmp_path / "n.json"
    path.write_text('{"kind": "List", "items": []}')
    with pytest.raises(NodesInputError) as caught:
        read_nodes(str(path))
    assert str(caught.value) == f"{path}: lists no nodes (a label selector or partition that matched nothing?)"


def test_read_nodes_tells_kubernetes_from_slurm_text(tmp_path):
    path = tmp_path / "n.txt"
    path.write_text("NodeName=n1 Arch=x86_64 Gres=gpu:a100:2\n")
    name, kind, nodes = read_nodes(str(path))
    assert (name, kind, [n.name for n in nodes]) == (str(path), "slurm", ["n1"])


# --- each label's grammar error, word for word ------------------------------------------------------

LABEL_ERRORS = [
    ("nvidia.com/cuda.driver-version.full", "535", "a driver version like 535.154.05"),
    ("nvidia.com/cuda.driver-version.major", "x", "the driver version's digits like 535 or 05"),
    ("nvidia.com/cuda.driver.minor", "x", "the driver version's digits like 535 or 05"),
    ("nvidia.com/cuda.runtime-version.full", "12", "a CUDA version like 12.2"),
    ("nvidia.com/cuda.runtime-version.major", "x", "the CUDA version's digits like 535 or 05"),
    ("nvidia.com/cuda.runtime.minor", "x", "the CUDA version's digits like 535 or 05"),
    ("nvidia.com/gpu.compute.major", "x", "a compute capability component like 8"),
    ("nvidia.com/gpu.product", "A B", "a GPU product like NVIDIA-A100-SXM4-80GB"),
    ("nvidia.com/gpu.count", "x", "a whole number of GPUs"),
]


@pytest.mark.parametrize("key, value, expected", LABEL_ERRORS,
                         ids=[f"{k.removeprefix('nvidia.com/')}-{i}" for i, (k, _v, _e) in enumerate(LABEL_ERRORS)])
def test_each_label_says_what_it_expected(key, value, expected):
    with pytest.raises(NodesInputError) as caught:
        read_one(with_labels(node("a100-r535"), **{key: value}))
    assert str(caught.value) == f"nodes.json: node a100-r535: label {key}: expected {expected}, got {value!r}"
    assert caught.value.field == f'items[0].metadata.labels["{key}"]'


@pytest.mark.parametrize("labels, message", [
    ({"nvidia.com/cuda.runtime-version.full": "12.4", "nvidia.com/cuda.runtime.major": "12",
      "nvidia.com/cuda.runtime.minor": "2"},
     "label nvidia.com/cuda.runtime.major says CUDA 12.2, but nvidia.com/cuda.runtime-version.full says 12.4"),
    ({"nvidia.com/cuda.driver-version.full": "535.154.05", "nvidia.com/cuda.driver-version.major": "535",
      "nvidia.com/cuda.driver-version.minor": "154", "nvidia.com/cuda.driver-version.revision": "06"},
     "label nvidia.com/cuda.driver-version.major says driver 535.154.06, but nvidia.com/cuda.driver-version.full "
     "says 535.154.05"),
], ids=["cuda", "driver"])
def test_label_sets_that_disagree_name_both(labels, message):
    obj = node("a100-r535")
    obj["metadata"]["labels"] = {k: v for k, v in obj["metadata"]["labels"].items()
                                 if not k.startswith(("nvidia.com/cuda.", "nvidia.com/gpu.compute"))}
    with pytest.raises(NodesInputError) as caught:
        read_one(with_labels(obj, **labels))
    assert str(caught.value) == f"nodes.json: node a100-r535: {message}"


def test_the_label_sets_read_are_reported():
    obj = node("l4-r570")  # GFD of both generations
    labels = obj["metadata"]["labels"]

    def keeping(drop) -> dict:
        return dict(obj, metadata={**obj["metadata"], "labels": {k: v for k, v in labels.items()
                                                                  if not k.startswith(drop)}})

    assert read_one(obj).labels == "new+old"
    assert read_one(keeping(("nvidia.com/cuda.driver.", "nvidia.com/cuda.runtime."))).labels == "new"
    assert read_one(keeping(("nvidia.com/cuda.driver-version.", "nvidia.com/cuda.runtime-version."))).labels == "old"
    full_only = keeping(("nvidia.com/cuda.driver.", "nvidia.com/cuda.runtime.", "nvidia.com/cuda.driver-version.m",
                         "nvidia.com/cuda.driver-version.r"))
    assert read_one(full_only).labels == "new" and read_one(full_only).driver == read_one(obj).driver


def test_gfd_labels_without_a_gpu_model_say_so():
    obj = node("a100-r535")
    obj["metadata"]["labels"] = {k: v for k, v in obj["metadata"]["labels"].items()
                                 if not k.startswith(("nvidia.com/gpu.product", "nvidia.com/gpu.compute"))}
    facts = read_one(obj)
    assert facts.unknown == ("GPU model: no nvidia.com/gpu.product or nvidia.com/gpu.compute.* label",)
    assert facts.product is None and facts.compute_capability is None and facts.source == "kubernetes"


# --- what parse_document says about documents that are no node listing ---------------------------


@pytest.mark.parametrize("text, field, message", [
    ("nodes", None, "not JSON (line 1, column 1: Expecting value); expected the output of `kubectl get nodes -o json`, "
                    "`scontrol show node [--json]` or `sinfo --json`"),
    ("[" * 100000 + "]" * 100000, None, "JSON nested too deeply to read"),
    (HUGE, None, "a number of more digits than can be read; expected a JSON object"),
    ('{"zeta": 1, "alpha": 2, "b": 3, "c": 4, "d": 5, "e": 6}', "kind",
     "expected `kubectl get nodes -o json` (kind List of Node) or Slurm's `scontrol show node --json` / `sinfo "
     "--json` (nodes), got a JSON object with keys alpha, b, c, d, e"),
    ('{"kind": "' + "P" * 100 + '"}', "kind",
     "expected `kubectl get nodes -o json` (kind List of Node) or Slurm's `scontrol show node --json` / `sinfo "
     "--json` (nodes), got a JSON object with " + ("kind '" + "P" * 100 + "'")[:80]),
], ids=["not-json", "deep", "huge", "keys", "long-kind"])
def test_a_document_that_is_no_node_listing_is_named(text, field, message):
    with pytest.raises(NodesInputError) as caught:
        parse_document("n.json", text)
    assert (str(caught.value), caught.value.field, caught.value.file) == (f"n.json: {message}", field, "n.json")


@pytest.mark.parametrize("text, kind", [
    ('{"kind": "NodeList", "items": []}', "kubernetes"), ('{"kind": "List", "items": []}', "kubernetes"),
    ('{"kind": "Node"}', "kubernetes"), ('{"nodes": []}', "slurm"), ('{"sinfo": []}', "slurm"),
    ("\n  NodeName=n1 Gres=gpu:1\n", "slurm"),
], ids=["nodelist", "list", "node", "slurm-nodes", "sinfo", "scontrol-text"])
def test_the_document_says_which_cluster_it_comes_from(text, kind):
    assert parse_document("n.json", text)[0] == kind


def test_slurm_errors_name_the_file_they_were_read_from(tmp_path):
    path = tmp_path / "slurm.json"
    path.write_text('{"nodes": [{"name": "g1", "gres": "gpu:a100:x"}]}')
    with pytest.raises(NodesInputError) as caught:
        read_nodes(str(path))
    assert str(caught.value).startswith(f"{path}: node g1: gres:") and caught.value.file == str(path)


def test_a_grace_node_labelled_arm64_is_refused_once_in_the_nodes_own_words(matrix):
    """The GH200 row's "only comes in aarch64 hosts" and the stack's wrong-CPU reason say what the
    node's arm64 label already said: the verdict keeps that one reason, and the GPU's other facts."""
    obj = with_labels(node("a100-r535"), **{"nvidia.com/gpu.product": "NVIDIA-GH200-480GB",
                                            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
                                            "kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "arm64"})
    verdict = judge(matrix, configured_torch_stack(matrix), read_one(obj))
    assert (verdict.compatible, verdict.mode) == (False, None)
    assert verdict.reasons == ("the node's CPU is aarch64; the image is built for x86_64 (its base image and "
                               "framework wheels), so it cannot start there",)


def test_a_node_without_an_arch_keeps_its_gpu_caveats_beside_the_arch_one(matrix):
    from dataclasses import replace

    facts = replace(read_one(node("a100-r535")), arch=None, product="NVIDIA-Z9000", compute_capability="8.0")
    verdict = judge(matrix, configured_torch_stack(matrix), facts)
    assert verdict.caveats[:2] == (
        "GPU NVIDIA-Z9000 is not in the matrix: judged by its compute capability, as a non-data-center GPU "
        "(no forward compatibility)",
        "the node states no CPU architecture (no kubernetes.io/arch label): checked as x86_64, the CPU the image is "
        "built for")


def test_an_amd64_node_with_a_grace_gpu_is_refused_once_for_an_aarch64_image(matrix):
    """A GH200 reported on an amd64 node, judged for an aarch64 image: the node's CPU is the reason,
    said once; the GPU row's "only comes in aarch64 hosts" would say the same again."""
    from dataclasses import replace

    stack = replace(configured_torch_stack(matrix), arch="aarch64")
    obj = with_labels(node("a100-r535"), **{"nvidia.com/gpu.product": "NVIDIA-GH200-480GB",
                                            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
                                            "kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "amd64"})
    verdict = judge(matrix, stack, read_one(obj))
    assert verdict.reasons == ("the node's CPU is x86_64; the image is built for aarch64 (its base image and "
                               "framework wheels), so it cannot start there",)


def test_a_node_refused_for_its_own_facts_has_no_mode_even_when_the_stack_would_run(matrix):
    from dataclasses import replace

    facts = replace(read_one(node("a100-r535")), unknown=("the driver version (no label)",))
    verdict = judge(matrix, configured_torch_stack(matrix), facts)
    assert (verdict.compatible, verdict.mode) == (False, None)
    assert verdict.reasons == ("cannot be known: the driver version (no label)",)
