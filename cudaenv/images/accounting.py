"""Group cudaenv's local images by stack base and count their bytes by distinct layers.

A stack base is an image cudaenv tagged ``cudaenv-base:hash-<content hash>`` with that same hash in
its label: labels are inherited by every image built ``FROM`` a base (a user's own image
included), so they alone never make an image a base. Any image built on a base, a cudaenv project
or not, keeps it in use.

A project image is on a stack base when the base's top chain ID appears at the same depth in the
project's chain (a chain ID names a layer with everything below it, so that one comparison is
the whole prefix): it then shares every byte of the base by identity. A project image whose base
was rebuilt or removed, or one built before stack bases existed, is on none and counts whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from cudaenv.engine import Engine, ImageInfo
from cudaenv.images.layers import chain_ids, distinct_bytes, layer_sizes

BASE_PROJECT = "cudaenv-base"  # the io.cudaenv.project label of every stack base (= publish.BASE_REPOSITORY)
LABEL_PROJECT = "io.cudaenv.project"
LABEL_CONTENT_HASH = "io.cudaenv.content-hash"
LABEL_INPUTS = "io.cudaenv.inputs-hash"
LABEL_TARGET = "io.cudaenv.target"  # the project's target a project image serves (= render.LABEL_TARGET)
LABEL_BASE_ID = "io.cudaenv.base-id"  # on a project image cudaenv built: the ID of its base (= stackbase.LABEL_BASE_ID)


@dataclass(frozen=True)
class Layered:
    """An image with its chain IDs and per-layer bytes (``exact`` is False when the history could
    not be matched to the layers and the bytes were spread as well as they could be)."""

    info: ImageInfo
    chain: tuple[str, ...]
    sizes: tuple[int, ...]
    exact: bool = True
    recorded_base: bool = False  # a project image cudaenv built names this image as its base

    @property
    def is_base(self) -> bool:
        return counts_as_base(self.info, self.recorded_base)

    @property
    def name(self) -> str:
        readable = [t for t in self.info.tags if ":hash-" not in t]
        return (readable or list(self.info.tags) or [f"<untagged {self.info.id[:19]}>"])[0]

    @property
    def other_tags(self) -> tuple[str, ...]:
        """Names that are not cudaenv's (``docker tag … mine:keep``): the user's, so --prune keeps
        the image."""
        return tuple(t for t in self.info.tags if not is_own_name(t))

    def layers(self) -> list[tuple[str, int]]:
        return list(zip(self.chain, self.sizes))

    def sits_on(self, base: "Layered") -> bool:
        depth = len(base.chain)
        return 0 < depth <= len(self.chain) and self.chain[depth - 1] == base.chain[-1]


def is_own_name(tag: str) -> bool:
    """``cudaenv-base:…``, locally or under a registry prefix: a name cudaenv gave a stack base."""
    repository = tag.rsplit(":", 1)[0] if ":" in tag.rsplit("/", 1)[-1] else tag
    return repository == BASE_PROJECT or repository.endswith(f"/{BASE_PROJECT}")


def counts_as_base(info: ImageInfo, recorded_base: bool) -> bool:
    """A stack base by its own tag, or one a project image cudaenv built records as its base."""
    return is_stack_base(info) or (recorded_base and _base_labels(info))


def _base_labels(info: ImageInfo) -> bool:
    digest = info.labels.get(LABEL_CONTENT_HASH)
    return info.labels.get(LABEL_PROJECT) == BASE_PROJECT and isinstance(digest, str) and len(digest) >= 16


def is_stack_base(info: ImageInfo) -> bool:
    """Whether cudaenv itself made this image a stack base: it carries the hash tag that
    ``ensure_base`` gives a base (``cudaenv-base:hash-<hash>``), matching its content-hash label.
    The labels alone are inherited by any image built FROM a base and prove nothing. (A base that
    lost its tag to a rebuild is still one while a project image cudaenv built names it: see
    ``recorded_bases``.)"""
    if not _base_labels(info):
        return False
    return f"{BASE_PROJECT}:hash-{info.labels[LABEL_CONTENT_HASH][:16]}" in info.tags


def recorded_bases(images: Iterable[ImageInfo]) -> set[str]:
    """IDs that project images cudaenv built record as their base (``io.cudaenv.base-id``): a base
    whose tag moved to a rebuilt one stays a base while an older project image sits on it."""
    return {info.labels[LABEL_BASE_ID] for info in images
            if LABEL_INPUTS in info.labels and isinstance(info.labels.get(LABEL_BASE_ID), str)}


def layered(info: ImageInfo, *, recorded_base: bool = False) -> Layered:
    chain = chain_ids(info.diff_ids)
    sizes = layer_sizes(len(chain), info.history)
    if sizes is not None and sum(sizes) == info.size:
        return Layered(info, chain, sizes, recorded_base=recorded_base)
    spread = (0,) * (len(chain) - 1) + (info.size,) if chain else ()
    return Layered(info, chain, spread, exact=False, recorded_base=recorded_base)


@dataclass(frozen=True)
class ProjectUse:
    image: Layered
    adds_bytes: int  # bytes in layers of its own (not in its base)
    layers_added: int

    @property
    def target(self) -> str | None:
        """The target the image serves (None: built before images were labelled with one)."""
        return self.image.info.labels.get(LABEL_TARGET)

    @property
    def shown_project(self) -> str:
        """PROJECT, or PROJECT:TARGET for a named target's image (the one-target project's is "default")."""
        project = self.image.info.labels.get(LABEL_PROJECT, "?")
        return project if self.target in (None, "default") else f"{project}:{self.target}"

    def as_dict(self) -> dict:
        info = self.image.info
        return {"project": info.labels.get(LABEL_PROJECT, ""), "target": self.target, "image": self.image.name,
                "image_id": info.id,
                "tags": list(info.tags), "adds_bytes": self.adds_bytes, "layers_added": self.layers_added,
                "exact": self.image.exact}


@dataclass(frozen=True)
class StackUse:
    base: Layered
    projects: tuple[ProjectUse, ...] = field(default_factory=tuple)
    others: tuple[Layered, ...] = ()  # images built on the base that are no cudaenv project image (a user's own)

    @property
    def used(self) -> bool:
        return bool(self.projects or self.others)

    @property
    def bytes(self) -> int:
        return sum(self.base.sizes)

    def as_dict(self) -> dict:
        info = self.base.info
        return {"base": self.base.name, "image_id": info.id, "tags": list(info.tags),
                "content_hash": info.labels.get(LABEL_CONTENT_HASH, ""), "stack": _stack_label(info.labels),
                "bytes": self.bytes, "layers": len(self.base.chain), "used": self.used,
                "projects": [p.as_dict() for p in self.projects],
                "other_images": [{"image": o.name, "image_id": o.info.id, "tags": list(o.info.tags)}
                                 for o in self.others]}


def _stack_label(labels) -> dict | None:
    """The io.cudaenv.stack label as the object it encodes (None when missing or not an object)."""
    import json

    try:
        value = json.loads(labels.get("io.cudaenv.stack") or "null")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Inventory:
    stacks: tuple[StackUse, ...]
    unattached: tuple[ProjectUse, ...]  # project images on no local stack base
    distinct_bytes: int  # what these images hold on disk: every chain ID once
    summed_bytes: int  # the images' sizes added up, as if nothing were shared

    @property
    def unused(self) -> tuple[StackUse, ...]:
        return tuple(s for s in self.stacks if not s.used)

    def as_dict(self) -> dict:
        return {"stacks": [s.as_dict() for s in self.stacks], "unattached": [p.as_dict() for p in self.unattached],
                "disk": {"distinct_bytes": self.distinct_bytes, "summed_bytes": self.summed_bytes,
                         "saved_bytes": self.summed_bytes - self.distinct_bytes,
                         "measured_by": "distinct layer chain IDs"}}


def account(images: Iterable[ImageInfo], *, only_bases: Sequence[str] = ()) -> Inventory:
    """Stacks (each base once, its projects and what each adds), project images on no base, and
    the disk they take. ``only_bases`` (image IDs) narrows the report to those bases' stacks."""
    images = list(images)
    named = recorded_bases(images)
    unique = {info.id: layered(info, recorded_base=info.id in named) for info in images}
    bases = [img for img in unique.values() if img.is_base]
    projects = [img for img in unique.values() if not img.is_base and LABEL_INPUTS in img.info.labels]
    by_base: dict[str, list[ProjectUse]] = {b.info.id: [] for b in bases}
    others: dict[str, list[Layered]] = {b.info.id: [] for b in bases}
    for image in sorted(unique.values(), key=lambda i: i.name):  # built on a base by hand: keeps it in use
        if not image.is_base and LABEL_INPUTS not in image.info.labels:
            for base in bases:
                if image.sits_on(base):
                    others[base.info.id].append(image)
    unattached = []
    for project in sorted(projects, key=lambda p: (p.info.labels.get(LABEL_PROJECT, ""), p.name)):
        on = [b for b in bases if project.sits_on(b)]
        if on:
            base = max(on, key=lambda b: len(b.chain))
            depth = len(base.chain)
            by_base[base.info.id].append(ProjectUse(project, sum(project.sizes[depth:]), len(project.chain) - depth))
        else:
            unattached.append(ProjectUse(project, sum(project.sizes), len(project.chain)))
    stacks = [StackUse(b, tuple(by_base[b.info.id]), tuple(others[b.info.id]))
              for b in sorted(bases, key=lambda b: b.name)]
    counted = bases + projects
    if only_bases:
        stacks = [s for s in stacks if s.base.info.id in only_bases]
        unattached = []
        counted = [s.base for s in stacks] + [p.image for s in stacks for p in s.projects]
    return Inventory(tuple(stacks), tuple(unattached),
                     distinct_bytes(layer for img in counted for layer in img.layers()),
                     sum(img.info.size for img in counted))


def inventory(engine: Engine, *, only: Sequence[str] = ()) -> Inventory:
    """The engine's cudaenv images (stack bases and project images), accounted. ``only``: image
    references or IDs of stack bases to report on (a UserError names one that is not a base)."""
    from cudaenv.errors import UserError

    found: dict[str, ImageInfo] = {}
    for label in (LABEL_CONTENT_HASH, LABEL_INPUTS):
        for info in engine.images(label):
            found.setdefault(info.id, info)
    ids = []
    recorded = recorded_bases(found.values()) if only else set()
    for reference in only:
        info = engine.image_info(reference)
        if info is None or not counts_as_base(info, info.id in recorded):
            raise UserError(f"--base {reference}: not a local cudaenv stack base (see `cudaenv images`)")
        found.setdefault(info.id, info)
        ids.append(info.id)
    return account(found.values(), only_bases=ids)


@dataclass(frozen=True)
class Removal:
    base: str
    image_id: str
    bytes: int
    removed: bool
    reason: str = ""

    def as_dict(self) -> dict:
        return {"base": self.base, "image_id": self.image_id, "bytes": self.bytes, "removed": self.removed,
                "reason": self.reason}


def prune(engine: Engine, found: Inventory, progress: Callable[[str], None] = lambda _line: None) -> list[Removal]:
    """Remove the stack bases no project image uses: each of their names, never by force, so a
    base that a container still uses stays (and says why). Nothing else is ever removed."""
    from cudaenv.errors import EngineError

    removals = []
    for stack in found.unused:
        base = stack.base
        if not base.is_base or stack.used:  # the only kind of image this removes: never anything else
            continue
        if base.other_tags:  # someone named it: theirs to remove, with all of cudaenv's names kept
            progress(f"keeping unused stack base {base.name}: also tagged {', '.join(base.other_tags)}")
            continue
        progress(f"removing unused stack base {base.name}")
        try:
            for reference in base.info.tags or (base.info.id,):
                engine.remove_image(reference)
        except EngineError as exc:  # the engine refused (a container uses it): keep going, say why
            removals.append(Removal(base.name, base.info.id, stack.bytes, False, str(exc).splitlines()[0][:300]))
            continue
        still = engine.image_info(base.info.id)
        removals.append(Removal(base.name, base.info.id, stack.bytes, still is None,
                                "" if still is None else "the engine kept it (another name or a container uses it)"))
    return removals
