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
from dataclasses import dataclass, replace
from pathlib import Path

from cudaenv import __version__
from cudaenv.errors import CudaenvError, IndexUnreachable, LockError, UserError, shown  # noqa: F401 - lock's API
from cudaenv.project.config import Project, exclude_newer_for, exclude_newer_from_env  # noqa: F401 - lock's API
from cudaenv.project.locate import check_index_url
from cudaenv.project.wheels import manylinux_platform, uv_python_version  # noqa: F401 - manylinux_platform: where lock callers have found it
from cudaenv.resolver.model import Stack

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# 2: [targets.NAME] each name a [stacks.ID] entry (a stack and its pinned requirements), shared by
# the targets that resolve alike; 1: one [target], one [stack], one [requirements] (still read)
LOCK_FORMAT = 2
PYPI_SIMPLE = "https://pypi.org/simple"
DEFAULT_TARGET = "default"  # the one target of a project with [target] (or none), and of a format 1 lock


@dataclass(frozen=True)
class Lock:
    """One target's view of cudaenv.lock: its stack and pinned requirements (what build, run and
    the exports consume), and the file's own facts. ``LockFile`` holds every target."""

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
    # what each input looked like ("config" -> hash, "file:requirements.txt" -> hash), so that a
    # stale lock can say which input changed; empty in locks written before it was recorded
    inputs: tuple[tuple[str, str], ...] = ()
    # what the project's requirement files steer the install with, so the image installs what the
    # lock resolved from where it resolved it: --find-links (URLs; local folders relative to the
    # project), --extra-index-url, and the project's own code ("-e .", "./pkg") installed from
    # /workspace after the copy, never pinned
    find_links: tuple[str, ...] = ()
    extra_index_urls: tuple[str, ...] = ()
    own_code: tuple[str, ...] = ()
    name: str = DEFAULT_TARGET  # the target this view is of

    def resolved_stack(self) -> Stack:
        """The locked stack as the resolver's value (read_lock has checked that it is one)."""
        return Stack.from_dict(self.stack)

    def entry(self) -> dict:
        """What targets share when they resolve alike: the stack and its pinned requirements."""
        requirements = {"files": list(self.requirement_files), "python_index": self.python_index}
        if self.framework_index:
            requirements["framework_index"] = self.framework_index
        requirements["platform"] = self.platform
        for key in ("find_links", "extra_index_urls", "own_code"):
            if getattr(self, key):
                requirements[key] = list(getattr(self, key))
        requirements["pinned"] = list(self.pinned)
        return {"stack": _without_none(self.stack), "requirements": requirements}

    def entry_id(self) -> str:
        """The entry's key in [stacks]: what it is (cu126-py312, cpu-py312) and a digest of all of it,
        so the same stack and pins always get the same key and two different ones never share it."""
        digest = hashlib.sha256(json.dumps(self.entry(), sort_keys=True).encode()).hexdigest()[:8]
        stack = self.stack
        device = "cpu" if stack.get("device") == "cpu" else "cu" + str(stack.get("cuda", "")).replace(".", "")
        return f"{device}-py{str(stack.get('python', '')).replace('.', '')}-{digest}"

    def gpu_stack(self, what: str, path: Path | str = "cudaenv.lock") -> Stack:
        """The locked stack for ``what`` (an image, a Slurm job, a host check) that only a GPU stack
        has yet: a CPU target's stack is refused in one line (exit 2) instead of an image labelled
        for "CUDA None". Building and running CPU targets is the next step of several targets."""
        stack = self.resolved_stack()
        if stack.cpu:
            raise UserError(f"{path}: target {self.name} has no GPU (a CPU-only stack): {what} is not made for a CPU "
                            "stack yet; `cudaenv resolve` and `cudaenv lock` serve it")
        return stack

    def as_toml(self) -> str:
        """The lock file of this one target."""
        return LockFile.of((self,)).as_toml()


@dataclass(frozen=True)
class LockFile:
    """cudaenv.lock as a whole: every target, each naming the entry in [stacks] it shares."""

    targets: tuple[Lock, ...]
    format: int = LOCK_FORMAT  # the format the file was read in (1: an older lock, read as target "default")

    @classmethod
    def of(cls, targets) -> "LockFile":
        return cls(tuple(targets))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    def target(self, name: str) -> Lock | None:
        return next((t for t in self.targets if t.name == name), None)

    @property
    def shared(self) -> dict[str, tuple[str, ...]]:
        """Entry key -> the targets that use it, in the file's order."""
        found: dict[str, list[str]] = {}
        for view in self.targets:
            found.setdefault(view.entry_id(), []).append(view.name)
        return {key: tuple(names) for key, names in found.items()}

    def as_toml(self) -> str:
        import tomlkit

        first = self.targets[0]
        doc = tomlkit.document()
        doc.add(tomlkit.comment("cudaenv.lock: written by `cudaenv lock`; do not edit by hand."))
        doc.add(tomlkit.comment("Commit it: `cudaenv lock --check` in CI fails when it no longer matches."))
        doc.add(tomlkit.comment("Each [targets.NAME] names its entry in [stacks]; targets that resolve alike share one."))
        doc["format"] = LOCK_FORMAT
        doc["cudaenv"] = first.cudaenv
        doc["matrix_revision"] = first.matrix_revision
        doc["inputs_hash"] = first.inputs_hash
        if first.inputs:
            inputs = tomlkit.table()
            for key, value in first.inputs:
                inputs[key] = value
            doc["inputs"] = inputs
        targets = tomlkit.table(is_super_table=True)
        for view in self.targets:
            table = tomlkit.table()
            table["stack"] = view.entry_id()
            for key, value in view.target.items():
                table[key] = value if value is not None else ""
            targets[view.name] = table
        doc["targets"] = targets
        stacks = tomlkit.table(is_super_table=True)
        for view in self.targets:
            key = view.entry_id()
            if key in stacks:
                continue  # shared: stored once
            entry = view.entry()
            table = tomlkit.table(is_super_table=True)
            stack = tomlkit.table()
            for name, value in entry["stack"].items():
                if isinstance(value, dict):
                    inline = tomlkit.inline_table()
                    inline.update(value)
                    stack[name] = inline
                else:
                    stack[name] = value
            table["stack"] = stack
            requirements = tomlkit.table()
            for name, value in entry["requirements"].items():
                if name == "pinned":
                    pinned = tomlkit.array()
                    pinned.multiline(True)
                    pinned.extend(value)
                    requirements[name] = pinned
                else:
                    requirements[name] = value
            table["requirements"] = requirements
            stacks[key] = table
        doc["stacks"] = stacks
        return tomlkit.dumps(doc)


def check_recorded_index(value, where: str) -> str | None:
    """An index the lock records: a committed file, so it never carries credentials."""
    from cudaenv.secrets.credentials import refuse_userinfo

    check_index_url(value, where)
    if value:
        refuse_userinfo(value, where)
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


def _check_steering(key: str, value: str, where: str) -> None:
    """A find-links entry, extra index or own-code path the lock records: it reaches a RUN line of
    the image, so a hand-edited value is refused (an URL without credentials, or a relative path
    inside the project without control characters)."""
    from cudaenv.project.locate import is_index_url

    if re.search(r"[\x00-\x1f\x7f]", value) or not value:
        raise UserError(f"{where}: {value!r} is not allowed here; run `cudaenv lock` to rewrite the lock")
    if key == "extra_index_urls" or (key == "find_links" and "://" in value):
        check_recorded_index(value, where) if is_index_url(value) else _bad_steering(value, where)
        return
    if value.startswith(("/", "~", "-")) or ".." in Path(value).parts:
        _bad_steering(value, where)
    from cudaenv.project.reqfile import SAFE_MOUNT_PATH

    if key == "find_links" and not SAFE_MOUNT_PATH.fullmatch(value):  # a bind mount's source=: no quoting there
        _bad_steering(value, where)


def _bad_steering(value: str, where: str) -> None:
    raise UserError(f"{where}: {value!r} is not an https:// URL or a path inside the project; "
                    "run `cudaenv lock` to rewrite the lock")


def _table(data: dict, key: str, path: Path, where: str = "") -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"{path}: {where}{key}: expected a table, got {shown(value)}; run `cudaenv lock` to rewrite "
                        "the lock")
    return value


def read_lock(path: Path, target: str | None = None) -> Lock | None:
    """One target's view of the lock (``target``; None: the lock's only target). A lock of several
    targets asked without a name is bad input naming them: a command never picks one silently."""
    found = read_lock_file(path)
    if found is None:
        return None
    if target is None:
        if len(found.targets) > 1:
            raise UserError(f"{path}: holds several targets ({', '.join(found.names)}); this command serves one: "
                            "pass --target NAME")
        return found.targets[0]
    view = found.target(target)
    if view is None:
        raise UserError(f"{path}: no target {target!r} in the lock (targets: {', '.join(found.names)}); "
                        "run `cudaenv lock` to lock it")
    return view


_NOTED: set[str] = set()


def _note_old_format(path: Path, fmt: int) -> None:
    """Said once per lock and process, on stderr (stdout may be the one JSON object)."""
    if str(path) in _NOTED:
        return
    _NOTED.add(str(path))
    sys.stderr.write(f"cudaenv: note: {path} is lock format {fmt} (one target, read as {DEFAULT_TARGET!r}); "
                     f"`cudaenv lock` rewrites it as format {LOCK_FORMAT}\n")
    sys.stderr.flush()


def read_lock_file(path: Path) -> LockFile | None:
    """The lock, validated: it feeds RUN lines and host checks, so a hand-edited or tampered value
    is refused here (exit 2) rather than reaching a Dockerfile or a traceback. A format 1 lock is
    read as one target named "default", with a one-line note."""
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a valid cudaenv.lock ({exc}); run `cudaenv lock` to rewrite it") from exc
    except (ValueError, RecursionError) as exc:  # an integer past Python's digit limit, nesting past the stack
        raise UserError(f"{path}: not a valid cudaenv.lock ({str(exc)[:120] or 'nested too deeply'}); "
                        "run `cudaenv lock` to rewrite it") from exc
    fmt = data.get("format")
    if fmt not in READABLE_FORMATS or type(fmt) is not int:  # true and 1.0 equal 1 in Python, but are no format
        writer = data.get("cudaenv")
        by = f"cudaenv {writer}" if isinstance(writer, str) and len(writer) < 40 else "an unknown cudaenv"
        what = (f"format {fmt}" if isinstance(fmt, int) and not isinstance(fmt, bool) else f"format {fmt!r}"
                if fmt is not None else "no format")
        newer = isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > LOCK_FORMAT
        hint = (f"upgrade cudaenv (this is {__version__}) to read it" if newer
                else "run `cudaenv lock` to rewrite it")
        raise UserError(f"{path}: format: this lock has {what[:60]}, written by {by}; this cudaenv reads "
                        f"formats {' and '.join(str(f) for f in READABLE_FORMATS)}: {hint}")
    inputs = _table(data, "inputs", path)
    if not all(isinstance(k, str) and isinstance(v, str) and re.fullmatch(r"[0-9a-f]{1,64}", v) for k, v in inputs.items()):
        raise UserError(f"{path}: inputs: expected file names with hex digests; run `cudaenv lock` to rewrite it")
    try:
        header = dict(cudaenv=str(data["cudaenv"]), matrix_revision=str(data["matrix_revision"]),
                      inputs_hash=str(data["inputs_hash"]), inputs=tuple(sorted(inputs.items())))
    except KeyError as exc:
        raise UserError(f"{path}: not a valid cudaenv.lock (KeyError: {exc}); run `cudaenv lock` to rewrite it") from exc
    if fmt == 1:
        view = _read_view(path, header, DEFAULT_TARGET, _table(data, "target", path), _table(data, "stack", path),
                          _table(data, "requirements", path), "")
        _note_old_format(path, fmt)
        return LockFile((view,), format=1)
    targets, stacks = _table(data, "targets", path), _table(data, "stacks", path)
    if not targets:
        raise UserError(f"{path}: targets: no [targets.NAME] table; run `cudaenv lock` to rewrite the lock")
    from cudaenv.project.config import TARGET_NAME

    views = []
    for name, table in targets.items():
        if not TARGET_NAME.fullmatch(name):
            raise UserError(f"{path}: targets.{shown(name, 40)}: not a target name; run `cudaenv lock` to rewrite it")
        table = _table(targets, name, path, "targets.")
        target = dict(table)
        key = target.pop("stack", None)
        entry = stacks.get(key) if isinstance(key, str) else None
        if not isinstance(entry, dict):
            said = "missing (the key of the [stacks] entry the target uses)" if key is None else \
                f"names no entry of [stacks] ({shown(key)})"
            raise UserError(f"{path}: targets.{name}.stack: {said}; run `cudaenv lock` to rewrite the lock")
        where = f"stacks.{key}."
        # the key is only a name: an entry edited by hand is judged by its content, like any lock
        views.append(_read_view(path, header, name, target, _table(entry, "stack", path, where),
                                _table(entry, "requirements", path, where), where))
    return LockFile(tuple(views), format=fmt)


READABLE_FORMATS = (1, LOCK_FORMAT)


def lock_format_of(path: Path) -> int | None:
    """The format an existing lock says it has (None: no lock, or none that says), unvalidated:
    only for saying that an older lock was rewritten."""
    try:
        fmt = tomllib.loads(path.read_text(encoding="utf-8")).get("format")
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return fmt if type(fmt) is int else None


def _read_view(path: Path, header: dict, name: str, target: dict, stack: dict, requirements: dict, where: str) -> Lock:
    """One target's stack and requirements, validated (``where``: their table's prefix, "stacks.ID.")."""
    pinned = requirements.get("pinned", [])
    files = requirements.get("files", [])
    if not isinstance(pinned, list) or not isinstance(files, list):
        raise UserError(f"{path}: {where}requirements.pinned and {where}requirements.files must be lists")
    for index, pin in enumerate(pinned):
        check_pin(pin, f"{path}: {where}requirements.pinned[{index}]")
    steering = {key: requirements.get(key, []) for key in ("find_links", "extra_index_urls", "own_code")}
    for key, values in steering.items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise UserError(f"{path}: {where}requirements.{key}: expected a list of strings; run `cudaenv lock` to "
                            "rewrite it")
        for index, value in enumerate(values):
            _check_steering(key, value, f"{path}: {where}requirements.{key}[{index}]")
    check_recorded_index(requirements.get("python_index"), f"{path}: {where}requirements.python_index")
    check_recorded_index(requirements.get("framework_index"), f"{path}: {where}requirements.framework_index")
    try:
        Stack.from_dict(stack)  # every consumer rebuilds the stack: make sure it can
        return Lock(
            **header, stack=stack, target=target, name=name,
            requirement_files=tuple(str(f) for f in files), python_index=requirements.get("python_index", PYPI_SIMPLE),
            framework_index=requirements.get("framework_index"), platform=str(requirements.get("platform", "")),
            pinned=tuple(pinned), find_links=tuple(steering["find_links"]),
            extra_index_urls=tuple(steering["extra_index_urls"]), own_code=tuple(steering["own_code"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{path}: not a valid cudaenv.lock ({exc.__class__.__name__}: {exc}); "
                        "run `cudaenv lock` to rewrite it") from exc


# [run] keys the image is built from: the CMD, and whether JupyterLab gets a layer. The others
# (gpus, shm_size, ipc, env, ports, ulimits) say how a container of the image runs.
IMAGE_RUN_KEYS = ("command", "jupyter")


def inputs_hash(project: Project, *, whole_run: bool = False, targets: bool = False) -> str:
    """A hash of everything the lock and the image it pins depend on in the project: configuration
    and requirement files. [cluster] says where the image runs and [run], but for the keys in
    ``IMAGE_RUN_KEYS``, how: editing them (a GPU count, /dev/shm, a port) leaves the lock current.
    ``whole_run``: the hash as cudaenv 0.1.0 wrote it before 2026-11-24 (all of [run]), still
    accepted so that upgrading does not make every lock stale. The target tables are left out: each
    target's declaration is compared on its own (``target_staleness``), so a changed target is named
    and the others stay current; ``targets``: the hash of a format 1 lock, which covered [target]."""
    from cudaenv.project.inputs import extra_inputs, file_digest

    digest = hashlib.sha256(_config_text(project, whole_run=whole_run, targets=targets))
    for relative in project.requirements:
        digest.update(b"\0" + str(relative).encode() + b"\0" + (project.root / relative).read_bytes())
    for relative in extra_inputs(project.root, project.requirements):  # includes, constraints, local wheels
        digest.update(b"\0include:" + relative.encode() + b"\0" + file_digest(str(project.root / relative)).encode())
    return digest.hexdigest()[:32]


def accepted_hashes(project: Project) -> tuple[str, ...]:
    """The inputs hashes a current lock may record: this cudaenv's, and those of older locks."""
    return tuple(inputs_hash(project, whole_run=whole_run, targets=targets)
                 for targets in (False, True) for whole_run in (False, True))


def _config_text(project: Project, *, whole_run: bool = False, targets: bool = False) -> bytes:
    """The configuration the lock depends on, as the bytes both digests are taken of."""
    dropped = ("cluster",) if targets else ("cluster", "target", "targets")
    tables = {key: value for key, value in project.raw.items() if key not in dropped}
    run = tables.get("run")
    if not whole_run and isinstance(run, dict):
        kept = {key: value for key, value in run.items() if key in IMAGE_RUN_KEYS}
        if kept:
            tables["run"] = kept
        else:
            del tables["run"]
    return json.dumps(tables, sort_keys=True, default=str).encode()


def input_digests(project: Project) -> tuple[tuple[str, str], ...]:
    """Each input on its own: the configuration ("config") and every requirements file."""
    found = [("config", hashlib.sha256(_config_text(project)).hexdigest()[:32])]
    from cudaenv.project.inputs import extra_inputs, file_digest

    for relative in project.requirements:
        found.append((f"file:{relative}", hashlib.sha256((project.root / relative).read_bytes()).hexdigest()[:32]))
    for relative in extra_inputs(project.root, project.requirements):
        found.append((f"file:{relative}", file_digest(str(project.root / relative))[:32]))
    return tuple(sorted(dict(found).items()))


def changed_inputs(lock: Lock, project: Project) -> str | None:
    """Which inputs changed since ``lock`` was written ("requirements.txt changed"), or None when
    the lock does not record them one by one."""
    if not lock.inputs:
        return None
    before, now = dict(lock.inputs), dict(input_digests(project))
    named = {"config": f"the configuration in {project.config_path.name}" if project.config_path else "the configuration"}
    changed = [named.get(k, k.removeprefix("file:")) for k in sorted(before) if k in now and before[k] != now[k]]
    added = [k.removeprefix("file:") for k in sorted(now) if k not in before]
    dropped = [k.removeprefix("file:") for k in sorted(before) if k not in now]
    parts = ([f"{' and '.join(changed)} changed"] if changed else []) \
        + ([f"{', '.join(added)} {'is' if len(added) == 1 else 'are'} new"] if added else []) \
        + ([f"{', '.join(dropped)} no longer {'is' if len(dropped) == 1 else 'are'} a requirements file"]
           if dropped else [])
    return "; ".join(parts) or None


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


def index_netrc(py_index: str | None, fw_index: str | None) -> str:
    """A netrc for the indexes that need credentials (see cudaenv.secrets.credentials): handed to uv
    as a private temporary file and to the build as a BuildKit secret, so tokens never reach a
    layer, the image history, the Dockerfile or a process list."""
    from cudaenv.secrets.credentials import credential_for, netrc_text

    return netrc_text([credential_for(py_index, "python"), credential_for(fw_index, "framework")])


def framework_index(project: Project, own_index: str | None) -> str | None:
    """For a framework build with its own index (``own_index``: the stack's, or what the lock
    recorded): CUDAENV_FRAMEWORK_INDEX, else [build] framework_index, else that index."""
    if not own_index:
        return None
    return env_index("CUDAENV_FRAMEWORK_INDEX") or project.build.framework_index or own_index


def python_index(project: Project, recorded: str = PYPI_SIMPLE) -> str:
    """CUDAENV_PYTHON_INDEX, else [build] python_index, else ``recorded`` (PyPI, or the lock's)."""
    return env_index("CUDAENV_PYTHON_INDEX") or project.build.python_index or recorded


def check_environment() -> None:
    """The CUDAENV_* overrides a lock reads, checked before anything is said or run: a bad one is
    the one line of bad input, not an error after a progress line."""
    exclude_newer_from_env()
    env_index("CUDAENV_PYTHON_INDEX")
    env_index("CUDAENV_FRAMEWORK_INDEX")


def uv_binary() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


# uv's resolver found the requirements contradict each other ("× No solution found when resolving")
UV_NO_SOLUTION = re.compile(r"No solution found when resolving")
# uv's error chain: "Failed to fetch: URL" then causes down to the root one
_FETCH_FAILED = re.compile(r"Failed to fetch: (?P<url>\S+)")
_CAUSES = (("dns error", "DNS: the host name does not resolve"), ("Connection refused", "connection refused"),
           ("timed out", "timed out"), ("certificate", "TLS certificate not trusted; see [build] ca_cert"),
           ("tcp connect error", "cannot connect"))


def unreachable_index(stderr: str) -> str | None:
    """'cannot reach https://…/ (DNS)' from uv's error output, or None when an index answered."""
    match = _FETCH_FAILED.search(stderr)
    if not match:
        return None
    reason = next((why for needle, why in _CAUSES if needle.lower() in stderr.lower()), None)
    if reason is None:
        return None
    url = match.group("url")
    index = strip_credentials(url.rsplit("/", 2)[0] + "/") if url.count("/") > 3 else url
    return (f"cannot reach {index} ({reason}); nothing was locked. Use a mirror you can reach: "
            "[build] python_index / framework_index or CUDAENV_PYTHON_INDEX / CUDAENV_FRAMEWORK_INDEX, "
            "then run `cudaenv lock`")


def check_requirements_file(path: Path, label: str) -> None:
    """A requirements file is the user's input: a line pip could not read, or one cudaenv cannot
    honour, is bad input (exit 2, naming the file and line), not a resolution failure reported by
    uv later. Read with the one reader (``cudaenv.project.reqfile``), includes followed."""
    from cudaenv.project.reqfile import read_requirement_files

    try:
        read_requirement_files(path.parent, [path.name])
    except UserError as exc:
        raise UserError(str(exc).replace(f"{path.name}:", f"{label}:", 1)
                        if str(exc).startswith(f"{path.name}:") else str(exc)) from exc


OWN_CODE_PIN = re.compile(r"^(?:-e\s+|--editable[=\s]+)?(?:\.|/|file:)|^[A-Za-z0-9._-]+(?:\[[^\]]*\])?\s*@\s*file:")


def compile_requirements(project: Project, stack: Stack, *, ca_bundle: str | None = None) -> list[str]:
    """Pin the project's requirements together with the framework build, for the image's Python,
    from wheels only (but for [build] build_from_source): a requirement with no wheel for this
    Python raises ``NoWheels`` naming it, so the caller can try an older Python.

    uv is handed the project as cudaenv read it (``cudaenv.project.inputs``), not the files
    themselves: one reading, so a conda file's ``-r`` resolves against its own folder, and what
    the lock pins is what init saw and what the image installs. The project's own code is
    resolved for its dependencies and left out of the pins (the image installs it from
    /workspace)."""
    if not project.requirements and not stack.requirements:
        return []
    from cudaenv.project.inputs import read_project_requirements, uv_lines

    root = project.root.resolve()  # uv runs in the project directory: a relative root would count twice
    read = read_project_requirements(root, project.requirements)
    with tempfile.TemporaryDirectory(prefix="cudaenv-lock-") as tmp:
        frameworks_in = Path(tmp) / "frameworks.in"
        frameworks_in.write_text("".join(f"{line}\n" for line in stack.requirements))
        project_in = Path(tmp) / "project.in"
        project_in.write_text("".join(f"{line}\n" for line in uv_lines(read, root)))
        options = []
        constraints = [line.text for line in read.lines if line.constraint]
        if constraints:
            constraints_in = Path(tmp) / "constraints.txt"
            constraints_in.write_text("".join(f"{text}\n" for text in constraints))
            options += ["--constraint", str(constraints_in)]
        proc = run_uv_compile(project, stack, [str(frameworks_in), str(project_in)], tmp, ca_bundle=ca_bundle,
                              options=tuple(options), steering=read)
    if proc.returncode != 0:
        from cudaenv.project.uvfailure import explain_uv_failure
        from cudaenv.project.wheels import NoWheels, missing_wheel

        detail = "\n".join(line for line in proc.stderr.strip().splitlines()
                           if line.strip() and not line.startswith("warning: The requested Python version"))
        culprit = missing_wheel(proc.stderr)
        if culprit is not None:  # the caller may try an older Python before saying no
            raise NoWheels(culprit, stack.python, detail)
        own = explain_uv_failure(proc.stderr, [root / f for f in read.files], root, python=stack.python,
                                 platform=manylinux_platform(stack))
        if own:  # one of the project's own lines: say which, then what uv said
            raise LockError(f"{own}\n{detail}")
        unreachable = unreachable_index(proc.stderr)
        if unreachable and not UV_NO_SOLUTION.search(proc.stderr):  # a clash no index could mend comes first
            raise IndexUnreachable(unreachable)
        if unreachable:  # uv also failed to fetch a page (jax's find-links): said after the clash
            detail += f"\n(also: {unreachable.split(';')[0]})"
        raise LockError(f"the project's requirements cannot be resolved together with "
                        f"{', '.join(stack.requirements) or 'the stack'} for Python {stack.python}:\n{detail}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip() and not line.lstrip().startswith("#")
            and not OWN_CODE_PIN.match(line.strip())]


def run_uv_compile(project: Project, stack: Stack, inputs: list[str], tmp: str, *, ca_bundle: str | None = None,
                   options: tuple[str, ...] = (), steering=None) -> subprocess.CompletedProcess:
    """``uv pip compile`` of ``inputs`` for the stack's Python and platform, wheels only, against the
    project's indexes: the one way cudaenv asks uv, for locking and for checking a lock."""
    from cudaenv.project.wheels import no_build_options

    argv = [uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--no-progress",
            "--python-version", uv_python_version(stack), "--python-platform", manylinux_platform(stack),
            *no_build_options(tuple(dict.fromkeys(project.build.build_from_source + stack.source_builds))), *options]
    exclude_newer = exclude_newer_for(project)
    if exclude_newer:  # the index as it was then: a reproducible lock
        argv += ["--exclude-newer", exclude_newer]
    for link in stack.find_links:
        argv += ["--find-links", link]
    root = project.root.resolve()
    argv += inputs
    # indexes go through the environment, credentials through a private netrc: never argv
    if steering is None:
        from cudaenv.project.inputs import read_project_requirements

        steering = read_project_requirements(root, project.requirements)
    for link in steering.find_links:  # the files' --find-links: URLs, and folders inside the project
        argv += ["--find-links", link if "://" in link else str(root / link)]
    py_index = python_index(project, steering.index_url or PYPI_SIMPLE)
    extra = framework_index(project, stack.index_urls[0] if stack.index_urls else None)
    # no interpreter download: uv only needs one to build, and builds are what is refused here
    env = dict(os.environ, UV_NO_CONFIG="1", NO_COLOR="1", UV_PYTHON_DOWNLOADS="never",
               UV_DEFAULT_INDEX=strip_credentials(py_index))
    env.pop("UV_INDEX", None)
    indexes = [strip_credentials(extra)] if extra and strip_credentials(extra) != strip_credentials(py_index) else []
    indexes += [url for url in steering.extra_index_urls if url not in indexes]  # the files' --extra-index-url
    if indexes:  # PyPI's build alone: one index
        env["UV_INDEX"] = " ".join(indexes)
    netrc = index_netrc(py_index, extra)
    if netrc:
        netrc_file = Path(tmp) / "netrc"
        netrc_file.touch(mode=0o600)
        netrc_file.write_text(netrc)
        env["NETRC"] = str(netrc_file)
    if ca_bundle:
        env["SSL_CERT_FILE"] = ca_bundle
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root)


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


def make_lock(project: Project, stack: Stack, *, matrix_revision: str, target: dict, pinned: list[str],
              name: str = DEFAULT_TARGET) -> Lock:
    """The lock records the configured indexes; CUDAENV_*_INDEX overrides are the environment's
    (a CI mirror, a test index) and apply when used, never committed."""
    from cudaenv.project.inputs import read_project_requirements

    read = read_project_requirements(project.root.resolve(), project.requirements)
    return Lock(
        find_links=read.find_links, extra_index_urls=read.extra_index_urls, own_code=read.own_code,
        cudaenv=__version__, matrix_revision=matrix_revision, inputs_hash=inputs_hash(project),
        inputs=input_digests(project),
        # as the file keeps them (TOML has no null), so a lock made and the same lock read back are equal
        stack=_without_none(stack.as_dict()), target={k: "" if v is None else v for k, v in target.items()},
        requirement_files=tuple(str(r) for r in project.requirements),
        python_index=strip_credentials(project.build.python_index) or read.index_url or PYPI_SIMPLE,
        framework_index=strip_credentials(project.build.framework_index)
        or (stack.index_urls[0] if stack.index_urls else None),
        platform=manylinux_platform(stack), pinned=tuple(pinned), name=name,
    )


def _without_none(data: dict) -> dict:
    """TOML has no null: the lock leaves out what the stack does not know."""
    return json.loads(json.dumps({k: v for k, v in data.items() if v is not None}))


def file_staleness(lock: Lock, project: Project, matrix_revision: str) -> list[str]:
    """What the whole lock file records that no longer holds: its inputs, its matrix (every target's)."""
    reasons = []
    if lock.inputs_hash not in accepted_hashes(project):
        which = changed_inputs(lock, project) or "the configuration or a requirements file changed"
        reasons.append(f"{which} since the lock was written")
    if lock.matrix_revision != matrix_revision:
        reasons.append(f"the compatibility matrix changed (lock: {lock.matrix_revision}, now: {matrix_revision})")
    return reasons


def staleness(lock: Lock | None, project: Project, stack: Stack | None, matrix_revision: str,
              moved: dict | None = None, *, whole_lock: bool = True) -> list[str]:
    """Why a lock no longer matches (empty when it does). ``moved``: the resolver's best stack on the
    lock's own Python, when that is older than ``stack``'s: the lock chose it because a requirement
    has no wheels for a newer one (``cudaenv.project.wheels``), which the hash of the inputs covers.
    ``whole_lock``: also what the whole file records (the inputs, the matrix), not only this target."""
    if lock is None:
        return ["there is no cudaenv.lock"]
    reasons = file_staleness(lock, project, matrix_revision) if whole_lock else []
    from cudaenv.project.pins import pin_clashes

    clashes = pin_clashes(lock.resolved_stack(), lock.pinned)
    if clashes:
        reasons.append("the locked packages contradict the locked stack: " + "; ".join(str(c) for c in clashes[:3]))
    if stack is None:
        reasons.append("the configuration no longer resolves to any stack")
    elif lock.stack != _without_none(stack.as_dict()) and not (moved is not None and lock.stack == moved):
        before, after = lock.stack, _without_none(stack.as_dict())
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        reasons.append(f"the resolved stack changed ({', '.join(changed)})")
    return reasons


def current_lock(project: Project, matrix, target_name: str | None = None) -> tuple[Lock | None, list[str]]:
    """The project's lock and why it is stale (empty list: current), for one target (``target_name``;
    None: the project's only one). A lock is current on the stack the resolver gives, on the older
    Python it moved to because a requirement has no wheels for a newer one
    (``cudaenv.project.wheels``), or on either of those after it adopted its wheels' CUDA."""
    if target_name is None and project.several_targets:
        raise UserError(f"{project.config_path}: names several targets "
                        f"({', '.join(t.name for t in project.named_targets)}); this command serves one: "
                        "pass --target NAME")
    name = target_name or project.named_targets[0].name
    whole = read_lock_file(project.lock_path)
    lock = None if whole is None else whole.target(name)
    if whole is not None and lock is None and len(whole.targets) == 1 and whole.format == 1:
        lock = whole.targets[0]  # a format 1 lock is the one target's, whatever it is called now
    return lock, target_staleness(project, matrix, name, lock, missing=whole is not None and lock is None)


def current_locks(project: Project, matrix) -> tuple[LockFile | None, list[str]]:
    """The whole lock and why it is stale, each reason naming its target ("target a100: …") where
    the project has several; empty: every target is current."""
    whole = read_lock_file(project.lock_path)
    if whole is None:
        return None, ["there is no cudaenv.lock"]
    named = project.several_targets or any(t.name != DEFAULT_TARGET for t in whole.targets)
    # what the whole file records (the inputs, the matrix): said once, of no one target
    reasons = file_staleness(whole.targets[0], project, matrix.revision)
    wanted = [t.name for t in project.named_targets]
    for name in wanted:
        lock = whole.target(name)
        if lock is None and whole.format == 1 and len(wanted) == 1:
            lock = whole.targets[0]
        for reason in target_staleness(project, matrix, name, lock, missing=lock is None, whole_lock=False):
            text = f"target {name}: {reason}" if named else reason
            if text not in reasons:
                reasons.append(text)
    for view in whole.targets:
        if view.name not in wanted and not (whole.format == 1 and len(wanted) == 1):
            reasons.append(f"target {view.name}: in the lock, but the configuration no longer names it")
    return whole, reasons


def _declared_changed(lock: Lock, target) -> str | None:
    """How a target's declaration differs from what the lock recorded for it (driver, GPUs, CPU), or
    None. Only what both say is compared: a lock records the host, not how it was spelled."""
    recorded, now = lock.target, target.as_dict()
    if not recorded:  # a lock that recorded no host (written by hand, or before it was recorded)
        return None
    changed = [key for key in ("driver", "gpus", "arch") if (recorded.get(key) or None) != (now.get(key) or None)]
    if not changed:
        return None
    return "its declaration changed (" + ", ".join(
        f"{key} {recorded.get(key) or 'unset'!s} -> {now.get(key) or 'unset'!s}" for key in changed) + ")"


def target_staleness(project: Project, matrix, name: str, lock: Lock | None, *, missing: bool = False,
                     whole_lock: bool = True) -> list[str]:
    """Why one target's part of the lock is stale (empty: current); ``whole_lock``: with what the
    whole file records (inputs, matrix) too."""
    matrix = matrix.released_by(exclude_newer_for(project))  # the index as the lock will see it
    from cudaenv.hosts.target import project_target
    from cudaenv.project.config import project_constraints, resolve_project
    from cudaenv.project.pins import pin_clashes

    if missing:
        return ["not in the lock (a target added since it was written)"]
    target = project_target(matrix, project, name if project.targets else None)
    changed_target = _declared_changed(lock, target) if lock is not None else None
    result = resolve_project(matrix, project, target.host, explain=False)
    stack, moved = result.stack, None
    if lock is not None and stack is not None and lock.stack != _without_none(stack.as_dict()):
        locked_python = lock.stack.get("python")
        if isinstance(locked_python, str) and locked_python != stack.python:
            from cudaenv.project.wheels import stack_for_python
            from cudaenv.versions import numeric_key

            try:
                older = numeric_key(locked_python) < numeric_key(stack.python)
            except ValueError:
                older = False
            if older:
                on_python = stack_for_python(matrix, project_constraints(matrix, project), target.host, locked_python)
                moved = on_python.stack if on_python.ok else None
        base = moved or stack
        if pin_clashes(base, lock.pinned):  # a lock that adopted its wheels' CUDA is current too
            adopted = wheels_stack(matrix, project, target.host, base, lock.pinned, explain=False)
            if adopted is not None and adopted.ok and not pin_clashes(adopted.stack, lock.pinned):
                if moved is not None:
                    moved = adopted.stack
                else:
                    stack = adopted.stack
    reasons = staleness(lock, project, stack, matrix.revision, _without_none(moved.as_dict()) if moved is not None else None,
                        whole_lock=whole_lock)
    return ([changed_target] if changed_target else []) + reasons


def wheels_stack(matrix, project: Project, host, stack: Stack, pinned, *, explain: bool = True):
    """The stack that the pinned wheels make, when they carry another CUDA than ``stack``'s: the
    same framework releases and Python, for the CUDA the wheels carry, resolved again against the
    host, so it is adopted only where the host runs it. None when the wheels carry no single CUDA,
    the stack's own, or one the project's [cuda] version excludes (nothing to adopt)."""
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    from cudaenv.project.config import project_constraints
    from cudaenv.project.pins import carried_cuda
    from cudaenv.resolver.model import FRAMEWORKS
    from cudaenv.resolver.resolve import resolve
    from cudaenv.versions import specifier_contains

    carried = carried_cuda(pinned)
    if carried is None or carried[0] == stack.cuda or stack.cpu:  # a CPU stack adopts no CUDA
        return None
    constraints = project_constraints(matrix, project)
    if constraints.cuda is not None and not specifier_contains(constraints.cuda, carried[0]):
        return None
    pinned_frameworks = tuple((name, SpecifierSet(f"=={version}")) for name, version in stack.frameworks
                              if name in FRAMEWORKS)
    names = {name for name, _ in pinned_frameworks}
    constraints = replace(constraints, python=SpecifierSet(f"=={stack.python}"), cuda=SpecifierSet(f"=={carried[0]}"),
                          frameworks=pinned_frameworks + tuple(f for f in constraints.frameworks if f[0] not in names))
    return resolve(matrix, constraints, host, explain=explain)


def wheel_inputs(project: Project, stack: Stack, *, ca_bundle: str | None = None, compiled: dict | None = None):
    """What ``cudaenv.project.wheels`` needs to ask about this project: how to pin a stack (uv,
    wheels only), the indexes uv reads in the order it reads them, and the project's exact pins."""
    import base64

    from cudaenv.project.wheels import Inputs, exact_pins, http_page_reader
    from cudaenv.secrets.credentials import credential_for

    py_index = python_index(project)
    fw_index = framework_index(project, stack.index_urls[0] if stack.index_urls else None)
    headers = {}
    for url, role in ((fw_index, "framework"), (py_index, "python")):
        found = credential_for(url, role)
        if found is not None and found.host not in headers:
            token = base64.b64encode(f"{found.login}:{found.password}".encode()).decode()
            headers[found.host] = f"Basic {token}"
    indexes = tuple(strip_credentials(u) for u in (fw_index, py_index) if u)
    def compile_once(stack: Stack) -> list[str]:  # ``compiled``: the pins of each stack already asked for
        if compiled is None:
            return compile_requirements(project, stack, ca_bundle=ca_bundle)
        if stack not in compiled:
            compiled[stack] = compile_requirements(project, stack, ca_bundle=ca_bundle)
        return list(compiled[stack])

    return Inputs(compile=compile_once, indexes=indexes,
                  read_page=http_page_reader(ca_bundle, headers), exact_pins=exact_pins(project))


def lock_targets(project: Project, matrix) -> tuple[dict, LockFile | None]:
    """Every target of the project resolved and pinned: (name -> resolution, the lock of them all,
    or None when a target has no stack; the resolutions say why). Targets that describe the same
    host are resolved once, and a stack that two targets share is pinned once (uv runs once per
    distinct stack), so the lock stores it once too (``LockFile``)."""
    results: dict[str, object] = {}
    views: list[Lock] = []
    by_host: dict = {}
    compiled: dict = {}
    from cudaenv.hosts.target import project_target

    failed = False
    for declared in project.named_targets:
        host = project_target(matrix.released_by(exclude_newer_for(project)), project, declared.name).host
        if host in by_host:
            result, lock = by_host[host]
            lock = replace(lock, name=declared.name) if lock is not None else None
        else:
            result, lock = lock_project(project, matrix, target_name=declared.name, compiled=compiled)
            by_host[host] = (result, lock)
        results[declared.name] = result
        if lock is None:
            failed = True
        else:
            views.append(lock)
    return results, None if failed else LockFile.of(views)


def lock_project(project: Project, matrix, constraints=None, target_name: str | None = None, *,
                 compiled: dict | None = None) -> tuple:
    """Resolve the project for its configured target (``target_name``: one of several) and pin its
    requirements. ``compiled``: pins already made for a stack in this run (``lock_targets``).

    The whole project decides the Python: the newest one on which the frameworks and every
    requirement install from wheels (``cudaenv.project.wheels``), the framework release moving
    with it where the project's pins allow. ``constraints``: what to resolve instead of the
    project's own (``init`` passes what it detected, before its generated floors).

    Returns (resolution, lock): the lock is None when no stack fits (the resolution says why).
    Nothing is written; callers write with ``write_atomically``.
    """
    matrix = matrix.released_by(exclude_newer_for(project))  # the index as the lock will see it
    from cudaenv.hosts.target import project_target
    from cudaenv.project.config import project_constraints, resolve_project
    from cudaenv.project.wheels import choose

    target = project_target(matrix, project, target_name)
    name = target_name or project.named_targets[0].name
    constraints = project_constraints(matrix, project, constraints)
    result = resolve_project(matrix, project, target.host, constraints)
    if not result.ok:
        return result, None
    from cudaenv.project.inputs import read_project_requirements
    from cudaenv.project.intent import cpu_package_lines

    project_lines = read_project_requirements(project.root.resolve(), project.requirements).lines
    cpu_line = cpu_package_lines(project_lines, result.stack.requirements, result.stack.python)
    if cpu_line:  # the CPU tensorflow beside the stack's tensorflow-gpu: the same files, the wrong build
        raise UserError(cpu_line)
    ca_bundle = str(project.build.ca_cert) if project.build.ca_cert else None
    result, pinned = choose(matrix, constraints, target.host, result,
                            wheel_inputs(project, result.stack, ca_bundle=ca_bundle, compiled=compiled))
    if pinned is None:
        return result, None
    result = with_hash_warnings(result, project_lines)
    from cudaenv.project.intent import clashing_distributions

    clash = clashing_distributions(pinned)
    if clash:  # tensorflow beside tensorflow-cpu: whichever installs last silently wins
        raise LockError(clash)
    from cudaenv.project.pins import clash_message, pin_clashes

    clashes = pin_clashes(result.stack, pinned)
    if clashes:  # the wheels' CUDA is the truth: follow it where the host runs it, else refuse
        stack = result.stack
        adopted = wheels_stack(matrix, project, target.host, stack, pinned)
        if adopted is not None and adopted.ok:
            if adopted.stack.requirements != stack.requirements or adopted.stack.python != stack.python:
                pinned = compile_requirements(project, adopted.stack, ca_bundle=ca_bundle)
            if not pin_clashes(adopted.stack, pinned):
                return with_hash_warnings(_adopted(adopted, stack, pinned), project_lines), make_lock(
                    project, adopted.stack, matrix_revision=matrix.revision, target=target.as_dict(), pinned=pinned,
                    name=name)
        served_by = strip_credentials(framework_index(project, stack.index_urls[0] if stack.index_urls else None)
                                      or python_index(project))
        message = clash_message(clashes, stack, served_by)
        if adopted is not None and not adopted.ok:
            from cudaenv.project.pins import carried_cuda

            xy, pin = carried_cuda(pinned)
            message += (f" The wheels' CUDA {xy} ({pin}) cannot be adopted: "
                        + "; ".join(adopted.reasons[:2]) + ".")
        raise LockError(message)
    return result, make_lock(project, result.stack, matrix_revision=matrix.revision, target=target.as_dict(), pinned=pinned,
                             name=name)


def _adopted(adopted, chosen: Stack, pinned):
    """The adopted resolution, with a note saying why its CUDA is not the one first chosen."""
    from dataclasses import replace

    from cudaenv.project.pins import carried_cuda
    from cudaenv.resolver.model import Problem

    xy, pin = carried_cuda(pinned)
    mode = adopted.stack.driver_compatibility
    runs = f"; the target's driver runs it {'natively' if mode == 'native' else f'through {mode} compatibility'}" \
        if mode else ""
    note = Problem("cuda-from-wheels", f"the locked wheels carry CUDA {xy} ({pin}), not the CUDA {chosen.cuda} of the "
                                       f"build first chosen: the stack follows the wheels{runs}")
    return replace(adopted, problems=(note,) + adopted.problems)




def with_hash_warnings(result, lines):
    """``result`` with a warning per requirement line that carries ``--hash``: pip refuses a download
    whose hash is not listed; cudaenv's lock and image do not check these hashes yet (uv verifies
    each file against the index's own hash only), and a user who pinned hashes must be told so."""
    from dataclasses import replace

    from cudaenv.resolver.model import Problem

    hashed = [line for line in lines if line.hashes]
    if not hashed:
        return result
    where = ", ".join(line.where for line in hashed[:3]) + (f" and {len(hashed) - 3} more" if len(hashed) > 3 else "")
    warning = Problem("hashes-unchecked", f"{where}: --hash is not checked by cudaenv yet: the image installs the "
                                          "locked versions from the index, verified against the index's hashes only "
                                          "(pip would refuse a file whose hash the line does not list)")
    return replace(result, problems=result.problems + (warning,))


def wheel_problems(project: Project, lock: Lock) -> list[str]:
    """Why the lock cannot install from wheels (empty when it can): every pinned package must have
    a wheel for the locked Python and platform. One ``uv pip compile --no-deps`` of the pins, wheels
    only, against the same indexes and uv's own cache of their pages: no wheel is downloaded.
    Packages in [build] build_from_source are allowed their sdist."""
    from cudaenv.project.wheels import missing_wheel, requirement_name

    stack = lock.resolved_stack()
    if not lock.pinned:
        return []
    ca_bundle = str(project.build.ca_cert) if project.build.ca_cert else None
    with tempfile.TemporaryDirectory(prefix="cudaenv-lock-check-") as tmp:
        pins = Path(tmp) / "pinned.txt"
        pins.write_text("".join(f"{pin}\n" for pin in lock.pinned))
        proc = run_uv_compile(project, stack, [str(pins)], tmp, ca_bundle=ca_bundle, options=("--no-deps",))
    if proc.returncode == 0:
        return []
    unreachable = unreachable_index(proc.stderr)
    if unreachable:
        raise IndexUnreachable(unreachable)
    culprit = missing_wheel(proc.stderr)
    platform = manylinux_platform(stack)
    if culprit is not None:
        return [f"{culprit} has no wheel for Python {stack.python} on {platform}: the image could not install it "
                f"without compiling it (run `cudaenv lock` to choose a Python every requirement has wheels for, "
                f'or allow it with [build] build_from_source = ["{requirement_name(culprit)}"])']
    detail = "; ".join(line.strip() for line in proc.stderr.splitlines()
                       if line.strip() and not line.startswith("warning:"))[:400]
    return [f"the pinned packages cannot be installed on Python {stack.python} ({platform}): {detail}"]


def installable(matrix, project: Project, host, result, constraints=None):
    """``result`` with the stack the whole project installs on from wheels, as ``lock_project``
    chooses it (or its "no"): what ``resolve DIR`` and ``plan`` show, so that they give the same
    answer as ``lock``. Without requirement files there is nothing to ask. An index that cannot be
    reached leaves the resolver's answer, with a warning that the wheels were not checked."""
    matrix = matrix.released_by(exclude_newer_for(project))  # the index as the lock will see it
    from cudaenv.project.config import project_constraints
    from cudaenv.project.wheels import choose
    from cudaenv.resolver.model import Problem

    if not result.ok or not project.requirements:
        return result
    if constraints is None or constraints == project.constraints:
        answered = _locked_answer(matrix, project, host, result)
        if answered is not None:  # a current lock has answered the question already: no uv, no network
            return answered
    ca_bundle = str(project.build.ca_cert) if project.build.ca_cert else None
    try:
        chosen, _ = choose(matrix, project_constraints(matrix, project, constraints), host, result,
                           wheel_inputs(project, result.stack, ca_bundle=ca_bundle))
    except IndexUnreachable as exc:
        why = str(exc).replace("; nothing was locked", "")
        return replace(result, problems=result.problems + (Problem("wheels-unchecked", f"wheels not checked: {why}"),))
    except LockError:  # a clash uv reports; `cudaenv lock` says it in full
        return result
    return chosen


def _locked_answer(matrix, project: Project, host, result):
    """The resolution a current cudaenv.lock recorded for this host, or None (no lock, a stale or
    unreadable one, another host): its stack is the resolver's best, or the best on the older
    Python the lock moved to for wheels."""
    from cudaenv.errors import CudaenvError
    from cudaenv.project.config import project_constraints
    from cudaenv.project.wheels import eol_caveat, stack_for_python
    from cudaenv.resolver.model import Problem
    from cudaenv.hosts.target import project_target

    try:
        whole = read_lock_file(project.lock_path)
        if whole is None:
            return None
        # the target this host is: its part of the lock (a format 1 lock is the one target's)
        name = next((t.name for t in project.named_targets if project_target(matrix, project, t.name).host == host), None)
        lock = None if name is None else whole.target(name) or (whole.targets[0] if whole.format == 1 else None)
        if lock is None:
            return None
    except CudaenvError:
        return None
    if lock.matrix_revision != matrix.revision or lock.inputs_hash not in accepted_hashes(project):
        return None
    if lock.stack == _without_none(result.stack.as_dict()):
        return result
    python = lock.stack.get("python")
    moved = stack_for_python(matrix, project_constraints(matrix, project), host, python) \
        if isinstance(python, str) else None
    if moved is None or not moved.ok or _without_none(moved.stack.as_dict()) != lock.stack:
        return None
    note = Problem("python-from-wheels", f"Python {python}: the newest on which every requirement has wheels "
                                         f"(as {project.lock_path.name} recorded)")
    caveat = eol_caveat(python)
    return replace(moved, problems=moved.problems + (note,) + ((caveat,) if caveat else ()))
