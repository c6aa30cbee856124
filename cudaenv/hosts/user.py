"""Who runs cudaenv on this host: the UID:GID a container runs as and an image's user is made for,
so files written in the mounted project belong to the caller (``CUDAENV_UID``/``CUDAENV_GID``
override it for services and CI)."""

from __future__ import annotations

import os
import re

from cudaenv.errors import UserError


def run_user() -> tuple[str, dict[str, str]]:
    """(--user value, extra env): the invoking user's UID:GID, so files the container creates in
    the mounted project belong to them. CUDAENV_UID/CUDAENV_GID override it (services, CI)."""
    uid = os.environ.get("CUDAENV_UID") or str(os.getuid())
    gid = os.environ.get("CUDAENV_GID") or str(os.getgid())
    if not (re.fullmatch(r"[0-9]{1,10}", uid) and re.fullmatch(r"[0-9]{1,10}", gid)):
        raise UserError(f"CUDAENV_UID/CUDAENV_GID must be numbers, got {uid!r}/{gid!r}")
    return f"{uid}:{gid}", {"HOME": "/tmp"}  # that UID may have no home in the image
