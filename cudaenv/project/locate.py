"""Whether a directory holds a cudaenv project, answered without parsing what cannot be one, and
the project's tables read from its file (``cudaenv.project.config`` validates them).

``cudaenv resolve`` in any directory asks this first; a ``pyproject.toml`` that never mentions
cudaenv cannot have a ``[tool.cudaenv]`` table, so it is not parsed (nor is a TOML parser loaded);
TOML syntax errors in such a file are not cudaenv's to report.
"""

from __future__ import annotations

import os
import re
import sys

from cudaenv.errors import UserError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path

CONFIG_FILE = "cudaenv.toml"
# a package index: http(s), nothing a shell, TOML string or netrc line could be split at (use fullmatch)
INDEX_URL = re.compile(r"https?://[^\s'\"\\]+")


def is_index_url(text) -> bool:
    """An http(s) URL of a package index: INDEX_URL's characters, ASCII, a host, and a port (if any)
    that is a number from 0 to 65535 (``urllib`` raises on ``:99999`` or an unclosed ``[::1``, and
    uv would refuse it later)."""
    if not isinstance(text, str) or not text.isascii() or not INDEX_URL.fullmatch(text):
        return False
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a port out of range or not a number
    except ValueError:
        return False
    return bool(parts.hostname)


def check_index_url(value: str | None, where: str) -> str | None:
    """An index URL from a lock or the environment (CUDAENV_*_INDEX): read as strictly as the
    project file's keys, so a ``file://`` or a stray word never reaches uv or a resolution."""
    if value is not None and not is_index_url(value):
        raise UserError(f"{where}: expected an http(s):// URL of a package index, got {value!r}")
    return value


class ConfigError(UserError):
    """Invalid project configuration (exit 2). ``field`` names the key when the message cannot
    spell it as "FILE: FIELD: …" (an unknown key), for the --json error object."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        if field is not None:
            self.field = field


def _may_name_cudaenv(path: str) -> bool:
    """False only when the file cannot spell the key (no ``cudaenv``, no escape such as
    ``\\u0063``) and sets no bare ``tool = …`` (which the full reader reports as an error)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return True  # let the real reader say what is wrong with it
    if b"cudaenv" in data or b"\\" in data:
        return True
    import re

    return re.search(rb"^[ \t]*[\"']?tool[\"']?[ \t]*=", data, re.MULTILINE) is not None


def find_config(root: str | os.PathLike) -> Path | None:
    """cudaenv.toml wins; else pyproject.toml when it has a [tool.cudaenv] table."""
    candidate = os.path.join(root, CONFIG_FILE)
    if os.path.isfile(candidate):
        from pathlib import Path

        return Path(candidate)
    pyproject = os.path.join(root, "pyproject.toml")
    if os.path.isfile(pyproject) and _may_name_cudaenv(pyproject):
        from pathlib import Path

        data, _ = read_config_file(Path(pyproject))
        if data:
            return Path(pyproject)
    return None


def dependency_files(root: str | os.PathLike) -> list[str]:
    """The files here that ``cudaenv init`` would read a project's dependencies from (by name
    only: nothing is parsed). ``resolve`` names them when it answers without a project."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    wanted = [n for n in names if n.startswith("requirements") and n.endswith(".txt")]
    wanted += [n for n in ("pyproject.toml", "environment.yml", "environment.yaml") if n in names]
    return [n for n in wanted if os.path.isfile(os.path.join(root, n))]


def read_config_file(path: Path) -> tuple[dict, str]:
    """(the cudaenv tables, a label for messages) from cudaenv.toml or pyproject.toml."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    try:
        with open(path, "rb") as handle:  # a UTF-8 BOM (Windows editors) is not TOML, but is no mistake either
            data = tomllib.loads(handle.read().decode("utf-8").removeprefix("\ufeff"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # an integer past Python's digit limit, nesting past the stack
        raise ConfigError(f"{path}: invalid TOML: {str(exc)[:120] or 'nested too deeply'}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if path.name == "pyproject.toml":
        tools = data.get("tool", {})
        if not isinstance(tools, dict):
            raise ConfigError(f"{path}: tool: expected a table ([tool.*] sections), got {tools!r}")
        tool = tools.get("cudaenv")
        if tool is None:
            return {}, f"{path} [tool.cudaenv]"
        if not isinstance(tool, dict):
            raise ConfigError(f"{path}: tool.cudaenv: expected a table")
        return tool, f"{path} [tool.cudaenv]"
    return data, str(path)


def config_label(project) -> str:
    """How messages name the project's configuration (``…/pyproject.toml [tool.cudaenv]``)."""
    if project.config_path is None:
        return str(project.root / CONFIG_FILE)
    suffix = " [tool.cudaenv]" if project.config_path.name == "pyproject.toml" else ""
    return f"{project.config_path}{suffix}"
