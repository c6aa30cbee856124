"""Slurm's GRES strings and node records read as Slurm writes them: entries in any order with commas
inside socket lists, a length limit, sinfo entries without features or GRES, a node listed by several
partitions, and the exact words for what Slurm cannot tell and for each bad record."""

from __future__ import annotations

import pytest

from cudaenv.cluster.facts import NodesInputError, Oversized
from cudaenv.cluster.slurm import NO_DRIVER, parse_gres, read_slurm


def gres_of(text):
    return parse_gres("f", "nodes[0]", "n", text)


def test_a_comma_inside_a_socket_list_does_not_split_the_entry():
    """`Gres=gpu:a100:2(S:0,1),gpu:t4:1`: the comma between sockets belongs to the first entry."""
    assert gres_of("gpu:a100:2(S:0,1),gpu:t4:1") == (3, ("a100", "t4"))
    assert gres_of("gpu:a100:4(S:0-1),gpu:a100:4(S:2,3),mps:400") == (8, ("a100",))


def test_gpu_entries_after_other_gres_are_counted():
    """Slurm prints GRES in configuration order: a shard or mps entry may come first."""
    assert gres_of("shard:a100:16,gpu:a100:4") == (4, ("a100",))
    assert gres_of("mps:400(S:0-1),gpu:2") == (2, ())


def test_gres_is_read_up_to_1024_characters():
    """A cap on what is parsed: a GRES longer than any slurm.conf line is bad input, named."""
    longest = ",".join(["gpu:a100:1"] * 93) + ",x"
    assert len(longest) == 1024 and gres_of(longest) == (93, ("a100",))
    with pytest.raises(NodesInputError) as caught:
        gres_of(longest + "y")
    assert str(caught.value) == f"f: node n: gres: expected a GRES string like gpu:a100:4, got {repr(longest + 'y')[:45]}… (1027 chars)"


def test_a_gres_that_is_not_ascii_is_refused_as_a_whole():
    with pytest.raises(NodesInputError) as caught:
        gres_of("gpu:ａ100:2")
    assert str(caught.value) == "f: node n: gres: expected a GRES string like gpu:a100:4, got 'gpu:ａ100:2'"
    assert caught.value.field == "nodes[0].gres"


@pytest.mark.parametrize("length", [58, 59], ids=["fits", "cut"])
def test_a_bad_node_name_is_shown_whole_up_to_60_characters_of_repr(length):
    """Named, never echoed back whole: a repr past 60 characters is cut to 45 and its length said."""
    name = "gpu node " + "x" * (length - 9)
    with pytest.raises(NodesInputError) as caught:
        read_slurm("f.json", {"nodes": [{"name": name, "gres": "gpu:1"}]})
    shown = repr(name) if length == 58 else f"{repr(name)[:45]}… ({length + 2} chars)"
    assert str(caught.value) == f"f.json: nodes[0].name: expected a node name, got {shown}"


def test_a_sinfo_entry_without_features_or_gres_is_a_node_without_gpus():
    """sinfo --json (23.02+) leaves out what a partition's nodes do not have."""
    [facts] = read_slurm("s.json", {"sinfo": [{"nodes": {"nodes": ["cpu-01"]}}]})
    assert (facts.name, facts.features, facts.gres, facts.gpu_count, facts.has_gpu) == ("cpu-01", (), None, 0, False)


def test_sinfo_features_fall_back_to_the_configured_ones():
    """No active features reported: the configured (total) ones are what the node has."""
    entry = {"nodes": {"nodes": ["g1"]}, "features": {"total": "a100,ib"}, "gres": {"total": "gpu:a100:4"}}
    [facts] = read_slurm("s.json", {"sinfo": [entry]})
    assert facts.features == ("a100", "ib")


def test_a_bad_name_in_a_sinfo_entry_names_the_entry():
    with pytest.raises(NodesInputError) as caught:
        read_slurm("s.json", {"sinfo": [{"nodes": {"nodes": ["g1"]}}, {"nodes": {"nodes": ["bad name"]}}]})
    assert (str(caught.value), caught.value.field, caught.value.file) == (
        "s.json: sinfo[1].name: expected a node name, got 'bad name'", "sinfo[1].name", "s.json")


def test_a_node_seen_in_an_earlier_partition_does_not_end_the_listing():
    """sinfo lists a node once per partition: the repeat is skipped, the nodes after it are read."""
    document = {"sinfo": [{"nodes": {"nodes": ["g1", "g2"]}, "gres": {"total": "gpu:a100:4"}},
                          {"nodes": {"nodes": ["g1", "g3"]}, "gres": {"total": "gpu:t4:2"}}]}
    assert [(f.name, f.gpu_count) for f in read_slurm("s.json", document)] == [("g1", 4), ("g2", 4), ("g3", 2)]


def test_what_slurm_cannot_tell_is_said_in_full():
    """Each unknown says what is missing and what the site can do about it."""
    several, untyped = read_slurm("s.json", {"nodes": [{"name": "mixed", "gres": "gpu:a100:2,gpu:t4:1"},
                                                       {"name": "plain", "gres": "gpu:4"}]})
    assert several.unknown == (NO_DRIVER, "GPU model: the node has GPUs of several GRES types (a100, t4)")
    assert untyped.unknown == (NO_DRIVER, "GPU model: the GRES names no type (gpu:N); map a node feature in "
                                          "[cluster.slurm.features] to say which GPU")
    assert several.source == untyped.source == "slurm"
    assert untyped.as_dict()["gres"] == "gpu:4"


@pytest.mark.parametrize("text,message", [
    ("Node gpu-99 not found\n", "n.txt: record 1: expected `scontrol show node` output (NodeName=...), "
                                "got 'Node gpu-99 not found'"),
    ("slurm_load_node error: Unable to contact slurm controller (connect failure)\n",
     "n.txt: record 1: expected `scontrol show node` output (NodeName=...), "
     "got 'slurm_load_node error: Unable to contact'"),
], ids=["not-found", "no-controller"])
def test_scontrol_error_text_is_named_with_its_first_40_characters(text, message):
    """What scontrol prints instead of nodes (its own errors) is bad input, quoted briefly."""
    with pytest.raises(NodesInputError) as caught:
        read_slurm("n.txt", text)
    assert (str(caught.value), caught.value.field, caught.value.file) == (message, "record 1", "n.txt")


def test_a_huge_integer_in_a_slurm_record_is_named_by_its_path_as_written():
    """The path is the record's own keys, whatever characters they start with."""
    with pytest.raises(NodesInputError) as caught:
        read_slurm("f.json", {"nodes": [{"name": "gpu-01", "X-Asset-Tag": Oversized("9" * 5000)}]})
    assert str(caught.value) == "f.json: node gpu-01: X-Asset-Tag: a number of more digits than can be read"
    assert caught.value.field == "nodes[0].X-Asset-Tag"
