"""``cudaenv init``: turn what a project already declares into a commented ``cudaenv.toml``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tomlkit
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudaenv.project.config import sanitize_name
from cudaenv.project.detect import Detected
from cudaenv.resolver.model import COMPANIONS, Constraints, Host, Stack
from cudaenv.versions import parse_specifier


@dataclass(frozen=True)
class InitPlan:
    constraints: Constraints
    framework_specs: dict[str, str]  # what the config will say for each framework


def constraints_from_detected(detected: Detected) -> InitPlan:
    frameworks, texts = [], {}
    for name, text in detected.frameworks.items():
        spec = parse_specifier(text) if text else SpecifierSet()
        if spec is None:
            spec, text = SpecifierSet(), ""
        frameworks.append((name, spec))
        texts[name] = text
    python = parse_specifier(detected.python) if detected.python else None
    cuda = parse_specifier(detected.cuda) if detected.cuda else None
    from cudaenv.project.intent import FRAMEWORK_PACKAGES

    packages = tuple(sorted((FRAMEWORK_PACKAGES[n], n) for n in detected.named if n in FRAMEWORK_PACKAGES))
    return InitPlan(Constraints(python=python, frameworks=tuple(frameworks), cuda=cuda, packages=packages), texts)


def _range_for(version: str) -> str:
    """An unpinned framework gets the resolved release's minor as a floor, below the next major."""
    v = Version(version)
    return f">={v.major}.{v.minor},<{v.major + 1}"


def target_table(host: Host, known_gpu: Callable[[str], bool] = lambda name: True, *, hints: bool = True):
    """A target's table as the configuration spells it ([target] or [targets.NAME]): what
    ``cudaenv.project.config`` reads back to the same host."""
    target = tomlkit.table()
    if host.cpu:
        target.add("gpus", "none")
        target["gpus"].comment("no GPU: CPU builds only")
        if host.arch is not None and host.arch != Host().platform:
            target.add("arch", host.arch)
        return target
    if host.driver:
        target.add("driver", host.driver)
    elif hints:
        target.add(tomlkit.comment('driver = "535.104.05"   # the host(s) the stack must run on'))
    if host.gpus:
        # names the matrix knows; anything else (a GPU newer than cudaenv's data) by its capability
        named = [g.name for g in host.gpus if g.name and known_gpu(g.name)]
        by_cc = [g.compute_capability for g in host.gpus if not (g.name and known_gpu(g.name))]
        if named:
            target.add("gpus", named)
        if by_cc:
            target.add("compute_capabilities", by_cc)
    elif hints:
        target.add(tomlkit.comment('gpus = ["A100"]'))
    # the CPU the stack was resolved for, where the GPUs written above do not imply it (an A100 in an
    # Arm server, --arch aarch64, or this machine's uname -m): `cudaenv lock` reads the target only, and
    # without it would lock the x86_64 stack
    if host.platform != Host(gpus=host.gpus).platform:
        target.add("arch", host.platform)
    return target


def add_target(text: str, name: str, host: Host, known_gpu: Callable[[str], bool] = lambda n: True, *,
               in_pyproject: bool = False) -> str:
    """``text`` (cudaenv.toml, or pyproject.toml with [tool.cudaenv]) with [targets.NAME] written
    or replaced by ``host``'s description, everything else as it was (tomlkit keeps comments and
    layout). A single [target] becomes [targets.default] first: the two never stand side by side."""
    doc = tomlkit.parse(text)
    root = doc["tool"]["cudaenv"] if in_pyproject else doc
    if "targets" not in root:
        targets = tomlkit.table(is_super_table=True)
        if "target" in root:
            targets["default"] = root["target"]
            del root["target"]
        root["targets"] = targets
    targets = root["targets"]
    targets[name] = target_table(host, known_gpu, hints=False)
    return tomlkit.dumps(doc)


def render_config(root_name: str, detected: Detected, plan: InitPlan, stack: Stack, host: Host, requirement_files: list[str],
                  known_gpu: Callable[[str], bool] = lambda name: True, target_name: str | None = None) -> str:
    doc = tomlkit.document()
    doc.add(tomlkit.comment("cudaenv.toml: what this project needs from CUDA. Written by `cudaenv init`;"))
    doc.add(tomlkit.comment("edit freely, then run `cudaenv lock`. Schema: see cudaenv's README (Configuration)."))
    doc.add(tomlkit.nl())

    project = tomlkit.table()
    project.add("name", sanitize_name(root_name))
    project["name"].comment("image name")
    if detected.python:  # only what the project itself constrains: the resolved version lives in the lock
        project.add("python", detected.python)
        project["python"].comment("detected")
    project.add("requirements", requirement_files)
    if not detected.python:
        project.add(tomlkit.comment(f'python = "{stack.python}"   # optional; unset, cudaenv picks the newest Python '
                                    f'the frameworks support (now {stack.python}, recorded in cudaenv.lock)'))
    doc["project"] = project

    # every framework and companion the project names, so that `cudaenv lock` resolves what init
    # resolved: an unpinned framework gets its resolved minor as a floor (the newest release these
    # constraints allow is the one resolved), an unpinned companion "any" (it follows its framework,
    # but the project uses it: torch releases without a torchaudio are not for this project)
    frameworks = tomlkit.table()
    resolved = dict(stack.frameworks)
    for name, spec in plan.framework_specs.items():
        version = resolved.get(name)
        if spec:
            text = spec
        elif name in COMPANIONS or version is None:
            text = "any"
        else:
            text = _range_for(version)
        frameworks.add(name, text)
        frameworks[name].comment(f"resolved: {version}" if version else f"follows {COMPANIONS.get(name, name)}")
    doc["frameworks"] = frameworks

    cuda = tomlkit.table()
    if detected.cuda:
        cuda.add("version", detected.cuda)
        cuda["version"].comment("named by the requirements (a +cu118 build, a jax[cuda12] extra)")
    elif stack.cpu:
        cuda.add(tomlkit.comment('version = ">=12.6"   # optional; the target has no GPU, so no CUDA was resolved'))
    else:
        cuda.add(tomlkit.comment(f'version = ">={stack.cuda}"   # optional; resolved: CUDA {stack.cuda}'))
    if stack.cudnn:
        cuda.add(tomlkit.comment(f'cudnn = ">={stack.cudnn}"   # optional; resolved: cuDNN {stack.cudnn_version}'))
    doc["cuda"] = cuda

    if target_name is None:
        doc["target"] = target_table(host, known_gpu)
    else:  # `init --target NAME`: the project's first named target
        targets = tomlkit.table(is_super_table=True)
        targets[target_name] = target_table(host, known_gpu)
        doc["targets"] = targets

    build = tomlkit.table()
    build.add("flavor", "auto")
    build["flavor"].comment(f"auto | wheels | runtime | devel (resolved: {stack.flavor})")
    build.add("system_packages", [])
    build.add(tomlkit.comment('base_registry = ""   # mirror or private registry prefix for base images'))
    build.add(tomlkit.comment('ca_cert = ""         # CA bundle for builds behind a TLS-intercepting proxy'))
    build.add(tomlkit.comment('python_index = ""    # a PyPI mirror (credentials: CUDAENV_PYTHON_INDEX_USERNAME/_PASSWORD or ~/.netrc)'))
    build.add(tomlkit.comment('framework_index = "" # where framework wheels come from: PyPI, PyTorch\'s whl/cu126, or a mirror'))
    build.add(tomlkit.comment('framework_index_mirrors = "" # for a mirror: "pypi" or the PyTorch index it mirrors'))
    doc["build"] = build

    run = tomlkit.table()
    run.add("gpus", "none" if stack.cpu else "all")  # a project for a machine without a GPU asks for none
    run["gpus"].comment("all | none | auto | a count | device indices or UUIDs")
    run.add("shm_size", "8g")
    run["shm_size"].comment("PyTorch DataLoader workers need shared memory")
    run.add("command", [])
    doc["run"] = run
    return tomlkit.dumps(doc)
