"""The reference site builds: `mkdocs build --strict` passes (every page in the navigation, every
link and anchor resolving, the README's sections that docs/index.md includes found), the README
stays a page a newcomer reads in minutes and its links lead somewhere, and the reference keeps a
place for every command cudaenv has and every error code it can print."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.cli import cudaenv

from tests.support.docs import DOCS, README, ROOT

README_MAX_LINES = 400


def mkdocs_env() -> dict[str, str]:
    # NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, printed on every build
    return dict(os.environ, NO_MKDOCS_2_WARNING="1")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for this module as CI builds it: strict, into a directory of its own."""
    try:
        import mkdocs  # noqa: F401
        import material  # noqa: F401
    except ImportError:
        pytest.fail("mkdocs-material is not installed; it comes with the test extra (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=mkdocs_env())
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    warnings = [line for line in output.splitlines() if re.match(r"(?:\x1b\[[0-9;]*m)?\s*(WARNING|ERROR)\b", line)]
    assert not warnings, "\n".join(warnings)
    return out


def page_ids(site: Path, page: str) -> set[str]:
    """The anchors a built page offers (`configuration.md` -> site/configuration/index.html)."""
    built = site / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
    return set(re.findall(r'\bid="([^"]+)"', built.read_text(encoding="utf-8")))


def test_mkdocs_build_strict_passes(site):
    assert (site / "index.html").is_file()
    built = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert "index.md" in built and len(built) >= 8
    for page in built:
        assert page_ids(site, page), f"{page} was not built"


def test_a_broken_anchor_fails_the_strict_build(tmp_path):
    """The check is real: a link to an anchor that no heading makes stops the build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the part](other.md#no-such-heading).\n")
    (docs / "other.md").write_text("# Other\n\n## A heading\n")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"\nnav:\n(?:  - .*\n)+", "\nnav:\n  - Home: index.md\n  - Other: other.md\n", config)
    config = config.replace("[!relative $config_dir]", f"[{str(ROOT)!r}]")
    (tmp_path / "mkdocs.yml").write_text(config)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=mkdocs_env())
    assert proc.returncode != 0
    assert "no-such-heading" in proc.stdout + proc.stderr


def test_the_home_page_shows_the_readmes_quick_start_and_tour(site):
    """docs/index.md includes the README's sections rather than a copy that could drift."""
    ids = page_ids(site, "index.md")
    assert {"quick-start", "a-tour"} <= ids
    home = html.unescape(re.sub(r"<[^>]+>", "", (site / "index.html").read_text(encoding="utf-8")))
    for marker in ("main-command", "test-command"):
        command = re.search(rf"<!-- {marker} -->\n```sh\n(.+?)\n```", README.read_text(encoding="utf-8"), re.S).group(1)
        assert command in home, f"the site's home page lacks the README's {marker}: {command}"


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move reference material to docs/"


def test_the_readmes_links_lead_somewhere(site):
    """README.md is read on GitHub, outside the site: its relative links must name files that exist,
    and an anchor into a docs page must be one the built page has."""
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    relative = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert any(link.startswith("docs/") for link in relative), "README.md links to no docs page"
    for link in relative:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.exists(), f"README.md links to {link}, which does not exist"
        if anchor and path.startswith("docs/") and path.endswith(".md"):
            assert anchor in page_ids(site, path.removeprefix("docs/")), f"README.md: {link}: no such anchor"


def test_every_docs_page_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(docs/([^)#\s]+\.md)", README.read_text(encoding="utf-8")))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"index.md"}
    assert pages <= linked, f"pages the README does not link to: {sorted(pages - linked)}"


def help_commands(*group: str) -> list[str]:
    """The subcommands `cudaenv [GROUP] --help` lists: what a user sees, whatever module defines them."""
    proc = cudaenv(*group, "--help", timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    listing = proc.stdout.split("\nCommands:\n", 1)[1]
    return re.findall(r"^  ([a-z][a-z-]*)(?:\s|$)", listing, re.M)


def test_every_command_has_its_section_in_the_commands_page():
    commands = help_commands()
    assert {"resolve", "run", "export", "matrix"} <= set(commands)
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+ `cudaenv ([a-z-]+)`", page, re.M))
    assert set(commands) <= headings, f"commands without a section in docs/commands.md: {sorted(set(commands) - headings)}"
    for group in ("export", "matrix"):
        for sub in help_commands(group):
            assert re.search(rf"cudaenv {group} (?:[a-z/]*/)?{sub}\b", page), f"docs/commands.md: no `cudaenv {group} {sub}`"


def test_troubleshooting_says_what_to_do_for_every_error_code():
    commands = (DOCS / "commands.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([a-z-]+)`", re.search(r"`code` is one of (.+?); `file`", commands, re.S).group(1)))
    table = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    explained = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.M))
    assert listed == explained, f"listed but not explained: {sorted(listed - explained)}; " \
                                f"explained but not listed: {sorted(explained - listed)}"
