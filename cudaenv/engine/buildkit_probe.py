"""Remembering which docker CLI can build with BuildKit, so the probe does not run every time.

Finding out means running the CLI (``docker buildx version``, ``docker --version``): tens of
milliseconds per candidate, paid by every `cudaenv dockerfile`, `build` and full `run` check.
The answer depends only on which CLIs are found (``CUDAENV_DOCKER_CLI``, else ``docker`` on
PATH), on those files themselves, on the buildx plugin directories and on the ``DOCKER_*``
environment; a digest of exactly that keys the remembered answer, so installing buildx, a new
docker or another PATH gives a fresh probe. Stored in the user's cache directory under the
cache directory's rules (``cudaenv.core.cache``: a file anyone else could have written is ignored).
"""

from __future__ import annotations

import hashlib
import json
import os

PLUGIN_DIRS = ("/usr/local/lib/docker/cli-plugins", "/usr/local/libexec/docker/cli-plugins",
               "/usr/lib/docker/cli-plugins", "/usr/libexec/docker/cli-plugins")
_FILE = "buildkit-probe.json"


def digest_stat(digest, label: str, path: str) -> None:
    """A file's size, modification time and inode under a label; a missing file counts as missing."""
    try:
        info = os.stat(path)
    except OSError:
        digest.update(f"{label}\0-\0".encode())
        return
    digest.update(f"{label}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\0".encode())


def probe_inputs(digest, environ=None) -> None:
    """Feed ``digest`` everything the probe's answer depends on."""
    env = os.environ if environ is None else environ
    explicit = env.get("CUDAENV_DOCKER_CLI")
    digest.update(f"explicit\0{explicit or ''}\0PATH\0{env.get('PATH', '')}\0".encode())
    if explicit:
        digest_stat(digest, "cli", explicit)
    for directory in env.get("PATH", "").split(os.pathsep):
        if directory:
            digest_stat(digest, f"cli:{directory}", os.path.join(directory, "docker"))
    for name in sorted(env):
        if name.startswith("DOCKER_"):
            digest.update(f"env:{name}\0{env[name]}\0".encode())
    config = env.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker")
    for directory in (os.path.join(config, "cli-plugins"), *PLUGIN_DIRS):
        digest_stat(digest, f"plugins:{directory}", directory)
        digest_stat(digest, f"buildx:{directory}", os.path.join(directory, "docker-buildx"))


def probe_key(environ=None) -> str:
    digest = hashlib.sha256(b"buildkit-probe 1\0")
    probe_inputs(digest, environ)
    return digest.hexdigest()[:32]


MISS = object()  # recall() found nothing usable


def recall(key: str):
    """(cli, mode) or None as remembered for ``key``; ``MISS`` when nothing usable is remembered."""
    from cudaenv.core.cache import read_private, root

    data = read_private(os.path.join(root(), _FILE))
    try:
        record = json.loads(data) if data is not None else None
    except ValueError:
        return MISS
    if not isinstance(record, dict) or record.get("key") != key:
        return MISS
    found = record.get("builder")
    if found is None:
        return None
    if isinstance(found, list) and len(found) == 2 and all(isinstance(v, str) for v in found):
        return tuple(found)
    return MISS


def remember(key: str, builder: tuple[str, str] | None) -> None:
    from cudaenv.core.cache import root, write_private

    write_private(os.path.join(root(), _FILE), json.dumps({"key": key, "builder": list(builder) if builder else None}).encode())
