"""Everything a project's dependency files say, and every file they make an input, read once.

``[project] requirements`` lists the top-level files; each is read by the reader of its format
(requirement files with pip's grammar in ``cudaenv.project.reqfile``, ``pyproject.toml`` in
``cudaenv.project.pyproject``, a conda file's ``pip:`` list in ``cudaenv.project.detect``). The
result is one ``RequirementFiles``: what the lock hands uv, what the image installs from (its
find-links and indexes, the project's own code), and the list of files — includes, constraints,
local find-links folders and wheels — whose bytes the lock's inputs hash and the image key cover.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from cudaenv.project.reqfile import RequirementFiles, read_requirement_files


def read_project_requirements(root: Path, requirements) -> RequirementFiles:
    """The merged reading of ``requirements`` (paths relative to ``root``), in their order."""
    from cudaenv.project.detect import CONDA_FILES, environment_pip
    from cudaenv.project.pyproject import read_pyproject

    parts: list[RequirementFiles] = []
    for relative in requirements:
        path = Path(root) / relative
        if Path(relative).name == "pyproject.toml":
            lines, _ = read_pyproject(path, Path(relative).as_posix())
            parts.append(RequirementFiles(lines=tuple(lines), files=(Path(relative).as_posix(),)))
        elif Path(relative).name in CONDA_FILES:
            pip = environment_pip(path, Path(root))
            parts.append(RequirementFiles(lines=pip.lines, files=(Path(relative).as_posix(), *pip.files),
                                          find_links=pip.find_links, extra_index_urls=pip.extra_index_urls,
                                          index_url=pip.index_url, local_inputs=pip.local_inputs))
        else:
            parts.append(read_requirement_files(Path(root), [relative]))
    return merge(parts)


def uv_lines(read: RequirementFiles, root: Path) -> list[str]:
    """The requirements of ``read`` as lines uv reads (constraints aside): each named requirement
    as written, the project's own code by its absolute path (``-e`` kept, its marker too), so that
    uv resolves what cudaenv read from wherever it runs."""
    lines = []
    for line in read.lines:
        if line.constraint:
            continue
        if line.local is None:
            lines.append(line.text)
            continue
        path = f"-e {Path(root) / line.local}" if line.editable else str(Path(root) / line.local)
        lines.append(f"{path} ; {line.marker}" if line.marker is not None else path)
    return lines


def merge(parts) -> RequirementFiles:
    from cudaenv.project.reqfile import RequirementFileError

    index = None
    for part in parts:
        if part.index_url and index not in (None, part.index_url):
            raise RequirementFileError(f"{part.files[0]}: --index-url {part.index_url} differs from another "
                                       f"file's {index}: pip uses one; make the others --extra-index-url")
        index = index or part.index_url

    def unique(name: str) -> tuple:
        return tuple(dict.fromkeys(item for part in parts for item in getattr(part, name)))

    return RequirementFiles(lines=tuple(line for part in parts for line in part.lines), files=unique("files"),
                            find_links=unique("find_links"), extra_index_urls=unique("extra_index_urls"),
                            index_url=index, local_inputs=unique("local_inputs"))


def file_digest(path: str) -> str:
    """A file's bytes, or a folder's tree (names and bytes, sorted): a local find-links folder
    changes when a wheel is added, removed or replaced."""
    digest = hashlib.sha256()
    if os.path.isdir(path):
        for directory, subdirs, files in sorted(os.walk(path)):
            subdirs.sort()
            for name in sorted(files):
                full = os.path.join(directory, name)
                digest.update(os.path.relpath(full, path).encode() + b"\0")
                with open(full, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    else:
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


# What a file needs to hold for pip to read another file from it: an include, a constraint, a
# find-links option or a local archive. A file without any of these bytes (in UTF-8; a UTF-16/32 BOM
# always goes to the reader) names no other input, and the image key (`cudaenv run`, every time)
# need not import the parser to learn that.
_MAY_NAME_A_FILE = re.compile(rb"-(?:[rcf]|-requirement|-constraint|-find-links)|\.(?:whl|zip|tgz|tar)\b|file:")
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


def _may_name_a_file(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return True  # the reader says what is wrong with it
    return data.startswith(_WIDE_BOMS) or _MAY_NAME_A_FILE.search(data) is not None


def extra_inputs(root: Path, requirements) -> list[str]:
    """The files the lock also depends on beyond ``requirements`` themselves: includes, constraints,
    local find-links folders and wheels, relative to ``root``, in the order read."""
    if not any(Path(r).name != "pyproject.toml" and _may_name_a_file(Path(root) / r) for r in requirements):
        return []
    read = read_project_requirements(root, requirements)
    top = {Path(r).as_posix() for r in requirements}
    return [f for f in (*read.files, *read.local_inputs) if f not in top]
