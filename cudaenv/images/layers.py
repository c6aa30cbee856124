"""Layer identity and size: chain IDs (OCI image spec) and each layer's bytes from image history.

A layer's diff ID names its content alone; two images can hold the same diff ID on different
parents, which are different layers on disk. The chain ID names the layer with everything under
it: chainID(L0) = diffID(L0), chainID(Ln) = sha256(chainID(Ln-1) + " " + diffID(Ln)).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

# Instructions that only change the image's configuration: their history entries add no layer.
_METADATA_ONLY = re.compile(
    r"^(?:/bin/sh -c #\(nop\)\s+)?(?:ENV|LABEL|ARG|CMD|ENTRYPOINT|USER|SHELL|EXPOSE|VOLUME|STOPSIGNAL|HEALTHCHECK|"
    r"ONBUILD|MAINTAINER)\b", re.IGNORECASE)
# WORKDIR adds a layer only when it had to create the directory.
_WORKDIR = re.compile(r"^(?:/bin/sh -c #\(nop\)\s+)?WORKDIR\b", re.IGNORECASE)


def chain_ids(diff_ids: Sequence[str]) -> tuple[str, ...]:
    """The chain ID of every layer of an image, oldest first."""
    chain: list[str] = []
    for diff_id in diff_ids:
        if not chain:
            chain.append(diff_id)
        else:
            chain.append("sha256:" + hashlib.sha256(f"{chain[-1]} {diff_id}".encode()).hexdigest())
    return tuple(chain)


def layer_sizes(layer_count: int, history: Iterable[tuple[str, int]]) -> tuple[int, ...] | None:
    """Bytes per layer (oldest first) from the image history, or None when the history cannot be
    matched to the layers.

    The engine reports a size per history entry but not which entries made a layer. An entry
    with bytes did; one of a metadata-only instruction (ENV, LABEL, CMD, ...) did not; of the
    empty others (a RUN that changed nothing, a WORKDIR), as many are layers as the count of
    layers says, WORKDIRs last."""
    entries = list(history)
    certain = [i for i, (_, size) in enumerate(entries) if size > 0]
    maybe = [i for i, (created_by, size) in enumerate(entries)
             if size == 0 and not _METADATA_ONLY.match(created_by.strip())]
    missing = layer_count - len(certain)
    if missing < 0 or missing > len(maybe):
        return None
    maybe.sort(key=lambda i: (bool(_WORKDIR.match(entries[i][0].strip())), i))
    chosen = sorted(certain + maybe[:missing])
    return tuple(entries[i][1] for i in chosen)


def distinct_bytes(layers: Iterable[tuple[str, int]]) -> int:
    """Bytes on disk for ``(chain ID, size)`` pairs: each chain ID counted once."""
    seen: dict[str, int] = {}
    for chain_id, size in layers:
        seen.setdefault(chain_id, size)
    return sum(seen.values())
