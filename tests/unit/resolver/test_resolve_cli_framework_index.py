"""`cudaenv resolve` without a project chooses among the builds CUDAENV_FRAMEWORK_INDEX serves, as
`init` and `lock` do (issue #23, class 1: PyPI serves torch 2.10.0 only as its CUDA 12.8 build)."""

from __future__ import annotations

import json

from tests.support.cli import cudaenv, isolated_env

HOST = ("--driver", "550.54.15", "--gpu", "A100")


def answer(tmp_path, **env):
    proc = cudaenv("resolve", "--json", *HOST, "--torch", ">=2", cwd=tmp_path, env=isolated_env(**env), timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_with_pypi_as_the_framework_index_unpinned_torch_is_the_build_pypi_serves(tmp_path):
    stack = answer(tmp_path, CUDAENV_FRAMEWORK_INDEX="https://pypi.org/simple")["stack"]
    assert (stack["frameworks"]["torch"], stack["cuda"]) == ("2.10.0", "12.8")
    assert stack["index_urls"] == ["https://pypi.org/simple"]


def test_without_a_framework_index_each_build_comes_from_its_own_index(tmp_path):
    stack = answer(tmp_path)["stack"]
    assert stack["index_urls"][0].startswith("https://download.pytorch.org/whl/cu")
    assert stack["frameworks"]["torch"] != "2.10.0" or stack["cuda"] != "12.8"
