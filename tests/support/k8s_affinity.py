"""Kubernetes' node-selection semantics, evaluated over a node's labels, for tests.

Written from the API reference (``NodeSelector``: "The terms are ORed"; ``NodeSelectorTerm``:
"A null or empty node selector term matches no objects. The requirements of them are ANDed";
``NodeSelectorRequirement``: In/NotIn need values, Exists/DoesNotExist none, Gt/Lt exactly one
"interpreted as an integer") and ``k8s.io/apimachinery/pkg/labels`` ``Requirement.Matches``:

* ``In``: the label exists and its value is one of the values (text equality);
* ``NotIn``: the label is missing, or its value is none of the values;
* ``Exists`` / ``DoesNotExist``: the key is present / absent (whatever the value);
* ``Gt`` / ``Lt``: the label exists, its value parses as a base-10 int64, and it is greater /
  less than the one value; an unparsable label value fails the requirement.

Only ``matchExpressions`` (labels) are evaluated; a term with ``matchFields`` is refused, since
nothing cudaenv writes uses them. Malformed requirements raise, so a broken affinity cannot
silently match nothing.
"""

from __future__ import annotations

import re

_INT64 = re.compile(r"[-+]?[0-9]+")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _integer(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, ASCII digits, within int64."""
    if not isinstance(text, str) or not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else None


def requirement_matches(requirement: dict, labels: dict[str, str]) -> bool:
    key, operator = requirement["key"], requirement["operator"]
    values = list(requirement.get("values") or [])
    present = key in labels
    if operator in ("In", "NotIn"):
        if not values:
            raise ValueError(f"{operator} on {key} needs values")
        if operator == "In":
            return present and labels[key] in values
        return not present or labels[key] not in values
    if operator in ("Exists", "DoesNotExist"):
        if values:
            raise ValueError(f"{operator} on {key} takes no values")
        return present if operator == "Exists" else not present
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or _integer(values[0]) is None:
            raise ValueError(f"{operator} on {key} needs exactly one integer value, got {values!r}")
        if not present:
            return False
        value = _integer(labels[key])
        if value is None:
            return False
        bound = _integer(values[0])
        return value > bound if operator == "Gt" else value < bound
    raise ValueError(f"unknown operator {operator!r}")


def term_matches(term: dict, labels: dict[str, str]) -> bool:
    if term.get("matchFields"):
        raise ValueError("matchFields are not evaluated here")
    expressions = term.get("matchExpressions") or []
    if not expressions:
        return False  # a null or empty term matches no objects
    return all(requirement_matches(r, labels) for r in expressions)


def selects(node_selector: dict, labels: dict[str, str]) -> bool:
    """Whether a ``NodeSelector`` (``{"nodeSelectorTerms": [...]}``) selects a node with ``labels``."""
    return any(term_matches(term, labels) for term in node_selector["nodeSelectorTerms"])


def affinity_selects(node_affinity: dict | None, labels: dict[str, str]) -> bool:
    """Whether a pod with this ``nodeAffinity`` may be scheduled on the node (required part only;
    no affinity at all places no constraint)."""
    if not node_affinity or "requiredDuringSchedulingIgnoredDuringExecution" not in node_affinity:
        return True
    return selects(node_affinity["requiredDuringSchedulingIgnoredDuringExecution"], labels)
