"""``cudaenv publish``: build a team's base images once and push them to its registry.

A published base is layers 1–3 of a project image (OS essentials, uv and Python, framework
wheels), rendered from the same templates (``base.Dockerfile.j2``). Its identity is a content hash
of a canonical render (templates + stack + cudaenv version; not of which mirror or CA fetched it),
pushed as the tag ``hash-<hash>`` next to readable tags, e.g.::

    <registry>/cudaenv-base:cuda12.4.1-cudnn9-runtime-py3.11-ubuntu22.04
    <registry>/cudaenv-base:cuda12.4.1-cudnn9-runtime-py3.11-ubuntu22.04-torch2.6.0
    <registry>/cudaenv-base:py3.11-slim-torch2.6.0-cu124          (wheels flavor)

Publishing asks the registry for the hash tag first and skips what is there (no rebuild, no
local-cache guess). A project whose ``base_registry`` points at the registry finds its base by the
same hash and starts FROM it.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet

from cudaenv import __version__
from cudaenv.engine import BuildRequest, Engine
from cudaenv.errors import BuildError, CudaenvError, UserError
from cudaenv.matrix import Matrix
from cudaenv.engine.registry import (RegistryAuthError, RegistryClient, RegistryError, Reference,
                                     engine_error_is_transient)
from cudaenv.images.render import BuildSettings, build_context, render_dockerfile
from cudaenv.resolver.driver import FORWARD, forward_compat_branches
from cudaenv.resolver.model import DEFAULT_ARCH, FRAMEWORKS, OCI_ARCH, Constraints, Host, Stack
from cudaenv.versions import is_numeric, major_minor, numeric_key, parse_specifier, specifier_contains

BASE_REPOSITORY = "cudaenv-base"
HASH_TAG_PREFIX = "hash-"



def build_platform(stack) -> str | None:
    """``linux/arm64`` when the stack is for another CPU than this machine's (an aarch64 stack built
    on x86_64 runs its RUN steps under binfmt_misc emulation); None for a native build, whose
    request stays as it always was."""
    from cudaenv.hosts.target import machine_arch
    from cudaenv.resolver.model import OCI_ARCH

    return None if machine_arch() == stack.arch else f"linux/{OCI_ARCH[stack.arch]}"

def base_settings(stack: Stack, *, base_registry: str = "", ca_cert: bool = False, buildkit: bool = True,
                  python_index: str = "https://pypi.org/simple", framework_index: str | None = None,
                  platform: str | None = None) -> BuildSettings:
    """``platform``: a cross build's (build_platform), for the render that is built; the canonical
    render of content_hash leaves it out, so a base has one identity on every build machine."""
    return BuildSettings(
        project=BASE_REPOSITORY, base_registry=base_registry, python_index=python_index,
        framework_index=framework_index if framework_index is not None else (stack.index_urls[0] if stack.index_urls else None),
        ca_cert=ca_cert, buildkit=buildkit, platform=platform,
    )


def host_independent(stack: Stack) -> Stack:
    """The stack as a base image sees it: how one particular host's driver would run it (native or
    minor-version) is not part of the image — only forward compatibility is (cuda-compat inside)."""
    from dataclasses import replace

    mode = stack.driver_compatibility if stack.driver_compatibility == FORWARD else None
    return replace(stack, driver_compatibility=mode)


def render_base(matrix: Matrix, stack: Stack, settings: BuildSettings) -> str:
    stack = host_independent(stack)
    return render_dockerfile(build_context(stack, settings, forward_branches=forward_compat_branches(matrix, stack.cuda)),
                             template="base.Dockerfile.j2")


def content_hash(matrix: Matrix, stack: Stack) -> str:
    """What is in the image, independent of how it is fetched (mirrors, CA bundles, builder)."""
    canonical = render_base(matrix, stack, base_settings(stack))
    return hashlib.sha256(f"{__version__}\0{canonical}".encode()).hexdigest()[:32]


def hash_tag(digest: str) -> str:
    return f"{HASH_TAG_PREFIX}{digest[:16]}"


def readable_tags(stack: Stack) -> tuple[str, ...]:
    """The documented tag scheme; the first is the image's name in reports. An aarch64 base ends
    ``-arm64``: the same stack for the other CPU is another image, and one registry tag holds one."""
    framework = "".join(f"-{n}{v}" for n, v in stack.frameworks if n in FRAMEWORKS)
    arch = "" if stack.arch == DEFAULT_ARCH else f"-{OCI_ARCH[stack.arch]}"
    if stack.cpu:  # python:X.Y-slim with CPU-only framework builds
        return (f"py{stack.python}-slim{framework}-cpu{arch}",)
    if stack.flavor == "wheels":
        cuda = f"-cu{stack.cuda.replace('.', '')}" if framework else ""
        return (f"py{stack.python}-slim{framework}{cuda}{arch}",)
    tag = stack.base_image.split(":", 1)[1]  # e.g. 12.4.1-cudnn-runtime-ubuntu22.04
    os_name = tag.rsplit("-", 1)[-1]
    cudnn = f"-cudnn{stack.cudnn_version.split('.')[0]}" if "-cudnn" in tag and stack.cudnn_version else ""
    full = f"cuda{stack.cuda_release}{cudnn}-{stack.flavor}-py{stack.python}-{os_name}{framework}{arch}"
    short = f"cuda{stack.cuda}{cudnn}-{stack.flavor}-py{stack.python}-{os_name}{framework}{arch}"
    return (full, short) if short != full else (full,)


@dataclass(frozen=True)
class PublishItem:
    stack: Stack
    repository: str  # registry/namespace/cudaenv-base
    tags: tuple[str, ...]  # readable tags, then the hash tag
    content_hash: str
    dockerfile: str

    @property
    def name(self) -> str:
        return f"{self.repository}:{self.tags[0]}"

    @property
    def hash_tag(self) -> str:
        return self.tags[-1]


@dataclass(frozen=True)
class Outcome:
    item: PublishItem
    status: str  # pushed | skipped | failed | planned
    detail: str = ""
    digest: str | None = None

    def as_dict(self) -> dict:
        return {"image": self.item.name, "tags": [f"{self.item.repository}:{t}" for t in self.item.tags],
                "content_hash": self.item.content_hash, "status": self.status, "detail": self.detail,
                "digest": self.digest, "stack": self.item.stack.as_dict()}


def parse_python_selection(text: str | None) -> tuple[set[str] | None, SpecifierSet | None]:
    """``3.11,3.12`` is a list of versions; anything else is a PEP 440 specifier."""
    if not text:
        return None, None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts and all(is_numeric(p, 2) for p in parts):
        return set(parts), None
    spec = parse_specifier(text)
    if spec is None:
        raise UserError(f"--python {text!r}: expected versions like 3.11,3.12 or a specifier like '>=3.10'")
    return None, spec


def select_stacks(matrix: Matrix, *, cuda: str | None, python: str | None, os_name: str | None, flavor: str,
                  frameworks: tuple[str, ...], cudnn: str | None) -> tuple[list[Stack], list[str]]:
    """Stacks for the flag selection, and notes on combinations that have no stack."""
    from cudaenv.matrix.builds import framework_builds
    from cudaenv.resolver.resolve import resolve

    cuda_spec = parse_specifier(cuda) if cuda else None
    if cuda and cuda_spec is None:
        raise UserError(f"--cuda {cuda!r}: expected a version like 12.4 or a specifier like '>=12.1,<12.9'")
    cudnn_spec = parse_specifier(cudnn) if cudnn else None
    if cudnn and cudnn_spec is None:
        raise UserError(f"--cudnn {cudnn!r}: expected a version like 9 or a specifier like '>=9'")
    framework_specs = []
    for item in frameworks:
        name, sep, version = item.partition("==")
        spec = parse_specifier(version) if sep else None
        if not sep or spec is None or name not in FRAMEWORKS:
            raise UserError(f"--framework {item!r}: expected NAME==VERSION, e.g. torch==2.6.0")
        framework_specs.append((name, spec))
    if flavor == "wheels" and not framework_specs:
        raise UserError("a wheels base is python:X.Y-slim plus framework wheels that bring CUDA: "
                        "add --framework NAME==VERSION (or use --flavor runtime for a CUDA base)")
    if not framework_specs and cuda_spec is None:
        raise UserError("choose what to publish: --cuda SPEC (with --python), --framework NAME==VERSION, "
                        "or --from-projects DIR...")
    pythons, python_spec = parse_python_selection(python)
    known_pythons = sorted({p for rows in framework_builds(matrix).values() for b in rows for p in b.python}, key=numeric_key)
    if pythons is not None:
        candidates = sorted(pythons, key=numeric_key)
    else:
        candidates = [p for p in known_pythons if python_spec is None or specifier_contains(python_spec, p)]
    if flavor == "wheels":
        cudas = [None]
    else:
        with_images = sorted({major_minor(i.cuda) for i in matrix.images if not i.removed}, key=numeric_key)
        cudas = [xy for xy in with_images if cuda_spec is None or specifier_contains(cuda_spec, xy)]
        if not cudas:
            raise UserError(f"--cuda {cuda!r} matches no CUDA release with nvidia/cuda images in the matrix")
    stacks, notes, seen = [], [], set()
    for xy in cudas:
        for py in candidates:
            constraints = Constraints(
                python=SpecifierSet(f"=={py}"), frameworks=tuple(framework_specs),
                cuda=SpecifierSet(f"=={xy}") if xy else cuda_spec, cudnn=cudnn_spec, flavor=flavor, os=os_name)
            result = resolve(matrix, constraints, Host(), explain=False)
            if not result.ok:
                notes.append(f"no stack for Python {py}" + (f", CUDA {xy}" if xy else ""))
                continue
            key = readable_tags(result.stack)[0]
            if key not in seen:
                seen.add(key)
                stacks.append(result.stack)
    return stacks, notes


def stacks_from_projects(directories: tuple[str, ...]) -> list[Stack]:
    from cudaenv.project import load_project
    from cudaenv.project.lock import read_lock

    stacks = []
    for directory in directories:
        project = load_project(directory)
        lock = read_lock(project.lock_path)
        if lock is None:
            raise UserError(f"{project.root}: no cudaenv.lock; run `cudaenv lock {directory}` first")
        stacks.append(lock.gpu_stack("a stack base to publish", project.lock_path))
    return stacks


def plan_items(matrix: Matrix, stacks: list[Stack], registry: str, *, base_registry: str = "", ca_cert: bool = False,
               buildkit: bool = True) -> list[PublishItem]:
    repository = f"{registry.rstrip('/')}/{BASE_REPOSITORY}"
    items, seen = [], set()
    for stack in stacks:
        digest = content_hash(matrix, stack)
        if digest in seen:
            continue
        seen.add(digest)
        settings = base_settings(stack, base_registry=base_registry, ca_cert=ca_cert, buildkit=buildkit,
                                 platform=build_platform(stack))
        items.append(PublishItem(host_independent(stack), repository, readable_tags(stack) + (hash_tag(digest),), digest,
                                 render_base(matrix, stack, settings)))
    return items


def is_transient(exc: Exception) -> bool:
    """Whether trying again may help: a registry failure says so itself; a network error is."""
    if isinstance(exc, RegistryAuthError):
        return False
    if isinstance(exc, RegistryError):
        return exc.transient
    return isinstance(exc, OSError)


def with_retries(action: Callable[[], object], *, attempts: int = 3, delay: float = 1.0,
                 sleep: Callable[[float], None] = time.sleep, on_retry: Callable[[str], None] | None = None):
    """Run ``action``; retry transient failures with exponential backoff (1 s, 2 s, ...)."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except (CudaenvError, OSError) as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            if on_retry:
                on_retry(f"{exc}; retrying in {delay * 2 ** (attempt - 1):.0f}s ({attempt}/{attempts - 1})")
            sleep(delay * 2 ** (attempt - 1))


def _push(engine: Engine, reference: str, progress: Callable[[str], None]) -> None:
    """Push through the engine (its own client and credentials); registry refusals come back as
    RegistryError / RegistryAuthError, worded by the engine."""
    engine.push(reference, progress)


def publish_items(engine: Engine, items: list[PublishItem], *, secrets: dict[str, Path] | None = None,
                  attempts: int = 3, progress: Callable[[str], None] = lambda _line: None,
                  build_output: Callable[[str], None] | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> list[Outcome]:
    outcomes = []
    for item in items:
        ref = Reference.parse(f"{item.repository}:{item.hash_tag}")
        client = RegistryClient(ref.registry)

        def lookup(client=client, ref=ref, item=item):
            return client.manifest_digest(ref.repository, item.hash_tag)

        try:
            existing = with_retries(lookup, attempts=attempts, sleep=sleep, on_retry=progress)
        except RegistryError as exc:
            outcomes.append(Outcome(item, "failed", str(exc)))
            continue
        if existing:
            outcomes.append(Outcome(item, "skipped", "already in the registry (same content hash)", existing))
            continue
        progress(f"building {item.name}")

        try:
            with tempfile.TemporaryDirectory(prefix="cudaenv-publish-") as context:
                # an aarch64 stack is built for linux/arm64 on an x86_64 machine, as `cudaenv build`
                # builds it: `build` pulls this image by its content hash as the base of that stack
                engine.build(BuildRequest(
                    context=Path(context), tags=tuple(f"{item.repository}:{t}" for t in item.tags),
                    dockerfile_text=item.dockerfile, labels={"io.cudaenv.content-hash": item.content_hash},
                    secrets=secrets or {}, platform=build_platform(item.stack),
                ), build_output)
            for tag in item.tags:
                progress(f"pushing {item.repository}:{tag}")
                with_retries(lambda reference=f"{item.repository}:{tag}": _push(engine, reference, progress),
                             attempts=attempts, sleep=sleep, on_retry=progress)
            digest = with_retries(lookup, attempts=attempts, sleep=sleep, on_retry=progress)
            if not digest:
                raise RegistryError(f"{item.name}: pushed, but the registry does not list it")
            outcomes.append(Outcome(item, "pushed", f"{len(item.tags)} tags", digest))
        except (BuildError, CudaenvError, OSError) as exc:
            detail = f"{exc}" + (f" at {exc.step}" if isinstance(exc, BuildError) and exc.step and exc.step not in str(exc) else "")
            outcomes.append(Outcome(item, "failed", detail.splitlines()[0][:300]))
    return outcomes


def find_published_base(matrix: Matrix, stack: Stack, base_registry: str, *, digest: str | None = None) -> str | None:
    """The published base for this stack in ``base_registry`` (by content hash), if there is one."""
    if not base_registry:
        return None
    digest = digest or content_hash(matrix, stack)
    repository = f"{base_registry.rstrip('/')}/{BASE_REPOSITORY}"
    ref = Reference.parse(f"{repository}:{hash_tag(digest)}")
    try:
        found = RegistryClient(ref.registry).manifest_digest(ref.repository, ref.tag)
    except RegistryAuthError:
        raise  # the same registry serves every base: without access the build cannot work either
    except RegistryError:
        return None  # a mirror without published bases (or unreachable now): build the base here
    return str(ref) if found else None
