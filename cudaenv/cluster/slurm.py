"""Slurm nodes (``scontrol show node --json``, ``sinfo --json``, ``scontrol show node``) -> node
facts, and what Slurm cannot know.

Four shapes are read, as Slurm writes them:

* ``scontrol show node --json`` (Slurm 23.02 and later; the 22.05 ``scontrol`` has no ``--json``)
  and ``sinfo --json`` of Slurm 21.08-22.05 (OpenAPI v0.0.37/v0.0.38): ``{"nodes": [{"name",
  "features", "active_features", "gres", ...}]}``. ``features`` is a comma-separated string in
  v0.0.38 and a list of strings from data_parser v0.0.39 on (SchedMD/slurm
  ``src/plugins/data_parser/v0.0.4x/parsers.c``: ``add_parse(CSV_STRING, features_act,
  "active_features", ...)``; ``gres`` stays a string like ``gpu:a100:4(S:0-1)``).
* ``sinfo --json`` of Slurm 23.02 and later: ``{"sinfo": [{"nodes": {"nodes": [names]},
  "features": {"total", "active"}, "gres": {"total", "used"}}]}``, one entry per partition and
  state, so a node can appear more than once.
* ``scontrol show node`` as text, for every Slurm (the only ``scontrol`` form 22.05 has):
  ``NodeName=... ActiveFeatures=a,b ... Gres=gpu:a100:4(S:0-1)``.

Slurm knows a node's GRES (how many GPUs, and a type name the site chose) and its features; it
records no driver version and no compute capability. The driver comes only from the project's
``[cluster.slurm.features]`` (a feature the site puts on nodes with a known GPU and driver);
otherwise the report says so. A GRES type is looked up as a GPU name (``a100``, ``tesla_t4``);
a site-chosen name the matrix does not know is reported, not guessed.
"""

from __future__ import annotations

import re

from cudaenv.cluster.facts import SLURM, NodeFacts, NodesInputError, cpu_arch

# one GRES entry: name[:type][:count][(S:sockets)] (slurm.conf(5), "Gres")
_GRES = re.compile(r"(?P<name>[A-Za-z0-9_]+)(?::(?P<type>[A-Za-z0-9_.\-]+?))??(?::(?P<count>[0-9]{1,5}))?"
                   r"(?:\((?P<extra>[^()]*)\))?")
_FEATURE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+\-]{0,127}")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")
_EMPTY_GRES = ("", "(null)", "N/A")
_ARCH = re.compile(r"[A-Za-z0-9_]{1,32}")  # `uname -m` as slurmd reports it: x86_64, aarch64, ppc64le
NO_DRIVER = ("driver: Slurm records no driver version (scontrol and sinfo have no such field); map a feature "
             "these nodes carry to their GPU and driver in [cluster.slurm.features]")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:45]}… ({len(text)} chars)"


def split_gres(text: str) -> list[str]:
    """Comma-separated entries, commas inside ``(S:0,1)`` kept."""
    entries, depth, current = [], 0, ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    entries.append(current)
    return [e for e in entries if e]


def parse_gres(file: str, where: str, node: str, text) -> tuple[int, tuple[str, ...]]:
    """(GPU count, GPU type names) of a GRES string; (0, ()) when the node has no gpu GRES."""
    if text is None or (isinstance(text, str) and text in _EMPTY_GRES):
        return 0, ()
    if not isinstance(text, str) or len(text) > 1024 or not text.isascii():
        raise NodesInputError(file, f"{where}.gres", f"node {node}: gres: expected a GRES string like "
                              f"gpu:a100:4, got {_shown(text)}")
    count, types = 0, []
    for entry in split_gres(text):
        match = _GRES.fullmatch(entry)
        if not match:
            raise NodesInputError(file, f"{where}.gres", f"node {node}: gres: expected entries like gpu:a100:4, "
                                  f"got {_shown(entry)}")
        if match["name"] != "gpu":
            continue
        gpu_type = match["type"]
        if gpu_type is not None and gpu_type.isdigit():  # a count where a type would go: too long to be one
            raise NodesInputError(file, f"{where}.gres", f"node {node}: gres: expected a GPU count of at most "
                                  f"5 digits, got {_shown(entry)}")
        number = int(match["count"]) if match["count"] is not None else 1
        count += number
        if gpu_type and gpu_type not in types:
            types.append(gpu_type)
    return count, tuple(types)


def _features(file: str, where: str, node: str, value) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) and _FEATURE.fullmatch(i) for i in items):
        raise NodesInputError(file, f"{where}.features", f"node {node}: features: expected feature names "
                              f"(a list or comma-separated), got {_shown(value)}")
    return tuple(items)


def _arch(file: str, where: str, node: str, value) -> str | None:
    """Slurm's ``Arch=`` / ``architecture`` (slurmd's ``uname -m``); empty or ``(null)`` when the node
    never registered."""
    if value is None or value in ("", "(null)", "N/A"):
        return None
    if not isinstance(value, str) or not _ARCH.fullmatch(value):
        raise NodesInputError(file, f"{where}.architecture", f"node {node}: architecture: expected a CPU "
                              f"architecture like x86_64 or aarch64, got {_shown(value)}")
    return cpu_arch(value)


def _record(file: str, where: str, name, features, gres, arch=None) -> dict:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise NodesInputError(file, f"{where}.name", f"{where}.name: expected a node name, got {_shown(name)}")
    count, types = parse_gres(file, where, name, gres)
    return {"name": name, "features": _features(file, where, name, features),
            "gres": None if gres is None or gres in _EMPTY_GRES else gres,  # "(null)": Slurm's "not set"
            "count": count, "types": types, "arch": _arch(file, where, name, arch)}


def _no_oversized(file: str, where: str, entry: dict) -> None:
    from cudaenv.cluster.facts import oversized_integer

    huge = oversized_integer(entry)
    if huge is not None:
        name = entry.get("name") if isinstance(entry.get("name"), str) else where
        raise NodesInputError(file, f"{where}{huge}", f"node {_shown(name)[1:-1]}: {huge.lstrip('.')}: a number "
                              "of more digits than can be read")


def _records(file: str, document: dict) -> list[dict]:
    if "nodes" in document:
        nodes = document["nodes"]
        if not isinstance(nodes, list):
            raise NodesInputError(file, "nodes", "nodes: expected the list of Slurm node records")
        records = []
        for index, entry in enumerate(nodes):
            where = f"nodes[{index}]"
            if not isinstance(entry, dict):
                raise NodesInputError(file, where, f"{where}: expected a node record, got {type(entry).__name__}")
            _no_oversized(file, where, entry)
            features = entry.get("active_features") or entry.get("features")
            records.append(_record(file, where, entry.get("name"), features, entry.get("gres"),
                                   entry.get("architecture")))
        return records
    groups = document["sinfo"]
    if not isinstance(groups, list):
        raise NodesInputError(file, "sinfo", "sinfo: expected the list of sinfo entries")
    records = []
    for index, entry in enumerate(groups):
        where = f"sinfo[{index}]"
        if not isinstance(entry, dict):
            raise NodesInputError(file, where, f"{where}: expected an sinfo entry, got {type(entry).__name__}")
        _no_oversized(file, where, entry)
        names = (entry.get("nodes") or {}).get("nodes") if isinstance(entry.get("nodes"), dict) else None
        if not isinstance(names, list):
            raise NodesInputError(file, f"{where}.nodes.nodes", f"{where}.nodes.nodes: expected the node names")
        features = entry.get("features") if isinstance(entry.get("features"), dict) else {}
        gres = entry.get("gres") if isinstance(entry.get("gres"), dict) else {}
        for name in names:
            records.append(_record(file, where, name, features.get("active") or features.get("total"),
                                   gres.get("total")))
    return records


_TEXT_FIELD = re.compile(r"(?:^|\s)(NodeName|Arch|AvailableFeatures|ActiveFeatures|Gres)=(\S*)")
_TEXT_NULL = ("(null)", "")


def text_records(file: str, text: str) -> list[dict]:
    """``scontrol show node`` as text (every Slurm; ``-o`` puts a node on one line): the records'
    ``NodeName=``, ``ActiveFeatures=`` (else ``AvailableFeatures=``) and ``Gres=`` fields
    (src/api/node_info.c ``slurm_sprint_node_table``; a field never set prints ``(null)``)."""
    records = []
    chunks = [c for c in re.split(r"(?m)^(?=NodeName=)", text) if c.strip()]
    for index, chunk in enumerate(chunks):
        where = f"record {index + 1}"
        fields: dict[str, str] = {}
        for key, value in _TEXT_FIELD.findall(chunk):
            fields.setdefault(key, value)
        if "NodeName" not in fields:
            raise NodesInputError(file, where, f"{where}: expected `scontrol show node` output (NodeName=...), "
                                  f"got {_shown(chunk.strip()[:40])}")
        name = fields["NodeName"]
        active = fields.get("ActiveFeatures")
        chosen = active if active not in (None, *_TEXT_NULL) else fields.get("AvailableFeatures")
        features = None if chosen in (None, *_TEXT_NULL) else chosen
        gres = fields.get("Gres")
        records.append(_record(file, where, name, features, None if gres in (None, *_TEXT_NULL) else gres,
                               fields.get("Arch")))
    return records


def read_slurm(file: str, document, features=()) -> tuple[NodeFacts, ...]:
    """Node facts from a Slurm JSON document (a dict) or ``scontrol show node`` text (a str).
    ``features``: the project's checked ``[cluster.slurm.features]``
    (``cudaenv.export.slurm.NodeFeature``), which alone give a driver."""
    by_name = {f.name: f for f in features}
    seen: dict[str, NodeFacts] = {}
    records = text_records(file, document) if isinstance(document, str) else _records(file, document)
    for record in records:
        if record["name"] in seen:  # sinfo lists a node once per partition it is in
            continue
        mapped = [by_name[f] for f in record["features"] if f in by_name]
        unknown, driver, product, cc, mapped_name = [], None, None, None, None
        distinct = {(m.driver, m.gpu) for m in mapped}
        if len(distinct) == 1:
            feature = mapped[0]
            driver, mapped_name = feature.driver, feature.name
            product, cc = feature.gpu.name, feature.gpu.compute_capability
        elif len(distinct) > 1:
            names = ", ".join(m.name for m in mapped)
            unknown.append(f"driver and GPU: the node carries features that [cluster.slurm.features] maps to "
                           f"different hardware ({names})")
        else:
            if record["count"]:
                unknown.append(NO_DRIVER)
            if len(record["types"]) == 1:
                product = record["types"][0]
            elif record["types"]:
                unknown.append(f"GPU model: the node has GPUs of several GRES types ({', '.join(record['types'])})")
            elif record["count"]:
                unknown.append("GPU model: the GRES names no type (gpu:N); map a node feature in "
                               "[cluster.slurm.features] to say which GPU")
        seen[record["name"]] = NodeFacts(
            name=record["name"], source=SLURM, driver=driver, product=product, compute_capability=cc,
            gpu_count=record["count"], features=record["features"], gres=record["gres"],
            mapped_feature=mapped_name, unknown=tuple(unknown), arch=record["arch"])
    return tuple(seen.values())
