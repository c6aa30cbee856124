"""``cudaenv.lock``: the resolved stack and the project's requirements, fully pinned.

The project's requirement files are resolved together with the chosen framework build (its exact
requirements, against its own wheel index) by ``uv pip compile`` for the image's Python and a
manylinux platform — so a clash between the project and the framework shows up at lock time, not
as a failed image build. The lock also records the matrix revision and a hash of every input,
which is what ``cudaenv lock --check`` compares in CI.

Writes are atomic: a temporary file in the same directory, fsynced, then renamed over the lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from cudaenv import __version__
from cudaenv.errors import CudaenvError, UserError
from cudaenv.project.config import INDEX_URL, Project
from cudaenv.resolver.model import Stack

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LOCK_FORMAT = 1
PYPI_SIMPLE = "https://pypi.org/simple"


class LockError(CudaenvError):
    """Locking failed for a reason the user can act on (exit 1): conflicts, unreachable index."""


@dataclass(frozen=True)
class Lock:
    cudaenv: str
    matrix_revision: str
    inputs_hash: str
    stack: dict
    target: dict
    requirement_files: tuple[str, ...]
    python_index: str
    framework_index: str | None
    platform: str
    pinned: tuple[str, ...]

    def resolved_stack(self) -> Stack:
        """The locked stack as the resolver's value (read_lock has checked that it is one)."""
        return Stack.from_dict(self.stack)

    def as_toml(self) -> str:
        import tomlkit

        doc = tomlkit.document()
        doc.add(tomlkit.comment("cudaenv.lock: written by `cudaenv lock`; do not edit by hand."))
        doc.add(tomlkit.comment("Commit it: `cudaenv lock --check` in CI fails when it no longer matches."))
        doc["format"] = LOCK_FORMAT
        doc["cudaenv"] = self.cudaenv
        doc["matrix_revision"] = self.matrix_revision
        doc["inputs_hash"] = self.inputs_hash
        target = tomlkit.table()
        for key, value in self.target.items():
            target[key] = value if value is not None else ""
        doc["target"] = target
        stack = tomlkit.table()
        for key, value in self.stack.items():
            if value is None:
                continue
            if isinstance(value, dict):
                inline = tomlkit.inline_table()
                inline.update(value)
                stack[key] = inline
            else:
                stack[key] = value
        doc["stack"] = stack
        requirements = tomlkit.table()
        requirements["files"] = list(self.requirement_files)
        requirements["python_index"] = self.python_index
        if self.framework_index:
            requirements["framework_index"] = self.framework_index
        requirements["platform"] = self.platform
        pinned = tomlkit.array()
        pinned.multiline(True)
        pinned.extend(self.pinned)
        requirements["pinned"] = pinned
        doc["requirements"] = requirements
        return tomlkit.dumps(doc)


def check_index_url(value: str | None, where: str) -> str | None:
    if value is not None and not INDEX_URL.fullmatch(value):
        raise UserError(f"{where}: expected an http(s):// URL of a package index, got {value!r}")
    return value


def check_pin(value, where: str) -> str:
    """A pinned requirement as uv wrote it: a PEP 508 requirement, not an option or anything else."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not isinstance(value, str) or value.startswith("-") or re.search(r"[\x00-\x1f\x7f]", value):
        raise UserError(f"{where}: {value!r} is not a pinned requirement (run `cudaenv lock` to rewrite the lock)")
    try:
        Requirement(value)
    except InvalidRequirement as exc:
        raise UserError(f"{where}: {value!r} is not a pinned requirement ({exc})") from exc
    return value


def _table(data: dict, key: str, path: Path) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"{path}: {key}: expected a table, got {value!r}; run `cudaenv lock` to rewrite the lock")
    return value


def read_lock(path: Path) -> Lock | None:
    """The lock, validated: it feeds RUN lines and host checks, so a hand-edited or tampered value
    is refused here (exit 2) rather than reaching a Dockerfile or a traceback."""
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a valid cudaenv.lock ({exc}); run `cudaenv lock` to rewrite it") from exc
    requirements = _table(data, "requirements", path)
    stack = _table(data, "stack", path)
    pinned = requirements.get("pinned", [])
    files = requirements.get("files", [])
    if not isinstance(pinned, list) or not isinstance(files, list):
        raise UserError(f"{path}: requirements.pinned and requirements.files must be lists")
    for index, pin in enumerate(pinned):
        check_pin(pin, f"{path}: requirements.pinned[{index}]")
    check_index_url(requirements.get("python_index"), f"{path}: requirements.python_index")
    check_index_url(requirements.get("framework_index"), f"{path}: requirements.framework_index")
    try:
        Stack.from_dict(stack)  # every consumer rebuilds the stack: make sure it can
        lock = Lock(
            cudaenv=str(data["cudaenv"]), matrix_revision=str(data["matrix_revision"]),
            inputs_hash=str(data["inputs_hash"]), stack=stack, target=_table(data, "target", path),
            requirement_files=tuple(str(f) for f in files), python_index=requirements.get("python_index", PYPI_SIMPLE),
            framework_index=requirements.get("framework_index"), platform=str(requirements.get("platform", "")),
            pinned=tuple(pinned),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{path}: not a valid cudaenv.lock ({exc.__class__.__name__}: {exc}); "
                        "run `cudaenv lock` to rewrite it") from exc
    return lock


def inputs_hash(project: Project) -> str:
    """A hash of everything the lock depends on in the project: configuration and requirement files.
    [cluster] describes where the image runs, not what it is: editing it leaves the lock current."""
    tables = {key: value for key, value in project.raw.items() if key != "cluster"}
    digest = hashlib.sha256(json.dumps(tables, sort_keys=True, default=str).encode())
    for relative in project.requirements:
        digest.update(b"\0" + str(relative).encode() + b"\0" + (project.root / relative).read_bytes())
    return digest.hexdigest()[:32]


def manylinux_platform(stack: Stack) -> str:
    """uv's --python-platform for the image's C library (Ubuntu 18.04 / CentOS 7 are glibc 2.17-2.27)."""
    old = any(marker in stack.base_image for marker in ("ubuntu18.04", "ubuntu16.04", "centos7", "ubi7"))
    return "x86_64-manylinux_2_17" if old else "x86_64-manylinux_2_28"


def env_index(name: str) -> str | None:
    return check_index_url(os.environ.get(name) or None, name)


def strip_credentials(url: str | None) -> str | None:
    """``https://user:token@host/simple`` -> ``https://host/simple``: what may be written down."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def credentials_of(url: str | None) -> tuple[str, str, str] | None:
    """(host, user, password) from an index URL's userinfo, for a netrc entry."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    if not parts.username:
        return None
    return parts.hostname, urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")


def netrc_text(urls: list[str | None]) -> str:
    """A netrc for the indexes that carry credentials: handed to uv inside a build as a BuildKit
    secret, so tokens never reach a layer, the image history or the Dockerfile."""
    lines = []
    for url in urls:
        found = credentials_of(url)
        if found and f"machine {found[0]} " not in "".join(lines):
            lines.append(f"machine {found[0]} login {found[1]} password {found[2]}\n")
    return "".join(lines)


def framework_index(project: Project, own_index: str | None) -> str | None:
    """For a framework build with its own index (``own_index``: the stack's, or what the lock
    recorded): CUDAENV_FRAMEWORK_INDEX, else [build] framework_index, else that index."""
    if not own_index:
        return None
    return env_index("CUDAENV_FRAMEWORK_INDEX") or project.build.framework_index or own_index


def python_index(project: Project, recorded: str = PYPI_SIMPLE) -> str:
    """CUDAENV_PYTHON_INDEX, else [build] python_index, else ``recorded`` (PyPI, or the lock's)."""
    return env_index("CUDAENV_PYTHON_INDEX") or project.build.python_index or recorded


def uv_binary() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


def compile_requirements(project: Project, stack: Stack, *, ca_bundle: str | None = None) -> list[str]:
    """Pin the project's requirements together with the framework build, for the image's Python."""
    if not project.requirements and not stack.requirements:
        return []
    with tempfile.TemporaryDirectory(prefix="cudaenv-lock-") as tmp:
        frameworks_in = Path(tmp) / "frameworks.in"
        frameworks_in.write_text("".join(f"{line}\n" for line in stack.requirements))
        argv = [uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--no-progress",
                "--python-version", stack.python, "--python-platform", manylinux_platform(stack)]
        for link in stack.find_links:
            argv += ["--find-links", link]
        argv += [str(frameworks_in), *(str(project.root / r) for r in project.requirements)]
        # indexes go through the environment, not argv: a token in a URL must not show in `ps`
        env = dict(os.environ, UV_NO_CONFIG="1", NO_COLOR="1", UV_DEFAULT_INDEX=python_index(project))
        env.pop("UV_INDEX", None)
        extra = framework_index(project, stack.index_urls[0] if stack.index_urls else None)
        if extra:
            env["UV_INDEX"] = extra
        if ca_bundle:
            env["SSL_CERT_FILE"] = ca_bundle
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=project.root)
    if proc.returncode != 0:
        detail = "\n".join(line for line in proc.stderr.strip().splitlines() if line.strip())
        raise LockError(f"the project's requirements cannot be resolved together with "
                        f"{', '.join(stack.requirements) or 'the stack'} for Python {stack.python}:\n{detail}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never half.
    The new file keeps the old one's permissions (or gets the umask's defaults)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_lock(project: Project, stack: Stack, *, matrix_revision: str, target: dict, pinned: list[str]) -> Lock:
    """The lock records the configured indexes; CUDAENV_*_INDEX overrides are the environment's
    (a CI mirror, a test index) and apply when used, never committed."""
    return Lock(
        cudaenv=__version__, matrix_revision=matrix_revision, inputs_hash=inputs_hash(project),
        stack=stack.as_dict(), target=target, requirement_files=tuple(str(r) for r in project.requirements),
        python_index=strip_credentials(project.build.python_index) or PYPI_SIMPLE,
        framework_index=strip_credentials(project.build.framework_index)
        or (stack.index_urls[0] if stack.index_urls else None),
        platform=manylinux_platform(stack), pinned=tuple(pinned),
    )


def _without_none(data: dict) -> dict:
    """TOML has no null: the lock leaves out what the stack does not know."""
    return json.loads(json.dumps({k: v for k, v in data.items() if v is not None}))


def staleness(lock: Lock | None, project: Project, stack: Stack | None, matrix_revision: str) -> list[str]:
    """Why a lock no longer matches (empty when it does)."""
    if lock is None:
        return ["there is no cudaenv.lock"]
    reasons = []
    if lock.inputs_hash != inputs_hash(project):
        reasons.append("the configuration or a requirements file changed since the lock was written")
    if lock.matrix_revision != matrix_revision:
        reasons.append(f"the compatibility matrix changed (lock: {lock.matrix_revision}, now: {matrix_revision})")
    if stack is None:
        reasons.append("the configuration no longer resolves to any stack")
    elif lock.stack != _without_none(stack.as_dict()):
        before, after = lock.stack, _without_none(stack.as_dict())
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        reasons.append(f"the resolved stack changed ({', '.join(changed)})")
    return reasons


def current_lock(project: Project, matrix) -> tuple[Lock | None, list[str]]:
    """The project's lock and why it is stale (empty list: current)."""
    from cudaenv.resolver.resolve import resolve
    from cudaenv.target import project_target

    lock = read_lock(project.lock_path)
    target = project_target(matrix, project)
    result = resolve(matrix, project.constraints, target.host, explain=False)
    return lock, staleness(lock, project, result.stack, matrix.revision)


def lock_project(project: Project, matrix) -> tuple:
    """Resolve the project for its configured target and pin its requirements.

    Returns (resolution, lock): the lock is None when no stack fits (the resolution says why).
    Nothing is written; callers write with ``write_atomically``.
    """
    from cudaenv.resolver.resolve import resolve
    from cudaenv.target import project_target

    target = project_target(matrix, project)
    result = resolve(matrix, project.constraints, target.host)
    if not result.ok:
        return result, None
    ca_bundle = str(project.build.ca_cert) if project.build.ca_cert else None
    pinned = compile_requirements(project, result.stack, ca_bundle=ca_bundle)
    return result, make_lock(project, result.stack, matrix_revision=matrix.revision, target=target.as_dict(), pinned=pinned)
