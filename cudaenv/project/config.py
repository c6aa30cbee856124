"""A project's ``cudaenv.toml`` (or ``[tool.cudaenv]`` in ``pyproject.toml``): parsed and validated.

Every mistake is one line naming the file, the key and what was expected — unknown keys get a
did-you-mean — and exits 2. The schema is documented in the README ("Configuration").
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet

from cudaenv.core.debian import DEBIAN_PACKAGE
from cudaenv.errors import UserError, shown
from cudaenv.project.runopts import parse_gpus, parse_ports
from cudaenv.resolver.model import COMPANIONS, FLAVORS, FRAMEWORKS, Constraints
from cudaenv.project.locate import CONFIG_FILE, INDEX_URL, ConfigError, config_label, find_config, is_index_url, read_config_file  # noqa: F401 - re-exported
from cudaenv.versions import is_driver_version, is_numeric, parse_specifier, specifier_example

SCHEMA: dict[str, tuple[str, ...]] = {
    "project": ("name", "python", "requirements"),
    "frameworks": tuple(FRAMEWORKS) + tuple(COMPANIONS),
    "cuda": ("version", "cudnn"),
    "target": ("driver", "gpus", "compute_capabilities", "arch"),
    "targets": (),  # [targets.NAME] tables: their names are the user's, each table's keys are [target]'s
    "build": ("flavor", "os", "system_packages", "base_registry", "python_index", "framework_index",
              "framework_index_mirrors", "ca_cert", "build_from_source"),
    "run": ("gpus", "shm_size", "ipc", "env", "ports", "command", "ulimits", "jupyter"),
    "cluster": ("slurm",),
    "lock": ("exclude_newer",),
}
# [cluster.slurm]: what `cudaenv export slurm` reads (the feature specs are checked there)
CLUSTER_SLURM_KEYS = ("features",)

# PEP 508 distribution names (what [build] build_from_source lists)
PACKAGE_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
IMAGE_NAME = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SHM_SIZE = re.compile(r"^[0-9]{1,12}(?:\.[0-9]{1,6})?[bkmgBKMG]?$")
REGISTRY = re.compile(r"^[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$")


# A target's name: it reaches the lock's keys, later image labels, Kubernetes workload names and
# --target flags, so it is a DNS label (lower-case letters, digits, -) of at most 32 characters.
TARGET_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
DEFAULT_TARGET = "default"  # the name a single [target] (or none at all) has
# words a --target flag may come to mean something by (every target, this host's, no GPU): never names
RESERVED_TARGET_NAMES = ("all", "auto", "none", "any", "this", "host")
# `gpus = "none"`: the one way to say a target has no GPU (a CPU target: CPU framework builds only)
NO_GPUS = "none"


@dataclass(frozen=True)
class TargetConfig:
    driver: str | None = None
    gpus: tuple[str, ...] = ()
    compute_capabilities: tuple[str, ...] = ()
    arch: str | None = None  # the target's CPU architecture (x86_64, aarch64); None: implied by its GPUs
    name: str = DEFAULT_TARGET
    cpu: bool = False  # gpus = "none": no GPU, so CPU builds only (and never a CUDA library)


@dataclass(frozen=True)
class BuildConfig:
    flavor: str = "auto"
    os: str | None = None
    system_packages: tuple[str, ...] = ()
    base_registry: str = ""
    python_index: str = ""  # replaces https://pypi.org/simple (a mirror, or a local index in tests)
    framework_index: str = ""  # replaces the framework build's own index (download.pytorch.org/whl/cuXYZ)
    # what framework_index mirrors, when its URL does not say: "pypi", or one own index such as
    # https://download.pytorch.org/whl/cu126 (cudaenv.project.served)
    framework_index_mirrors: str = ""
    ca_cert: Path | None = None
    # the only packages the image may compile from a source distribution (normalized names); every
    # other install step is wheels only (uv's --only-binary :all:), see cudaenv.project.wheels
    build_from_source: tuple[str, ...] = ()


# NVIDIA's recommendation for NCCL and deep-learning containers: unlimited locked memory, a 64 MiB stack
DEFAULT_ULIMITS = (("memlock", -1, -1), ("stack", 67108864, 67108864))
ULIMIT_NAMES = ("core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss",
                "rtprio", "rttime", "sigpending", "stack")


@dataclass(frozen=True)
class RunConfig:
    gpus: str = "all"
    shm_size: str = "8g"
    ipc: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    ports: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    ulimits: tuple[tuple[str, int, int], ...] = DEFAULT_ULIMITS
    jupyter: bool = False  # JupyterLab in the image (its own layer after the frameworks): `cudaenv run --jupyter`


def parse_ulimit(name: str, value, where: str) -> tuple[str, int, int]:
    """``memlock = -1`` / ``nofile = "1024:4096"`` -> (name, soft, hard); -1 is unlimited."""
    if name not in ULIMIT_NAMES:
        close = difflib.get_close_matches(name, ULIMIT_NAMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(ULIMIT_NAMES)})"
        raise ConfigError(f"{where}: unknown ulimit {name!r}{hint}")
    soft = hard = None
    if isinstance(value, int) and not isinstance(value, bool):
        soft = hard = value
    elif isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}(:-?[0-9]{1,19})?", value.strip()):
        soft_text, _, hard_text = value.strip().partition(":")
        soft, hard = int(soft_text), int(hard_text or soft_text)
    if soft is not None:
        limit = 2**63 - 1  # what the kernel's rlim_t holds; -1 means unlimited
        if not (-1 <= soft <= limit and -1 <= hard <= limit):
            raise ConfigError(f"{where}: ulimit {name}: expected -1 (unlimited) or 0 to {limit}, got {shown(value)}")
        if hard != -1 and (soft == -1 or soft > hard):
            raise ConfigError(f"{where}: ulimit {name}: the soft limit {soft} is above the hard limit {hard}")
        return name, soft, hard
    raise ConfigError(f"{where}: ulimit {name}: expected a number or 'soft:hard' (-1 for unlimited), got {value!r}")


@dataclass(frozen=True)
class Project:
    root: Path
    config_path: Path | None  # None: no configuration yet (defaults)
    name: str
    python: str | None
    requirements: tuple[Path, ...]
    constraints: Constraints
    target: TargetConfig = field(default_factory=TargetConfig)
    build: BuildConfig = field(default_factory=BuildConfig)
    run: RunConfig = field(default_factory=RunConfig)
    raw: dict = field(default_factory=dict, compare=False, repr=False)  # the tables as read, for the lock hash
    # [lock] exclude_newer: lock against the package index as it was then (uv's --exclude-newer), so
    # the same inputs give the same lock next month; None: the index as it is now
    exclude_newer: str | None = None
    # every target the project is locked for, in the file's order: [targets.NAME] tables, or the one
    # [target] (named "default"); empty only for a Project built by hand (then ``target`` alone)
    targets: tuple[TargetConfig, ...] = ()

    @property
    def lock_path(self) -> Path:
        return self.root / "cudaenv.lock"

    @property
    def named_targets(self) -> tuple[TargetConfig, ...]:
        """The targets a lock holds: the declared ones, or the single [target] as "default"."""
        return self.targets or (self.target,)

    @property
    def several_targets(self) -> bool:
        """More than one target: commands that serve one target must be told which."""
        return len(self.named_targets) > 1

    def target_named(self, name: str) -> TargetConfig:
        """The target called ``name``; bad input (exit 2) naming the ones that exist otherwise."""
        for target in self.named_targets:
            if target.name == name:
                return target
        known = ", ".join(t.name for t in self.named_targets)
        error = ConfigError(f"--target: no target {shown(name)} in {self.config_path or 'the project'} "
                            f"(targets: {known})", field="targets")
        if self.config_path is not None:  # for the --json error object: the file that names the targets
            error.file = str(self.config_path)
        raise error


class _Reader:
    def __init__(self, where: str, data: dict) -> None:
        self.where = where
        self.data = data

    def fail(self, key: str, expected: str, value: Any) -> ConfigError:
        return ConfigError(f"{self.where}: {key}: expected {expected}, got {shown(value)}")

    def section(self, name: str) -> dict:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(f"[{name}]", "a table", value)
        allowed = SCHEMA[name]
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
                raise ConfigError(f"{self.where}: unknown key '{name}.{key}'{hint}", field=f"{name}.{key}")
        return value

    def str(self, table: dict, section: str, key: str, default=None):
        value = table.get(key, default)
        if value is not default and not isinstance(value, str):
            raise self.fail(f"{section}.{key}", "a string", value)
        return value

    def str_list(self, table: dict, section: str, key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if isinstance(value, str):
            raise self.fail(f"{section}.{key}", f"a list of strings, e.g. {key} = [{value!r}]".replace("'", '"'), value)
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(f"{section}.{key}", "a list of strings", value)
        return tuple(value)

    def spec(self, table: dict, section: str, key: str) -> SpecifierSet | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(f"{section}.{key}", f"{specifier_example(key)}, as a string", value)
        if value.strip().lower() in ("", "*", "any"):
            return SpecifierSet()
        spec = parse_specifier(value)
        if spec is None:
            raise self.fail(f"{section}.{key}", specifier_example(key), value)
        return spec


def _registry_prefix(text: str) -> bool:
    from cudaenv.core.references import is_registry_prefix

    return is_registry_prefix(text)


def _toml_spelling(value) -> str:
    """How the user wrote a TOML boolean or float (near enough to quote it back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def sanitize_name(name: str) -> str:
    """A directory name made into a valid image name (``My Project`` -> ``my-project``)."""
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("._-")
    cleaned = re.sub(r"[._-]{2,}", "-", cleaned)
    return cleaned or "project"


# what uv's --exclude-newer takes: a date, or an RFC 3339 timestamp
EXCLUDE_NEWER = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"
                           r"(?:Z|[+-][0-9]{2}:[0-9]{2}))?")


def check_exclude_newer(value, where: str) -> str | None:
    """A date (``2026-11-20``, a TOML date or a quoted string) or an RFC 3339 timestamp with its
    offset: the index state a lock is made from. Anything else is bad input naming the field."""
    import datetime

    if value is None or value == "":
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ConfigError(f"{where}: expected a date like 2026-11-20 or a timestamp with its offset "
                              f"(2026-11-20T00:00:00Z), got {value.isoformat()!r} (no offset)")
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str) and len(value) < 64 and EXCLUDE_NEWER.fullmatch(value.strip()):
        text = value.strip()
        try:  # the grammar matched; the calendar and the clock decide (2026-02-30, 25:99 are not times)
            if len(text) == 10:
                datetime.date.fromisoformat(text)
            else:
                # without the fraction (the grammar checked it; Python 3.10 reads only 3 or 6 digits)
                clock = re.sub(r"\.[0-9]+", "", text)
                datetime.datetime.fromisoformat(clock[:-1] + "+00:00" if clock.endswith("Z") else clock)
        except ValueError:
            pass
        else:
            return text
    raise ConfigError(f"{where}: expected a date like 2026-11-20 or an RFC 3339 timestamp like "
                      f"2026-11-20T00:00:00Z, got {shown(value)}")


def exclude_newer_from_env() -> str | None:
    """CUDAENV_EXCLUDE_NEWER, checked like [lock] exclude_newer: one date for every lock a CI run
    makes (the real-projects corpus), before a project's configuration exists."""
    import os

    return check_exclude_newer(os.environ.get("CUDAENV_EXCLUDE_NEWER") or None, "CUDAENV_EXCLUDE_NEWER")


def exclude_newer_for(project: Project) -> str | None:
    """CUDAENV_EXCLUDE_NEWER (a CI run pinning the index state for every project), else the
    project's [lock] exclude_newer, else None (the index as it is now)."""
    return exclude_newer_from_env() or project.exclude_newer


def parse_config(root: Path, data: dict, where: str, config_path: Path | None) -> Project:
    reader = _Reader(where, data)
    for key in data:
        if key not in SCHEMA:
            close = difflib.get_close_matches(key, SCHEMA, n=1)
            hint = f" (did you mean [{close[0]}]?)" if close else f" (tables: {', '.join(f'[{s}]' for s in SCHEMA)})"
            raise ConfigError(f"{where}: unknown table [{key}]{hint}")

    project = reader.section("project")
    name = reader.str(project, "project", "name") or sanitize_name(root.resolve().name)
    if not IMAGE_NAME.fullmatch(name) or len(name) > 128:  # cudaenv/<name>:<tag> stays a valid reference
        raise reader.fail("project.name", "an image name of lower-case letters, digits and . _ - (e.g. 'detector')", name)
    python_text = project.get("python")
    python = reader.spec(project, "project", "python")
    requirements = []
    for item in reader.str_list(project, "project", "requirements"):
        path = (root / item)
        try:
            exists = len(item) < 4096 and path.is_file()
        except OSError:
            exists = False
        if not exists:
            raise ConfigError(f"{where}: project.requirements: file {shown(item)} does not exist in {root}")
        if not path.resolve().is_relative_to(root.resolve()):
            raise ConfigError(f"{where}: project.requirements: {item!r} is outside the project directory")
        requirements.append(Path(item))

    frameworks_table = dict(reader.section("frameworks"))
    from cudaenv.versions import split_local_build

    # torch = "==2.0.1+cu118" (as PyTorch's install page spells it): that version, and only that build of it
    # (the resolver keeps the named build, so its CUDA follows without a [cuda] constraint that a
    # --torch flag replacing the pin would leave behind)
    variants = []  # (framework, "cu118"): that build must exist
    for key, value in list(frameworks_table.items()):
        if isinstance(value, str):
            frameworks_table[key], cuda_of_build = split_local_build(value)
            if cuda_of_build:
                variants.append((key, "cu" + cuda_of_build.replace(".", "")))
    frameworks = tuple((key, reader.spec(frameworks_table, "frameworks", key)) for key in SCHEMA["frameworks"]
                       if key in frameworks_table)

    cuda = reader.section("cuda")
    targets = parse_targets(reader, data)
    build = reader.section("build")
    flavor = reader.str(build, "build", "flavor", "auto")
    if flavor not in FLAVORS:
        raise reader.fail("build.flavor", f"one of {', '.join(FLAVORS)}", flavor)
    packages = reader.str_list(build, "build", "system_packages")
    for package in packages:
        if not DEBIAN_PACKAGE.fullmatch(package):
            raise reader.fail("build.system_packages", "Debian package names (lower-case letters, digits, + - .)", package)
    base_registry = (reader.str(build, "build", "base_registry", "") or "").strip().rstrip("/")
    if base_registry and not (REGISTRY.fullmatch(base_registry) and _registry_prefix(base_registry)):
        raise reader.fail("build.base_registry", "a registry prefix like registry.example.com:5000/mirror (no scheme)", base_registry)
    indexes = {}
    for key in ("python_index", "framework_index"):
        value = (reader.str(build, "build", key, "") or "").strip()
        if value and not is_index_url(value):
            raise reader.fail(f"build.{key}", "an http(s):// URL of a PEP 503 simple index", value)
        if value:
            from cudaenv.secrets.credentials import refuse_userinfo

            refuse_userinfo(value, f"{where}: build.{key}")
        indexes[key] = value
    mirrors = (reader.str(build, "build", "framework_index_mirrors", "") or "").strip()
    if mirrors and mirrors.lower() != "pypi" and not is_index_url(mirrors):
        raise reader.fail("build.framework_index_mirrors", '"pypi" or the URL of the index framework_index mirrors '
                          '(e.g. "https://download.pytorch.org/whl/cu126")', mirrors)
    if mirrors and not indexes["framework_index"]:
        raise ConfigError(f"{where}: build.framework_index_mirrors: says what build.framework_index mirrors, "
                          "but no framework_index is set")
    if mirrors:
        from cudaenv.secrets.credentials import refuse_userinfo

        refuse_userinfo(mirrors, f"{where}: build.framework_index_mirrors")
    indexes["framework_index_mirrors"] = mirrors.lower() if mirrors.lower() == "pypi" else mirrors
    from_source = []
    for package in reader.str_list(build, "build", "build_from_source"):
        if not PACKAGE_NAME.fullmatch(package.strip()):
            raise reader.fail("build.build_from_source", "package names as on PyPI (letters, digits, - _ .)", package)
        from_source.append(re.sub(r"[-_.]+", "-", package.strip()).lower())
    ca_text = reader.str(build, "build", "ca_cert", "") or ""
    ca_cert = None
    if ca_text:
        ca_cert = Path(ca_text).expanduser()
        if not ca_cert.is_absolute():
            ca_cert = root / ca_cert
        try:
            exists = len(ca_text) < 4096 and ca_cert.is_file()
        except OSError:  # a name too long for the file system, a loop of links
            exists = False
        if not exists:
            raise ConfigError(f"{where}: build.ca_cert: file {shown(ca_text)} does not exist")

    cluster_slurm = reader.section("cluster").get("slurm", {})
    if not isinstance(cluster_slurm, dict):
        raise reader.fail("[cluster.slurm]", "a table", cluster_slurm)
    for key in cluster_slurm:
        if key not in CLUSTER_SLURM_KEYS:
            raise ConfigError(f"{where}: unknown key 'cluster.slurm.{key}' (allowed: {', '.join(CLUSTER_SLURM_KEYS)})",
                              field=f"cluster.slurm.{key}")
    run = reader.section("run")
    gpus_value = run.get("gpus", "all")
    gpus_text = str(gpus_value) if isinstance(gpus_value, int) and not isinstance(gpus_value, bool) else gpus_value
    if not isinstance(gpus_text, str):
        raise reader.fail("run.gpus", "all, none, auto, a count, or devices like '0,1' / 'device=1'", gpus_value)
    try:
        parse_gpus(gpus_text)
    except UserError as exc:
        # the flag's message, said of the field: a value with ": " in it must not cut the message there
        detail = str(exc).removeprefix(f"--gpus {gpus_text!r}: ").replace("--gpus ", "")
        raise ConfigError(f"{where}: run.gpus: {detail}") from exc
    shm = reader.str(run, "run", "shm_size", "8g")
    if not SHM_SIZE.fullmatch(shm):
        raise reader.fail("run.shm_size", "a size like 8g or 512m", shm)
    ipc = reader.str(run, "run", "ipc")
    if ipc is not None and ipc not in ("host", "private", "shareable"):
        raise reader.fail("run.ipc", "host, private or shareable", ipc)
    env = run.get("env", {})
    if not isinstance(env, dict):
        raise reader.fail("run.env", "a table of NAME = \"value\"", env)
    for key, value in env.items():
        if not ENV_NAME.fullmatch(key):
            raise reader.fail("run.env", "variable names of letters, digits and _", key)
        # an integer is written as TOML spells it; a float or a boolean would come out as Python
        # spells it (1e-05, inf, True): the user quotes what the program should see
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise reader.fail(f"run.env.{key}", "a string (quote a number or true/false: "
                                                f"{key} = \"{_toml_spelling(value)}\")" if isinstance(value, (bool, float))
                              else "a string", value)
        if isinstance(value, str) and "\x00" in value:
            raise reader.fail(f"run.env.{key}", "a string without NUL characters (no process can receive one)", value)
    ports = []
    for port in run.get("ports", []) if isinstance(run.get("ports", []), list) else [run.get("ports")]:
        text = str(port) if isinstance(port, int) and not isinstance(port, bool) else port
        if not isinstance(text, str):
            raise reader.fail("run.ports", 'ports like 8888, "8888:8888" or "127.0.0.1:8888:8888"', port)
        try:
            parse_ports((text,))
        except UserError as exc:
            raise reader.fail("run.ports", 'ports like 8888, "8888:8888" or "127.0.0.1:8888:8888"', port) from exc
        ports.append(text)
    command = run.get("command", [])
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        raise reader.fail("run.command", 'a list of strings like ["python", "train.py"]', command)
    if any("\x00" in word for word in command):
        raise reader.fail("run.command", "words without NUL characters (no process can receive one)", command)
    ulimits_table = run.get("ulimits", {})
    if not isinstance(ulimits_table, dict):
        raise reader.fail("run.ulimits", "a table like {memlock = -1, stack = 67108864}", ulimits_table)
    ulimits = {name: (soft, hard) for name, soft, hard in DEFAULT_ULIMITS}
    for limit, value in ulimits_table.items():
        _, soft, hard = parse_ulimit(limit, value, f"{where}: run.ulimits")
        ulimits[limit] = (soft, hard)

    cuda_spec = reader.spec(cuda, "cuda", "version")
    jupyter = run.get("jupyter", False)
    if not isinstance(jupyter, bool):
        raise reader.fail("run.jupyter", "true or false", jupyter)
    constraints = Constraints(
        python=python, frameworks=frameworks, cuda=cuda_spec,
        cudnn=reader.spec(cuda, "cuda", "cudnn"), flavor=flavor, os=reader.str(build, "build", "os"),
        variants=tuple(variants),
    )
    return Project(
        root=root, config_path=config_path, name=name, python=python_text, requirements=tuple(requirements),
        constraints=constraints,
        target=targets[0] if len(targets) == 1 else TargetConfig(), targets=targets,
        build=BuildConfig(flavor=flavor, os=build.get("os"), system_packages=packages, base_registry=base_registry,
                          ca_cert=ca_cert, build_from_source=tuple(dict.fromkeys(from_source)), **indexes),
        run=RunConfig(gpus=gpus_text, shm_size=shm, ipc=ipc, env=tuple(sorted((k, str(v)) for k, v in env.items())),
                      ports=tuple(ports), command=tuple(command),
                      ulimits=tuple((n, s, h) for n, (s, h) in sorted(ulimits.items())), jupyter=jupyter),
        raw=data,
        exclude_newer=check_exclude_newer(reader.section("lock").get("exclude_newer"), f"{where}: lock.exclude_newer"),
    )


def parse_targets(reader: _Reader, data: dict) -> tuple[TargetConfig, ...]:
    """[target] (one target, named "default") or [targets.NAME] tables (several), never both."""
    if "target" in data and "targets" in data:
        raise ConfigError(f"{reader.where}: [target] and [targets.*] both present: describe one target in "
                          "[target], or name each in its own [targets.NAME] table (move [target] to "
                          f"[targets.{DEFAULT_TARGET}])", field="targets")
    if "targets" not in data:
        return (_parse_target(reader, reader.section("target"), "target", DEFAULT_TARGET),)
    tables = data["targets"]
    if not isinstance(tables, dict) or not tables:
        raise reader.fail("[targets]", "tables like [targets.cluster] (driver, gpus, compute_capabilities, arch)",
                          tables)
    found = []
    for name, table in tables.items():
        if not isinstance(name, str) or not TARGET_NAME.fullmatch(name):
            raise ConfigError(f"{reader.where}: targets.{shown(name, 40)}: expected a target name of lower-case "
                              "letters, digits and - (at most 32, e.g. [targets.cluster]), "
                              f"got {shown(name)}", field="targets")
        if name in RESERVED_TARGET_NAMES:
            raise ConfigError(f"{reader.where}: targets.{name}: {name!r} is a reserved word (reserved: "
                              f"{', '.join(RESERVED_TARGET_NAMES)}); pick another name", field=f"targets.{name}")
        if not isinstance(table, dict):
            raise reader.fail(f"targets.{name}", f"a table [targets.{name}] with driver, gpus, "
                                                 "compute_capabilities, arch", table)
        section = f"targets.{name}"
        for key in table:
            allowed = SCHEMA["target"]
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
                said = key if len(key) <= 40 and key.isprintable() else shown(key, 40)
                raise ConfigError(f"{reader.where}: unknown key '{section}.{said}'{hint}",
                                  field=f"{section}.{key}")
        found.append(_parse_target(reader, table, section, name))
    return tuple(found)


def _parse_target(reader: _Reader, table: dict, section: str, name: str) -> TargetConfig:
    """One target's table; ``section`` is how errors name it ("target", "targets.cluster")."""
    driver = reader.str(table, section, "driver")
    if driver is not None and not is_driver_version(driver.strip()):
        raise reader.fail(f"{section}.driver", "a driver version like 535.104.05", driver)
    ccs = reader.str_list(table, section, "compute_capabilities")
    for cc in ccs:
        if not is_numeric(cc, 2):
            raise reader.fail(f"{section}.compute_capabilities", 'compute capabilities like "8.0"', cc)
    arch = reader.str(table, section, "arch")
    if arch is not None:
        from cudaenv.resolver.model import arch_name

        if arch_name(arch) is None:
            raise reader.fail(f"{section}.arch", '"x86_64" or "aarch64" (the target\'s CPU architecture)', arch)
        arch = arch_name(arch)
    gpus_value = table.get("gpus", [])
    cpu = isinstance(gpus_value, str) and gpus_value.strip().lower() == NO_GPUS
    if cpu:
        if driver is not None or ccs:
            which = "driver" if driver is not None else "compute_capabilities"
            raise ConfigError(f"{reader.where}: {section}.{which}: a target with gpus = \"none\" has no GPU, so no "
                              f"{which.replace('_', ' ')}: drop it, or name the target's GPUs", field=f"{section}.{which}")
        return TargetConfig(arch=arch, name=name, cpu=True)
    return TargetConfig(driver=driver.strip() if driver else None, gpus=reader.str_list(table, section, "gpus"),
                        compute_capabilities=ccs, arch=arch, name=name)


def load_project(directory: str | Path, *, required: bool = True) -> Project:
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory")
    path = find_config(root)
    if path is None:
        if required:
            raise ConfigError(f"{root}: no cudaenv.toml (or [tool.cudaenv] in pyproject.toml); run `cudaenv init {root}` first")
        return parse_config(root, {}, str(root / CONFIG_FILE), None)
    data, where = read_config_file(path)
    return parse_config(root, data, where, path)


def resolve_project(matrix, project: Project, host, constraints=None, *, from_flags=(), explain: bool = True):
    """``resolve`` for a project; a version its file asks for that the matrix lacks is reported
    against that file and key (exit 2), not as if it had been typed on the command line.
    ``from_flags`` names frameworks that command-line flags set (their errors stay as they are)."""
    from cudaenv.resolver.resolve import UnknownVersion, resolve

    whole, cutoff = matrix, exclude_newer_for(project)
    matrix = matrix.released_by(cutoff)
    constraints = project_constraints(matrix, project, constraints)
    try:
        return resolve(matrix, constraints, host, explain=explain)
    except UnknownVersion as exc:
        if matrix is not whole:  # a pin the cutoff hides: say so, not "no such release"
            try:
                resolve(whole, project_constraints(whole, project, constraints), host, explain=False)
            except UnknownVersion:
                pass
            else:
                raise ConfigError(f"{config_label(project)}: {exc.field or 'frameworks'}: the pinned release was "
                                  f"published after the index cutoff {cutoff} ([lock] exclude_newer or "
                                  "CUDAENV_EXCLUDE_NEWER): move the cutoff, or pin an older release") from exc
        field = exc.field
        if field is None or project.config_path is None or field.split(".")[-1] in from_flags:
            raise
        raise ConfigError(f"{config_label(project)}: {field}: {exc}") from exc


def project_constraints(matrix, project: Project, constraints=None):
    """The project's constraints (or ``constraints``, flags merged over them) with what its
    framework index serves: resolution chooses among the builds that index has."""
    from dataclasses import replace

    from cudaenv.project.served import served_by

    constraints = constraints or project.constraints
    read = None
    if project.requirements and (constraints.framework_index is None or not constraints.packages):
        from cudaenv.project.inputs import read_project_requirements

        read = read_project_requirements(project.root.resolve(), project.requirements)
    if constraints.framework_index is None:
        served = served_by(matrix, project)
        if served is None and read is not None and read.index_url:
            # pip reads only the file's --index-url: a framework build's own index (PyTorch's
            # whl/cu101) then decides which build is installed, as it does for pip
            from cudaenv.project.served import recognized
            from cudaenv.resolver.resolve import own_indexes

            served = recognized(read.index_url, own_indexes(matrix))
        constraints = replace(constraints, framework_index=served)
    if not constraints.packages and read is not None:
        from cudaenv.project.intent import framework_packages

        packages = framework_packages(read.lines)
        if packages:  # tensorflow-gpu==2.10.0 in requirements.txt: the stack installs tensorflow-gpu
            constraints = replace(constraints, packages=packages)
    return constraints
