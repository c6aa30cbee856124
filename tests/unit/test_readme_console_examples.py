"""The console examples of the README and the docs pages that need no network, GPU or engine are
what cudaenv prints: each `$ cudaenv resolve ...` example with output (in README.md or any page
under docs/) is run and its output compared line by line."""

from __future__ import annotations

import shlex

import pytest

from tests.support.cli import cudaenv, isolated_env
from tests.support.docs import README, console_examples, name

EXAMPLES = [(path, command, output) for path, command, output in
            console_examples(lambda line: line.startswith("$ cudaenv resolve ") and "#" not in line) if output]


def test_the_docs_have_offline_examples_to_check():
    assert EXAMPLES, "no `$ cudaenv resolve` example with output found in README.md or docs/*.md"


def test_the_readme_itself_shows_a_checked_example():
    """The newcomer's page shows a real answer, not only the reference."""
    assert any(path == README for path, _, _ in EXAMPLES)


@pytest.mark.parametrize("command,expected", [(c, o) for _, c, o in EXAMPLES],
                         ids=[f"{name(p)}: {c}" for p, c, _ in EXAMPLES])
def test_a_docs_console_example_prints_what_the_docs_show(tmp_path, command, expected):
    argv = shlex.split(command)
    proc = cudaenv(*argv[1:], cwd=tmp_path, env=isolated_env(), timeout=120)
    assert proc.stdout.rstrip("\n").split("\n") == expected
