"""Old framework releases depend on packages PyPI has only as source distributions (pure Python):
tensorflow-gpu 1.15 pins gast==0.2.2, a tarball; on Python 3.6 termcolor 1.1.0 is one too; every jax
0.2.x/0.3.x is an sdist itself. Found with ``uv pip compile --no-build`` per release and Python
against PyPI (2026-11-28; the matrix rows' notes). The matrix row names them (``source_builds``,
with a PEP 508 marker where only some Pythons need them); the stack carries those its Python needs,
and the framework layer, the requirements layer and the lock let exactly those build from source:
everything else stays wheels only."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.errors import MatrixError
from cudaenv.images.render import BuildSettings, build_context, render_dockerfile
from cudaenv.matrix import load_matrix
from cudaenv.resolver.model import Constraints, Host, Stack
from cudaenv.resolver.resolve import resolve


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def stack_for(matrix, python: str, **frameworks: str) -> Stack:
    result = resolve(matrix, Constraints(python=SpecifierSet(f"=={python}"), frameworks=tuple(
        (name, SpecifierSet(spec)) for name, spec in frameworks.items())), Host("450.80.02"))
    assert result.ok, result.problems
    return result.stack


@pytest.mark.parametrize(("python", "expected"), [("3.7", ("gast",)), ("3.6", ("gast", "termcolor"))],
                         ids=["py37", "py36"])
def test_the_stack_carries_the_source_builds_its_python_needs(matrix, python, expected):
    assert stack_for(matrix, python, tensorflow="==1.15.5").source_builds == expected


def test_a_release_with_wheels_for_everything_needs_none(matrix):
    assert stack_for(matrix, "3.7", tensorflow="==1.14.0").source_builds == ()
    assert stack_for(matrix, "3.6", tensorflow="==1.14.0").source_builds == ("termcolor",)


def test_old_jax_builds_itself_from_its_sdist(matrix):
    assert stack_for(matrix, "3.8", jax="==0.2.12").source_builds == ("jax",)


def test_the_framework_layer_builds_exactly_those_from_source(matrix):
    stack = stack_for(matrix, "3.7", tensorflow="==1.15.5")
    text = render_dockerfile(build_context(stack, BuildSettings(project="old", build_from_source=("mypkg",),
                                                                pinned=("gast==0.2.2", "mypkg==1.0"))))
    framework_line = next(line for line in text.splitlines() if "uv pip install" in line and "--only-binary" in line)
    assert "--only-binary :all: --no-binary gast" in framework_line
    assert "--no-build" not in framework_line
    requirements = [line for line in text.splitlines() if "--no-binary mypkg" in line]
    assert requirements and "--no-binary gast" in requirements[0]  # the lock pins gast==0.2.2: the layer builds it


def test_a_stack_without_source_builds_keeps_no_build(matrix):
    stack = stack_for(matrix, "3.12", torch="==2.6.0")
    text = render_dockerfile(build_context(stack, BuildSettings(project="new")))
    assert stack.source_builds == () and "--no-binary" not in text and "--no-build" in text


def test_they_survive_the_lock_and_an_image_label_and_nothing_else_does():
    base = {"python": "3.7", "cuda": "10.0", "flavor": "runtime", "base_image": "nvidia/cuda:10.0-runtime-ubuntu18.04"}
    assert Stack.from_dict({**base, "source_builds": ["gast"]}).source_builds == ("gast",)
    assert "source_builds" not in Stack.from_dict(base).as_dict()
    for bad in (["gast --index-url=http://evil"], ["gast==0.2.2"], "gast", [""], [1]):
        with pytest.raises(ValueError, match="stack.source_builds"):
            Stack.from_dict({**base, "source_builds": bad})


@pytest.mark.parametrize("entry", ['"gast==0.2.2"', '"gast[extra]"', '"gast @ https://x/gast.tar.gz"', '"gast;"', "1"],
                         ids=["pinned", "extras", "url", "empty-marker", "number"])
def test_a_matrix_row_names_packages_with_at_most_a_marker(tmp_path, entry):
    (tmp_path / "jax.toml").write_text(
        '[[release]]\nversion = "0.99.0"\njaxlib = "0.99.0"\npython = ["3.12"]\nsource = "test ; read 2026-11-28"\n'
        f'source_builds = [{entry}]\n')
    with pytest.raises(MatrixError, match=r"jax.toml.*field 'source_builds': expected package names"):
        load_matrix(overlays=[tmp_path], use_cache=False)


@pytest.mark.network
def test_uv_locks_tensorflow_gpu_1_15_5_from_pypi_with_the_stacks_options(matrix, tmp_path):
    """The real question, asked of uv and PyPI: with the stack's options the framework resolves;
    with --no-build alone it does not (gast 0.2.2 has no wheel)."""
    from cudaenv.project.lock import uv_binary
    from cudaenv.project.wheels import manylinux_platform, no_build_options

    stack = stack_for(matrix, "3.7", tensorflow="==1.15.5")
    requirements = tmp_path / "in.txt"
    requirements.write_text("\n".join(stack.requirements) + "\n")

    def compile_with(options):
        return subprocess.run([uv_binary(), "pip", "compile", "--quiet", "--no-header", "--python-version", stack.python,
                               "--python-platform", manylinux_platform(stack), *options,
                               "--index-url", "https://pypi.org/simple", str(requirements)],
                              capture_output=True, text=True, timeout=300,
                              env={**{k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))},
                                   "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never",
                                   "UV_CACHE_DIR": str(Path(tmp_path) / "cache")})

    with_stack = compile_with(no_build_options(stack.source_builds))
    assert with_stack.returncode == 0, with_stack.stderr
    assert "gast==0.2.2" in with_stack.stdout and "tensorflow-gpu==1.15.5" in with_stack.stdout
    wheels_only = compile_with(["--no-build"])
    assert wheels_only.returncode != 0 and "gast" in wheels_only.stderr
