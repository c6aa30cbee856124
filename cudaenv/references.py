"""Docker image references: which part names a registry, and how to re-home a reference.

Docker's own rule: the first path component is a registry host only when it contains a ``.`` or
a ``:`` or is ``localhost`` (``nvidia/cuda`` is Docker Hub; ``ghcr.io/astral-sh/uv`` is not).
Kept apart from ``cudaenv.registry`` (HTTP, slow to import) so rendering stays light.
"""

from __future__ import annotations


def names_registry(component: str) -> bool:
    """Whether a reference's first path component is a registry host (``ghcr.io``, ``127.0.0.1:5000``)."""
    return "." in component or ":" in component or component == "localhost"


def with_registry(reference: str, registry: str) -> str:
    """Re-home an image reference under a mirror: ``nvidia/cuda:x`` -> ``REG/nvidia/cuda:x``,
    ``python:3.11-slim`` -> ``REG/library/python:3.11-slim``, ``ghcr.io/a/b:t`` -> ``REG/a/b:t``."""
    if not registry:
        return reference
    first, _, rest = reference.partition("/")
    if rest and names_registry(first):
        path = rest
    elif not rest:
        path = f"library/{reference}"
    else:
        path = reference
    return f"{registry.rstrip('/')}/{path}"
