"""Where the shipped data lives: ``matrix/`` and ``templates/``.

In the repository they sit at the top level (data, not code); a built wheel carries them as
``cudaenv/_data/<name>``. Looking in both places lets an editable install, a source checkout
and an installed wheel behave the same.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the directory holding the shipped ``name`` data (``"matrix"`` or ``"templates"``)."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"cudaenv's {name}/ directory is missing from this installation "
        f"(looked in {_PACKAGE_DIR / '_data' / name} and {_PACKAGE_DIR.parent / name}); "
        "reinstall cudaenv"
    )


def matrix_dir() -> Path:
    return data_dir("matrix")


def templates_dir() -> Path:
    return data_dir("templates")
