"""Every way a Slurm node document can be bad input, each with the exact one-line message and the
field the JSON error names (the contract: file, node, field, what was expected), and the
spellings Slurm uses for "not set"."""

from __future__ import annotations

import pytest

from cudaenv.cluster.facts import NodesInputError
from cudaenv.cluster.read import parse_document
from cudaenv.cluster.slurm import read_slurm

HUGE = "9" * 5000


def node(**fields) -> dict:
    return {"name": "gpu-01", "gres": "gpu:a100:4", "features": "a,b", **fields}


BAD_JSON = [
    ({"nodes": {}}, "nodes", "f.json: nodes: expected the list of Slurm node records"),
    ({"nodes": [3]}, "nodes[0]", "f.json: nodes[0]: expected a node record, got int"),
    ({"nodes": [node(name="bad name")]}, "nodes[0].name", "f.json: nodes[0].name: expected a node name, got 'bad name'"),
    ({"nodes": [node(gres=7)]}, "nodes[0].gres", "f.json: node gpu-01: gres: expected a GRES string like gpu:a100:4, got 7"),
    ({"nodes": [node(gres="gpu:a100:x")]}, "nodes[0].gres",
     "f.json: node gpu-01: gres: expected entries like gpu:a100:4, got 'gpu:a100:x'"),
    ({"nodes": [node(gres="gpu:123456")]}, "nodes[0].gres",
     "f.json: node gpu-01: gres: expected a GPU count of at most 5 digits, got 'gpu:123456'"),
    ({"nodes": [node(features=["ok", "not ok"])]}, "nodes[0].features",
     "f.json: node gpu-01: features: expected feature names (a list or comma-separated), got ['ok', 'not ok']"),
    ({"nodes": [node(architecture="x86-64!")]}, "nodes[0].architecture",
     "f.json: node gpu-01: architecture: expected a CPU architecture like x86_64 or aarch64, got 'x86-64!'"),
    ({"sinfo": {}}, "sinfo", "f.json: sinfo: expected the list of sinfo entries"),
    ({"sinfo": ["x"]}, "sinfo[0]", "f.json: sinfo[0]: expected an sinfo entry, got str"),
    ({"sinfo": [{"nodes": {"nodes": "gpu-01"}}]}, "sinfo[0].nodes.nodes",
     "f.json: sinfo[0].nodes.nodes: expected the node names"),
    ({"sinfo": [{"nodes": ["gpu-01"]}]}, "sinfo[0].nodes.nodes", "f.json: sinfo[0].nodes.nodes: expected the node names"),
]


@pytest.mark.parametrize("document, field, message", BAD_JSON, ids=[f"{case[1]}-{i}".replace("[", "").replace("]", "") for i, case in enumerate(BAD_JSON)])
def test_bad_slurm_json_is_one_line_naming_file_node_and_field(document, field, message):
    with pytest.raises(NodesInputError) as caught:
        read_slurm("f.json", document)
    assert (str(caught.value), caught.value.field, caught.value.file) == (message, field, "f.json")


def test_a_huge_integer_in_a_node_record_names_the_node_and_the_path():
    _kind, document = parse_document("f.json", '{"nodes": [{"name": "gpu-01", "cpus": ' + HUGE + "}]}")
    with pytest.raises(NodesInputError) as caught:
        read_slurm("f.json", document)
    assert str(caught.value) == "f.json: node gpu-01: cpus: a number of more digits than can be read"
    assert caught.value.field == "nodes[0].cpus"


def test_a_huge_integer_in_a_nameless_record_names_where_it_is():
    _kind, document = parse_document("f.json", '{"sinfo": [{"cpus": {"total": ' + HUGE + "}}]}")
    with pytest.raises(NodesInputError) as caught:
        read_slurm("f.json", document)
    assert str(caught.value) == "f.json: node sinfo[0]: cpus.total: a number of more digits than can be read"
    assert caught.value.field == "sinfo[0].cpus.total"


def test_scontrol_text_without_a_node_name_is_bad_input():
    with pytest.raises(NodesInputError) as caught:
        read_slurm("n.txt", "NodeName=a Gres=gpu:1\nNodeName= Arch=x86_64\n")
    assert caught.value.field == "record 2.name"


@pytest.mark.parametrize("unset", ["", "(null)", "N/A", None])
def test_an_architecture_slurm_never_learned_is_unknown_not_bad(unset):
    [facts] = read_slurm("f.json", {"nodes": [node(architecture=unset)]})
    assert facts.arch is None


@pytest.mark.parametrize("gres", ["", "(null)", "N/A", None])
def test_a_node_without_gres_has_no_gpus(gres):
    [facts] = read_slurm("f.json", {"nodes": [node(gres=gres)]})
    assert facts.gpu_count == 0 and facts.gres is None and not facts.has_gpu


def test_active_features_win_over_the_configured_ones():
    [facts] = read_slurm("f.json", {"nodes": [node(features="a,b", active_features="c")]})
    assert facts.features == ("c",)
    [facts] = read_slurm("f.json", {"nodes": [node(features="a,b", active_features="")]})
    assert facts.features == ("a", "b")


def test_scontrol_text_reads_active_features_else_available_ones():
    text = "NodeName=n1 Arch=aarch64 AvailableFeatures=a,b ActiveFeatures=(null) Gres=gpu:t4:2\n"
    [facts] = read_slurm("n.txt", text)
    assert (facts.features, facts.arch, facts.gpu_count, facts.product) == (("a", "b"), "aarch64", 2, "t4")
    [facts] = read_slurm("n.txt", text.replace("ActiveFeatures=(null)", "ActiveFeatures=c"))
    assert facts.features == ("c",)
    [facts] = read_slurm("n.txt", "NodeName=n2 Gres=(null) AvailableFeatures=(null)\n")
    assert (facts.features, facts.gres, facts.gpu_count, facts.arch) == ((), None, 0, None)


def test_sinfo_lists_a_node_once_per_partition_and_it_is_read_once():
    entry = {"nodes": {"nodes": ["n1", "n2"]}, "features": {"total": "a", "active": "b"}, "gres": {"total": "gpu:2"}}
    facts = read_slurm("f.json", {"sinfo": [entry, {**entry, "features": {"total": "x"}}]})
    assert [(f.name, f.features, f.gpu_count) for f in facts] == [("n1", ("b",), 2), ("n2", ("b",), 2)]
