"""The documentation the suite holds true: README.md and every page of the MkDocs site under docs/.

Tests that check an example (a console session, a manifest, a configuration) find it here rather
than in one hard-coded file, so moving a section from the README to a page, or from one page to
another, keeps it checked; and a marker that appears twice, or nowhere, is an error rather than a
silently skipped check.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def doc_files() -> list[Path]:
    """README.md first, then every Markdown page under docs/, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def name(path: Path) -> str:
    """A file as the repository names it (for test ids and messages)."""
    return path.relative_to(ROOT).as_posix()


def console_blocks() -> list[tuple[Path, str]]:
    """Every ```console block, with the file it is in."""
    return [(path, block) for path in doc_files()
            for block in re.findall(r"```console\n(.+?)```", path.read_text(encoding="utf-8"), re.S)]


def console_examples(keep) -> list[tuple[Path, str, list[str]]]:
    """Every `$ ...` line that ``keep(line)`` accepts, with the output lines shown under it (up to
    the next `$ ` line or the block's end)."""
    examples = []
    for path, block in console_blocks():
        lines = block.rstrip("\n").split("\n")
        for index, line in enumerate(lines):
            if line.startswith("$ ") and keep(line):
                output = []
                for following in lines[index + 1:]:
                    if following.startswith("$ "):
                        break
                    output.append(following)
                examples.append((path, line[2:], output))
    return examples


def find_one(pattern: str, what: str, flags: int = re.S) -> tuple[Path, re.Match]:
    """The single place across the docs where ``pattern`` matches; fails when it matches nowhere
    or more than once (two copies of an example could drift apart unchecked)."""
    found = [(path, match) for path in doc_files()
             for match in re.finditer(pattern, path.read_text(encoding="utf-8"), flags)]
    assert found, f"no {what} in README.md or docs/*.md"
    assert len(found) == 1, f"{what} appears more than once: {', '.join(name(p) for p, _ in found)}"
    return found[0]


def find_all(pattern: str, flags: int = re.S) -> list[tuple[Path, re.Match]]:
    """Every place across the docs where ``pattern`` matches."""
    return [(path, match) for path in doc_files()
            for match in re.finditer(pattern, path.read_text(encoding="utf-8"), flags)]
