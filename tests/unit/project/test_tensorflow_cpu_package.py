"""Issue 34, item 2: before TensorFlow 1.15 (and in 2.0) PyPI's plain ``tensorflow`` wheel was the
CPU build; the GPU build of the same release was the ``tensorflow-gpu`` package (the matrix row's
``gpu_package``). A project that requires plain ``tensorflow`` for such a release would lock the CPU
package beside the stack's tensorflow-gpu (the same files, whichever installs last wins): the answer
names the file and line, says it is the CPU package, and offers the GPU package to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.matrix.builds import framework_builds
from cudaenv.matrix.load import RowReader, tensorflow_release
from cudaenv.project.inputs import read_project_requirements
from cudaenv.project.intent import cpu_package_lines, framework_packages

SRC = "https://www.tensorflow.org/install/source#gpu ; read 2026-11-28"


def lines(tmp_path: Path, text: str):
    (tmp_path / "requirements.txt").write_text(text)
    return read_project_requirements(tmp_path, ["requirements.txt"]).lines


@pytest.mark.parametrize(("text", "written"), [
    ("numpy\ntensorflow==1.14.0\n", "tensorflow-gpu==1.14.0"),
    ("tensorflow>=1.3.0\n", "tensorflow-gpu>=1.3.0"),
    ("Tensorflow[extra]~=1.14\n", "tensorflow-gpu[extra]~=1.14"),
    ("tensorflow[b,a]==1.14.0\n", "tensorflow-gpu[a,b]==1.14.0"),  # every extra kept, comma-separated
], ids=["exact", "range", "extras-and-case", "two-extras"])
def test_plain_tensorflow_beside_the_gpu_package_is_named_with_the_line_to_write(tmp_path, text, written):
    message = cpu_package_lines(lines(tmp_path, text), ("tensorflow-gpu==1.14.0",), "3.7")
    line = text.count("\n", 0, text.index("ensorflow")) + 1
    assert message.startswith(f"requirements.txt:{line}: ")
    assert "is TensorFlow's CPU-only package for tensorflow 1.14.0" in message
    assert f"write '{written}' on that line" in message and "(tensorflow-gpu==1.14.0)" in message


@pytest.mark.parametrize(("text", "stack"), [
    ("tensorflow-gpu==1.14.0\n", ("tensorflow-gpu==1.14.0",)),  # the GPU package already
    ("tensorflow==2.4.0\n", ("tensorflow==2.4.0",)),  # tensorflow itself is the CUDA build
    ("tensorflow==1.14.0 ; python_version < '3.0'\n", ("tensorflow-gpu==1.14.0",)),  # not for this Python
    ("-c constraints.txt\n", ("tensorflow-gpu==1.14.0",)),  # a constraint installs nothing
    # the marker holds on older Pythons but not on the stack's 3.7: judged for the stack's Python
    ("tensorflow==1.14.0 ; python_version < '3.7'\n", ("tensorflow-gpu==1.14.0",)),
], ids=["gpu-package", "cuda-build", "marker", "constraint", "marker-older-python"])
def test_no_answer_where_nothing_installs_the_cpu_package(tmp_path, text, stack):
    (tmp_path / "constraints.txt").write_text("tensorflow==1.14.0\n")
    assert cpu_package_lines(lines(tmp_path, text), stack, "3.7") is None


def test_a_row_with_a_gpu_package_installs_that_package():
    row = tensorflow_release(RowReader({"version": "1.14.0", "python": ["3.7"], "cuda": "10.0", "cudnn": "7.4",
                                        "gpu_package": "tensorflow-gpu", "source": SRC}, "tensorflow.toml"))

    class OneRow:
        tensorflow = (row,)
        memo: dict = {}
        torch = jax = mxnet = cuda_minors = ()

    (build,) = framework_builds(OneRow())["tensorflow"]
    assert build.requirements == ("tensorflow-gpu==1.14.0",) and build.variant == "cuda10.0"


def test_init_without_a_lock_refuses_the_cpu_package_as_the_lock_would(tmp_path):
    """``init --no-lock`` used to answer a tick, write cudaenv.toml and say "next: cudaenv build",
    which then refused the same line: the check needs no network, so init makes it too."""
    import json

    from tests.support.cli import cudaenv, isolated_env

    (tmp_path / "requirements.txt").write_text("numpy\ntensorflow==1.14.0\n")
    done = cudaenv("init", "--no-lock", "--no-detect", "--driver", "450.80.02", "--gpu", "V100", "--json", tmp_path,
                   env=isolated_env())
    assert done.returncode == 2
    message = json.loads(done.stdout)["error"]["message"]
    assert message.startswith("requirements.txt:2: 'tensorflow==1.14.0' is TensorFlow's CPU-only package")
    assert "write 'tensorflow-gpu==1.14.0' on that line" in message
    assert not (tmp_path / "cudaenv.toml").exists()


@pytest.mark.parametrize(("text", "constraints", "found"), [
    # an option line and a constraint come first; the package is named in any spelling
    ("--index-url https://pypi.org/simple\n-c constraints.txt\nnumpy\nTensorflow_GPU==2.10.0\n", "numpy<2\n",
     (("tensorflow", "tensorflow-gpu"),)),
    # a constraint installs nothing, so it names no package
    ("-c constraints.txt\nnumpy\n", "tensorflow-gpu==2.10.0\n", ()),
    ("tensorflow-gpu==2.10.0 ; sys_platform == 'win32'\n", "", ()),  # a marker the image never meets
    ("tensorflow==2.10.0\n", "", ()),  # the framework's own name: nothing to record
], ids=["gpu-package", "constraint-only", "other-platform", "own-name"])
def test_the_package_a_project_installs_tensorflow_under_is_recorded(tmp_path, text, constraints, found):
    (tmp_path / "constraints.txt").write_text(constraints)
    assert framework_packages(lines(tmp_path, text)) == found
