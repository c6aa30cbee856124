"""The .dockerignore cudaenv writes for a build: its defaults, the secret-file rules, then the
project's own rules, then the build secrets that live in the project, one rule per line.

Its exact text is part of the image's inputs (cudaenv.images.plan hashes the Dockerfile and this
file together), so a change to any line, comments included, changes every project's input hash:
the text is pinned here, section by section."""

from __future__ import annotations

import hashlib

import pytest

from cudaenv.images.render import DEFAULT_IGNORES, lock_hash, render_dockerignore
from cudaenv.secrets.context import SECRET_IGNORES

DEFAULTS = ["# cudaenv defaults (never part of the image)", *DEFAULT_IGNORES,
            "# files that commonly hold secrets (a `!` rule in the project's .dockerignore takes one back)",
            *SECRET_IGNORES]


def rules(text: str) -> list[str]:
    """What Docker reads as patterns: every line that is not blank and not a comment."""
    return [line for line in text.split("\n") if line.strip() and not line.startswith("#")]


def test_without_project_rules_or_secrets_it_is_the_defaults_and_the_secret_rules():
    """The two sections, each under its comment, and a final newline."""
    assert render_dockerignore(None) == "\n".join(DEFAULTS) + "\n"
    assert render_dockerignore("") == render_dockerignore(None)  # an empty .dockerignore adds nothing


@pytest.mark.parametrize("project, copied", [
    pytest.param("\ndata/\n!data/keep.csv\n\n\n", "\ndata/\n!data/keep.csv", id="blank-lines-around"),
    pytest.param("out/MATRIX\n", "out/MATRIX", id="rule-ending-in-a-capital"),
    pytest.param("data/\n  \t", "data/\n  \t", id="trailing-blanks-that-are-not-newlines"),
])
def test_the_projects_rules_follow_under_their_own_comment_without_its_trailing_newlines(project, copied):
    """The project's file is copied as written after cudaenv's rules: only its trailing newlines go."""
    text = render_dockerignore(project)
    assert text == "\n".join([*DEFAULTS, "# the project's .dockerignore", copied]) + "\n"


def test_build_secrets_come_last_under_their_own_comment():
    text = render_dockerignore("data/\n", secrets=["certs/corp-ca.crt", ".netrc-cudaenv"])
    assert text == "\n".join([*DEFAULTS, "# the project's .dockerignore", "data/",
                              "# build secrets that live in the project: never in the context",
                              "certs/corp-ca.crt", ".netrc-cudaenv"]) + "\n"


def test_secrets_without_project_rules_follow_the_defaults():
    text = render_dockerignore(None, secrets=["corp-ca.crt"])
    assert text == "\n".join([*DEFAULTS, "# build secrets that live in the project: never in the context",
                              "corp-ca.crt"]) + "\n"


def test_only_the_rules_are_patterns():
    """Every line cudaenv adds besides a rule is a comment: no header can become a pattern."""
    text = render_dockerignore("data/\n", secrets=["corp-ca.crt"])
    assert rules(text) == [*DEFAULT_IGNORES, *SECRET_IGNORES, "data/", "corp-ca.crt"]


@pytest.mark.parametrize("text", [None, "", "[stack]\ncuda = \"12.4\"\n"])
def test_the_lock_hash_is_the_first_32_hex_digits_of_the_lock_files_sha256(text):
    """No lock file hashes like an empty one; the label carries 32 hex digits (128 bits)."""
    assert lock_hash(text) == hashlib.sha256((text or "").encode()).hexdigest()[:32]
    assert len(lock_hash(text)) == 32


def test_different_lock_files_have_different_hashes():
    assert lock_hash("a") != lock_hash(None) != lock_hash("b")
