"""Grouping images by stack base and counting their disk by distinct chain IDs."""

from __future__ import annotations

from cudaenv.engine import ImageInfo
from cudaenv.images.accounting import account

OS, PY, FW, FW_AGAIN, REQ_A, REQ_B, CODE = (f"sha256:{c * 64}" for c in "0123456")
BASE_LABELS = {"io.cudaenv.project": "cudaenv-base", "io.cudaenv.content-hash": "h" * 32}


def image(id_: str, diff_ids, sizes, *, base=False, project="p", tags=()) -> ImageInfo:
    labels = dict(BASE_LABELS) if base else {"io.cudaenv.project": project, "io.cudaenv.inputs-hash": "i" * 32,
                                             "io.cudaenv.content-hash": "h" * 32}
    history = tuple((f"RUN step {n}", size) for n, size in enumerate(sizes))
    return ImageInfo(id=f"sha256:{id_ * 64}", tags=tags or (f"{project}:{id_}",), labels=labels,
                     diff_ids=tuple(diff_ids), size=sum(sizes), history=history)


BASE = image("b", [OS, PY, FW], [100, 20, 5000], base=True, tags=("cudaenv-base:stack", "cudaenv-base:hash-h"))
ALPHA = image("a", [OS, PY, FW, REQ_A, CODE], [100, 20, 5000, 7, 1], project="alpha")
BETA = image("c", [OS, PY, FW, REQ_B, CODE], [100, 20, 5000, 9, 1], project="beta")


def test_projects_on_one_base_are_grouped_under_it_with_what_each_adds():
    [stack] = account([BASE, ALPHA, BETA]).stacks
    assert stack.base.info is BASE and stack.bytes == 5120
    assert {(p.image.info.labels["io.cudaenv.project"], p.adds_bytes, p.layers_added) for p in stack.projects} == {
        ("alpha", 8, 2), ("beta", 10, 2)}


def test_the_base_is_counted_once_on_disk():
    found = account([BASE, ALPHA, BETA])
    assert found.distinct_bytes == 5120 + 8 + 10
    assert found.summed_bytes == 5120 * 3 + 18


def test_a_framework_layer_built_twice_is_counted_twice():
    """The old way: same OS and Python, the framework rebuilt (--no-cache) under another diff ID."""
    forked = image("d", [OS, PY, FW_AGAIN, REQ_B, CODE], [100, 20, 5000, 9, 1], project="beta")
    found = account([BASE, ALPHA, forked])
    assert found.distinct_bytes == 100 + 20 + 5000 + 5000 + 8 + 10
    assert [u.image.info for u in found.unattached] == [forked]
    assert [p.image.info for p in found.stacks[0].projects] == [ALPHA]


def test_a_project_on_the_same_diff_ids_over_another_lower_layer_is_not_on_the_base():
    moved = image("e", [PY, OS, FW, REQ_A], [20, 100, 5000, 7], project="moved")
    found = account([BASE, moved])
    assert found.stacks[0].projects == () and [u.image.info for u in found.unattached] == [moved]


def test_a_base_no_project_sits_on_is_unused():
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",))
    found = account([BASE, other, ALPHA])
    assert [s.base.info for s in found.unused] == [other]


def test_the_report_can_be_narrowed_to_one_base():
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",))
    stray = image("g", [OS, REQ_A], [100, 1], project="stray")
    found = account([BASE, other, ALPHA, stray], only_bases=[other.id])
    assert [s.base.info for s in found.stacks] == [other] and found.unattached == ()
    assert found.distinct_bytes == 400


def test_an_image_listed_twice_counts_once():
    found = account([BASE, ALPHA, ALPHA])
    assert len(found.stacks[0].projects) == 1


def test_the_json_names_bases_projects_and_how_disk_was_measured():
    report = account([BASE, ALPHA]).as_dict()
    assert report["stacks"][0]["base"] == "cudaenv-base:stack"
    assert report["stacks"][0]["projects"][0]["project"] == "alpha"
    assert report["disk"]["measured_by"] == "distinct layer chain IDs"
    assert report["disk"]["saved_bytes"] == 5120


def test_an_image_whose_history_does_not_match_its_layers_still_counts_its_size():
    odd = ImageInfo(id="sha256:" + "9" * 64, tags=("odd:1",), labels=dict(BASE_LABELS), diff_ids=(OS, PY),
                    size=50, history=(("RUN a", 10), ("RUN b", 20), ("RUN c", 20)))
    [stack] = account([odd]).stacks
    assert stack.bytes == 50 and stack.base.exact is False
