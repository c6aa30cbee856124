"""Package-index credentials: never from a committed file, always as one private netrc.

A URL with user info in ``cudaenv.toml`` or ``pyproject.toml`` would be copied into the image with
the project (and into every clone of the repository), so it is refused. Credentials come, for
each index host, from the first of:

1. user info in an index URL set in the environment (``CUDAENV_PYTHON_INDEX``,
   ``CUDAENV_FRAMEWORK_INDEX``), as pip and uv users write ``https://user:token@host/simple``;
2. ``CUDAENV_PYTHON_INDEX_USERNAME`` / ``CUDAENV_PYTHON_INDEX_PASSWORD`` (and the
   ``CUDAENV_FRAMEWORK_INDEX_*`` pair) for the host of that index;
3. the user's netrc (``$NETRC`` or ``~/.netrc``), the file pip, uv and curl read.

They reach uv (``cudaenv lock``) as a temporary netrc named by ``NETRC`` and the image build as the
BuildKit secret ``cudaenv_netrc``: never argv, a layer, the history, a label or the lock.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from cudaenv.errors import UserError

# netrc separates tokens by whitespace and has no quoting every reader agrees on; a control
# character (a decoded %0A above all) would start a new entry. Both are refused after decoding.
_UNSAFE_TOKEN = re.compile(r"[\s\x00-\x1f\x7f\"'\\]")

ENV_PREFIX = {"python": "CUDAENV_PYTHON_INDEX", "framework": "CUDAENV_FRAMEWORK_INDEX"}


@dataclass(frozen=True)
class Credential:
    host: str
    login: str
    password: str
    source: str  # where it came from, for messages (never the secret itself)


def has_userinfo(url: str) -> bool:
    return "@" in urllib.parse.urlsplit(url).netloc


def refuse_userinfo(url: str, where: str) -> None:
    """A configuration file is committed and copied into the image: no credentials in it."""
    if url and has_userinfo(url):
        raise UserError(
            f"{where}: expected an index URL without credentials (user:password@ in a committed file is "
            "copied into the image and every clone); put the URL with credentials in the environment "
            "(CUDAENV_PYTHON_INDEX / CUDAENV_FRAMEWORK_INDEX), or set <VAR>_USERNAME / <VAR>_PASSWORD, or "
            "use ~/.netrc")


def _checked(host: str, login: str, password: str, source: str) -> Credential:
    for part, value in (("user name", login), ("password", password)):
        if _UNSAFE_TOKEN.search(value):
            raise UserError(f"{source}: the index {part} contains whitespace, a quote, a backslash or a control "
                            "character (after percent-decoding); such a value cannot be passed safely")
    if not host or _UNSAFE_TOKEN.search(host):
        raise UserError(f"{source}: expected an index URL with a host name")
    return Credential(host=host, login=login, password=password, source=source)


def from_url(url: str, source: str) -> Credential | None:
    """The user info of ``url`` (decoded and checked), or None."""
    parts = urllib.parse.urlsplit(url)
    if not has_userinfo(url):
        return None
    login = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return _checked(parts.hostname or "", login, password, source)


def from_environment(url: str, role: str) -> Credential | None:
    prefix = ENV_PREFIX[role]
    login = os.environ.get(f"{prefix}_USERNAME")
    password = os.environ.get(f"{prefix}_PASSWORD")
    if not login and not password:
        return None
    host = urllib.parse.urlsplit(url).hostname or ""
    return _checked(host, login or "", password or "", f"{prefix}_USERNAME/{prefix}_PASSWORD")


def netrc_path() -> Path:
    explicit = os.environ.get("NETRC")
    return Path(explicit) if explicit else Path.home() / ".netrc"


def from_netrc(url: str) -> Credential | None:
    """The user's netrc entry for the index host; an unreadable or malformed netrc is ignored
    (pip and uv ignore it too) rather than failing a build that may not need it."""
    import netrc

    host = urllib.parse.urlsplit(url).hostname
    path = netrc_path()
    if not host or not path.is_file():
        return None
    try:
        entry = netrc.netrc(str(path)).authenticators(host)
    except (OSError, netrc.NetrcParseError, UnicodeDecodeError):
        return None
    if not entry:
        return None
    login, _account, password = entry
    return _checked(host, login or "", password or "", str(path))


def credential_for(url: str | None, role: str) -> Credential | None:
    """The credential for an index URL (see the module docstring for the order), or None."""
    if not url:
        return None
    return (from_url(url, ENV_PREFIX[role]) or from_environment(url, role) or from_netrc(url))


def netrc_text(credentials: list[Credential | None]) -> str:
    """One netrc entry per host (the first credential wins)."""
    seen: set[str] = set()
    lines = []
    for found in credentials:
        if found is None or found.host in seen:
            continue
        seen.add(found.host)
        lines.append(f"machine {found.host} login {found.login} password {found.password}\n")
    return "".join(lines)
