"""The stack base: layers 1-3 of every project image as a local image of its own.

Two projects on one stack used to share the multi-GB framework layer only because BuildKit's
cache happened to return the same layer: one ``--no-cache`` build or a builder prune forked it,
and nothing showed it. Now the stack part of an image (OS essentials, uv and Python, framework
wheels: ``base.Dockerfile.j2``, the same render ``cudaenv publish`` pushes) is an image named by
its content hash, ``cudaenv-base:hash-<hash>`` (plus a readable ``cudaenv-base:<stack>`` name),
and every project image starts FROM that name, so projects share it by identity.

``cudaenv build`` makes the base only when no image with that hash tag is here: it pulls the
published one when ``base_registry`` has it, else builds it. ``--no-cache`` rebuilds a project's
own layers and never the base; ``--rebuild-base`` is the explicit way to make the base again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from cudaenv.engine import BuildRequest, Engine, OutputCallback
from cudaenv.matrix import Matrix
from cudaenv.images.publish import (BASE_REPOSITORY, build_platform, content_hash, hash_tag,  # noqa: F401 - build_platform: plan's
                                    host_independent, readable_tags)
from cudaenv.images.render import BuildSettings
from cudaenv.resolver.model import Stack

LABEL_CONTENT_HASH = "io.cudaenv.content-hash"  # on a base, and inherited by every project image on it
LABEL_BASE_ID = "io.cudaenv.base-id"  # on a project image: the image ID of the base it was built FROM


_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")  # Docker's tag grammar


def readable_local_tags(stack: Stack) -> tuple[str, ...]:
    """``cudaenv-base:<readable>`` names for humans; a hand-edited lock whose values make no valid
    tag gets none (the hash tag alone names the base, and the render refuses what is unsafe)."""
    try:
        tags = readable_tags(stack)
    except (IndexError, ValueError, AttributeError):
        return ()
    return tuple(f"{BASE_REPOSITORY}:{t}" for t in tags if _TAG.fullmatch(t))


def local_reference(digest: str) -> str:
    """The name a project's Dockerfile starts FROM: the base's identity, wherever it came from."""
    return f"{BASE_REPOSITORY}:{hash_tag(digest)}"


def build_secrets(ca_cert: Path | None, netrc: str | None, secrets_dir: Path | None) -> dict[str, Path]:
    """The BuildKit secrets of a build (a base's or a project's): the CA bundle, and index
    credentials written as a private netrc into ``secrets_dir`` (a temporary directory the caller
    removes after the build). Never a build argument, a layer or the history."""
    secrets: dict[str, Path] = {"cudaenv_ca": ca_cert} if ca_cert else {}
    if netrc:
        if secrets_dir is None:
            raise ValueError("index credentials need a secrets_dir for the netrc")
        path = secrets_dir / "netrc"
        path.touch(mode=0o600)
        path.write_text(netrc)
        secrets["cudaenv_netrc"] = path
    return secrets


@dataclass(frozen=True)
class BasePlan:
    """A project's stack base: its identity (content hash), local names, and how to build it here
    (the project's indexes, CA bundle and mirror fetch it; none of them is part of its identity)."""

    stack: Stack  # host-independent: how one host's driver runs it is not in the image
    content_hash: str
    tags: tuple[str, ...]  # local names: readable ones, then the hash tag
    settings: BuildSettings
    forward_branches: tuple[int, ...] = ()
    ca_cert: Path | None = None
    netrc: str = ""

    @property
    def reference(self) -> str:
        return self.tags[-1]

    @property
    def name(self) -> str:
        return self.tags[0]

    def dockerfile(self) -> str:
        from cudaenv.images.render import build_context, render_dockerfile

        return render_dockerfile(build_context(self.stack, self.settings, forward_branches=self.forward_branches),
                                 template="base.Dockerfile.j2")

    def request(self, context: Path, *, no_cache: bool = False, pull: bool = False, network: str | None = None,
                secrets_dir: Path | None = None) -> BuildRequest:
        """The build request; ``context`` is an empty directory (the base copies nothing from one)."""
        secrets = build_secrets(self.ca_cert, self.netrc, secrets_dir)
        return BuildRequest(context=context, tags=self.tags, dockerfile_text=self.dockerfile(), dockerignore_text="**\n",
                            labels={LABEL_CONTENT_HASH: self.content_hash}, secrets=secrets, no_cache=no_cache,
                            pull=pull, network=network, platform=self.settings.platform)


def plan_base(matrix: Matrix, stack: Stack, settings: BuildSettings, *, ca_cert: Path | None = None,
              netrc: str = "") -> BasePlan:
    """The base for ``stack``, fetched with the project's ``settings`` (indexes, CA, mirror, builder)."""
    from cudaenv.resolver.driver import forward_compat_branches

    digest = content_hash(matrix, stack)
    base_stack = host_independent(stack)
    base_settings = BuildSettings(
        project=BASE_REPOSITORY, base_registry=settings.base_registry, python_index=settings.python_index,
        framework_index=settings.framework_index, ca_cert=settings.ca_cert, netrc=settings.netrc,
        buildkit=settings.buildkit, platform=settings.platform)
    tags = readable_local_tags(stack) + (local_reference(digest),)
    return BasePlan(base_stack, digest, tags, base_settings, forward_compat_branches(matrix, base_stack.cuda),
                    ca_cert, netrc)


def with_stack_base(settings: BuildSettings, base: BasePlan) -> BuildSettings:
    return replace(settings, stack_base=base.reference, stack_base_name=base.name)


@dataclass(frozen=True)
class BaseOutcome:
    image_id: str
    how: str  # "present" | "pulled" | "built"
    source: str  # the reference pulled, or the name built or found
    log: str = ""  # the builder's output when it was built

    def as_dict(self, plan: BasePlan) -> dict:
        from cudaenv.engine.builders import step_timings

        steps = step_timings(self.log.splitlines())
        return {"image": plan.name, "reference": plan.reference, "content_hash": plan.content_hash,
                "image_id": self.image_id, "how": self.how, "source": self.source,
                "steps": [{"step": t.step, "seconds": t.seconds, "cached": t.cached} for t in steps]}


def ensure_base(engine: Engine, matrix: Matrix, plan: BasePlan, *, rebuild: bool = False, pull: bool = False,
                network: str | None = None, secrets_dir: Path | None = None,
                progress: Callable[[str], None] = lambda _line: None,
                build_output: OutputCallback | None = None, classic: bool = False) -> BaseOutcome:
    """Make sure the base is here under its hash tag: found, pulled (published), or built."""
    if not rebuild:
        info = engine.image_info(plan.reference)
        if info is not None and info.labels.get(LABEL_CONTENT_HASH) == plan.content_hash:
            progress(f"stack base {plan.name} is here ({plan.reference}, shared by this stack's projects)")
            return BaseOutcome(info.id, "present", plan.reference)
    published = None
    if plan.settings.base_registry:
        from cudaenv.images.publish import find_published_base

        published = find_published_base(matrix, plan.stack, plan.settings.base_registry, digest=plan.content_hash)
    if published:
        progress(f"pulling the published stack base {published} …")
        image_id = engine.pull(published, progress)
        for tag in plan.tags:
            engine.tag(image_id, tag)
        progress(f"stack base {plan.name}: pulled from {published}")
        return BaseOutcome(image_id, "pulled", published)
    verb = "rebuilding" if rebuild else "building"
    progress(f"{verb} the stack base {plan.name} ({plan.reference}): OS essentials, Python and frameworks, "
             "built once and shared by every project on this stack …")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cudaenv-base-") as context:
        result = engine.build(plan.request(Path(context), no_cache=rebuild, pull=pull, network=network,
                                           secrets_dir=secrets_dir), build_output, classic=classic)
    image_id = result.image_id or (engine.image_info(plan.reference) or _missing(plan)).id
    progress(f"stack base {plan.name}: built in {result.seconds:.1f}s")
    return BaseOutcome(image_id, "built", plan.name, result.log)


def _missing(plan: BasePlan):
    from cudaenv.errors import EngineError

    raise EngineError(f"built the stack base {plan.reference}, but the engine does not list it")
