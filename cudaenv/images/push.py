"""Push a project image to a registry and remember its digest, so exports name it immutably.

The pushed digest is recorded in ``cudaenv.pushed.json`` next to ``cudaenv.lock``: it is a fact
about the registry, not an input of the stack, so it stays out of the lock (whose hash drives
rebuilds). Registry auth, retries and progress are publish's (cudaenv/images/publish.py, registry.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from cudaenv.errors import UserError
from cudaenv.project.config import TARGET_NAME
from cudaenv.images.publish import _push, with_retries
from cudaenv.engine.registry import Reference, RegistryClient, RegistryError

PUSHED_FILE = "cudaenv.pushed.json"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


OCI_INDEX = "application/vnd.oci.image.index.v1+json"


@dataclass(frozen=True)
class PushedImage:
    reference: str  # registry/repository:tag as pushed
    digest: str  # sha256:... as the registry reports it
    # the project's targets the image serves: one image's, or an image index's (one image per CPU
    # architecture); empty in records written before targets, read as the project's one image
    targets: tuple[str, ...] = ()

    @property
    def by_digest(self) -> str:
        """registry/repository@sha256:..., the immutable name exports use."""
        ref = Reference.parse(self.reference)
        return f"{ref.registry}/{ref.repository}@{self.digest}"


def push_image(engine, local_image: str, target: str, *, attempts: int = 3,
               progress: Callable[[str], None] = lambda _line: None) -> PushedImage:
    """Tag ``local_image`` as ``target``, push it with retries, and read the digest back."""
    ref = Reference.parse(target)
    engine.tag(local_image, str(ref))
    with_retries(lambda: _push(engine, str(ref), progress), attempts=attempts,
                 on_retry=lambda line: progress(f"  retry: {line}"))
    digest = RegistryClient(ref.registry).manifest_digest(ref.repository, ref.tag)
    if digest is None or not DIGEST.fullmatch(digest):
        raise RegistryError(f"{ref.registry}: pushed {ref.repository}:{ref.tag} but the registry reports "
                            f"no digest for it ({digest!r})")
    return PushedImage(str(ref), digest)


def push_index(engine, members: list[tuple[str, str, str]], target: str, *, attempts: int = 3,
               progress: Callable[[str], None] = lambda _line: None) -> PushedImage:
    """One OCI image index for a fleet of several CPU architectures: ``members`` are (local image,
    OCI architecture, target name), one per architecture. Each image is pushed under the index's
    tag plus ``-ARCH`` (what its digest is read back from), then the index naming each by digest,
    size and platform is written under ``target``: a node pulling it gets its own architecture's."""
    ref = Reference.parse(target)
    client = RegistryClient(ref.registry)
    entries = []
    for local_image, arch, _name in members:
        pushed = push_image(engine, local_image, f"{ref.registry}/{ref.repository}:{ref.tag}-{arch}",
                            attempts=attempts, progress=progress)
        body, media_type = with_retries(lambda p=pushed: client.get_manifest(ref.repository, p.digest),
                                        attempts=attempts)
        entries.append({"mediaType": media_type, "digest": pushed.digest, "size": len(body),
                        "platform": {"architecture": arch, "os": "linux", **({"variant": "v8"} if arch == "arm64" else {})}})
    index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}, indent=2).encode()
    progress(f"  writing the image index {ref} ({', '.join(e['platform']['architecture'] for e in entries)})")
    digest = with_retries(lambda: client.put_manifest(ref.repository, ref.tag, index, OCI_INDEX), attempts=attempts)
    return PushedImage(str(ref), digest, tuple(name for _, _, name in members))


def record(root: Path, pushed: PushedImage) -> Path:
    path = root / PUSHED_FILE
    data = {"reference": pushed.reference, "digest": pushed.digest}
    if pushed.targets:
        data["targets"] = list(pushed.targets)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def recorded(root: Path) -> PushedImage | None:
    """The last pushed image of the project at ``root``; None when never pushed."""
    path = root / PUSHED_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        targets = data.get("targets", [])
        if not isinstance(targets, list) or not all(isinstance(t, str) and TARGET_NAME.fullmatch(t) for t in targets):
            raise ValueError("field 'targets': expected a list of target names")
        pushed = PushedImage(str(data["reference"]), str(data["digest"]), tuple(targets))
        Reference.parse(pushed.reference)
    except (ValueError, KeyError, TypeError, RegistryError) as exc:
        raise UserError(f"{path}: expected {{\"reference\": REGISTRY/NAME:TAG, \"digest\": sha256:..., \"targets\": [...]}} "
                        f"({exc})") from exc
    if not DIGEST.fullmatch(pushed.digest):
        raise UserError(f"{path}: field 'digest': expected sha256:<64 hex digits>")
    return pushed
