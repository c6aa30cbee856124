"""What an existing project already says it needs, for ``cudaenv init``.

Read, in this order: ``requirements*.txt`` (following ``-r`` includes inside the project),
``pyproject.toml`` (``[project] dependencies`` and ``requires-python``), ``.python-version``, and a
conda ``environment.yml``. Framework requirements become ``[frameworks]`` pins; a local version
label (``torch==2.1.0+cu118``) or a ``mxnet-cu112`` package name also says which CUDA was meant.

Frameworks that arrive through another package (accelerate, tf_keras, flax) and frameworks named
for the CPU (tensorflow-cpu beside JAX) follow ``cudaenv.project.intent``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from cudaenv.project.config import ConfigError
from cudaenv.project.intent import CPU_ONLY, SAME_FILES, canonical as _canonical, carried_framework
from cudaenv.versions import parse_specifier

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# PyPI / conda names -> cudaenv framework keys
FRAMEWORK_NAMES = {
    "torch": "torch", "pytorch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio",
    "tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow", "keras": "keras",
    "jax": "jax", "jaxlib": "jax", "mxnet": "mxnet",
}
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}
MXNET_CUDA = re.compile(r"^mxnet-cu([0-9]+)(?:mkl)?$")
LOCAL_CUDA = re.compile(r"^cu([0-9]+)$")


@dataclass
class Detected:
    frameworks: dict[str, str] = field(default_factory=dict)  # name -> specifier text
    python: str | None = None
    cuda: str | None = None
    requirement_files: list[str] = field(default_factory=list)
    other_requirements: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)  # human notes: "torch>=2.4 (requirements.txt)"
    # every distribution named, and where ("requirements.txt:3"): for intent and for messages
    named: dict[str, list[str]] = field(default_factory=dict)
    cpu_only: set[str] = field(default_factory=set)  # frameworks the project asked for on the CPU
    carriers: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # framework -> (requirement, where)
    conda_file: str | None = None  # environment.yml, when it has a pip list for the lock to pin


JAX_CUDA_EXTRA = re.compile(r"cuda([0-9]+)(?:[-_](?:pip|local))?")


def _cuda_from_tag(digits: str) -> str:
    # cu118 -> 11.8, cu121 -> 12.1, cu92 -> 9.2, cu102 -> 10.2
    return f"{digits[:-1]}.{digits[-1]}"


def _take(detected: Detected, requirement: Requirement, where: str) -> None:
    """``where`` is "requirements.txt:3"; the notes name the file, messages the line."""
    name = requirement.name.lower()
    detected.named.setdefault(_canonical(name), []).append(where)
    carried = carried_framework(name, requirement.extras)
    if carried:
        detected.carriers.setdefault(carried, []).append((str(requirement), where))
    origin = re.sub(r":[0-9]+$", "", where)
    if _canonical(name) in CPU_ONLY or (_canonical(name) in ("jax", "jaxlib") and requirement.extras == {"cpu"}):
        detected.cpu_only.add(CPU_ONLY.get(_canonical(name), "jax"))
        detected.other_requirements.append(str(requirement))
        detected.found.append(f"{requirement} ({origin}: on the CPU)")
        return
    mxnet = MXNET_CUDA.match(name)
    if mxnet:
        detected.frameworks.setdefault("mxnet", str(requirement.specifier))
        detected.cuda = detected.cuda or _cuda_from_tag(mxnet.group(1))
        detected.found.append(f"{requirement} ({origin})")
        return
    key = FRAMEWORK_NAMES.get(name)
    if key is None:
        detected.other_requirements.append(str(requirement))
        return
    spec = str(requirement.specifier)
    for item in requirement.specifier:
        if "+" in item.version:  # torch==2.1.0+cu118: the version, and the CUDA it names
            base, local = item.version.split("+", 1)
            spec = spec.replace(item.version, base)
            match = LOCAL_CUDA.match(local)
            if match:
                detected.cuda = detected.cuda or _cuda_from_tag(match.group(1))
    if key == "jax":  # jax[cuda12], jax[cuda12_pip], jax[cuda13-local]: the project chose the CUDA major
        majors = {m.group(1) for extra in requirement.extras for m in [JAX_CUDA_EXTRA.fullmatch(extra)] if m}
        if len(majors) == 1:
            detected.cuda = detected.cuda or f"{majors.pop()}.*"
    if _canonical(name) == "jaxlib":
        spec = ""  # jaxlib's numbers are not jax's (jax 0.3.4 with jaxlib 0.3.2): the jax release picks it
    if key in detected.frameworks and detected.frameworks[key] and spec:
        detected.frameworks[key] = f"{detected.frameworks[key]},{spec}"
    else:
        detected.frameworks[key] = spec or detected.frameworks.get(key, "")
    detected.found.append(f"{requirement} ({origin})")


def _requirement_lines(path: Path, root: Path, seen: set[Path]) -> list[tuple[str, str]]:
    if path in seen:
        return []
    seen.add(path)
    out = []
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            include = (path.parent / line.split(None, 1)[1].strip()).resolve()
            if include.is_file() and include.is_relative_to(root.resolve()):
                out += _requirement_lines(include, root, seen)
            continue
        if line.startswith("-"):
            continue  # index options, -e editables, constraints: not a framework pin
        out.append((line, f"{path.name}:{number}"))
    return out


def _from_requirements(root: Path, detected: Detected) -> None:
    files = sorted(p for p in root.glob("requirements*.txt") if p.is_file())
    seen: set[Path] = set()  # shared: requirements-dev.txt's "-r requirements.txt" is not read twice
    for path in files:
        detected.requirement_files.append(path.name)
        for line, origin in _requirement_lines(path.resolve(), root, seen):
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue  # URLs and other forms uv understands; not framework pins
            if requirement.marker is not None and not requirement.marker.evaluate(LINUX):
                continue
            _take(detected, requirement, origin)


def _from_pyproject(root: Path, detected: Detected) -> None:
    path = root / "pyproject.toml"
    if not path.is_file():
        return
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ConfigError(f"{path}: [project] must be a table")
    dependencies = project.get("dependencies", []) or []
    if not isinstance(dependencies, list):
        raise ConfigError(f"{path}: project.dependencies: expected a list of requirement strings")
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in dependencies:
        if not isinstance(line, str):
            raise ConfigError(f"{path}: project.dependencies: expected requirement strings, got {line!r}")
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate(LINUX):
            continue
        number = next((n for n, text in enumerate(lines, 1) if f'"{line}"' in text or f"'{line}'" in text), None)
        _take(detected, requirement, f"pyproject.toml:{number}" if number else "pyproject.toml")
    requires = project.get("requires-python")
    if requires is not None and not isinstance(requires, str):
        raise ConfigError(f"{path}: project.requires-python: expected a string like '>=3.10', got {requires!r}")
    if requires and detected.python is None:
        if parse_specifier(requires) is None:
            raise ConfigError(f"{path}: project.requires-python: {requires!r} is not a PEP 440 specifier")
        detected.python = requires
        detected.found.append(f"requires-python {requires} (pyproject.toml)")


def _from_python_version(root: Path, detected: Detected) -> None:
    path = root / ".python-version"
    if not path.is_file():
        return
    match = re.match(r"^\s*(?:cpython-|python)?([0-9]+\.[0-9]+)", path.read_text(encoding="utf-8", errors="replace"))
    if match:
        detected.python = match.group(1)  # an exact interpreter choice beats requires-python's range
        detected.found.append(f"Python {match.group(1)} (.python-version)")


_CONDA_SPEC = re.compile(r"^([A-Za-z0-9_.-]+)\s*(?:(==|>=|<=|>|<|!=|=)\s*([^\s=]+))?")


def _conda_to_pep440(op: str | None, version: str | None) -> str:
    if not op or not version:
        return ""
    if op == "=":  # conda "pkg=2.1" means 2.1.*
        return f"=={version}" if version.count(".") >= 2 else f"=={version}.*"
    return f"{op}{version}"


CONDA_FILES = ("environment.yml", "environment.yaml")


def environment_pip_lines(path: Path) -> list[str]:
    """The ``pip:`` list of a conda environment file: what its pip step installs, which the lock
    pins like a requirements file (conda's own packages are conda's, and not on PyPI by those names)."""
    data = _environment_data(path)
    lines = []
    for item in data.get("dependencies", []) or []:
        if isinstance(item, dict) and isinstance(item.get("pip"), list):
            lines += [str(line) for line in item["pip"]]
    return lines


def _environment_data(path: Path) -> dict:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with 'dependencies'")
    return data


def _from_environment_yml(root: Path, detected: Detected) -> None:
    path = next((root / n for n in CONDA_FILES if (root / n).is_file()), None)
    if path is None:
        return
    data = _environment_data(path)
    if environment_pip_lines(path):
        detected.conda_file = path.name
    dependencies = data.get("dependencies", []) or []
    if not isinstance(dependencies, list):
        raise ConfigError(f"{path}: dependencies: expected a list")
    for item in dependencies:
        if isinstance(item, dict):
            pip = item.get("pip", []) or []
            if not isinstance(pip, list):
                raise ConfigError(f"{path}: dependencies: the pip entry must be a list of requirements")
            for line in pip:
                try:
                    _take(detected, Requirement(str(line)), path.name + " (pip)")
                except InvalidRequirement:
                    continue
            continue
        match = _CONDA_SPEC.match(str(item).split("::")[-1])
        if not match:
            continue
        name, op, version = match.group(1).lower(), match.group(2), match.group(3)
        spec = _conda_to_pep440(op, version)
        if name == "python" and version:
            detected.python = detected.python or ".".join(version.split(".")[:2]).rstrip("*").rstrip(".")
            detected.found.append(f"python {version} ({path.name})")
        elif name in ("cudatoolkit", "cuda-version", "cuda-toolkit", "cuda") and version:
            detected.cuda = detected.cuda or ".".join(version.split(".")[:2])
            detected.found.append(f"{name} {version} ({path.name})")
        elif name in FRAMEWORK_NAMES or name in CPU_ONLY:
            try:
                _take(detected, Requirement(f"{FRAMEWORK_NAMES.get(name, name)}{spec}"), path.name)
            except InvalidRequirement:
                continue


def _through_carriers(detected: Detected) -> None:
    """Frameworks the project uses without naming them, unless it asked for that framework on the
    CPU (``tensorflow-cpu`` beside flax: JAX owns the GPU, TensorFlow only feeds it data)."""
    for framework, carriers in detected.carriers.items():
        if framework in detected.cpu_only or framework in detected.frameworks:
            continue
        requirement, where = carriers[0]
        detected.frameworks[framework] = ""
        detected.found.append(f"{framework} through {requirement} ({re.sub(r':[0-9]+$', '', where)})")


def _one_distribution_each(detected: Detected) -> None:
    """``tensorflow`` and ``tensorflow-cpu`` install the same files: a project naming both would get
    whichever pip installed last. That is a mistake in the input, said once, with both places."""
    for family in SAME_FILES:
        both = sorted(name for name in detected.named if name in family)
        if len(both) > 1:
            where = "; ".join(f"{name} ({', '.join(detected.named[name])})" for name in both)
            raise ConfigError(f"{where}: these distributions install the same files and overwrite each other; "
                              "keep one of them (tensorflow-cpu keeps the GPU for another framework)")


def detect_project(root: Path) -> Detected:
    detected = Detected()
    _from_requirements(root, detected)
    _from_pyproject(root, detected)
    _from_environment_yml(root, detected)
    _from_python_version(root, detected)
    _one_distribution_each(detected)
    _through_carriers(detected)
    return detected
