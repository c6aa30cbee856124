"""JupyterLab is in the image only when asked, pinned, in a layer of its own right after the
frameworks: projects with and without it share every stack layer before it."""

from __future__ import annotations

from cudaenv.matrix import load_matrix
from cudaenv.images.render import JUPYTERLAB_VERSION, BuildSettings, build_context, render_dockerfile
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import resolve

from tests.unit.render.test_hostile_values_stay_quoted import instructions


def rendered(jupyter: bool) -> str:
    stack = resolve(load_matrix(overlays=[]), Constraints(cuda=None), Host(driver="550.54.15")).stack
    return render_dockerfile(build_context(stack, BuildSettings(project="p", system_packages=("less",), jupyter=jupyter)))


def test_without_asking_there_is_no_jupyter():
    assert "jupyterlab" not in rendered(False)


def test_jupyter_is_pinned_and_comes_right_after_the_stack_layers():
    with_it, without = rendered(True), rendered(False)
    assert f"jupyterlab=={JUPYTERLAB_VERSION}" in with_it
    lines_with = with_it.splitlines()
    comment = next(i for i, line in enumerate(lines_with) if line.startswith("# JupyterLab"))
    system = next(i for i, line in enumerate(lines_with) if line.strip().endswith("less"))  # the apt package line
    assert comment < system  # before the project's own layers
    # everything before the Jupyter layer is byte for byte the image without it: the stack stays shared
    assert without.splitlines()[:comment] == lines_with[:comment]
    assert instructions(with_it).count("RUN") == instructions(without).count("RUN") + 1
