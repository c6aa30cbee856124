"""Requirement files as pip reads them: the one reader that ``init``, the lock, the image key and
the image all use.

pip owns the grammar (``\\`` continuations, comments after any whitespace, a UTF-8/UTF-16 BOM,
CRLF, ``-rFILE`` / ``--requirement=FILE``, ``-c``, per-line ``--hash``, markers). It is read with
`pip-requirements-parser <https://pypi.org/project/pip-requirements-parser/>`_, which vendors
pip's own ``req_file`` module (line joining, comment stripping, optparse of pip's options, BOM
decoding) rather than re-implementing it. We walk ``-r`` / ``-c`` includes ourselves, one file at
a time, because the library neither stops at a cycle nor keeps the walk inside the project.

Every option pip accepts is either honoured the same way by the lock (uv reads the same files),
the image and the image key, or refused here with ``file:line`` (exit 2):

- honoured: ``-r``, ``-c``, ``-e .`` and local paths (the project's own code, installed from
  ``/workspace``), ``--find-links`` (a URL, or a folder/wheel inside the project, which is then an
  input of the lock), ``--extra-index-url``, ``--index-url``, ``--hash`` (read and kept on the line; the
  lock warns that it does not check them yet: see ``lock.with_hash_warnings``); and the options that only
  steer which versions the lock picks (``--pre``, ``--prefer-binary``, ``--only-binary``,
  ``--require-hashes``), whose result the image installs as pinned;
- refused: what the image could not repeat or what cudaenv decides otherwise — ``--no-binary``
  and per-requirement build options (cudaenv installs wheels; see ``[build] build_from_source``),
  ``--no-index``, ``--trusted-host`` (plain-HTTP indexes), VCS and remote requirements, includes
  by URL or from outside the project, and ``${VARIABLE}`` expansion (credentials belong in netrc).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement

from cudaenv.project.locate import ConfigError
from cudaenv.versions import LINUX_X86_64, marker_holds  # noqa: F401 - re-exported: callers import them from here

SAFE_MOUNT_PATH = re.compile(r"[A-Za-z0-9._+/-]{1,255}")
WHITESPACE_RUN = re.compile(r"[ \t]{64,}")
MAX_DEPTH = 16  # -r chains deeper than this are a loop in disguise or a generated maze
# ${NAME} as pip expands it (upper case, digits, underscore): pip substitutes the environment
ENV_VARIABLE = re.compile(r"\$\{[A-Z0-9_]+\}")
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# options whose effect is the lock's choice of versions: uv honours them, the image installs the pins
RESOLUTION_ONLY = {"pre", "prefer_binary", "only_binary", "require_hashes", "use_features"}
HONOURED = {"requirements", "constraints", "editables", "find_links", "extra_index_urls", "index_url", "hashes"}
REFUSED = {
    "no_binary": "cudaenv installs wheels only; list packages to compile in [build] build_from_source",
    "no_index": "the image installs from the project's indexes; use [build] python_index for a mirror",
    "trusted_hosts": "a plain-HTTP index cannot be verified; serve it over HTTPS (a private CA: [build] ca_cert)",
    "install_options": "per-requirement build options are not repeated in the image; use [build] build_from_source",
    "global_options": "per-requirement build options are not repeated in the image; use [build] build_from_source",
}


class RequirementFileError(ConfigError):
    """A line of a requirement file that pip would reject, or that cudaenv cannot honour (exit 2)."""


@dataclass(frozen=True)
class Line:
    """One requirement as pip reads it, with where it was written (``requirements/base.txt:3``)."""

    where: str
    text: str  # the requirement without its options (no --hash)
    requirement: Requirement | None  # a named requirement; None for the project's own code
    constraint: bool = False  # from a -c file: limits versions, installs nothing
    local: str | None = None  # "." or "pkg[dev]": the project's own code, relative to the project root
    editable: bool = False
    marker: Marker | None = None  # a local path's marker (a named requirement carries its own)
    hashes: tuple[str, ...] = ()  # its --hash values (pip checks the downloaded file against them)

    def applies(self, python: str | None = None) -> bool:
        """Whether the marker holds on the image's platform (Linux x86_64, CPython) for ``python``
        ("3.12"), or for any Python when None (the marker's other clauses still count)."""
        marker = self.requirement.marker if self.requirement is not None else self.marker
        if marker is None:
            return True
        if python is None:
            return any(marker_holds(marker, p) for p in CANDIDATE_PYTHONS)
        return marker_holds(marker, python)


CANDIDATE_PYTHONS = tuple(f"3.{minor}" for minor in range(20, 5, -1))  # newest first


@dataclass(frozen=True)
class RequirementFiles:
    """What a set of top-level requirement files says, includes and constraints followed."""

    lines: tuple[Line, ...] = ()
    files: tuple[str, ...] = ()  # every file read, top-level ones first, relative to the project root
    find_links: tuple[str, ...] = ()  # URLs as written; local folders and wheels relative to the root
    extra_index_urls: tuple[str, ...] = ()
    index_url: str | None = None
    local_inputs: tuple[str, ...] = ()  # local find-links folders and wheels: inputs of the lock

    def requirements(self, python: str | None = None) -> list[Line]:
        """The named requirements that apply for ``python`` (constraints and own code excluded)."""
        return [line for line in self.lines if line.requirement is not None and not line.constraint
                and line.applies(python)]

    @property
    def own_code(self) -> tuple[str, ...]:
        """The project's own packages ("." or "./pkg"), in the order written, each once."""
        return tuple(dict.fromkeys(line.local for line in self.lines if line.local is not None and line.applies()))

    def pythons_markers_split(self) -> bool:
        """Whether the requirements that apply differ from one Python to another."""
        seen = {tuple(line.where for line in self.requirements(p)) for p in CANDIDATE_PYTHONS}
        return len(seen) > 1


def decode(data: bytes, label: str) -> str:
    """The text of a requirement file as pip decodes it: a BOM names the encoding, else UTF-8
    (pip then falls back to the locale; cudaenv asks for UTF-8 so every machine reads the same)."""
    from pip_requirements_parser import auto_decode

    try:
        # runs of blanks collapse to one (pip splits on them alike): pip's comment pattern takes
        # quadratic time on a long run, which a hostile file would turn into a hang
        return WHITESPACE_RUN.sub(" ", auto_decode(data))
    except (UnicodeError, LookupError) as exc:
        raise RequirementFileError(f"{label}: not UTF-8 text ({getattr(exc, 'reason', exc)}); "
                                   "save it as UTF-8") from exc


def read_requirement_files(root: Path, files) -> RequirementFiles:
    """Read ``files`` (paths relative to ``root``, or absolute ones inside it) with pip's grammar."""
    walk = _Walk(Path(os.path.abspath(root)))
    for item in files:
        path = Path(item)
        walk.file(path if path.is_absolute() else walk.root / path, constraint=False, depth=0, by=None)
    return walk.result()


def read_requirement_items(root: Path, folder: Path, items, label: str) -> RequirementFiles:
    """Requirement lines that live in another file (an environment.yml ``pip:`` list): ``items``
    are (line number, text); each is read as a line of a requirement file in ``folder`` (includes
    and paths resolve against it, as conda's pip step runs there) and named ``label:LINE``."""
    walk = _Walk(Path(os.path.abspath(root)))
    for number, text in items:
        walk.text(str(text), Path(os.path.abspath(folder)) / "_", label, constraint=False, depth=0, first=number)
    return walk.result()


class _Walk:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = Path(os.path.realpath(root))
        self.lines: list[Line] = []
        self.files: list[str] = []
        self.find_links: list[str] = []
        self.extra_index_urls: list[str] = []
        self.index_url: str | None = None
        self.local_inputs: list[str] = []
        self._seen: set[tuple[str, bool]] = set()

    def relative(self, path: Path) -> str:
        return Path(os.path.relpath(os.path.realpath(path), self.real_root)).as_posix()

    def inside(self, path: Path) -> bool:
        try:
            real = os.path.realpath(path)
        except (ValueError, OSError):  # a NUL byte, a name the system refuses: no file of the project
            return False
        return real == str(self.real_root) or real.startswith(str(self.real_root) + os.sep)

    def file(self, path: Path, *, constraint: bool, depth: int, by: str | None) -> None:
        if depth > MAX_DEPTH:
            raise RequirementFileError(f"{by}: includes nested more than {MAX_DEPTH} deep (a loop?)")
        if not self.inside(path):
            raise RequirementFileError(f"{by or path}: {path} is outside the project directory {self.root}; "
                                       "the image holds only the project's files")
        relative = self.relative(path)
        if (relative, constraint) in self._seen:
            return  # requirements-dev.txt's "-r requirements.txt" is not read twice (pip reads it twice, same result)
        what = f"cannot read {relative}" if by else "cannot read"
        if _exists(path) and not path.is_file():  # a folder, a FIFO (reading one would wait forever)
            raise RequirementFileError(f"{by or relative}: {what}: not a regular file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RequirementFileError(f"{by or relative}: {what}: {exc.strerror or exc}") from exc
        self._seen.add((relative, constraint))  # read as constraints first, it is still read as requirements
        if relative not in self.files:
            self.files.append(relative)
        self.text(decode(data, relative), path, relative, constraint=constraint, depth=depth)

    def result(self) -> RequirementFiles:
        return RequirementFiles(lines=tuple(self.lines), files=tuple(self.files),
                                find_links=tuple(dict.fromkeys(self.find_links)),
                                extra_index_urls=tuple(dict.fromkeys(self.extra_index_urls)),
                                index_url=self.index_url, local_inputs=tuple(dict.fromkeys(self.local_inputs)))

    def text(self, text: str, path: Path, label: str, *, constraint: bool, depth: int, first: int = 1) -> None:
        from pip_requirements_parser import CommentLine, get_line_parser, preprocess

        parse = get_line_parser()
        for item in preprocess(text):
            number, line = item
            if isinstance(item, CommentLine) or not line.strip():
                continue
            where = f"{label}:{number + first - 1}"
            if ENV_VARIABLE.search(line):
                raise RequirementFileError(f"{where}: {line.strip()[:80]!r}: cudaenv does not expand environment "
                                           "variables in requirement files (pip does): put index credentials in "
                                           "~/.netrc or CUDAENV_PYTHON_INDEX, never in a committed file")
            try:
                requirement_text, options, arguments = parse(line.strip())
            except Exception as exc:  # noqa: BLE001 - optparse's and shlex's errors, as pip reports them
                message = str(getattr(exc, "msg", exc)).replace("pip_requirements_parser: error: ", "")
                unknown = re.match(r"no such option: (\S+)", message)
                if unknown:  # options newer pips added (--config-settings): not repeated in the image either
                    raise RequirementFileError(f"{where}: {unknown.group(1)} is not supported: cudaenv does not repeat "
                                               "it in the lock or the image (build settings: [build] "
                                               "build_from_source)") from exc
                raise RequirementFileError(f"{where}: {line.strip()[:80]!r} is not a line cudaenv can read as pip does "
                                           f"({message.splitlines()[0][:120]})") from exc
            self.line(requirement_text.strip(), options, arguments, path, where, constraint=constraint, depth=depth)

    def line(self, text: str, options, arguments, path: Path, where: str, *, constraint: bool, depth: int) -> None:
        from pip_requirements_parser import OPT_BY_OPTIONS_DEST

        values = {k: v for k, v in vars(options).items() if v}
        for name in values:
            if name in REFUSED or name not in HONOURED | RESOLUTION_ONLY:
                why = REFUSED.get(name, "pip no longer reads it")  # the legacy options pip 20 removed
                raise RequirementFileError(f"{where}: {OPT_BY_OPTIONS_DEST.get(name, name)} is not supported: {why}")
        editables = values.pop("editables", [])
        if text or editables:
            if arguments:
                raise RequirementFileError(f"{where}: unexpected {' '.join(arguments)[:80]!r} after the requirement")
            if len(editables) > 1 or (editables and text):
                raise RequirementFileError(f"{where}: one requirement per line")
            self.requirement(editables[0] if editables else text, where, path, constraint=constraint,
                             editable=bool(editables), hashes=tuple(values.get("hashes", ())))
            return
        if arguments:
            raise RequirementFileError(f"{where}: unexpected {' '.join(arguments)[:80]!r} after an option")
        for include in values.get("requirements", []):
            self.include(include, path, where, constraint=False, depth=depth)
        for include in values.get("constraints", []):
            self.include(include, path, where, constraint=True, depth=depth)
        for link in values.get("find_links", []):
            self.link(link.lstrip("="), path, where)
        for url in values.get("extra_index_urls", []):
            self.extra_index_urls.append(_index(url.lstrip("="), where))
        if "index_url" in values:
            url = _index(values["index_url"].lstrip("="), where)
            if self.index_url not in (None, url):
                raise RequirementFileError(f"{where}: a second --index-url ({url}) after {self.index_url}: "
                                           "pip uses one; keep one and make the others --extra-index-url")
            self.index_url = url

    def include(self, target: str, path: Path, where: str, *, constraint: bool, depth: int) -> None:
        target = target.lstrip("=")
        if URL_SCHEME.match(target):
            raise RequirementFileError(f"{where}: {target[:80]!r}: a requirement file from a URL cannot be locked "
                                       "reproducibly; copy it into the project")
        # pip resolves an include against the including file's folder
        self.file(path.parent / target, constraint=constraint, depth=depth + 1, by=where)

    def link(self, target: str, path: Path, where: str) -> None:
        if URL_SCHEME.match(target) and not target.startswith("file:"):
            self.find_links.append(_index(target, where, what="--find-links"))
            return
        local = _file_path(target)
        # pip: relative to the requirement file when it exists there, else to the working directory
        candidate = path.parent / local
        resolved = candidate if _exists(candidate) else self.root / local
        if not self.inside(resolved):
            raise RequirementFileError(f"{where}: --find-links {target[:80]!r} is outside the project directory; "
                                       "the image holds only the project's files")
        if not _exists(resolved):
            raise RequirementFileError(f"{where}: --find-links {target[:80]!r}: no such folder or file")
        relative = self.relative(resolved)
        if not SAFE_MOUNT_PATH.fullmatch(relative):  # it becomes a BuildKit bind mount's source= (CSV, no quoting)
            raise RequirementFileError(f"{where}: --find-links {target[:80]!r}: a folder in the project reaches the "
                                       "image as a build mount, whose path may hold only letters, digits and "
                                       ". _ - + / (rename it)")
        self.find_links.append(relative)
        self.local_inputs.append(relative)

    def requirement(self, text: str, where: str, path: Path, *, constraint: bool, editable: bool,
                    hashes: tuple[str, ...] = ()) -> None:
        local = self.local_path(text, path, where, editable=editable)
        if local is not None:
            written, extras, marker = local
            resolved = (path.parent / written) if _exists(path.parent / written) else (self.root / written)
            if written.startswith("~") or not self.inside(resolved):
                raise RequirementFileError(f"{where}: {text[:80]!r} is outside the project directory; "
                                           "the image holds only the project's files")
            if not _exists(resolved):
                raise RequirementFileError(f"{where}: {text[:80]!r}: no such folder or file in the project")
            if constraint:
                raise RequirementFileError(f"{where}: {text[:80]!r}: a constraint must name a package")
            if resolved.is_file():
                self.archive(resolved, text, where, marker)
                return
            self.lines.append(Line(where=where, text=text, requirement=None, local=self.relative(resolved) + extras,
                                   editable=editable, marker=marker))
            return
        if URL_SCHEME.match(text) or re.match(r"^(?:git|hg|svn|bzr)\+", text):
            if not editable:  # a bare URL: pip and uv take the name from the wheel file or the built metadata
                self.lines.append(Line(where=where, text=text, requirement=_wheel_url(text), constraint=constraint))
                return
        if editable:
            url, _, fragment = text.partition("#")
            params = [p for p in fragment.split("&") if p]
            egg = next((p[4:] for p in params if p.startswith("egg=")), None)
            rest = "&".join(p for p in params if not p.startswith("egg="))  # subdirectory= stays
            reference = url + (f"#{rest}" if rest else "")
            instead = (f"write {egg + ' @ ' + reference!r} (a pinned reference uv can lock)" if egg
                       else "use a released version, or vendor the code in the project")
            raise RequirementFileError(f"{where}: -e {text[:80]!r}: an editable install from a repository or URL "
                                       f"cannot be locked; {instead}")
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            raise RequirementFileError(f"{where}: {text[:80]!r} is not a requirement pip can read "
                                       f"({str(exc).splitlines()[0][:120]})") from exc
        self.lines.append(Line(where=where, text=text, requirement=requirement, constraint=constraint, hashes=hashes))

    def local_path(self, text: str, path: Path, where: str, *, editable: bool):
        """(path as written, "[extras]", marker) when pip reads ``text`` as a path, else None:
        ``./pkg``, ``.[dev]``, ``./sub ; python_version < "3.12"``, ``file:…``, a wheel file's
        name, or (after -e) a folder that exists."""
        if (URL_SCHEME.match(text) and not text.startswith("file:")) or re.match(r"^(?:git|hg|svn|bzr)\+", text):
            return None
        body, _, marker_text = text.partition(";")
        body = body.strip()
        extras_match = re.search(r"(\[[^\]]*\])$", body)
        extras = extras_match.group(1) if extras_match else ""
        written = _file_path(body[: len(body) - len(extras)].strip())
        folder_by_name = editable and (_exists(path.parent / written) or _exists(self.root / written))
        archive = re.fullmatch(r"[^\s@]+\.(?:whl|tar\.gz|zip|tar\.bz2|tgz)", written)  # a file name, not "x @ URL"
        if not (_is_local_path(body) or archive or folder_by_name):
            return None
        try:
            marker = Marker(marker_text) if marker_text.strip() else None
        except Exception as exc:  # noqa: BLE001 - packaging's InvalidMarker
            raise RequirementFileError(f"{where}: {text[:80]!r}: not a marker pip can read "
                                       f"({str(exc).splitlines()[0][:120]})") from exc
        return written, extras.replace(" ", ""), marker

    def archive(self, resolved: Path, text: str, where: str, marker) -> None:
        """A wheel file in the project: that release of that package, from the wheel's folder (the
        lock and the image then find the same file there). A source archive would need a build."""
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        try:
            name, version, _, _ = parse_wheel_filename(resolved.name)
        except InvalidWheelFilename as exc:
            raise RequirementFileError(f"{where}: {text[:80]!r}: cudaenv installs wheels; build this archive into a "
                                       "wheel (python -m build --wheel) and list the wheel") from exc
        folder = self.relative(resolved.parent)
        if not SAFE_MOUNT_PATH.fullmatch(folder):
            raise RequirementFileError(f"{where}: {text[:80]!r}: the wheel's folder reaches the image as a build "
                                       "mount, whose path may hold only letters, digits and . _ - + / (rename it)")
        self.find_links.append(folder)
        self.local_inputs.append(self.relative(resolved))
        pin = f"{name}=={version}" + (f"; {marker}" if marker is not None else "")
        self.lines.append(Line(where=where, text=pin, requirement=Requirement(pin)))


def _exists(path: Path) -> bool:
    """``Path.exists`` that says no, rather than raising, for a name no file can have (a NUL byte,
    a component past the system's limit)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _file_path(text: str) -> str:
    """The path a ``file:`` URL names (``file:///abs``, ``file://localhost/abs``, ``file:rel``), or
    ``text`` itself."""
    import urllib.parse

    if not text.startswith("file:"):
        return text
    parts = urllib.parse.urlsplit(text)
    if parts.netloc not in ("", "localhost"):
        return "//" + parts.netloc + parts.path  # a host's share: outside the project
    return urllib.parse.unquote(parts.path)


def _wheel_url(url: str) -> Requirement | None:
    """``name @ URL`` for the URL of a wheel (its file name says the name), else None."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    name = url.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1]
    try:
        return Requirement(f"{parse_wheel_filename(name)[0]} @ {url}") if name.endswith(".whl") else None
    except (InvalidWheelFilename, InvalidRequirement):
        return None


def _is_local_path(text: str) -> bool:
    """``.``, ``./pkg``, ``../x``, ``/abs``, ``pkg/`` or ``file:`` as pip takes them: a path, not a name."""
    if text.startswith(("file:", ".", "/", "~")):
        return True
    head = re.split(r"[\s;\[]", text, maxsplit=1)[0]
    return "/" in head and not URL_SCHEME.match(head) and "@" not in text


def _index(url: str, where: str, what: str = "an index") -> str:
    """An index or find-links URL as written, credentials stripped: what the lock may record."""
    import urllib.parse

    from cudaenv.project.locate import is_index_url

    if not is_index_url(url):
        raise RequirementFileError(f"{where}: {url[:80]!r}: {what} must be an http(s):// URL")
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        raise RequirementFileError(f"{where}: {what} {parts.hostname} carries credentials in the file; put them in "
                                   "~/.netrc (they must never be committed)")
    return url
