"""A project's image: its Dockerfile, build request, default tags and freshness.

The stack comes from ``cudaenv.lock`` (never re-resolved at build time), so the same lock builds
the same image anywhere. The default tag is ``cudaenv/<project>:<inputs hash>``: the hash covers
the rendered Dockerfile and build-context rules, so a changed lock, matrix or cudaenv gives a new
tag — which is how ``cudaenv run`` knows an image is stale. Project code is mounted at run time
and baked in as the last layer, so editing code does not change the tag.

The Dockerfile starts FROM the project's stack base (``cudaenv.images.stackbase``) by its content-hash
name, so the inputs hash changes whenever the base's content does, and every project on one
stack shares the base by identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from cudaenv.engine import BuildRequest
from cudaenv.errors import UserError
from cudaenv.matrix import Matrix
from cudaenv.project import Project
from cudaenv.project.lock import Lock, framework_index, index_netrc, python_index, strip_credentials
from cudaenv.project.served import same_index
from cudaenv.images.render import BuildSettings, build_context, lock_hash, render_dockerfile, render_dockerignore
from cudaenv.resolver.driver import forward_compat_branches
from cudaenv.resolver.model import Stack
from cudaenv.images.stackbase import LABEL_BASE_ID, BasePlan, build_platform, build_secrets, plan_base, with_stack_base

LABEL_PROJECT = "io.cudaenv.project"
LABEL_INPUTS = "io.cudaenv.inputs-hash"


def build_user_ids() -> tuple[int, int]:
    """The image user's UID/GID: CUDAENV_UID/CUDAENV_GID (as for `run`), else the invoking
    user's, so files the container writes in the project are theirs. Root gets 1000:1000: the
    image's user is never root."""
    from cudaenv.hosts.user import run_user

    user, _env = run_user()
    uid, gid = (int(part) for part in user.split(":"))
    return (uid, gid) if uid != 0 else (1000, 1000)


@dataclass(frozen=True)
class ImagePlan:
    project: Project
    lock: Lock
    stack: Stack
    dockerfile: str
    dockerignore: str
    inputs_hash: str
    buildkit: bool
    netrc: str = ""  # credentials for the indexes, as a netrc (never printed, never in a layer)
    base: BasePlan | None = None  # the stack base the Dockerfile starts FROM (None: a standalone Dockerfile)

    @property
    def default_tag(self) -> str:
        return f"cudaenv/{self.project.name}:{self.inputs_hash[:12]}"

    @property
    def latest_tag(self) -> str:
        """``:latest``; in a project of several targets each target's image is ``:latest-TARGET``, so
        building one target never moves another's tag (target names are tag-safe: [a-z0-9-], at most
        32). A project of one target keeps ``:latest`` whatever that target is called."""
        suffix = f"-{self.lock.name}" if self.project.several_targets else ""
        return f"cudaenv/{self.project.name}:latest{suffix}"

    def request(self, *, tags: tuple[str, ...] = (), no_cache: bool = False, pull: bool = False,
                network: str | None = None, secrets_dir: Path | None = None, base_id: str | None = None) -> BuildRequest:
        """The engine's build request; index credentials are written as a netrc into ``secrets_dir``
        (a private temporary directory the caller removes after the build). ``base_id`` is the
        stack base's image ID, recorded in a label; ``pull`` never applies to a local stack base
        (there is nothing upstream to pull it from: see ``stackbase.ensure_base``)."""
        uid, gid = build_user_ids()
        secrets = build_secrets(self.project.build.ca_cert, self.netrc, secrets_dir)
        return BuildRequest(
            context=self.project.root, tags=tags or (self.default_tag, self.latest_tag),
            dockerfile_text=self.dockerfile, dockerignore_text=self.dockerignore,
            build_args={"CUDAENV_UID": str(uid), "CUDAENV_GID": str(gid)},
            labels={LABEL_INPUTS: self.inputs_hash, **({LABEL_BASE_ID: base_id} if base_id else {})}, secrets=secrets,
            no_cache=no_cache, pull=pull and self.base is None, network=network, platform=build_platform(self.stack),
        )


def plan_image(project: Project, matrix: Matrix, lock: Lock, *, buildkit: bool,
               standalone: bool = False) -> ImagePlan:
    """Render the project's Dockerfile from its lock, FROM its stack base (``standalone``: with
    the base's layers inline instead, one self-contained file).

    A base published by `cudaenv publish` is pulled at build time and named by the same content
    hash as one built here, so the Dockerfile (and its inputs hash) does not depend on what a
    registry holds right now."""
    stack = lock.resolved_stack()  # a GPU stack, or a CPU target's (python:X.Y-slim, CPU-only builds)
    if project.build.ca_cert and not buildkit:
        raise UserError(f"{project.config_path}: build.ca_cert needs a BuildKit builder (docker buildx, or a docker "
                        "CLI before 23.0 with DOCKER_BUILDKIT=1); none was found")
    lock_text = project.lock_path.read_text(encoding="utf-8") if project.lock_path.is_file() else ""
    py_index = python_index(project, lock.python_index)
    fw_index = framework_index(project, lock.framework_index)
    netrc = index_netrc(py_index, fw_index)
    if netrc and not buildkit:
        raise UserError("an index URL carries credentials, which reach the build only as a BuildKit secret; "
                        "no BuildKit builder was found (docker buildx, or a docker CLI before 23.0)")
    if fw_index and same_index(fw_index, py_index):  # one index named twice: say it once in the image
        fw_index = None
    settings = BuildSettings(
        project=project.name, base_registry=project.build.base_registry,
        python_index=strip_credentials(py_index), framework_index=strip_credentials(fw_index), netrc=bool(netrc),
        system_packages=project.build.system_packages,
        pinned=tuple(lock.pinned), command=project.run.command, ca_cert=project.build.ca_cert is not None,
        buildkit=buildkit, lock_hash=lock_hash(lock_text), jupyter=project.run.jupyter,
        build_from_source=project.build.build_from_source, cuda_arch_list=_target_capabilities(matrix, project),
        find_links=lock.find_links, extra_index_urls=lock.extra_index_urls, own_code=lock.own_code,
        platform=build_platform(stack), target=lock.name,
    )
    if not buildkit and any("://" not in link for link in lock.find_links):
        raise UserError(f"{project.lock_path}: requirements.find_links: a folder in the project reaches the build "
                        "as a BuildKit bind mount; no BuildKit builder was found (docker buildx, or a docker CLI "
                        "before 23.0 with DOCKER_BUILDKIT=1)")
    base = None if standalone else plan_base(matrix, stack, settings, ca_cert=project.build.ca_cert, netrc=netrc)
    if base is not None:
        settings = with_stack_base(settings, base)
    dockerfile = render_dockerfile(build_context(stack, settings, forward_branches=forward_compat_branches(matrix, stack.cuda)))
    user_ignore = project.root / ".dockerignore"
    secrets_in_project = []
    ca = project.build.ca_cert
    if ca is not None and ca.resolve().is_relative_to(project.root.resolve()):
        secrets_in_project.append(ca.resolve().relative_to(project.root.resolve()).as_posix())
    dockerignore = render_dockerignore(user_ignore.read_text(encoding="utf-8") if user_ignore.is_file() else None,
                                       secrets=secrets_in_project)
    inputs = hashlib.sha256(f"{dockerfile}\0{dockerignore}".encode()).hexdigest()[:32]
    return ImagePlan(project, lock, stack, dockerfile, dockerignore, inputs, buildkit, netrc, base)


def _target_capabilities(matrix, project) -> tuple[str, ...]:
    """The compute capabilities of the project's [target] GPUs: what a CUDA extension that
    [build] build_from_source compiles must carry (empty without one, or without such packages)."""
    if not project.build.build_from_source:
        return ()
    from cudaenv.hosts.target import project_target

    return tuple(sorted({g.compute_capability for g in project_target(matrix, project).host.gpus}))
