"""The README's console examples that need no network, GPU or engine are what cudaenv prints:
each `$ cudaenv resolve ...` block is run and its output compared line by line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def offline_examples() -> list[tuple[str, list[str]]]:
    examples = []
    for block in re.findall(r"```console\n(.+?)```", README.read_text(encoding="utf-8"), re.S):
        lines = block.rstrip("\n").split("\n")
        for index, line in enumerate(lines):
            if line.startswith("$ cudaenv resolve ") and "#" not in line:
                output = []
                for following in lines[index + 1:]:
                    if following.startswith("$ "):
                        break
                    output.append(following)
                if output:
                    examples.append((line[2:], output))
    return examples


EXAMPLES = offline_examples()


def test_the_readme_has_offline_examples_to_check():
    assert EXAMPLES, "no `$ cudaenv resolve` example with output found in README.md"


@pytest.mark.parametrize("command,expected", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_a_readme_console_example_prints_what_the_readme_shows(tmp_path, command, expected):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    env["CUDAENV_MATRIX_PATH"] = ""
    argv = shlex.split(command)
    proc = subprocess.run([sys.executable, "-m", "cudaenv", *argv[1:]], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.stdout.rstrip("\n").split("\n") == expected
