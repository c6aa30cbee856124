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
from cudaenv.images.publish import _push, with_retries
from cudaenv.engine.registry import Reference, RegistryClient, RegistryError

PUSHED_FILE = "cudaenv.pushed.json"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class PushedImage:
    reference: str  # registry/repository:tag as pushed
    digest: str  # sha256:... as the registry reports it

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


def record(root: Path, pushed: PushedImage) -> Path:
    path = root / PUSHED_FILE
    path.write_text(json.dumps({"reference": pushed.reference, "digest": pushed.digest}, indent=2) + "\n")
    return path


def recorded(root: Path) -> PushedImage | None:
    """The last pushed image of the project at ``root``; None when never pushed."""
    path = root / PUSHED_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        pushed = PushedImage(str(data["reference"]), str(data["digest"]))
        Reference.parse(pushed.reference)
    except (ValueError, KeyError, TypeError, RegistryError) as exc:
        raise UserError(f"{path}: expected {{\"reference\": REGISTRY/NAME:TAG, \"digest\": sha256:...}} ({exc})") from exc
    if not DIGEST.fullmatch(pushed.digest):
        raise UserError(f"{path}: field 'digest': expected sha256:<64 hex digits>")
    return pushed
