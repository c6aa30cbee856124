"""Issue 34, item 3: a Python uv cannot download (3.6, 3.7) comes from the Ubuntu base's own archive
(matrix/images.toml [[os]]). The stack names the packages; the image installs them with the OS
essentials, and the Python layer then finds ``python3.7`` on PATH and makes the venv from it. The
packages come back from a lock or an image label, so they are checked as Debian names there too.

The same archive decides the init: Ubuntu 18.04's has no tini, so its images run dumb-init; an OS
whose archive has neither (16.04) is never built on."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.images.render import BuildSettings, build_context, render_dockerfile
from cudaenv.matrix import load_matrix
from cudaenv.resolver.model import Constraints, Host, Stack
from cudaenv.resolver.resolve import resolve


@pytest.fixture(scope="module")
def tf24_py36():
    matrix = load_matrix(overlays=[])
    result = resolve(matrix, Constraints(python=SpecifierSet("==3.6"),
                                         frameworks=(("tensorflow", SpecifierSet("==2.4.0")),)), Host("535.104.05"))
    assert result.ok
    return result.stack


def test_the_archive_python_is_installed_with_the_os_essentials(tf24_py36):
    text = render_dockerfile(build_context(tf24_py36, BuildSettings(project="old")))
    essentials = text[text.index("ENV DEBIAN_FRONTEND"):text.index("COPY --from=uv")]
    assert "ca-certificates dumb-init python3.6 python3-distutils" in essentials  # 18.04 has no tini
    assert 'ENTRYPOINT ["/usr/bin/dumb-init", "--"]' in text
    # the Python layer prefers the interpreter on PATH, so uv never tries to download 3.6
    assert "command -v python3.6 " in text[text.index("COPY --from=uv"):]


def test_a_stack_uv_serves_installs_no_archive_python():
    matrix = load_matrix(overlays=[])
    stack = resolve(matrix, Constraints(python=SpecifierSet("==3.8"),
                                        frameworks=(("tensorflow", SpecifierSet("==2.4.0")),)), Host("535.104.05")).stack
    text = render_dockerfile(build_context(stack, BuildSettings(project="new")))
    essentials = text[text.index("ENV DEBIAN_FRONTEND"):text.index("COPY --from=uv")]
    assert "python3-distutils" not in text and "python3" not in essentials
    assert "python_packages" not in stack.as_dict()  # older locks and labels read the same


def test_the_packages_survive_the_lock_and_label_round_trip(tf24_py36):
    assert Stack.from_dict(tf24_py36.as_dict()).python_packages == ("python3.6", "python3-distutils")


@pytest.mark.parametrize("packages", [["python3.6; rm -rf /"], ["Python3"], "python3.6", [3], ["python3.6", "$(id)"]],
                         ids=["shell", "upper-case", "not-a-list", "not-text", "substitution"])
def test_a_lock_or_label_with_other_packages_is_refused(tf24_py36, packages):
    data = dict(tf24_py36.as_dict(), python_packages=packages)
    with pytest.raises(ValueError, match="stack.python_packages must be a list of Debian package names"):
        Stack.from_dict(data)


def test_a_stack_uv_serves_runs_tini(tf24_py36):
    matrix = load_matrix(overlays=[])
    stack = resolve(matrix, Constraints(frameworks=(("tensorflow", SpecifierSet("==2.15.1")),)), Host("550.54.15")).stack
    text = render_dockerfile(build_context(stack, BuildSettings(project="new")))
    assert stack.init == "tini" and 'ENTRYPOINT ["/usr/bin/tini", "--"]' in text and "dumb-init" not in text
    assert "init" not in stack.as_dict()


def test_the_init_survives_the_round_trip_and_nothing_else_is_accepted(tf24_py36):
    assert Stack.from_dict(tf24_py36.as_dict()).init == "dumb-init"
    for hostile in ("/bin/sh", "tini; id", "systemd", 1):
        with pytest.raises(ValueError, match="stack.init must be one of tini, dumb-init"):
            Stack.from_dict(dict(tf24_py36.as_dict(), init=hostile))


def test_an_os_whose_archive_has_no_init_is_never_built_on():
    """CUDA 9.0's only Ubuntu images are 16.04 (no tini, no dumb-init in xenial's archive): asked for
    that OS, no base fits; left to choose, the resolver never picks it."""
    from cudaenv.resolver.images import cuda_base

    matrix = load_matrix(overlays=[])
    assert cuda_base(matrix, "runtime", "9.0", cudnn=None, os_name="ubuntu16.04") is None
    assert cuda_base(matrix, "runtime", "9.0", cudnn=None, os_name=None) is None
    chosen = cuda_base(matrix, "runtime", "10.0", cudnn=None, os_name=None)
    assert chosen.reference.endswith("-ubuntu18.04") and chosen.init == "dumb-init"
