"""Issue 23, class 6: a project line uv cannot use gets cudaenv's own one line — file, line, what to
write instead — before uv's detail. The uv output here is real: uv runs on inputs that fail without
the network (nothing listens on loopback port 1, so git is refused at once; a local folder stands in
for an index)."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

from cudaenv.project.lock import uv_binary
from cudaenv.project.uvfailure import explain_uv_failure
from tests.support.cli import cudaenv as run_cli, isolated_env

PLATFORM = "x86_64-manylinux_2_28"


def uv_compile(root: Path, *extra: str, files=("requirements.txt",)) -> str:
    env = dict(os.environ, UV_NO_CONFIG="1", NO_COLOR="1", UV_CACHE_DIR=str(root / ".uv-cache"))
    proc = subprocess.run([uv_binary(), "pip", "compile", "--quiet", "--no-header", "--python-version", "3.11",
                           "--python-platform", PLATFORM, *extra, *files], cwd=root, capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


def explain(root: Path, stderr: str) -> str | None:
    return explain_uv_failure(stderr, [root / "requirements.txt"], root, python="3.11", platform=PLATFORM)


def test_an_unreachable_git_url_names_its_file_line_and_host(tmp_path):
    (tmp_path / "requirements.txt").write_text("# tools\ngit+https://127.0.0.1:1/huggingface/peft.git\n")
    stderr = uv_compile(tmp_path, "--no-index")
    message = explain(tmp_path, stderr)
    assert message is not None and "\n" not in message
    assert message.startswith("requirements.txt:2: 'git+https://127.0.0.1:1/huggingface/peft.git'")
    assert "fetched from 127.0.0.1:1 with git, which cannot be reached from here (connection refused)" in message


def test_a_pep508_git_url_is_found_by_its_url(tmp_path):
    (tmp_path / "requirements.txt").write_text("einops\nclip @ git+https://127.0.0.1:1/openai/CLIP.git\n")
    message = explain(tmp_path, uv_compile(tmp_path, "--no-index"))
    assert message.startswith("requirements.txt:2: 'clip @ git+https://127.0.0.1:1/openai/CLIP.git'")


def test_pips_editable_git_line_is_named_with_what_to_write_instead(tmp_path):
    """tensorflow/models official/requirements.txt has exactly this line."""
    line = "-e git+https://github.com/cocodataset/cocoapi#egg=pycocotools&subdirectory=PythonAPI"
    (tmp_path / "requirements.txt").write_text(f"six\n# CV\n{line}\n")
    message = explain(tmp_path, uv_compile(tmp_path, "--no-index"))
    assert message.startswith("requirements.txt:3: '-e git+https://github.com/cocodataset/cocoapi#egg=pycocotools")
    assert "'pycocotools @ git+https://github.com/cocodataset/cocoapi#subdirectory=PythonAPI'" in message
    assert "\n" not in message


def _sdist(folder: Path, name: str, version: str) -> None:
    folder.mkdir(exist_ok=True)
    base = f"{name}-{version}"
    source = folder / base
    source.mkdir()
    (source / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (source / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    with tarfile.open(folder / f"{base}.tar.gz", "w:gz") as archive:
        archive.add(source, arcname=base)


def test_a_package_with_only_an_sdist_is_named_when_source_builds_are_off(tmp_path):
    _sdist(tmp_path / "index", "ml-collections", "0.1.1")
    (tmp_path / "requirements.txt").write_text("ml-collections==0.1.1\n")
    stderr = uv_compile(tmp_path, "--no-index", "--find-links", str(tmp_path / "index"), "--only-binary", ":all:")
    message = explain(tmp_path, stderr)
    assert message.startswith("requirements.txt:1: ml-collections==0.1.1 has no wheel for Python 3.11")
    assert "\n" not in message


def test_any_other_failure_is_left_to_the_general_message(tmp_path):
    (tmp_path / "requirements.txt").write_text("six\n")
    assert explain(tmp_path, uv_compile(tmp_path, "--no-index")) is None


def test_init_answers_an_unreachable_git_requirement_with_its_line_first(tmp_path):
    """The whole path: `cudaenv init` (no framework, so only the project's own line goes to uv)."""
    (tmp_path / "requirements.txt").write_text("git+https://127.0.0.1:1/mlperf/logging.git\n")
    env = isolated_env(UV_CACHE_DIR=str(tmp_path / ".uv-cache"), UV_PYTHON_DOWNLOADS="never")
    proc = run_cli("init", tmp_path, "--driver", "550.54.15", "--gpu", "A100", env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("pinning ")]
    assert "requirements.txt:1: 'git+https://127.0.0.1:1/mlperf/logging.git'" in lines[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "cudaenv.toml").exists()


def test_a_failed_source_build_is_named_before_the_builds_output(tmp_path):
    """bark's pyproject needs encodec, whose sdist build fails (it reads a file it does not ship)."""
    folder = tmp_path / "index"
    folder.mkdir()
    source = folder / "encodec-0.0.0"
    source.mkdir()
    (source / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: encodec\nVersion: 0.0.0\n")
    (source / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                           'backend-path = ["."]\n')
    (source / "backend.py").write_text("def get_requires_for_build_wheel(config_settings=None):\n"
                                       "    return open('requirements.txt').read().split()\n")
    with tarfile.open(folder / "encodec-0.0.0.tar.gz", "w:gz") as archive:
        archive.add(source, arcname="encodec-0.0.0")
    (tmp_path / "requirements.txt").write_text("# codecs\nencodec\n")
    stderr = uv_compile(tmp_path, "--no-index", "--find-links", str(folder))
    message = explain(tmp_path, stderr)
    assert message is not None and message.startswith("requirements.txt:2: encodec==0.0.0 publishes no wheel")
    assert "\n" not in message


# What uv 0.13.9 printed for the same requirements on a machine without git (PATH holding only uv and a
# Python), recorded 2026-11-26: it names no URL, so the first git line of the project is the one.
UV_WITHOUT_GIT = ("error: Git operation failed\n"
                  "  cause: Git executable not found. Ensure that Git is installed and available.\n")


def test_a_machine_without_git_names_the_git_line_and_says_to_install_git(tmp_path):
    (tmp_path / "requirements.txt").write_text("# git+https://example.invalid/not-this.git\neinops\n"
                                               "git+https://127.0.0.1:1/huggingface/peft.git\n")
    message = explain(tmp_path, UV_WITHOUT_GIT)
    assert message is not None and "\n" not in message
    assert message.startswith("requirements.txt:3: 'git+https://127.0.0.1:1/huggingface/peft.git' is fetched with git")
    assert "git, which is not installed here" in message
