"""``pyproject.toml`` dependencies as the build tools people use write them.

- PEP 621 ``[project] dependencies`` (what ``pip install .`` installs) and ``requires-python``;
- PEP 735 ``[dependency-groups]``: the ``dev`` group, which ``uv sync`` installs by default
  (``{include-group = …}`` followed);
- Poetry's ``[tool.poetry.dependencies]`` and its non-optional ``[tool.poetry.group.*]`` groups
  (what ``poetry install`` installs), with Poetry's own version grammar turned into PEP 440:
  ``^2.12.1`` is ``>=2.12.1,<3.0.0``, ``~2.12`` is ``>=2.12,<2.13``, a bare ``2.12.1`` is
  ``==2.12.1``, ``*`` is any; ``python = ">=3.8,<3.12"`` is the project's Python.

Each dependency becomes a ``cudaenv.project.reqfile.Line`` naming ``pyproject.toml:LINE``, so init,
the lock and the image read pyproject.toml the same way they read a requirements file.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from cudaenv.project.locate import ConfigError
from cudaenv.project.reqfile import Line

POETRY_VERSION = re.compile(r"^\s*(?P<op>\^|~(?!=)|==|!=|>=|<=|>|<|~=|=)?\s*(?P<version>[0-9][0-9A-Za-z.*+!-]*)\s*$")


def read_toml(path: Path) -> dict:
    """A TOML file, as written on any editor: a UTF-8 BOM (Windows Notepad) is dropped and CRLF
    line ends are TOML's own; anything else wrong is one line naming the file."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    try:
        text = path.read_bytes().decode("utf-8").removeprefix("\ufeff")
        return tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # an integer past Python's digit limit, nesting past the stack
        raise ConfigError(f"{path}: invalid TOML: {str(exc)[:120] or 'nested too deeply'}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def poetry_specifier(text: str, where: str) -> str:
    """Poetry's constraint (``^1.2``, ``~1.2.3``, ``1.2.3``, ``>=1,<2``, ``*``) as a PEP 440 specifier."""
    text = re.sub(r"(\^|~=?|==|!=|>=|<=|>|<|=)\s+", r"\1", text.strip())  # Poetry allows ">= 2.1"
    if text in ("", "*"):
        return ""
    if "||" in text:
        raise ConfigError(f"{where}: {text!r}: Poetry's '||' (either range) has no PEP 440 spelling; "
                          "write one range")
    parts = [p for p in re.split(r"\s*,\s*|\s+(?=[\^~=!<>0-9])", text) if p]
    out = []
    for part in parts:
        match = POETRY_VERSION.match(part)
        if not match:
            raise ConfigError(f"{where}: {part!r} is not a Poetry version constraint (e.g. '^2.12', '>=2.1,<3')")
        op, version = match.group("op"), match.group("version")
        if op == "^" or op == "~":
            numbers = version.split(".")
            if not all(n.isdigit() and n.isascii() for n in numbers):
                raise ConfigError(f"{where}: {part!r}: {op} needs a plain version such as 2.12.1")
            if op == "^":  # the first non-zero part may not change
                first = next((i for i, n in enumerate(numbers) if int(n) != 0), len(numbers) - 1)
                upper = numbers[:first] + [str(int(numbers[first]) + 1)]
            else:  # ~1.2.3 and ~1.2 keep the minor, ~1 the major
                keep = 1 if len(numbers) == 1 else 2
                upper = numbers[:keep - 1] + [str(int(numbers[keep - 1]) + 1)]
            out += [f">={version}", f"<{'.'.join(upper + ['0'] * (len(numbers) - len(upper)))}"]
        elif op in (None, "="):
            out.append(f"=={version}")
        else:
            out.append(f"{op}{version}")
    return ",".join(out)


def _number(lines: list[str], pattern: str, after: int = 0) -> int | None:
    """The first line after line ``after`` that ``pattern`` (a regular expression) finds."""
    found = re.compile(pattern)
    return next((n for n, text in enumerate(lines, 1) if n > after and found.search(text)), None)


def _quoted(item: str) -> str:
    """A pattern for ``item`` as a TOML string, in either quotes."""
    return f"""(["']){re.escape(item)}\\1"""


def _header(name: str) -> str:
    return rf"^\s*\[\s*{re.escape(name)}\s*\]"


def _pep508(item, where: str) -> Requirement | None:
    if not isinstance(item, str):
        raise ConfigError(f"{where}: expected requirement strings, got {item!r}")
    try:
        return Requirement(item)
    except InvalidRequirement as exc:
        raise ConfigError(f"{where}: {item[:80]!r} is not a PEP 508 requirement "
                          f"({str(exc).splitlines()[0][:120]})") from exc


def _poetry_entry(name: str, value, where: str) -> Requirement | None:
    """One Poetry dependency (``torch = "^2.1"`` or ``torch = {version = "…", extras = […],
    markers = "…", python = "…", optional = true}``) as a requirement; None for one that a default
    install leaves out (optional) or that names no index package (path, git, url)."""
    if isinstance(value, list):  # several constraints by marker: take each one's requirement
        raise ConfigError(f"{where}: {name}: several constraints for one package (a Poetry list) are not "
                          "supported; keep one")
    if isinstance(value, str):
        table = {"version": value}
    elif isinstance(value, dict):
        table = value
    else:
        raise ConfigError(f"{where}: {name}: expected a version string or a table, got {value!r}")
    if table.get("optional") is True:
        return None
    if any(key in table for key in ("path", "git", "url", "file")):
        return None  # the project's own code or a repository: not an index package
    extras = table.get("extras", [])
    if not isinstance(extras, list) or not all(isinstance(e, str) for e in extras):
        raise ConfigError(f"{where}: {name}.extras: expected a list of names")
    version = table.get("version", "*")
    if not isinstance(version, str):
        raise ConfigError(f"{where}: {name}.version: expected a string like '^2.1', got {version!r}")
    markers = []
    if isinstance(table.get("markers"), str):
        markers.append(f"({table['markers']})")
    if isinstance(table.get("python"), str):
        python = poetry_specifier(table["python"], f"{where}: {name}.python")
        # Poetry's own spelling: python_version for X.Y, python_full_version for X.Y.Z
        markers += [f'{"python_full_version" if m.group(2).count(".") >= 2 else "python_version"} '
                    f'{m.group(1)} "{m.group(2)}"' for m in re.finditer(r"(==|!=|>=|<=|>|<)([0-9.*]+)", python)]
    text = f"{name}{'[' + ','.join(extras) + ']' if extras else ''}{poetry_specifier(version, f'{where}: {name}')}"
    if markers:
        text += "; " + " and ".join(markers)
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        raise ConfigError(f"{where}: {name}: {text[:80]!r} is not a requirement ({exc})") from exc


def read_pyproject(path: Path, label: str = "pyproject.toml") -> tuple[list[Line], str | None]:
    """(the dependencies a default install brings, the project's Python specifier or None)."""
    data = read_toml(path)
    try:
        lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:  # pragma: no cover - read_toml has just read it
        lines = []
    found: list[Line] = []

    def add(requirement: Requirement | None, pattern: str, after: int = 0) -> None:
        if requirement is None:
            return
        number = _number(lines, pattern, after)
        found.append(Line(where=f"{label}:{number}" if number else label, text=str(requirement),
                          requirement=requirement))

    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ConfigError(f"{path}: [project] must be a table")
    dependencies = project.get("dependencies", []) or []
    if not isinstance(dependencies, list):
        raise ConfigError(f"{path}: project.dependencies: expected a list of requirement strings")
    start = _number(lines, _header("project")) or 0
    for item in dependencies:
        add(_pep508(item, f"{path}: project.dependencies"), _quoted(str(item)), start)
    python = project.get("requires-python")
    if python is not None and not isinstance(python, str):
        raise ConfigError(f"{path}: project.requires-python: expected a string like '>=3.10', got {python!r}")

    groups = data.get("dependency-groups", {})
    if not isinstance(groups, dict):
        raise ConfigError(f"{path}: dependency-groups: expected a table of lists")
    start = _number(lines, _header("dependency-groups")) or 0
    for item in _group(groups, "dev", path):
        add(_pep508(item, f"{path}: dependency-groups.dev"), _quoted(str(item)), start)

    tool = data.get("tool", {})
    poetry = tool.get("poetry", {}) if isinstance(tool, dict) else {}
    if isinstance(poetry, dict) and poetry:
        start = _number(lines, r"^\s*\[\s*tool\.poetry") or 0
        tables = [("dependencies", poetry.get("dependencies", {}))]
        group_tables = poetry.get("group", {})
        if isinstance(group_tables, dict):
            tables += [(f"group.{name}.dependencies", table.get("dependencies", {}))
                       for name, table in group_tables.items()
                       if isinstance(table, dict) and table.get("optional") is not True]
        for key, table in tables:
            if not isinstance(table, dict):
                raise ConfigError(f"{path}: tool.poetry.{key}: expected a table of name = version")
            after = _number(lines, _header(f"tool.poetry.{key}")) or start
            for name, value in table.items():
                if name.lower() == "python":
                    if not isinstance(value, str):
                        raise ConfigError(f"{path}: tool.poetry.{key}.python: expected a string like '>=3.9,<3.12'")
                    python = python or poetry_specifier(value, f"{path}: tool.poetry.{key}.python") or None
                    continue
                add(_poetry_entry(name, value, f"{path}: tool.poetry.{key}"),
                    rf"^\s*(?:{re.escape(name)}|{_quoted(name)})\s*=", after)
    return found, python


def _group(groups: dict, name: str, path: Path) -> list:
    """A PEP 735 group's requirement strings, ``{include-group = "…"}`` followed (each group once,
    without recursion: a chain of thousands of groups is no stack overflow)."""
    out, seen, pending = [], set(), [name]
    while pending:
        current = pending.pop()
        if current in seen or current not in groups:
            continue
        seen.add(current)
        items = groups[current]
        if not isinstance(items, list):
            raise ConfigError(f"{path}: dependency-groups.{current}: expected a list")
        includes = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("include-group"), str):
                includes.append(item["include-group"])
            else:
                out.append(item)
        pending += reversed(includes)
    return out
