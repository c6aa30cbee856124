"""Grouping images by stack base and counting their disk by distinct chain IDs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.engine import ImageInfo
from cudaenv.images.accounting import account, is_stack_base, prune
from cudaenv.images.stackbase import local_reference

OS, PY, FW, FW_AGAIN, REQ_A, REQ_B, CODE, USER = (f"sha256:{c * 64}" for c in "01234567")
BASE_LABELS = {"io.cudaenv.project": "cudaenv-base", "io.cudaenv.content-hash": "h" * 32}


def image(id_: str, diff_ids, sizes, *, base=False, project="p", tags=(), digest="h" * 32, target=None) -> ImageInfo:
    labels = {**BASE_LABELS, "io.cudaenv.content-hash": digest} if base else {
        "io.cudaenv.project": project, "io.cudaenv.inputs-hash": "i" * 32, "io.cudaenv.content-hash": digest,
        **({"io.cudaenv.target": target} if target else {})}
    history = tuple((f"RUN step {n}", size) for n, size in enumerate(sizes))
    if base:  # what ensure_base tags every base with, whatever else it is called
        tags = (*tags, local_reference(digest))
    return ImageInfo(id=f"sha256:{id_ * 64}", tags=tags or (f"{project}:{id_}",), labels=labels,
                     diff_ids=tuple(diff_ids), size=sum(sizes), history=history)


BASE = image("b", [OS, PY, FW], [100, 20, 5000], base=True, tags=("cudaenv-base:stack",))
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
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",), digest="o" * 32)
    found = account([BASE, other, ALPHA])
    assert [s.base.info for s in found.unused] == [other]


def test_the_report_can_be_narrowed_to_one_base():
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",), digest="o" * 32)
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
    odd = ImageInfo(id="sha256:" + "9" * 64, tags=(local_reference("h" * 32),), labels=dict(BASE_LABELS), diff_ids=(OS, PY),
                    size=50, history=(("RUN a", 10), ("RUN b", 20), ("RUN c", 20)))
    [stack] = account([odd]).stacks
    assert stack.bytes == 50 and stack.base.exact is False


# --- what makes an image a stack base: cudaenv's own tag, never inherited labels ---------------------

# `docker build` of `FROM cudaenv-base:hash-…` + one RUN: the base's labels are inherited unchanged
USER_IMAGE = ImageInfo(id="sha256:" + "u" * 64, tags=("my-own-tool:latest",), labels=dict(BASE_LABELS),
                       diff_ids=(OS, PY, FW, USER), size=5121, history=tuple(
                           (f"RUN step {n}", size) for n, size in enumerate([100, 20, 5000, 1])))


def test_an_image_built_by_hand_on_a_base_is_not_a_base_despite_its_inherited_labels():
    assert is_stack_base(BASE)
    assert not is_stack_base(USER_IMAGE)
    found = account([BASE, USER_IMAGE])
    assert [s.base.info for s in found.stacks] == [BASE]


def test_an_image_built_by_hand_on_a_base_keeps_the_base_in_use():
    [stack] = account([BASE, USER_IMAGE]).stacks
    assert stack.used and [o.info for o in stack.others] == [USER_IMAGE]
    assert account([BASE, USER_IMAGE]).unused == ()
    assert stack.as_dict()["other_images"] == [{"image": "my-own-tool:latest", "image_id": USER_IMAGE.id,
                                                "tags": ["my-own-tool:latest"]}]


def test_a_base_tag_of_another_hash_does_not_make_a_base():
    """The hash tag must be the one of the image's own content hash, as ensure_base gives it."""
    retagged = replace(BASE, tags=(local_reference("x" * 32),))
    assert not is_stack_base(retagged)
    assert not is_stack_base(replace(BASE, labels={**BASE_LABELS, "io.cudaenv.project": "mine"}))


class RecordingEngine:
    """Only what prune calls; records what it was asked to remove."""

    def __init__(self):
        self.removed = []

    def remove_image(self, reference, *, force=False):
        self.removed.append(reference)

    def image_info(self, reference):
        return None


def test_prune_removes_nothing_that_a_hand_built_image_sits_on_and_never_the_hand_built_image():
    engine = RecordingEngine()
    assert prune(engine, account([BASE, USER_IMAGE])) == [] and engine.removed == []


def test_prune_still_removes_a_base_nothing_uses():
    engine = RecordingEngine()
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",), digest="o" * 32)
    [removal] = prune(engine, account([BASE, other, ALPHA, USER_IMAGE]))
    assert removal.image_id == other.id and removal.removed
    assert engine.removed == list(other.tags)


def test_a_base_whose_tag_moved_to_a_rebuild_stays_a_base_while_a_project_image_names_it():
    """A rebuilt base takes the hash tag; the old one is untagged, but the project image cudaenv
    built on it records its ID (io.cudaenv.base-id): it is still that project's base, not an unknown."""
    old_base = replace(BASE, tags=())
    on_old = replace(ALPHA, labels={**ALPHA.labels, "io.cudaenv.base-id": old_base.id})
    assert not is_stack_base(old_base)
    [stack] = account([old_base, on_old]).stacks
    assert stack.base.info is old_base and [p.image.info for p in stack.projects] == [on_old]
    assert prune(RecordingEngine(), account([old_base, on_old])) == []


def test_an_untagged_image_with_base_labels_that_no_project_names_is_no_base():
    old_base = replace(BASE, tags=())
    assert account([old_base, ALPHA]).stacks == ()
    user_named = replace(USER_IMAGE, labels={**USER_IMAGE.labels, "io.cudaenv.base-id": old_base.id})
    assert account([old_base, user_named]).stacks == ()  # only a project image cudaenv built records a base


def test_prune_keeps_a_base_the_user_tagged_and_every_one_of_its_names():
    """`docker tag cudaenv-base:… mine:keep` makes the image the user's too: --prune removes no name."""
    engine = RecordingEngine()
    kept = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other", "mine:keep"), digest="o" * 32)
    assert prune(engine, account([BASE, kept, ALPHA])) == [] and engine.removed == []


def test_a_registry_prefixed_base_name_is_cudaenvs_own():
    from cudaenv.images.accounting import is_own_name

    assert is_own_name("cudaenv-base:hash-0123") and is_own_name("registry.example:5000/team/cudaenv-base:stack")
    assert not is_own_name("mine:keep") and not is_own_name("cudaenv-base-mine:x") and not is_own_name("x/my-cudaenv-base:y")


def test_the_json_report_whole():
    """`cudaenv images --json` is read by scripts: every key, every value, for a base, a project on
    it, a user's own image on it and a project image on no base."""
    labels = {**BASE.labels, "io.cudaenv.stack": '{"cuda": "12.4", "python": "3.12"}'}
    base = replace(BASE, labels=labels)
    stray = image("s", [OS, REQ_B], [100, 3], project="stray", target="laptop")
    report = account([base, ALPHA, USER_IMAGE, stray]).as_dict()
    assert report == {
        "stacks": [{
            "base": "cudaenv-base:stack", "image_id": base.id, "tags": list(base.tags), "content_hash": "h" * 32,
            "stack": {"cuda": "12.4", "python": "3.12"}, "bytes": 5120, "layers": 3, "used": True,
            "projects": [{"project": "alpha", "target": None, "image": "alpha:a", "image_id": ALPHA.id, "tags": ["alpha:a"],
                          "adds_bytes": 8, "layers_added": 2, "exact": True}],
            "other_images": [{"image": "my-own-tool:latest", "image_id": USER_IMAGE.id,
                              "tags": ["my-own-tool:latest"]}]}],
        "unattached": [{"project": "stray", "target": "laptop", "image": "stray:s", "image_id": stray.id, "tags": ["stray:s"],
                        "adds_bytes": 103, "layers_added": 2, "exact": True}],
        # cudaenv's images only: a user's own image on the base is listed, not counted
        "disk": {"distinct_bytes": 5120 + 8 + 3, "summed_bytes": 5120 + 5128 + 103,
                 "saved_bytes": 5120 + 5128 + 103 - (5120 + 8 + 3), "measured_by": "distinct layer chain IDs"},
    }


@pytest.mark.parametrize("label", [None, "not json", "[1, 2]"], ids=["missing", "not-json", "not-an-object"])
def test_a_stack_label_that_is_no_object_reads_as_none(label):
    labels = dict(BASE.labels)
    if label is not None:
        labels["io.cudaenv.stack"] = label
    assert account([replace(BASE, labels=labels)]).as_dict()["stacks"][0]["stack"] is None


def test_a_removal_says_what_it_freed_or_why_not():
    from cudaenv.images.accounting import Removal

    assert Removal("cudaenv-base:x", "sha256:1", 10, False, "in use").as_dict() == {
        "base": "cudaenv-base:x", "image_id": "sha256:1", "bytes": 10, "removed": False, "reason": "in use"}


class RefusingEngine(RecordingEngine):
    """The engine refuses to remove an image a container uses; an image it keeps stays visible."""

    def __init__(self, refuse: bool, keep: bool):
        super().__init__()
        self.refuse, self.keep = refuse, keep

    def remove_image(self, reference, *, force=False):
        from cudaenv.errors import EngineError

        if self.refuse:
            raise EngineError("conflict: unable to remove repository reference (must force) - container abc is using "
                              "its referenced image\nsecond line")
        super().remove_image(reference, force=force)

    def image_info(self, reference):
        return object() if self.keep else None


def test_prune_says_why_a_base_stays_and_goes_on():
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",), digest="o" * 32)
    [refused] = prune(RefusingEngine(refuse=True, keep=True), account([other]))
    assert (refused.base, refused.removed, refused.bytes) == ("cudaenv-base:other", False, 400)
    assert refused.reason == ("conflict: unable to remove repository reference (must force) - container abc is using "
                              "its referenced image")
    [kept] = prune(RefusingEngine(refuse=False, keep=True), account([other]))
    assert kept.removed is False and kept.reason == "the engine kept it (another name or a container uses it)"
    [gone] = prune(RefusingEngine(refuse=False, keep=False), account([other]))
    assert gone.removed is True and gone.reason == "" and gone.image_id == other.id


def test_prune_reports_each_base_it_removes_as_it_goes():
    lines = []
    other = image("f", [OS, FW_AGAIN], [100, 300], base=True, tags=("cudaenv-base:other",), digest="o" * 32)
    prune(RecordingEngine(), account([other]), progress=lines.append)
    assert lines == ["removing unused stack base cudaenv-base:other"]
    kept = replace(other, tags=(*other.tags, "mine:keep"))
    prune(RecordingEngine(), account([kept]), progress=lines.append)
    assert lines[-1] == "keeping unused stack base cudaenv-base:other: also tagged mine:keep"


@pytest.mark.parametrize(("target", "shown"), [(None, "alpha"), ("default", "alpha"), ("laptop", "alpha:laptop")])
def test_a_named_targets_image_is_shown_as_project_and_target(target, shown):
    """`cudaenv images` names the target an image serves; a one-target project's image stays PROJECT."""
    alpha = image("a", [OS, PY, FW, REQ_A, CODE], [100, 20, 5000, 7, 1], project="alpha", target=target)
    [use] = account([BASE, alpha]).stacks[0].projects
    assert use.shown_project == shown and use.target == target
