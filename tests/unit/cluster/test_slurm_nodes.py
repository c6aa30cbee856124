"""Reading Slurm's node JSON: `sinfo --json` of 22.05 (recorded from Debian 12's slurm-wlm, string
features), `scontrol show node --json` of 23.02+ (feature lists), `sinfo --json` of 23.02+ (one entry per
partition); GRES counts and types; the driver only from [cluster.slurm.features], else said unknown."""

from __future__ import annotations

import json

import pytest

from cudaenv.cluster.facts import NodesInputError
from cudaenv.cluster.read import read_nodes
from cudaenv.cluster.slurm import NO_DRIVER, parse_gres, read_slurm
from cudaenv.export.slurm import site_features
from tests.unit.cluster.helpers import SLURM

SINFO_22_05 = SLURM / "sinfo-json-22.05.8.json"
SCONTROL_23 = SLURM / "scontrol-show-node-json-23.11.json"


@pytest.mark.parametrize("gres,expected", [
    ("gpu:2", (2, ())),
    ("gpu:a100:4", (4, ("a100",))),
    ("gpu:a100:4(S:0-1)", (4, ("a100",))),
    ("gpu:tesla_t4:2(S:0,1)", (2, ("tesla_t4",))),
    ("gpu:a100:2,gpu:a100:2", (4, ("a100",))),
    ("gpu:h100:8,shard:h100:64", (8, ("h100",))),
    ("gpu:a100", (1, ("a100",))),
    ("mps:100", (0, ())),
    ("", (0, ())),
    ("(null)", (0, ())),
    (None, (0, ())),
])
def test_gres_gives_the_gpu_count_and_types(gres, expected):
    assert parse_gres("f", "nodes[0]", "n", gres) == expected


@pytest.mark.parametrize("gres", ["gpu:a100:x", "gpu::4", "ｇｐｕ:1", 4, "gpu:" + "9" * 30],
                         ids=["type-not-count", "empty-type", "fullwidth", "not-a-string", "huge-count"])
def test_bad_gres_is_bad_input_naming_the_node(gres):
    with pytest.raises(NodesInputError, match=r"^f: node n: gres: expected"):
        parse_gres("f", "nodes[0]", "n", gres)


def test_the_recorded_22_05_sinfo_json_is_read():
    # Debian 12's scontrol (22.05) has no --json; its sinfo --json lists nodes with string features
    name, kind, nodes = read_nodes(str(SINFO_22_05))
    assert kind == "slurm" and len(nodes) == 1
    facts = nodes[0]
    assert (facts.features, facts.gres, facts.gpu_count) == (("cuda-driver-550", "sm_80", "sm_90"), "gpu:2", 2)
    assert facts.driver is None and NO_DRIVER in facts.unknown


def test_a_feature_mapped_in_the_project_gives_driver_and_gpu(matrix):
    features = site_features(matrix, {"cuda-driver-550": {"gpu": "A100", "driver": "550.54.15"}}, "cudaenv.toml")
    facts = read_nodes(str(SINFO_22_05), lambda: features)[2][0]
    assert (facts.driver, facts.product, facts.compute_capability, facts.mapped_feature) == (
        "550.54.15", "A100", "8.0", "cuda-driver-550")
    assert facts.unknown == ()


def test_scontrol_json_of_newer_slurm_reads_feature_lists_and_gres_types(matrix):
    features = site_features(matrix, {"a100-r550": {"gpu": "A100", "driver": "550.54.15"}}, "cudaenv.toml")
    nodes = {n.name: n for n in read_nodes(str(SCONTROL_23), lambda: features)[2]}
    assert nodes["gpu-a100-01"].driver == "550.54.15" and nodes["gpu-a100-01"].gpu_count == 4
    t4 = nodes["gpu-t4-01"]
    assert (t4.product, t4.gpu_count, t4.driver) == ("tesla_t4", 2, None)  # the GRES type, as the site named it
    assert t4.unknown == (NO_DRIVER,)
    assert nodes["cpu-01"].has_gpu is False


def test_newer_sinfo_json_lists_each_node_once():
    document = {"sinfo": [
        {"nodes": {"nodes": ["g1", "g2"]}, "features": {"total": "a100", "active": "a100"},
         "gres": {"total": "gpu:a100:4", "used": "gpu:a100:0"}},
        {"nodes": {"nodes": ["g1"]}, "features": {"total": "a100", "active": "a100"},
         "gres": {"total": "gpu:a100:4", "used": "gpu:a100:0"}},
    ], "errors": [], "warnings": []}
    nodes = read_slurm("s.json", document)
    assert [n.name for n in nodes] == ["g1", "g2"] and all(n.gpu_count == 4 for n in nodes)


def test_features_mapped_to_different_hardware_are_reported_not_guessed(matrix):
    features = site_features(matrix, {"a": {"gpu": "A100", "driver": "550.54.15"},
                                      "b": {"gpu": "T4", "driver": "535.154.05"}}, "cudaenv.toml")
    facts = read_slurm("s.json", {"nodes": [{"name": "n1", "features": "a,b", "gres": "gpu:1"}]}, features)[0]
    assert facts.driver is None and "different hardware (a, b)" in facts.unknown[0]


def test_an_untyped_gres_without_a_mapping_leaves_the_gpu_unknown():
    facts = read_slurm("s.json", {"nodes": [{"name": "n1", "features": "", "gres": "gpu:4"}]})[0]
    assert facts.has_gpu and facts.product is None
    assert any(u.startswith("GPU model: the GRES names no type") for u in facts.unknown)


@pytest.mark.parametrize("document,expected", [
    ({"nodes": {}}, "nodes: expected the list"),
    ({"nodes": [{"name": "bad name"}]}, "nodes[0].name: expected a node name"),
    ({"nodes": [{"name": "n1", "features": "a b"}]}, "node n1: features: expected feature names"),
    ({"nodes": [{"name": "n1", "features": [1]}]}, "node n1: features: expected feature names"),
    ({"sinfo": [{"nodes": "n1"}]}, "sinfo[0].nodes.nodes: expected the node names"),
])
def test_bad_slurm_documents_are_named(document, expected):
    with pytest.raises(NodesInputError) as caught:
        read_slurm("s.json", document)
    assert str(caught.value).startswith("s.json: ") and expected in str(caught.value)


def test_the_recorded_sinfo_output_is_untouched_slurm_json():
    document = json.loads(SINFO_22_05.read_text())
    assert document["meta"]["Slurm"]["release"] == "22.05.8"


SCONTROL_TEXT_22_05 = SLURM / "scontrol-show-node-22.05.8.txt"


def test_the_recorded_22_05_scontrol_text_is_read_like_its_json(matrix):
    features = site_features(matrix, {"cuda-driver-550": {"gpu": "A100", "driver": "550.54.15"}}, "cudaenv.toml")
    from_text = read_nodes(str(SCONTROL_TEXT_22_05), lambda: features)[2]
    from_json = read_nodes(str(SINFO_22_05), lambda: features)[2]
    assert from_text == from_json


def test_one_line_scontrol_text_with_several_nodes_and_null_fields():
    text = ("NodeName=g1 Arch=x86_64 CoresPerSocket=32 AvailableFeatures=a100,ib ActiveFeatures=a100,ib "
            "Gres=gpu:a100:8(S:0-1) NodeAddr=g1 OS=Linux 5.15.0 #1 SMP\n"
            "NodeName=c1 Arch=x86_64 CoresPerSocket=64 AvailableFeatures=(null) ActiveFeatures=(null) "
            "Gres=(null) NodeAddr=c1\n")
    nodes = {n.name: n for n in read_slurm("nodes.txt", text)}
    assert (nodes["g1"].features, nodes["g1"].gpu_count, nodes["g1"].product) == (("a100", "ib"), 8, "a100")
    assert (nodes["c1"].features, nodes["c1"].gres, nodes["c1"].has_gpu) == ((), None, False)


@pytest.mark.parametrize("text,expected", [
    ("NodeName=g1 Gres=gpu:a100:lots\n", "n.txt: node g1: gres: expected entries like gpu:a100:4"),
    ("NodeName=g|1 Gres=gpu:1\n", "n.txt: record 1.name: expected a node name, got 'g|1'"),
    ("NodeName=g1 ActiveFeatures=a;b Gres=gpu:1\n", "n.txt: node g1: features: expected feature names"),
], ids=["bad-gres", "bad-name", "bad-features"])
def test_bad_scontrol_text_is_named(text, expected):
    with pytest.raises(NodesInputError) as caught:
        read_slurm("n.txt", text)
    assert str(caught.value).startswith(expected)
