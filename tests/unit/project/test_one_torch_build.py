"""Two PyTorch pins in a project's files that name different builds (``torch==1.7.1+cu110`` beside
``torch==1.7.1+cu101``, or beside ``torchvision==0.8.2+cu101``) are a mistake in the input: a version
carries one local label, so pip cannot satisfy both torch lines, and torchvision refuses to load beside
a torch built for another CUDA. ``init`` names both lines (exit 2) rather than silently keeping the first
line's CUDA."""

from __future__ import annotations

import json

import pytest

from cudaenv.project.config import ConfigError
from cudaenv.project.detect import detect_project

from tests.support.cli import cudaenv, isolated_env


@pytest.mark.parametrize("lines", [
    "torch==1.7.1+cu110\ntorch==1.7.1+cu101\n",
    "torch==1.7.1+cu110\ntorchvision==0.8.2+cu101\n",
    "torch==1.7.1+cpu\ntorchaudio==0.7.2+cu110\n",
])
def test_two_builds_are_named_with_both_lines(tmp_path, lines):
    (tmp_path / "requirements.txt").write_text(lines)
    with pytest.raises(ConfigError, match=r"requirements.txt:1 and requirements.txt:2 name different PyTorch builds"):
        detect_project(tmp_path)


@pytest.mark.parametrize("lines", [
    "torch==1.7.1+cu110\ntorchvision==0.8.2+CU110\n",
    "torch==1.7.1+cu110\ntorchvision==0.8.2\n",
    "torch==1.7.1+cu110 ; python_version < '3.8'\ntorch==1.7.1+cu101 ; python_version >= '3.8'\n",
])
def test_one_build_is_read_as_before(tmp_path, lines):
    (tmp_path / "requirements.txt").write_text(lines)
    assert detect_project(tmp_path).cuda in ("11.0", "10.1")  # markers: only one of the lines applies


def test_init_says_so_in_one_json_object(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==1.7.1+cu110\ntorchvision==0.8.2+cu101\n")
    done = cudaenv("init", "--no-lock", "--no-detect", "--driver", "450.80.02", "--gpu", "V100", "--json", tmp_path,
                   env=isolated_env())
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "+cu110 or +cu101" in error["message"] and not (tmp_path / "cudaenv.toml").exists()


@pytest.mark.parametrize("pin", ["torch==1.7.1+CU101", "torch==1.7.1+Cu101"])
def test_the_label_is_read_case_insensitively_as_pep_440_does(tmp_path, pin):
    """PEP 440 normalizes a local label to lower case, so pip installs the cu101 build for +CU101."""
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    assert detect_project(tmp_path).cuda == "10.1"
