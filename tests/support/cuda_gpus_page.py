"""Read the recorded copies of NVIDIA's CUDA GPUs pages (tests/fixtures/nvidia-cuda-gpus/).

The stored copies flatten the page's table to one line per compute capability, with the names of a
cell run together ("Tesla P40 Tesla P4 | Quadro P6000 Quadro P5200 …") and empty cells collapsed, and
they stop mid-row. So a name is split off where a product-line word starts one (NVIDIA, GeForce,
Quadro, Tesla, Jetson) or where a second bare model number follows one ("Quadro P400 P620 P520":
the mobile P620 and P520 are written without a product line), and the text after the last complete
cell of a cut row is dropped together with its last name, which the cut may have shortened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-cuda-gpus"
MARKER = "---- stored copy begins ----"
_PRODUCT_LINES = frozenset({"NVIDIA", "GeForce", "Quadro", "Tesla", "Jetson"})
_BARE_MODEL = re.compile(r"^[A-Z]\d{3,4}$")  # P620, K2200, M6000: a model number without a suffix
_CC = re.compile(r"^\d+\.\d$")


@dataclass(frozen=True)
class Listed:
    """One GPU as a page lists it, and where the listing was read."""

    compute_capability: str
    name: str
    where: str  # "cuda-gpus.md line 14"


def split_names(cell: str) -> list[str]:
    names: list[list[str]] = []
    for word in cell.split():
        current = names[-1] if names else None
        starts = word in _PRODUCT_LINES or current is None
        if not starts and _BARE_MODEL.match(word) and any(_BARE_MODEL.match(w) for w in current):
            starts = True
        if starts:
            names.append([word])
        else:
            current.append(word)
    return [" ".join(n) for n in names]


def stored_copy(path: Path) -> list[Listed]:
    """Every GPU a stored copy lists, with the capability its row gives."""
    text = path.read_text(encoding="utf-8")
    if MARKER not in text:
        raise ValueError(f"{path}: no {MARKER!r} line")
    out: list[Listed] = []
    lines = text.split(MARKER, 1)[1].splitlines()
    offset = text.split(MARKER, 1)[0].count("\n") + 1
    for number, line in enumerate(lines, start=offset):
        cells = [c.strip() for c in line.split("|")]
        if not cells or not _CC.match(cells[0]):
            continue  # title, prose, the header and its rule
        closed, tail = cells[1:-1], cells[-1]
        names = [n for cell in closed for n in split_names(cell)]
        if tail:  # the copy ends inside this cell: its last name may be cut short
            names += split_names(tail)[:-1]
        out += [Listed(cells[0], n, f"{path.name} line {number}") for n in names]
    return out


def transcribed(path: Path) -> list[Listed]:
    """The ``CC | name`` lines of after-the-cut.md."""
    out: list[Listed] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        cc, sep, name = line.partition("|")
        if sep and _CC.match(cc.strip()):
            out.append(Listed(cc.strip(), name.strip(), f"{path.name} line {number}"))
    return out


def every_listed() -> list[Listed]:
    return (stored_copy(FIXTURES / "cuda-gpus.md") + stored_copy(FIXTURES / "cuda-legacy-gpus.md")
            + transcribed(FIXTURES / "after-the-cut.md"))
