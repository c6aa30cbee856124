"""Whether a project's image is current, answered without rendering its Dockerfile.

`cudaenv run` must not run a stale image, and finding the image's tag (``cudaenv.images.plan``) means
checking the lock, probing the docker CLI for BuildKit and rendering the whole Dockerfile through
Jinja — most of a second, on every run, to learn that nothing changed. So every input of that
work is hashed into a small *inputs key*: cudaenv's version and code, the templates' bytes, the
matrix files (shipped and overlays), the project's configuration, lock, requirement files and
.dockerignore, the environment that steers the build (``CUDAENV_*``, ``DOCKER_*``, the netrc that
index credentials may come from, the invoking user) and what decides whether BuildKit is
available (the docker CLIs on PATH and their plugin directories). After the full check has found
(or built) the image, the key is recorded next to the image's tag; a later run with the same key
uses that tag straight away, once the engine confirms the image is still there. Any change to any
input gives another key, and the full check runs again.

Records live in the user's cache directory under its rules (``cudaenv.core.cache``): a file or
directory someone else could have written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from cudaenv import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from cudaenv.project import Project

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cudaenv/, above images/
ENV_PREFIXES = ("CUDAENV_", "DOCKER_", "BUILDKIT_", "BUILDX_")


def _file(digest, label: str, path: str) -> None:
    """The file's bytes under a label; a missing file counts as missing, not as empty."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        digest.update(f"{label}\0-\0".encode())
        return
    digest.update(f"{label}\0{len(data)}\0".encode() + data)


def _tree(digest, label: str, top: str, *, contents: bool) -> None:
    """Every file under ``top`` (sorted): its bytes, or its size and modification time."""
    from cudaenv.engine.buildkit_probe import digest_stat

    for directory, subdirs, files in os.walk(top):  # top-down: the pruning below takes effect
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(directory, name)
            (_file if contents else digest_stat)(digest, f"{label}:{os.path.relpath(path, top)}", path)


def inputs_key(project: Project, *, jupyter: bool = False, environ=None, target: str | None = None) -> str:
    """The hash of everything the project's image tag depends on (see the module docstring)."""
    from cudaenv.matrix import _overlay_paths
    from cudaenv.matrix.cache import key_text
    from cudaenv.core.resources import data_path

    env = os.environ if environ is None else environ
    digest = hashlib.sha256(f"cudaenv {__version__}\0python {sys.version_info[:3]}\0jupyter {jupyter}\0"
                            f"target {target}\0".encode())
    _tree(digest, "code", _PACKAGE, contents=False)  # a development checkout's edits count too
    _tree(digest, "templates", data_path("templates"), contents=True)
    digest.update(key_text([data_path("matrix"), *_overlay_paths()]).encode())  # every matrix file, overlays too
    root = os.path.abspath(project.root)
    digest.update(f"root\0{root}\0".encode())
    if project.config_path is not None:
        _file(digest, "config", os.path.abspath(project.config_path))  # root/<file>, not to be joined again
    _file(digest, "lock", os.path.join(root, "cudaenv.lock"))
    _file(digest, "dockerignore", os.path.join(root, ".dockerignore"))
    for relative in project.requirements:
        _file(digest, f"requirements:{relative}", os.path.join(root, relative))
    if project.requirements:  # (the requirement-file reader and its imports only where there are files)
        from cudaenv.errors import UserError
        from cudaenv.project.inputs import extra_inputs, file_digest

        try:  # what the requirement files include: -r, -c, local find-links folders and wheels
            extras = extra_inputs(project.root, project.requirements)
        except UserError as exc:  # the full check reports it; the key only has to differ
            extras = []
            digest.update(f"unreadable\0{exc}\0".encode())
        for relative in extras:
            digest.update(f"include:{relative}\0{file_digest(os.path.join(root, relative))}\0".encode())
    if project.build.ca_cert is not None:
        _file(digest, "ca_cert", os.path.abspath(project.build.ca_cert))  # under the root or absolute
    for name in sorted(env):
        if name.startswith(ENV_PREFIXES) or name in ("NETRC", "HOME"):
            digest.update(f"env:{name}\0{env[name]}\0".encode())
    _file(digest, "netrc", env.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc"))
    digest.update(f"user\0{os.getuid()}:{os.getgid()}\0".encode())
    from cudaenv.engine.buildkit_probe import probe_inputs

    probe_inputs(digest, env)  # whether BuildKit is there decides parts of the Dockerfile
    return digest.hexdigest()[:32]


# --- the records ---------------------------------------------------------------------------------


def _record_path(project: Project, target: str | None = None) -> tuple[str, str]:
    from cudaenv.core.cache import root as _cache_path

    directory = os.path.join(_cache_path(), "images")
    # one record per project and target: running two targets in turn keeps both records
    where = os.path.abspath(project.root) + ("" if target is None else f"\0{target}")
    name = hashlib.sha256(where.encode()).hexdigest()[:24]
    return directory, os.path.join(directory, f"{name}.json")


def recall(project: Project, key: str, target: str | None = None) -> str | None:
    """The image tag recorded for this key, or None (no record, another key, or a record that
    someone else could have written)."""
    found = recall_with_labels(project, key, target)
    return found[0] if found else None


def recall_with_labels(project: Project, key: str, target: str | None = None) -> tuple[str, dict | None] | None:
    """(tag, its labels as recorded, or None where the record has none) for this key, or None.
    An image's labels come from its Dockerfile, which its tag (the inputs hash) names."""
    from cudaenv.core.cache import read_private

    _, path = _record_path(project, target)
    data = read_private(path)
    try:
        record = json.loads(data) if data is not None else None
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(record.get("image"), str):
        return None
    labels = record.get("labels")
    ok = isinstance(labels, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
    return record["image"], labels if ok else None


def remember(project: Project, key: str, image: str, target: str | None = None, labels: dict | None = None) -> None:
    """Record that ``image`` is the project's current image for ``key`` (best effort)."""
    from cudaenv.core.cache import write_private

    _, path = _record_path(project, target)
    record = {"key": key, "image": image, "root": os.path.abspath(project.root)}
    if labels is not None:
        record["labels"] = {k: v for k, v in labels.items() if k.startswith("io.cudaenv.")}
    write_private(path, json.dumps(record).encode())