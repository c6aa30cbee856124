"""Read a nodes file (or stdin) and tell Kubernetes from Slurm by the document's own shape.

Why not by file name: the same ``-`` may carry either, and a wrong guess would judge nodes by the
wrong rules. A document that is neither is bad input, named with what it looked like.
"""

from __future__ import annotations

import json
import sys

from cudaenv.cluster.facts import KUBERNETES, SLURM, NodeFacts, NodesInputError, Oversized

MAX_BYTES = 256 * 1024 * 1024  # a 5,000-node cluster's `kubectl get nodes -o json` is tens of MB


def _integer(text: str):
    try:
        return int(text)
    except ValueError:
        return Oversized(text)


def read_text(path: str) -> tuple[str, str]:
    """(text, the name errors use): ``-`` is standard input."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        name = "<stdin>"
    else:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
        name = path
    if len(data) > MAX_BYTES:
        raise NodesInputError(name, None, f"larger than {MAX_BYTES // (1024 * 1024)} MiB: not a nodes listing")
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError as exc:
        raise NodesInputError(name, None, f"not UTF-8 text (byte {exc.start}): expected JSON") from exc


def parse_document(name: str, text: str) -> tuple[str, dict | str]:
    """(kubernetes | slurm, the JSON object, or the text of ``scontrol show node``)."""
    if text.lstrip().startswith("NodeName="):  # `scontrol show node` as text: Slurm without --json
        return SLURM, text
    try:
        document = json.loads(text, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise NodesInputError(name, None, f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); expected "
                              "the output of `kubectl get nodes -o json`, `scontrol show node [--json]` or "
                              "`sinfo --json`") from exc
    except RecursionError as exc:
        raise NodesInputError(name, None, "JSON nested too deeply to read") from exc
    if isinstance(document, Oversized):
        raise NodesInputError(name, None, "a number of more digits than can be read; expected a JSON object")
    if not isinstance(document, dict):
        raise NodesInputError(name, None, f"expected a JSON object (a Kubernetes List of Node, or Slurm's node "
                              f"JSON), got a JSON {type(document).__name__}")
    kind = document.get("kind")
    if kind in ("List", "NodeList", "Node"):
        return KUBERNETES, document
    if kind is None and ("nodes" in document or "sinfo" in document):
        return SLURM, document
    what = f"kind {kind!r}"[:80] if kind is not None else f"keys {', '.join(sorted(map(str, document))[:5])}"
    raise NodesInputError(name, "kind", f"expected `kubectl get nodes -o json` (kind List of Node) or Slurm's "
                          f"`scontrol show node --json` / `sinfo --json` (nodes), got a JSON object with {what}")


def read_nodes(path: str, features_for_slurm=None) -> tuple[str, str, tuple[NodeFacts, ...]]:
    """(the name errors use, kubernetes | slurm, the nodes). ``features_for_slurm``: a callable
    giving the project's checked [cluster.slurm.features], asked only for a Slurm document."""
    from cudaenv.cluster.kubernetes import read_kubernetes
    from cudaenv.cluster.slurm import read_slurm

    text, name = read_text(path)
    kind, document = parse_document(name, text)
    if kind == KUBERNETES:
        nodes = read_kubernetes(name, document)
    else:
        nodes = read_slurm(name, document, features_for_slurm() if features_for_slurm else ())
    if not nodes:
        raise NodesInputError(name, None, "lists no nodes (a label selector or partition that matched nothing?)")
    return name, kind, nodes
