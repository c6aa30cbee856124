"""Which framework builds a project's framework index serves.

The index decides which builds exist. PyPI serves one CUDA build of each torch release (the
matrix's ``pypi_cuda``: torch 2.10.0 is the CUDA 12.8 build there), PyTorch's
``download.pytorch.org/whl/cu126`` only its cu126 builds. A stack chosen among builds the index does
not serve gets another build from uv (one for another CUDA), so resolution has to know which index
it is choosing for. The index in effect is ``CUDAENV_FRAMEWORK_INDEX``, else ``[build]
framework_index``; what it serves is read from its URL when that is PyPI's or a framework build's own
index, else from ``CUDAENV_FRAMEWORK_INDEX_MIRRORS`` / ``[build] framework_index_mirrors`` (a mirror
says what it mirrors). An index that says neither is taken to mirror whichever build's own index
the stack needs, as before; no framework index at all means each build's own index.
"""

from __future__ import annotations

import os
import urllib.parse

from cudaenv.errors import UserError
from cudaenv.resolver.model import PYPI, PYPI_INDEX

INDEX_ENV = "CUDAENV_FRAMEWORK_INDEX"
MIRRORS_ENV = "CUDAENV_FRAMEWORK_INDEX_MIRRORS"


def _canonical(url: str) -> str:
    """An index URL without credentials, trailing slash, or case in its scheme and host."""
    parts = urllib.parse.urlsplit(url.strip())
    host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme.lower(), host.lower(), parts.path.rstrip("/"), "", ""))


def same_index(one: str, other: str) -> bool:
    """Whether two URLs name one index (credentials, a trailing slash and case aside)."""
    return _canonical(one) == _canonical(other)


def recognized(url: str, own_indexes) -> str | None:
    """PYPI for PyPI's simple index, the matrix's spelling of a framework build's own index, else None."""
    canonical = _canonical(url)
    if canonical == PYPI_INDEX:
        return PYPI
    return next((own for own in own_indexes if _canonical(own) == canonical), None)


def served_by(matrix, project) -> str | None:
    """What the project's framework index serves (``Constraints.framework_index``)."""
    from cudaenv.project.locate import ConfigError, check_index_url, config_label, is_index_url
    from cudaenv.resolver.resolve import own_indexes

    # the environment's overrides are read as strictly as the file's keys, index or not
    mirrors_env = os.environ.get(MIRRORS_ENV)
    if mirrors_env and mirrors_env.strip().lower() != PYPI and not is_index_url(mirrors_env.strip()):
        raise UserError(f"{MIRRORS_ENV}: expected \"pypi\" or the URL of the index {INDEX_ENV} mirrors, "
                        f"got {mirrors_env!r}")
    index = check_index_url(os.environ.get(INDEX_ENV) or None, INDEX_ENV) or project.build.framework_index
    if not index:
        return None
    own = own_indexes(matrix)
    known = recognized(index, own)
    if known is not None:
        return known
    declared, where = os.environ.get(MIRRORS_ENV), MIRRORS_ENV
    if not declared:
        declared, where = project.build.framework_index_mirrors, f"{config_label(project)}: build.framework_index_mirrors"
    if not declared:
        return None
    if declared.strip().lower() == PYPI:
        return PYPI
    known = recognized(declared, own)
    if known is None:
        shown = ", ".join(own[:2]) + (", …" if len(own) > 2 else "")
        error = ConfigError if where != MIRRORS_ENV else UserError
        raise error(f"{where}: expected \"pypi\" or a framework build's own index ({shown}; see `cudaenv matrix "
                    f"show torch`), got {declared!r}")
    return known
