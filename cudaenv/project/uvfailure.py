"""uv's refusals of a project's own requirement lines, said as cudaenv's one line first.

When ``uv pip compile`` fails because of one line the user wrote — a ``git+https://`` URL whose host
cannot be reached, pip's ``-e git+…#egg=`` form, a package with no wheel while source builds are
off — the useful answer names that file and line and what to write instead. uv's own detail
follows it (the caller appends it), so nothing uv said is lost. Anything else returns None and the
caller keeps its general message.
"""

from __future__ import annotations

import re
from pathlib import Path

# uv 0.5-0.13 wording, as printed with NO_COLOR
_GIT_FAILED = re.compile(r"Git operation failed|Failed to (?:fetch|clone|download).*git", re.I)
_GIT_URL = re.compile(r"(?:unable to access|git fetch[^']*|clone[^']*)'(?P<url>https?://[^'\s]+)'")
_GIT_WHY = (("could not resolve host", "the host name does not resolve"), ("connection refused", "connection refused"),
            ("couldn't connect", "connection refused"),
            ("timed out", "timed out"), ("certificate", "its TLS certificate is not trusted"),
            ("authentication failed", "it asks for credentials"), ("not found", "the repository was not found"))
_EDITABLE = re.compile(r"Unsupported editable requirement in `(?P<file>[^`]+)` at line (?P<line>[0-9]+): `(?P<req>[^`]+)`")
_NO_WHEELS = re.compile(r"Because (?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<version>[=<>!~][^ ]*)? has no usable wheels")
_BUILD_FAILED = re.compile(r"Failed to (?:download and )?build `(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:==(?P<version>[^`@ ]+))?")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _where(files: list[Path], root: Path, needle) -> tuple[str, int, str] | None:
    """(file relative to the project, line number, the line) of the first line ``needle`` accepts."""
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            if needle(line):
                try:
                    shown = str(path.resolve().relative_to(root.resolve()))
                except ValueError:
                    shown = path.name
                return shown, number, line.strip()
    return None


def _names_package(name: str):
    """A line that requires ``name`` (a requirement line, a TOML string or a YAML list item)."""
    wanted = _canonical(name)

    def accept(line: str) -> bool:
        text = line.split("#", 1)[0].strip().lstrip("-").strip().strip("\"',")
        match = _NAME.match(text)
        return bool(match) and _canonical(match.group(0)) == wanted

    return accept


def _git_failure(stderr: str, files: list[Path], root: Path) -> str | None:
    if not _GIT_FAILED.search(stderr):
        return None
    match = _GIT_URL.search(stderr)
    if not match:
        if "git executable not found" not in stderr.lower():
            return None
        found = _where(files, root, lambda line: "git+" in line and not line.lstrip().startswith("#"))  # uv names no URL
        where = f"{found[0]}:{found[1]}: {found[2]!r} " if found else "a git+ requirement "
        return (f"{where}is fetched with git, which is not installed here; install git (apt-get install git), "
                "or require a release from the package index instead, then run `cudaenv lock`")
    url = match.group("url").rstrip("/")
    bare = re.sub(r"\.git$", "", url)
    found = _where(files, root, lambda line: bare in line and "git+" in line)
    host = re.sub(r"^https?://([^/]+).*$", r"\1", url)
    why = next((reason for needle, reason in _GIT_WHY if needle in stderr.lower()), "git could not fetch it")
    where = f"{found[0]}:{found[1]}: " if found else ""
    line = found[2] if found else f"git+{url}"
    return (f"{where}{line!r} is fetched from {host} with git, which cannot be reached from here ({why}); "
            "require a release from the package index instead (or a wheel on an index you can reach), "
            "then run `cudaenv lock`")


def _editable_failure(stderr: str, files: list[Path], root: Path) -> str | None:
    match = _EDITABLE.search(stderr)
    if not match:
        return None
    requirement = match.group("req")
    # the user's file and line (uv may have read a list cudaenv derived, e.g. environment.yml's pip list)
    found = _where(files, root, lambda line: requirement in line and "-e" in line)
    shown, number = (found[0], found[1]) if found else (Path(match.group("file")).name, match.group("line"))
    egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", requirement)
    url, _, fragment = requirement.partition("#")
    kept = "&".join(part for part in fragment.split("&") if part and not part.startswith("egg="))
    url += f"#{kept}" if kept else ""  # subdirectory= stays: it says where the package is
    instead = f"'{egg.group(1)} @ {url}' (built from source) or a released {egg.group(1)}" if egg else \
        "a released package or a wheel"
    return (f"{shown}:{number}: '-e {requirement}' is an editable checkout of a git repository, "
            f"which an image cannot install (uv accepts only local directories as editable); write {instead}")


def _wheel_failure(stderr: str, files: list[Path], root: Path, python: str, platform: str) -> str | None:
    match = _NO_WHEELS.search(stderr)
    if not match:
        return None
    culprit = match.group("name") + (match.group("version") or "")
    sentence = stderr[match.start():].split("\n", 1)[0]
    # the culprit's own line, else the line of the first package in uv's chain that the project names
    candidates = [match.group("name")] + [n for n in _NAME.findall(sentence) if n != match.group("name")]
    found = next((hit for name in candidates if (hit := _where(files, root, _names_package(name)))), None)
    where = f"{found[0]}:{found[1]}: " if found else ""
    through = "" if not found or _names_package(match.group("name"))(found[2]) else f" (needed by {found[2]!r})"
    return (f"{where}{culprit}{through} has no wheel for Python {python} on {platform}, and cudaenv locks wheels "
            "only (no source builds by surprise); require a release that publishes wheels for this Python")


def _build_failure(stderr: str, files: list[Path], root: Path, python: str) -> str | None:
    """uv had to build a source distribution (to read its metadata, or to install it) and the build
    failed: the package has no wheel it could use, which is the answer, not the build's traceback."""
    match = _BUILD_FAILED.search(stderr)
    if not match:
        return None
    name = match.group("name")
    found = _where(files, root, _names_package(name))
    where = f"{found[0]}:{found[1]}: " if found else ""
    what = f"{name}=={match.group('version')}" if match.group("version") else name
    return (f"{where}{what} publishes no wheel uv could use for Python {python}, and building it from its source "
            "distribution failed; require a release that publishes wheels (uv's build output follows)")


def explain_uv_failure(stderr: str, files: list[Path], root: Path, *, python: str, platform: str) -> str | None:
    """cudaenv's one line for a uv failure caused by one of the project's lines, or None."""
    return (_editable_failure(stderr, files, root) or _git_failure(stderr, files, root)
            or _wheel_failure(stderr, files, root, python, platform) or _build_failure(stderr, files, root, python))
