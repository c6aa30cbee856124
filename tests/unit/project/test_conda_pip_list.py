"""A conda environment.yml's pip list is what that project's pip step installs: init makes it the
project's requirements and the lock pins it (before, the lock left it out and only the framework was
pinned — ControlNet's and MiniGPT-4's files in tests/fixtures/real-projects locked nearly empty)."""

from __future__ import annotations

import os
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tests.support.cli import cudaenv as run_cli
from tests.support.lockfile import lock_view


def init(root, index_url, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_")) or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_PYTHON_INDEX=index_url, UV_CACHE_DIR=str(cache),
               UV_PYTHON_DOWNLOADS="never")
    return run_cli("init", root, "--driver", "550.54.15", "--gpu", "A100", env=env, timeout=300)


def test_the_pip_list_of_environment_yml_is_locked(tmp_path, package_index):
    package_index.add("omegaconf", "2.1.1", requires=["antlr4-runtime==4.8"])
    package_index.add("antlr4-runtime", "4.8")
    project = tmp_path / "app"
    project.mkdir()
    (project / "environment.yml").write_text("name: app\ndependencies:\n  - python=3.11\n  - pip\n"
                                             "  - pip:\n    - omegaconf==2.1.1\n")
    proc = init(project, package_index.url, tmp_path / "uv-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = tomllib.loads((project / "cudaenv.toml").read_text())
    assert config["project"]["requirements"] == ["environment.yml"]
    pinned = lock_view(project / "cudaenv.lock")["requirements"]["pinned"]
    assert "omegaconf==2.1.1" in pinned and "antlr4-runtime==4.8" in pinned


def test_an_editable_git_line_in_the_pip_list_is_named_in_environment_yml(tmp_path, package_index):
    project = tmp_path / "sd"
    project.mkdir()
    (project / "environment.yml").write_text(
        "name: ldm\ndependencies:\n  - python=3.11\n  - pip:\n    - einops==0.3.0\n"
        "    - -e git+https://github.com/openai/CLIP.git@main#egg=clip\n")
    proc = init(project, package_index.url, tmp_path / "uv-cache")
    assert proc.returncode == 2  # bad input, found before anything is resolved
    first = [line for line in proc.stderr.splitlines() if not line.startswith("pinning ")][0]
    assert first.startswith("cudaenv: error: environment.yml:6: -e 'git+https://github.com/openai/CLIP.git@main#egg=clip'")
    assert "write 'clip @ git+https://github.com/openai/CLIP.git@main'" in first
