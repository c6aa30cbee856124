"""More of `cudaenv images`: what the engine lists (``inventory``, ``--base``), the edges of what
makes a base and what sits on one, the order of the report, images whose history does not match
their layers, and what ``--prune`` does with each base when several are unused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.engine import Engine, ImageInfo
from cudaenv.errors import EngineError, UserError
from cudaenv.images.accounting import (Inventory, StackUse, account, inventory, is_own_name, is_stack_base,
                                       layered, prune)
from cudaenv.images.stackbase import local_reference

OS, PY, FW, FW_AGAIN, REQ_A, REQ_B, CODE, USER = (f"sha256:{c * 64}" for c in "01234567")
INPUTS = "io.cudaenv.inputs-hash"


def image(id_: str, diff_ids, sizes, *, base=False, project="p", tags=(), digest="h" * 32) -> ImageInfo:
    labels = {"io.cudaenv.project": "cudaenv-base", "io.cudaenv.content-hash": digest} if base else {
        "io.cudaenv.project": project, INPUTS: "i" * 32, "io.cudaenv.content-hash": digest}
    if project is None:
        del labels["io.cudaenv.project"]
    history = tuple((f"RUN step {n}", size) for n, size in enumerate(sizes))
    if base:
        tags = (*tags, local_reference(digest))
    return ImageInfo(id=f"sha256:{id_ * 64}", tags=tags or (f"{project}:{id_}",), labels=labels,
                     diff_ids=tuple(diff_ids), size=sum(sizes), history=history)


BASE = image("b", [OS, PY, FW], [100, 20, 5000], base=True, tags=("cudaenv-base:stack",))
ALPHA = image("a", [OS, PY, FW, REQ_A, CODE], [100, 20, 5000, 7, 1], project="alpha")


def unused_base(id_: str, name: str, digest: str, *tags: str) -> ImageInfo:
    return image(id_, [OS, FW_AGAIN], [100, 300], base=True, tags=(name, *tags), digest=digest)


# --- what makes a base, what sits on one ----------------------------------------------------------------


@pytest.mark.parametrize("length,is_base", [(15, False), (16, True), (32, True)], ids=["15", "16", "32"])
def test_a_content_hash_of_16_characters_is_enough_for_a_base(length, is_base):
    """The hash tag carries 16 characters of the hash: a label that long is a base's."""
    info = image("b", [OS], [1], base=True, digest="a" * length)
    assert is_stack_base(info) is is_base
    assert bool(account([info]).stacks) is is_base


def test_an_image_laid_out_on_its_own_is_no_base_unless_its_tag_says_so():
    untagged = replace(BASE, tags=("cudaenv-base:stack",))  # the labels, but not the hash tag
    assert layered(untagged).is_base is False
    assert layered(untagged, recorded_base=True).is_base is True
    assert layered(BASE).is_base is True


def test_a_project_on_a_base_of_one_layer_is_on_it():
    small = image("s", [OS], [100], base=True, digest="s" * 32)
    project = image("p", [OS, REQ_A], [100, 7], project="tiny")
    [stack] = account([small, project]).stacks
    assert [(p.image.info, p.adds_bytes, p.layers_added) for p in stack.projects] == [(project, 7, 1)]


def test_a_base_without_layers_holds_nothing():
    """An engine that reports no layers for a base: nothing can be said to sit on it."""
    empty = ImageInfo(id="sha256:" + "e" * 64, tags=(local_reference("e" * 32),),
                      labels={"io.cudaenv.project": "cudaenv-base", "io.cudaenv.content-hash": "e" * 32},
                      diff_ids=(), size=0)
    found = account([empty, ALPHA])
    assert [s.base.info for s in found.stacks] == [empty] and found.stacks[0].projects == ()
    assert [u.image.info for u in found.unattached] == [ALPHA]


def test_an_image_that_only_relabels_a_base_keeps_it_in_use():
    """`FROM cudaenv-base:…` plus LABEL or ENV only: no layer of its own, the base's exact chain."""
    relabelled = ImageInfo(id="sha256:" + "r" * 64, tags=("mine:relabelled",), labels=dict(BASE.labels),
                           diff_ids=BASE.diff_ids, size=BASE.size, history=BASE.history)
    [stack] = account([BASE, relabelled]).stacks
    assert [o.info for o in stack.others] == [relabelled] and stack.used
    assert prune(RecordingEngine(), account([BASE, relabelled])) == []


def test_a_project_on_a_base_built_on_another_base_counts_under_the_deeper_one():
    lower = image("l", [OS, PY], [100, 20], base=True, tags=("cudaenv-base:lower",), digest="l" * 32)
    upper = image("u", [OS, PY, FW], [100, 20, 5000], base=True, tags=("cudaenv-base:upper",), digest="u" * 32)
    for images in ([lower, upper, ALPHA], [upper, lower, ALPHA]):
        found = account(images)
        by_base = {s.base.info.id: s for s in found.stacks}
        assert by_base[lower.id].projects == ()
        [use] = by_base[upper.id].projects
        assert (use.image.info, use.adds_bytes, use.layers_added) == (ALPHA, 8, 2)


# --- the report's order and fields -------------------------------------------------------------------------


def test_projects_are_listed_by_project_name_then_image_name():
    """An image with cudaenv's inputs label but no project name sorts first, with an empty name."""
    named_late = image("x", [OS, PY, FW, REQ_A], [100, 20, 5000, 1], project="beta", tags=("0-first-by-tag:1",))
    named_early = image("y", [OS, PY, FW, REQ_B], [100, 20, 5000, 2], project="3d-unet", tags=("a-image:1",))
    nameless = image("z", [OS, PY, FW, CODE], [100, 20, 5000, 3], project=None, tags=("z-image:1",))
    [stack] = account([BASE, named_late, named_early, nameless]).stacks
    assert [p.image.info for p in stack.projects] == [nameless, named_early, named_late]
    assert [p["project"] for p in stack.as_dict()["projects"]] == ["", "3d-unet", "beta"]
    off_base = [replace(i, diff_ids=(USER, *i.diff_ids[1:])) for i in (named_late, named_early, nameless)]
    found = account(off_base)
    assert [u.image.info for u in found.unattached] == [off_base[2], off_base[1], off_base[0]]
    assert [u.as_dict()["project"] for u in found.unattached] == ["", "3d-unet", "beta"]


# --- history that does not match the layers -------------------------------------------------------------------


def test_a_project_whose_history_does_not_match_counts_its_whole_size_as_its_own():
    """Its bytes cannot be split by layer: they are put on its top layer, never lost (counted
    twice rather than not at all)."""
    odd = ImageInfo(id="sha256:" + "o" * 64, tags=("odd:1",), labels=dict(ALPHA.labels),
                    diff_ids=(OS, PY, FW, REQ_A), size=5200, history=(("RUN everything", 5200),))
    found = account([BASE, odd])
    [use] = found.stacks[0].projects
    assert (use.adds_bytes, use.layers_added, use.image.exact) == (5200, 1, False)
    assert found.distinct_bytes == 5120 + 5200
    assert use.as_dict()["exact"] is False


def test_an_untagged_base_whose_history_does_not_match_stays_a_base_while_a_project_names_it():
    old = replace(BASE, tags=(), history=(("RUN everything", BASE.size),))
    on_old = replace(ALPHA, labels={**ALPHA.labels, "io.cudaenv.base-id": old.id})
    [stack] = account([old, on_old]).stacks
    assert stack.base.info is old and stack.base.exact is False and stack.bytes == BASE.size


# --- names ---------------------------------------------------------------------------------------------------------


def test_a_base_name_under_a_registry_with_a_port_and_no_tag_is_cudaenvs():
    assert is_own_name("registry.example:5000/cudaenv-base")
    assert is_own_name("registry.example:5000/team/cudaenv-base:stack")
    assert not is_own_name("registry.example:5000/team/other")
    assert not is_own_name("cudaenv-base.example:5000/other")


# --- inventory: what the engine lists ---------------------------------------------------------------------------


class FakeEngine(Engine):
    """The engine's image listing and inspection over a fixed set of images (what `docker images
    --filter label=…` and `docker image inspect` answer); removal drops a name, and an image
    with no name left. Everything about containers is out of scope here."""

    name = "fake"

    def __init__(self, images, *, refuse=(), keep_ids=()):
        self.store = {i.id: i for i in images}
        self.refuse = set(refuse)
        self.keep_ids = set(keep_ids)  # the engine keeps these images whatever it is asked
        self.removed: list[str] = []

    def images(self, label):
        return [i for i in self.store.values() if label in i.labels]

    def image_info(self, image):
        for info in self.store.values():
            if image == info.id or image in info.tags:
                return info
        return None

    def remove_image(self, image, *, force=False):
        if image in self.refuse:
            raise EngineError(f"conflict: unable to remove {image}: a container uses it\nmore")
        self.removed.append(image)
        info = self.image_info(image)
        if info is None:
            return
        left = tuple(t for t in info.tags if t != image)
        if (left and image != info.id) or info.id in self.keep_ids:
            self.store[info.id] = replace(info, tags=left)
        else:
            del self.store[info.id]

    def _no(self, *args, **kwargs):
        raise AssertionError("not part of image accounting")

    build = run = image_labels = create = start = stream_output = wait = kill = stop = remove = _no
    containers = inspect = exec = interactive_argv = _no


USER_IMAGE = ImageInfo(id="sha256:" + "u" * 64, tags=("my-own-tool:latest",), labels=dict(BASE.labels),
                       diff_ids=(OS, PY, FW, USER), size=5121, history=tuple(
                           (f"RUN step {n}", size) for n, size in enumerate([100, 20, 5000, 1])))


def test_the_inventory_is_the_account_of_every_image_with_either_label():
    other = unused_base("f", "cudaenv-base:other", "o" * 32)
    stray = image("s", [OS, REQ_B], [100, 3], project="stray")
    plain = ImageInfo(id="sha256:" + "n" * 64, tags=("nginx:latest",), labels={}, diff_ids=(OS,), size=100)
    engine = FakeEngine([BASE, ALPHA, other, stray, plain])
    found = inventory(engine)
    assert found.as_dict() == account([BASE, ALPHA, other, stray]).as_dict()
    assert [s.base.info for s in found.stacks] == [other, BASE]
    assert [p.image.info for p in found.stacks[1].projects] == [ALPHA]
    assert [u.image.info for u in found.unattached] == [stray]


def test_base_narrows_the_inventory_to_the_bases_named():
    other = unused_base("f", "cudaenv-base:other", "o" * 32)
    engine = FakeEngine([BASE, ALPHA, other])
    by_name = inventory(engine, only=["cudaenv-base:stack"])
    assert [s.base.info for s in by_name.stacks] == [BASE] and by_name.distinct_bytes == 5128
    assert inventory(engine, only=[other.id]).as_dict() == account([BASE, ALPHA, other], only_bases=[other.id]).as_dict()
    both = inventory(engine, only=[other.id, "cudaenv-base:stack"])
    assert [s.base.info for s in both.stacks] == [other, BASE]


@pytest.mark.parametrize("reference", ["my-own-tool:latest", "alpha:a", "cudaenv-base:gone"],
                         ids=["user-image", "project-image", "missing"])
def test_base_refuses_what_is_not_a_local_stack_base(reference):
    engine = FakeEngine([BASE, ALPHA, USER_IMAGE])
    with pytest.raises(UserError) as raised:
        inventory(engine, only=[reference])
    assert str(raised.value) == f"--base {reference}: not a local cudaenv stack base (see `cudaenv images`)"


def test_base_accepts_an_untagged_base_a_project_image_records():
    old = replace(BASE, tags=())
    on_old = replace(ALPHA, labels={**ALPHA.labels, "io.cudaenv.base-id": old.id})
    found = inventory(FakeEngine([old, on_old]), only=[old.id])
    assert [s.base.info for s in found.stacks] == [old]
    assert [p.image.info for p in found.stacks[0].projects] == [on_old]
    with pytest.raises(UserError):
        inventory(FakeEngine([old, ALPHA]), only=[old.id])  # nothing records it: an image with labels


# --- prune, base by base ----------------------------------------------------------------------------------------


class RecordingEngine(FakeEngine):
    def __init__(self):
        super().__init__([])


def test_prune_never_removes_an_image_that_is_no_base_even_when_handed_one():
    """A hand-made inventory listing an image with base labels and a cudaenv-base name, but not the
    hash tag, as a stack: prune skips it and goes on to the real unused base after it."""
    impostor = replace(BASE, id="sha256:" + "i" * 64, tags=("cudaenv-base:mine",))
    other = unused_base("f", "cudaenv-base:other", "o" * 32)
    engine = FakeEngine([impostor, other])
    found = Inventory((StackUse(layered(impostor)), StackUse(layered(other))), (), 0, 0)
    [removal] = prune(engine, found)
    assert removal.image_id == other.id and removal.removed
    assert engine.removed == list(other.tags) and engine.image_info(impostor.id) is impostor


def test_prune_goes_on_after_a_base_it_keeps_or_cannot_remove():
    first = unused_base("c", "cudaenv-base:a-first", "c" * 32)
    kept = unused_base("d", "cudaenv-base:b-kept", "d" * 32, "mine:keep", "theirs:v1")
    last = unused_base("f", "cudaenv-base:c-last", "f" * 32)
    lines = []
    engine = FakeEngine([first, kept, last], refuse={"cudaenv-base:a-first"})
    removals = prune(engine, account([first, kept, last]), progress=lines.append)
    assert [(r.base, r.image_id, r.removed) for r in removals] == [
        ("cudaenv-base:a-first", first.id, False), ("cudaenv-base:c-last", last.id, True)]
    assert removals[0].reason == "conflict: unable to remove cudaenv-base:a-first: a container uses it"
    assert lines == ["removing unused stack base cudaenv-base:a-first",
                     "keeping unused stack base cudaenv-base:b-kept: also tagged mine:keep, theirs:v1",
                     "removing unused stack base cudaenv-base:c-last"]
    assert engine.image_info(kept.id) is kept and engine.image_info(last.id) is None


def test_a_removal_says_what_it_freed():
    other = unused_base("f", "cudaenv-base:other", "o" * 32)
    [removal] = prune(FakeEngine([other]), account([other]))
    assert removal.as_dict() == {"base": "cudaenv-base:other", "image_id": other.id, "bytes": 400, "removed": True,
                                 "reason": ""}


def test_a_base_the_engine_kept_is_reported_as_kept():
    """The engine untagged it but kept the image (another name, a container): not removed."""
    other = unused_base("f", "cudaenv-base:other", "o" * 32)
    engine = FakeEngine([other], keep_ids={other.id})
    [removal] = prune(engine, account([other]))
    assert (removal.removed, removal.image_id, removal.bytes) == (False, other.id, 400)
    assert removal.reason == "the engine kept it (another name or a container uses it)"


def test_a_refusal_is_reported_by_its_first_line_cut_to_300_characters():
    other = unused_base("f", "cudaenv-base:other", "o" * 32)

    class Verbose(FakeEngine):
        def remove_image(self, image, *, force=False):
            raise EngineError("x" * 400 + "\nsecond line")

    [removal] = prune(Verbose([other]), account([other]))
    assert removal.reason == "x" * 300 and removal.removed is False and removal.image_id == other.id
