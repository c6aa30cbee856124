"""A cross build (issue 35, item 5): an image for another CPU than the build machine's, whose RUN
steps run emulated (qemu-user through binfmt_misc). Resolving and downloading the OS packages and
installing the wheels move to stages FROM the same OS for the build machine ($BUILDPLATFORM); the
image's own stages keep only what must run on its CPU. A native render does not change at all (the
goldens pin it), and the platform is one more field of BuildSettings, as of BuildRequest."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from cudaenv.images import publish, render, stackbase
from cudaenv.images.render import BuildSettings, build_context, build_os_image, cross_build, render_dockerfile
from cudaenv.matrix import load_matrix
from cudaenv.project.wheels import manylinux_platform, uv_python_version
from cudaenv.resolver.model import Constraints
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import resolve_target
from cudaenv.versions import parse_specifier

ARM64 = "linux/arm64"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def gh200_stack(matrix, *, python="3.12", cuda=None, flavor="auto", **frameworks):
    target = resolve_target(matrix, driver="580.65.06", gpus=("NVIDIA GH200 480GB",), compute_capabilities=(), detect=False)
    constraints = Constraints(python=parse_specifier(python), cuda=parse_specifier(cuda) if cuda else None, flavor=flavor,
                              frameworks=tuple((n, parse_specifier(s)) for n, s in frameworks.items()))
    result = resolve(matrix, constraints, target.host)
    assert result.ok, [p.message for p in result.problems]
    assert result.stack.arch == "aarch64"
    return result.stack


@pytest.fixture(scope="module")
def torch_stack(matrix):
    return gh200_stack(matrix, torch="==2.9.0")


@pytest.fixture(scope="module")
def runtime_stack(matrix):
    return gh200_stack(matrix, python="3.11", cuda="==12.8", flavor="runtime")


def settings(**values) -> BuildSettings:
    return BuildSettings(**{"project": "cross", "framework_index": "https://download.pytorch.org/whl/cu130",
                            "pinned": ("numpy==2.1.3",), **values})


def stages(text: str) -> dict[str, list[str]]:
    """Each stage's FROM line and instructions (continuations joined), by stage name."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    for line in joined.splitlines():
        match = re.match(r"FROM (?:--platform=\S+ )?\S+ AS (\S+)$", line)
        if match:
            current = found.setdefault(match.group(1), [line])
        elif current is not None and re.match(r"^[A-Z]+ ", line):
            current.append(line)
    return found


def build_machine_stages(found: dict[str, list[str]]) -> set[str]:
    """Stages that run on the build machine: FROM --platform=$BUILDPLATFORM, or FROM one of those."""
    native: set[str] = set()
    for name, lines in found.items():
        source = lines[0].split()[-3]
        if "--platform=$BUILDPLATFORM" in lines[0] or source in native:
            native.add(name)
    return native


# --- when a build is a cross build ------------------------------------------------------------------


def test_a_native_build_has_no_cross_plan(torch_stack):
    assert cross_build(torch_stack, settings()) is None


def test_the_classic_builder_emulates_every_step_as_before(torch_stack):
    """$BUILDPLATFORM and bind mounts from stages are BuildKit's: without it nothing changes."""
    assert cross_build(torch_stack, settings(platform=ARM64, buildkit=False)) is None
    assert render_dockerfile(build_context(torch_stack, settings(platform=ARM64, buildkit=False))) == \
        render_dockerfile(build_context(torch_stack, settings(buildkit=False)))


def test_a_platform_that_is_not_the_stacks_is_refused(torch_stack):
    with pytest.raises(ValueError, match="linux/amd64.*aarch64"):
        cross_build(torch_stack, settings(platform="linux/amd64"))


def test_the_wheels_are_the_ones_the_lock_pinned_for_the_target(torch_stack):
    plan = cross_build(torch_stack, settings(platform=ARM64))
    assert plan["python_platform"] == manylinux_platform(torch_stack) == "aarch64-manylinux_2_28"
    assert plan["python_version"] == uv_python_version(torch_stack) == "3.12"
    assert plan["arch"] == "aarch64" and plan["dpkg_arch"] == "arm64"


@pytest.mark.parametrize(("base", "expected"), [
    ("nvidia/cuda:12.8.2-runtime-ubuntu22.04", "ubuntu:22.04"),
    ("nvidia/cuda:12.9.1-cudnn-devel-ubuntu24.04", "ubuntu:24.04"),
    ("nvidia/cuda:11.8.0-runtime-ubuntu20.04", "ubuntu:20.04"),
    ("python:3.12-slim", "python:3.12-slim"),
    ("nvidia/cuda:12.8.2-runtime-rockylinux9", "nvidia/cuda:12.8.2-runtime-rockylinux9"),
])
def test_the_build_machine_runs_the_same_os_release(base, expected):
    assert build_os_image(base) == expected


# --- what runs where --------------------------------------------------------------------------------


def test_the_build_machine_stages_start_from_the_same_images_for_its_own_platform(runtime_stack):
    text = render_dockerfile(build_context(runtime_stack, settings(platform=ARM64, base_registry="mirror.example.com")))
    assert "FROM --platform=$BUILDPLATFORM mirror.example.com/library/ubuntu:22.04 AS build-os" in text
    assert re.search(r"^FROM --platform=\$BUILDPLATFORM mirror\.example\.com/astral-sh/uv:\S+ AS build-uv$", text, re.M)
    assert "FROM mirror.example.com/nvidia/cuda:12.8.2-runtime-ubuntu22.04 AS base" in text  # the image itself: target


def test_apt_resolves_and_downloads_on_the_build_machine_and_the_image_only_installs(torch_stack):
    found = stages(render_dockerfile(build_context(torch_stack, settings(platform=ARM64, system_packages=("jq",)))))
    native = build_machine_stages(found)
    for name, lines in found.items():
        runs = [line for line in lines if line.startswith("RUN ")]
        if name in native:
            continue
        assert not any("apt-get" in run and " update" in run for run in runs), name
        assert not any("--download-only" in run for run in runs), name
    debs = " ".join(found["system-debs"])
    assert "-o APT::Architecture=arm64" in debs and "--download-only" in debs and "jq" in debs
    # the image as it stands before the layer: its sources, keyrings and dpkg status
    assert "--mount=type=bind,from=frameworks,target=/tmp/cudaenv-target" in debs
    assert "Dir::State::status=/tmp/cudaenv-target/var/lib/dpkg/status" in debs
    install = " ".join(found["system"])
    assert "--mount=type=bind,from=system-debs,source=/tmp/cudaenv-debs" in install
    assert 'apt-get install -y --no-install-recommends "$@"' in install and "apt-mark auto" in install


def test_uv_installs_every_wheel_on_the_build_machine_for_the_target_platform(torch_stack):
    text = render_dockerfile(build_context(torch_stack, settings(platform=ARM64, jupyter=True)))
    found = stages(text)
    native = build_machine_stages(found)
    installs = {name: [run for run in lines if "uv pip install" in run] for name, lines in found.items()}
    assert all(name in native for name, runs in installs.items() if runs)
    for name in ("jupyter-wheels", "requirements-wheels"):
        (run,) = installs[name]
        assert "--python-platform aarch64-manylinux_2_28 --python-version 3.12 --no-build" in run
        assert "venv-delta.py before /tmp/cudaenv-target" in run and "venv-delta.py after aarch64" in run
    assert "COPY --from=requirements-wheels /tmp/cudaenv-wheels/venv/ /opt/venv/" in found["requirements"]


def test_the_frameworks_install_on_the_build_machine_into_a_venv_that_holds_nothing_yet(torch_stack):
    """Layer 3 follows the venv's creation: nothing to read from the image, so it runs at once."""
    text = render_dockerfile(build_context(torch_stack, replace(settings(platform=ARM64), pinned=())))
    found = stages(text)
    (run,) = [line for line in found["frameworks-wheels"] if line.startswith("RUN ")]
    assert "torch==2.9.0" in run and "from=" not in run and "venv-delta.py before &&" in run
    assert [line.split()[0] for line in found["frameworks"][1:3]] == ["SHELL", "COPY"]  # nothing to drop first
    assert not any("uninstall" in line for line in found["frameworks"])


def test_each_image_stage_continues_the_one_before(torch_stack):
    text = render_dockerfile(build_context(torch_stack, settings(platform=ARM64, jupyter=True, system_packages=("jq",))))
    found = stages(text)
    image = [name for name in found if name not in build_machine_stages(found)]
    assert image == ["uv", "base", "essentials", "frameworks", "jupyter", "system", "requirements"]
    for before, after in zip(image[1:], image[2:]):
        assert found[after][0] == f"FROM {before} AS {after}"
    last = text[text.rindex("\nFROM "):]
    assert "USER ${CUDAENV_UID}:${CUDAENV_GID}" in last and "useradd" in last  # the rest goes on in the last one


def test_what_the_project_compiles_is_built_in_the_image_and_the_rest_on_the_build_machine(torch_stack):
    text = render_dockerfile(build_context(torch_stack, settings(
        platform=ARM64, pinned=("flash-attn==2.6.3", "ninja==1.11.1.1"), build_from_source=("flash-attn",))))
    found = stages(text)
    (wheels,) = [run for run in found["requirements-wheels"] if "uv pip install" in run]
    assert "--no-deps --no-build" in wheels and "ninja==1.11.1.1" in wheels and "flash-attn" not in wheels
    (compiled,) = [run for run in found["requirements"] if "uv pip install" in run]
    assert "--no-binary flash-attn" in compiled and "flash-attn==2.6.3" in compiled and "ninja==1.11.1.1" in compiled
    assert "--python-platform" not in compiled


def test_a_stacks_own_source_builds_may_build_on_the_build_machine(matrix):
    """Frameworks' sdist-only dependencies are pure Python (gast): built anywhere they are the same,
    and the helper refuses any that came out for the build machine's CPU."""
    stack = replace(gh200_stack(matrix, torch="==2.9.0"), source_builds=("gast",))
    text = render_dockerfile(build_context(stack, settings(platform=ARM64)))
    (run,) = [line for line in stages(text)["frameworks-wheels"] if "uv pip install" in line]
    assert "--only-binary :all: --no-binary gast" in run


def test_a_project_on_its_stack_base_reads_what_the_base_holds(torch_stack):
    text = render_dockerfile(build_context(torch_stack, settings(
        platform=ARM64, stack_base="cudaenv-base:hash-0123456789abcdef", stack_base_name="cudaenv-base:x")))
    found = stages(text)
    assert found["base"][0] == "FROM cudaenv-base:hash-0123456789abcdef AS base"
    assert "--mount=type=bind,from=base,source=/opt/venv,target=/tmp/cudaenv-target" in " ".join(found["requirements-wheels"])
    assert "build-os" in found and "frameworks-wheels" not in found


def test_a_project_without_wheels_or_packages_of_its_own_needs_no_build_machine_stage(torch_stack):
    text = render_dockerfile(build_context(torch_stack, settings(
        platform=ARM64, pinned=(), stack_base="cudaenv-base:hash-0123456789abcdef", stack_base_name="cudaenv-base:x")))
    assert "$BUILDPLATFORM" not in text


def test_a_base_without_frameworks_makes_no_python_on_the_build_machine(runtime_stack):
    text = render_dockerfile(build_context(runtime_stack, settings(platform=ARM64)), template="base.Dockerfile.j2")
    assert "AS build-os" in text and "AS build-python" not in text


# --- the platform flows as one more field -----------------------------------------------------------


def test_a_stack_base_has_one_identity_on_every_build_machine(matrix, torch_stack):
    """Its content hash is of the native render: an arm64 machine and an x86_64 one name the same base."""
    native = stackbase.plan_base(matrix, torch_stack, settings())
    cross = stackbase.plan_base(matrix, torch_stack, settings(platform=ARM64))
    assert native.content_hash == cross.content_hash == publish.content_hash(matrix, torch_stack)
    assert "$BUILDPLATFORM" in cross.dockerfile() and "$BUILDPLATFORM" not in native.dockerfile()
    assert cross.request(Path("/tmp")).platform == ARM64 and native.request(Path("/tmp")).platform is None


def test_publish_renders_the_base_it_builds_for_this_machine(matrix, torch_stack, monkeypatch):
    monkeypatch.setattr("cudaenv.hosts.target.machine_arch", lambda: "x86_64")
    (item,) = publish.plan_items(matrix, [torch_stack], "registry.example.com")
    assert "$BUILDPLATFORM" in item.dockerfile and item.content_hash == publish.content_hash(matrix, torch_stack)
    monkeypatch.setattr("cudaenv.hosts.target.machine_arch", lambda: "aarch64")
    (item,) = publish.plan_items(matrix, [torch_stack], "registry.example.com")
    assert "$BUILDPLATFORM" not in item.dockerfile


def test_every_cross_value_is_checked_before_it_reaches_the_dockerfile(torch_stack):
    context = build_context(torch_stack, settings(platform=ARM64))
    context["cross"] = {**context["cross"], "python_platform": "aarch64-manylinux_2_28\nRUN evil"}
    from cudaenv.errors import UserError

    with pytest.raises(UserError, match="line break"):
        render_dockerfile(context)
