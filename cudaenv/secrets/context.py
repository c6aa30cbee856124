"""Files a project directory commonly holds that must never be copied into an image.

``COPY . /workspace/`` copies the whole build context into the last layer, where anyone who can
pull the image can read it. The patterns below go into every generated ``.dockerignore`` (before
the project's own rules, so a deliberate ``!`` rule can still take a file back), and ``build``
warns about files whose names look like secrets but are still in the context.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

# .dockerignore patterns (Go filepath.Match plus `**`); `**/x` also matches x at the top.
SECRET_IGNORES = (
    "**/.env", "**/.env.*", "**/*.env",
    "**/.netrc", "**/_netrc", "**/.pypirc", "**/.npmrc", "**/.git-credentials",
    "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.jks", "**/*.keystore",
    "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
    "**/.aws", "**/.azure", "**/.config/gcloud", "**/.docker/config.json", "**/.kube/config",
    "**/.ssh",
)

# Names that suggest a secret although no default rule covers them: worth a warning, not a rule.
_LOOKS_SECRET = re.compile(r"(secret|token|credential|password|passwd|private[-_]?key|service[-_]?account)",
                           re.IGNORECASE | re.ASCII)
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache"}
_SCAN_LIMIT = 20000  # files: a huge context is the user's business; the warning stays cheap


def _ignored_by_default(relative: str) -> bool:
    parts = relative.split("/")
    for pattern in SECRET_IGNORES:
        tail = pattern[3:] if pattern.startswith("**/") else pattern
        depth = tail.count("/") + 1
        # the pattern matches this path or one of its parent directories, at any depth
        for end in range(depth, len(parts) + 1):
            candidate = "/".join(parts[end - depth:end])
            if fnmatch.fnmatchcase(candidate, tail):
                return True
    return False


def _reincluded(relative: str, user_rules: list[str]) -> bool:
    """Whether the project's .dockerignore takes a default-ignored file back with a ``!`` rule: one
    that names the file, or a folder above it (Docker takes ``!.aws`` or ``!.ssh/`` back with all
    the folder holds; it drops a rule's trailing ``/``)."""
    parts = relative.split("/")
    for rule in user_rules:
        if rule.startswith("!"):
            pattern = rule[1:].strip().strip("/")
            for end in range(1, len(parts) + 1):  # each folder above the file, then the file
                path = "/".join(parts[:end])
                if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.removeprefix("**/")) \
                        or fnmatch.fnmatchcase(parts[end - 1], pattern.removeprefix("**/")):
                    return True
    return False


def secret_looking_files(root: Path, user_ignore_text: str | None = None) -> list[str]:
    """Paths (relative, POSIX) in the build context whose names look like secrets and that will be
    copied: either a name like ``api_token.txt`` that no default rule covers, or a default-ignored
    file the project's own .dockerignore re-includes."""
    user_rules = [line.strip() for line in (user_ignore_text or "").splitlines()
                  if line.strip() and not line.lstrip().startswith("#")]
    user_ignores = [rule.lstrip("/") for rule in user_rules if not rule.startswith("!")]
    found: list[str] = []
    seen = 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        base = Path(directory).relative_to(root).as_posix()
        for name in sorted(files):
            seen += 1
            if seen > _SCAN_LIMIT:
                return found
            relative = name if base == "." else f"{base}/{name}"
            if any(fnmatch.fnmatchcase(relative, rule) or fnmatch.fnmatchcase(name, rule) for rule in user_ignores):
                continue
            if _ignored_by_default(relative):
                if _reincluded(relative, user_rules):
                    found.append(relative)
                continue
            if _LOOKS_SECRET.search(name):
                found.append(relative)
    return found
