"""Where the shipped data lives: ``matrix/`` and ``templates/``.

In the repository they sit at the top level (data, not code); a built wheel carries them as
``cudaenv/_data/<name>``. Looking in both places lets an editable install, a source checkout
and an installed wheel behave the same. (Plain ``os.path`` underneath: ``cudaenv resolve``
finds its matrix without loading ``pathlib``.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # cudaenv/, above core/


def data_path(name: str) -> str:
    """The directory holding the shipped ``name`` data (``"matrix"`` or ``"templates"``), as text."""
    candidates = (os.path.join(_PACKAGE_DIR, "_data", name), os.path.join(os.path.dirname(_PACKAGE_DIR), name))
    for candidate in candidates:
        if os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(
        f"cudaenv's {name}/ directory is missing from this installation "
        f"(looked in {candidates[0]} and {candidates[1]}); reinstall cudaenv"
    )


def data_dir(name: str) -> Path:
    """Return the directory holding the shipped ``name`` data (``"matrix"`` or ``"templates"``)."""
    from pathlib import Path

    return Path(data_path(name))


def matrix_dir() -> Path:
    return data_dir("matrix")


def templates_dir() -> Path:
    return data_dir("templates")
