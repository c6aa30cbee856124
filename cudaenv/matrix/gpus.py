"""Lenient GPU names: ``a100``, ``NVIDIA A100-SXM4-80GB`` and ``Tesla T4`` all find their row.

nvidia-smi reports marketing names with vendor and product-line prefixes and form-factor or
memory suffixes. Names are normalised (case, separators, leading ``NVIDIA``/``Tesla``/``GeForce``/
``Quadro``/``GRID``), then matched exactly, else by the longest known name that is a whole-word prefix
of the query (``h100 80gb hbm3`` -> ``h100``; ``a10g`` is not ``a10``). A vGPU reports its type name,
``<board>-<profile>`` (``GRID T4-16Q``, ``NVIDIA A100D-80C``): the board is a known name or alias, so
the same prefix rule finds the physical GPU whose compute capability the guest sees.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")

_VENDOR_WORDS = ("nvidia", "tesla", "geforce", "quadro", "grid")
_SEPARATORS = re.compile(r"[\s\-_/,()]+")


def normalize_gpu_name(name: str) -> str:
    words = [w for w in _SEPARATORS.split(name.strip().lower()) if w]
    while words and words[0] in _VENDOR_WORDS:
        words.pop(0)
    return " ".join(words)


def match_gpu(query: str, index: Mapping[str, T]) -> T | None:
    """The row for ``query`` from an index keyed by normalised names, or None."""
    wanted = normalize_gpu_name(query)
    if not wanted:
        return None
    if wanted in index:
        return index[wanted]
    best: tuple[int, T] | None = None
    for known, row in index.items():
        if wanted.startswith(known + " ") and (best is None or len(known) > best[0]):
            best = (len(known), row)
    return best[1] if best else None
