"""Chain IDs and layer sizes: the arithmetic `cudaenv images` counts disk with."""

from __future__ import annotations

import hashlib

from cudaenv.images.layers import chain_ids, distinct_bytes, layer_sizes

A, B, C = (f"sha256:{c * 64}" for c in "abc")


def test_the_first_layers_chain_id_is_its_diff_id():
    assert chain_ids([A]) == (A,)


def test_a_chain_id_hashes_the_parents_chain_id_a_space_and_the_diff_id():
    expected = "sha256:" + hashlib.sha256(f"{A} {B}".encode()).hexdigest()
    assert chain_ids([A, B]) == (A, expected)
    third = "sha256:" + hashlib.sha256(f"{expected} {C}".encode()).hexdigest()
    assert chain_ids([A, B, C])[2] == third


def test_the_same_content_on_another_parent_is_another_layer():
    assert chain_ids([A, C])[1] != chain_ids([B, C])[1]


def test_a_changed_lower_layer_changes_every_chain_id_above_it():
    one, two = chain_ids([A, B, C]), chain_ids([C, B, C])
    assert all(x != y for x, y in zip(one, two))


def test_an_image_that_extends_another_repeats_its_chain_ids():
    assert chain_ids([A, B, C])[:2] == chain_ids([A, B])


def test_distinct_bytes_counts_each_chain_id_once():
    assert distinct_bytes([("x", 10), ("y", 5), ("x", 10)]) == 15


def test_layer_sizes_skip_metadata_only_history_entries():
    history = [("/bin/sh -c #(nop) ADD file:abc in /", 100), ("ENV LANG=C.UTF-8", 0),
               ("RUN /bin/sh -c apt-get install tini # buildkit", 20), ('LABEL io.cudaenv.project="x"', 0),
               ("RUN /bin/sh -c true # buildkit", 0), ("COPY . /workspace/ # buildkit", 3), ('CMD ["bash"]', 0)]
    assert layer_sizes(4, history) == (100, 20, 0, 3)


def test_layer_sizes_count_workdir_as_a_layer_only_when_the_layer_count_needs_it():
    history = [("import", 7), ("WORKDIR /workspace", 0), ("RUN true", 0), ("COPY . /w", 2)]
    assert layer_sizes(3, history) == (7, 0, 2)
    assert layer_sizes(4, history) == (7, 0, 0, 2)


def test_layer_sizes_that_cannot_match_the_layers_are_unknown():
    assert layer_sizes(1, [("RUN a", 5), ("RUN b", 6)]) is None
    assert layer_sizes(5, [("RUN a", 5), ("ENV x=1", 0)]) is None
