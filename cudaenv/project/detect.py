"""What an existing project already says it needs, for ``cudaenv init``.

Read, in this order: ``requirements*.txt`` (following ``-r`` includes inside the project),
``pyproject.toml`` (``[project] dependencies`` and ``requires-python``), ``.python-version``, and a
conda ``environment.yml``. Framework requirements become ``[frameworks]`` pins; a local version
label (``torch==2.1.0+cu118``) or a ``mxnet-cu112`` package name also says which CUDA was meant.

Frameworks that arrive through another package (accelerate, tf_keras, flax) and frameworks named
for the CPU (tensorflow-cpu beside JAX) follow ``cudaenv.project.intent``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from cudaenv.project.locate import ConfigError
from cudaenv.project.intent import CPU_ONLY, SAME_FILES, canonical as _canonical, carried_framework
from cudaenv.versions import parse_specifier

# PyPI / conda names -> cudaenv framework keys
FRAMEWORK_NAMES = {
    "torch": "torch", "pytorch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio",
    "tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow", "keras": "keras",
    "jax": "jax", "jaxlib": "jax", "mxnet": "mxnet",
}
MXNET_CUDA = re.compile(r"^mxnet-cu([0-9]+)(?:mkl)?$")
LOCAL_CUDA = re.compile(r"^cu([0-9]+)$")
# jaxlib's CUDA builds: +cuda101 .. +cuda112 (jaxlib 0.1.x), then +cuda11.cudnn82 / +cuda12.cudnn89 (a major)
JAXLIB_CUDA = re.compile(r"^cuda([0-9]+)(\.cudnn[0-9]+)?$")


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
    exact_pins: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # framework -> (version, where)
    # the build a PyTorch pin's local label names ("cu110", "cpu"), with its requirement and where: one
    # environment holds one build of torch, and torchvision/torchaudio must be built for the same CUDA
    torch_build: tuple[str, str, str] | None = None


JAX_CUDA_EXTRA = re.compile(r"cuda([0-9]+)(?:[-_](?:pip|local))?")


def _cuda_from_tag(digits: str) -> str:
    # cu118 -> 11.8, cu121 -> 12.1, cu92 -> 9.2, cu102 -> 10.2
    return f"{digits[:-1]}.{digits[-1]}"


def _take(detected: Detected, requirement: Requirement, where: str, on_cpu: frozenset[str] = frozenset()) -> None:
    """``where`` is "requirements.txt:3"; the notes name the file, messages the line. ``on_cpu``:
    frameworks the file's index options ask for on the CPU (PyTorch's /whl/cpu index)."""
    name = _canonical(requirement.name)  # tensorflow_gpu and Tensorflow.GPU are tensorflow-gpu
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
    if FRAMEWORK_NAMES.get(name) in on_cpu:  # only PyTorch has a CPU index: its companions mean torch too
        detected.cpu_only.add("torch")
        detected.other_requirements.append(str(requirement))
        detected.found.append(f"{requirement} ({origin}: on the CPU, from its index)")
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
    labels = {item.version.split("+", 1)[1].lower() for item in requirement.specifier if "+" in item.version}
    if key in ("torch", "torchvision", "torchaudio") and any(label.startswith("rocm") for label in labels):
        raise ConfigError(f"{where}: {str(requirement)[:80]!r} is PyTorch's ROCm build (AMD GPUs); cudaenv builds "
                          "NVIDIA CUDA stacks: pin a CUDA build (+cuXYZ) or the version alone")
    if key in ("torch", "torchvision", "torchaudio") and "cpu" in labels:  # torch==1.7.1+cpu: asked for on the CPU
        item = next(i for i in requirement.specifier if i.version.lower().endswith("+cpu"))
        _one_torch_build(detected, "cpu", f"{requirement.name}{item}", where)  # +cpu beside +cu110 is two builds
        detected.cpu_only.add("torch")
        detected.other_requirements.append(str(requirement))
        detected.found.append(f"{requirement} ({origin}: on the CPU, its +cpu build)")
        return
    spec = str(requirement.specifier)
    for item in requirement.specifier:
        if "+" in item.version:  # torch==2.1.0+cu118: the version, and the CUDA it names
            base, local = item.version.split("+", 1)
            spec = spec.replace(item.version, base)
            if key in ("torch", "torchvision", "torchaudio"):
                _one_torch_build(detected, local, f"{requirement.name}{item}", where)
            match = LOCAL_CUDA.match(local.lower())  # PEP 440 local labels are case-insensitive
            if match:
                detected.cuda = detected.cuda or _cuda_from_tag(match.group(1))
            jaxlib = JAXLIB_CUDA.match(local.lower()) if _canonical(name) == "jaxlib" else None
            if jaxlib:  # jaxlib==0.1.61+cuda110 names CUDA 11.0; 0.4.20+cuda11.cudnn86 the CUDA 11 series
                detected.cuda = detected.cuda or (f"{jaxlib.group(1)}.*" if jaxlib.group(2)
                                                  else _cuda_from_tag(jaxlib.group(1)))
    if key == "jax":  # jax[cuda12], jax[cuda12_pip], jax[cuda13-local]: the project chose the CUDA major
        majors = {m.group(1) for extra in requirement.extras for m in [JAX_CUDA_EXTRA.fullmatch(extra)] if m}
        if len(majors) == 1:
            detected.cuda = detected.cuda or f"{majors.pop()}.*"
    if _canonical(name) == "jaxlib":
        spec = ""  # jaxlib's numbers are not jax's (jax 0.3.4 with jaxlib 0.3.2): the jax release picks it
    exact = [item.version.split("+")[0] for item in requirement.specifier if item.operator in ("==", "===")
             and _canonical(name) != "jaxlib" and _is_version(item.version.split("+")[0])]  # 2.1.* is no version
    for version in exact:  # two exact pins of one framework: name both lines, not "no such release"
        other = next(((v, w) for v, w in detected.exact_pins.get(key, []) if Version(v) != Version(version)), None)
        if other is not None:
            raise ConfigError(f"{other[1]} and {where} contradict: {key}=={other[0]} and {key}=={version}; keep one "
                              "(or give each a marker for the Pythons it is meant for)")
        detected.exact_pins.setdefault(key, []).append((version, where))
    if key in detected.frameworks and detected.frameworks[key] and spec:
        detected.frameworks[key] = f"{detected.frameworks[key]},{spec}"
    else:
        detected.frameworks[key] = spec or detected.frameworks.get(key, "")
    detected.found.append(f"{requirement} ({origin})")


def _one_torch_build(detected: Detected, local: str, written: str, where: str) -> None:
    """Two PyTorch pins naming different builds (``torch==1.7.1+cu110`` beside ``torch==1.7.1+cu101``
    or ``torchvision==0.8.2+cu101``): no environment holds both (a version has one local label, and
    torchvision refuses to load beside a torch built for another CUDA), so the input is a mistake."""
    first = detected.torch_build
    if first is None:
        detected.torch_build = (local.lower(), written, where)
    elif first[0] != local.lower():
        raise ConfigError(f"{first[2]} and {where} name different PyTorch builds: {first[1]} (+{first[0]}) and "
                          f"{written} (+{local.lower()}); one environment holds one build: name the same one "
                          f"(+{first[0]} or +{local.lower()}) on both lines")


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _from_requirements(root: Path, detected: Detected) -> None:
    """``requirements*.txt`` at the root, read as pip reads them (``cudaenv.project.reqfile``):
    includes followed, markers evaluated for the project's Python."""
    from cudaenv.project.reqfile import read_requirement_files

    files = sorted(p.name for p in root.glob("requirements*.txt") if p.is_file())
    detected.requirement_files += files
    if not files:
        return
    from cudaenv.project.intent import cpu_frameworks

    read = read_requirement_files(root, files)
    python = _marker_python(detected, read)
    on_cpu = cpu_frameworks((read.index_url, *read.extra_index_urls, *read.find_links))
    for line in read.requirements(python):
        _take(detected, line.requirement, line.where, on_cpu)


def _marker_python(detected: Detected, read) -> str | None:
    """The Python the files' markers are evaluated for: the project's own (``.python-version``,
    ``requires-python``) when it names one; otherwise the newest Python it admits, and where the
    lines differ from one Python to another (``torch==2.1.2; python_version < "3.12"`` beside
    ``torch==2.5.1; python_version >= "3.12"``), the project's Python is narrowed to the Pythons
    that read the files the same way, so that the lock's Python reads them so too."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from cudaenv.project.reqfile import CANDIDATE_PYTHONS

    wanted = detected.python
    if wanted and re.fullmatch(r"[0-9]+\.[0-9]+", wanted):
        return wanted
    try:
        admitted = SpecifierSet(wanted or "")
    except InvalidSpecifier:
        admitted = SpecifierSet()
    candidates = [p for p in CANDIDATE_PYTHONS if admitted.contains(f"{p}.0", prereleases=True)]
    if not candidates or not read.pythons_markers_split():
        return None
    reading = {p: tuple(line.where for line in read.requirements(p)) for p in candidates}
    newest = candidates[0]
    same = [p for p in candidates if reading[p] == reading[newest]]
    if len(same) < len(candidates):  # the newest Python's reading, from its oldest Python on
        narrowed = f">={same[-1]}"
        detected.python = f"{wanted},{narrowed}" if wanted else narrowed
        detected.found.append(f"Python {narrowed} (the requirement files' markers pick these lines for it)")
    return newest


def _python_from_pyproject(root: Path, detected: Detected) -> list:
    """``requires-python`` (or Poetry's ``python``) when nothing more exact named the Python; the
    dependencies, for ``_from_pyproject`` once the Python their markers are read for is known."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return []
    from cudaenv.project.pyproject import read_pyproject

    lines, requires = read_pyproject(path)
    if requires and detected.python is None:
        if parse_specifier(requires) is None:
            raise ConfigError(f"{path}: project.requires-python: {requires!r} is not a PEP 440 specifier")
        detected.python = requires
        detected.found.append(f"requires-python {requires} (pyproject.toml)")
    return lines


def _from_pyproject(lines: list, detected: Detected) -> None:
    from cudaenv.project.reqfile import RequirementFiles

    python = _marker_python(detected, RequirementFiles(lines=tuple(lines)))
    for line in RequirementFiles(lines=tuple(lines)).requirements(python):
        _take(detected, line.requirement, line.where)


def _from_python_version(root: Path, detected: Detected) -> None:
    path = root / ".python-version"
    if not path.is_file():
        return
    match = re.match(r"^\s*(?:cpython-|python)?([0-9]+\.[0-9]+)",
                     path.read_text(encoding="utf-8-sig", errors="replace"))
    if match:
        detected.python = match.group(1)  # an exact interpreter choice beats requires-python's range
        detected.found.append(f"Python {match.group(1)} (.python-version)")


# conda match specs: "pytorch=1.7.1=build", "python>=3.6,<3.8", and the space-separated form
# "pytorch 1.7.1 py3.8_cuda11.0_0" (name, version, build), whose bare version is exact and whose
# "1.7*" is the series (https://docs.conda.io/projects/conda-build/en/latest/resources/package-spec.html)
_CONDA_SPEC = re.compile(r"^([A-Za-z0-9_.-]+)(?:\s*(==|>=|<=|>|<|!=|=)\s*([^\s=]+)|\s+([0-9][^\s=]*))?")


def _conda_to_pep440(op: str | None, version: str | None) -> str:
    if not op or not version:
        return ""
    if op == "=":  # conda "pkg=2.1" means 2.1.*
        return f"=={version}" if version.count(".") >= 2 else f"=={version}.*"
    return f"{op}{version}"


def _conda_bound(op: str, version: str, where: str, name: str) -> str:
    """A conda Python or CUDA spec as cudaenv's constraint: ``python=3.7`` and ``python==3.7.3``
    name the minor (``3.7``); any other operator keeps its range (``python<3.8`` is not 3.8)."""
    if op in ("=", "=="):
        return ".".join(version.split(".")[:2]).rstrip("*").rstrip(".")
    text = f"{op}{version}"
    if parse_specifier(text) is None:
        example = ">=3.8,<3.11" if name == "python" else ">=11.8,<13"
        raise ConfigError(f"{where}: {name}{text}: expected a version or a range such as '{name}{example}'")
    return text


CONDA_FILES = ("environment.yml", "environment.yaml")


def environment_pip(path: Path, root: Path):
    """The ``pip:`` list of a conda environment file, read as pip reads a requirement file in the
    environment file's folder (conda runs its pip step there): what the lock pins like a
    requirements file, each line named ``environment.yml:LINE``. Conda's own packages are conda's,
    and not on PyPI by those names."""
    from cudaenv.project.reqfile import read_requirement_items

    items = []
    for item in _environment_dependencies(path):
        if isinstance(item.value, list):  # the pip entry
            items += [(entry.start_mark.line + 1, entry.value) for entry in item.value]
    label = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()
    return read_requirement_items(root, path.parent, items, label)


def _environment_dependencies(path: Path) -> list:
    """The YAML nodes of ``dependencies`` (scalars, and the ``pip:`` mapping's list), checked: a
    conda file that is not a mapping, or whose dependencies are not a list of package specs and
    one ``pip:`` list, is one line naming the file and line."""
    import yaml

    try:
        root = yaml.compose(path.read_bytes().decode("utf-8").removeprefix("\ufeff"), Loader=yaml.SafeLoader)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: invalid YAML: nested too deeply") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if root is None:
        return []
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{path.name}:{root.start_mark.line + 1}: expected a mapping with 'dependencies'")
    found = next((value for key, value in root.value if getattr(key, "value", None) == "dependencies"), None)
    if found is None or (isinstance(found, yaml.ScalarNode) and found.tag.endswith(":null")):
        return []
    where = f"{path.name}:{found.start_mark.line + 1}"
    if not isinstance(found, yaml.SequenceNode):
        raise ConfigError(f"{where}: dependencies: expected a list of package specs, got {found.value!r}"[:200])
    out = []
    for item in found.value:
        line = f"{path.name}:{item.start_mark.line + 1}"
        if isinstance(item, yaml.ScalarNode):
            out.append(item)
        elif isinstance(item, yaml.MappingNode) and len(item.value) == 1 and item.value[0][0].value == "pip":
            pip = item.value[0][1]
            if isinstance(pip, yaml.ScalarNode) and pip.tag.endswith(":null"):
                continue
            if not isinstance(pip, yaml.SequenceNode) or not all(isinstance(e, yaml.ScalarNode) for e in pip.value):
                raise ConfigError(f"{line}: dependencies: the pip entry must be a list of requirement lines")
            out.append(pip)
        else:
            raise ConfigError(f"{line}: dependencies: expected a package spec ('numpy=1.26') or a pip: list")
    return out


CONDA_CUDA = ("cudatoolkit", "cuda-version", "cuda-toolkit", "cuda", "pytorch-cuda", "cuda-runtime", "cuda-cudart")


def _from_environment_yml(root: Path, detected: Detected) -> None:
    path = next((root / n for n in CONDA_FILES if (root / n).is_file()), None)
    if path is None:
        return
    pip = environment_pip(path, root)
    if pip.lines or pip.files:
        detected.conda_file = path.name
    for item in _environment_dependencies(path):
        if isinstance(item.value, list):
            continue
        match = _CONDA_SPEC.match(str(item.value).split("::")[-1])
        if not match:
            continue
        name, op, version = match.group(1).lower(), match.group(2), match.group(3)
        if match.group(4):  # "pytorch 1.7.1": exact; "pytorch 1.7*": that series
            op, version = "==", re.sub(r"\.?\*$", ".*", match.group(4))
        spec = _conda_to_pep440(op, version)
        where = f"{path.name}:{item.start_mark.line + 1}"
        if name == "python" and version:
            detected.python = detected.python or _conda_bound(op, version, where, "python")
            detected.found.append(f"python {version if op in ('=', '==') else op + version} ({path.name})")
        elif name in CONDA_CUDA and version:  # pytorch-cuda=11.8 is PyTorch's conda spelling
            detected.cuda = detected.cuda or _conda_bound(op, version, where, name)
            detected.found.append(f"{name} {version if op in ('=', '==') else op + version} ({path.name})")
        elif name in FRAMEWORK_NAMES or name in CPU_ONLY:
            pip_name = name if name == "jaxlib" else FRAMEWORK_NAMES.get(name, name)  # jaxlib's numbers are not jax's
            try:
                _take(detected, Requirement(f"{pip_name}{spec}"), where)
            except InvalidRequirement:
                continue
    from cudaenv.project.intent import cpu_frameworks

    python = _marker_python(detected, pip)
    on_cpu = cpu_frameworks((pip.index_url, *pip.extra_index_urls, *pip.find_links))
    for line in pip.requirements(python):
        _take(detected, line.requirement, line.where, on_cpu)


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
    _from_python_version(root, detected)  # the Python first: markers are read for it
    pyproject = _python_from_pyproject(root, detected)
    _from_requirements(root, detected)
    _from_pyproject(pyproject, detected)
    _from_environment_yml(root, detected)
    _one_distribution_each(detected)
    _through_carriers(detected)
    return detected
