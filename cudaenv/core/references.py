"""Docker image references: which part names a registry, and how to re-home a reference.

Docker's own rule: the first path component is a registry host only when it contains a ``.`` or
a ``:`` or is ``localhost`` (``nvidia/cuda`` is Docker Hub; ``ghcr.io/astral-sh/uv`` is not).
Kept apart from ``cudaenv.engine.registry`` (HTTP, slow to import) so rendering stays light.
"""

from __future__ import annotations


def names_registry(component: str) -> bool:
    """Whether a reference's first path component is a registry host (``ghcr.io``, ``127.0.0.1:5000``)."""
    return "." in component or ":" in component or component == "localhost"


def with_registry(reference: str, registry: str) -> str:
    """Re-home an image reference under a mirror: ``nvidia/cuda:x`` -> ``REG/nvidia/cuda:x``,
    ``python:3.11-slim`` -> ``REG/library/python:3.11-slim``, ``ghcr.io/a/b:t`` -> ``REG/a/b:t``."""
    if not registry:
        return reference
    first, _, rest = reference.partition("/")
    if rest and names_registry(first):
        path = rest
    elif not rest:
        path = f"library/{reference}"
    else:
        path = reference
    return f"{registry.rstrip('/')}/{path}"


# Docker's reference grammar (distribution/reference, the grammar `docker pull` parses):
#   reference := name [":" tag] ["@" digest];  name := [domain "/"] path-component ("/" path-component)*
#   domain := host [":" port];  path-component := [a-z0-9]+ (separator [a-z0-9]+)*;  separator := [_.] | "__" | "-"+
#   tag := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127};  digest := algorithm ":" [0-9a-fA-F]{32,}
# A name is at most 255 characters. ASCII only: no newline, space or other character can split a
# FROM line or a shell word. Compiled on first use so importing this module stays cheap.
NAME_MAX = 255
_DOMAIN = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*(?::[0-9]{1,5})?"
_COMPONENT = r"[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_PATTERNS: dict[str, object] = {}


def _pattern(kind: str):
    import re

    if kind not in _PATTERNS:
        text = {
            "reference": rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)(?::{_TAG})?(?:@{_DIGEST})?",
            "repository": rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*",
            "tag": _TAG,
        }[kind]
        _PATTERNS[kind] = re.compile(text, re.ASCII)
    return _PATTERNS[kind]


def is_reference(text: object) -> bool:
    """Whether ``text`` is exactly one image reference (``nvidia/cuda:12.4.1-runtime-ubuntu22.04``,
    ``127.0.0.1:5000/library/python:3.11-slim``, ``name@sha256:…``)."""
    if not isinstance(text, str):
        return False
    match = _pattern("reference").fullmatch(text)
    return bool(match) and _domain_rule(match.group("name"))


def _domain_rule(name: str) -> bool:
    """The grammar's optional domain matches any first component; Docker treats it as a registry
    only when it names one (``names_registry``), and otherwise as a lower-case path component."""
    first, _, rest = name.partition("/")
    return len(name) <= NAME_MAX and (not rest or names_registry(first) or first == first.lower())


def is_repository(text: object) -> bool:
    return isinstance(text, str) and bool(_pattern("repository").fullmatch(text)) and _domain_rule(text)


def is_tag(text: object) -> bool:
    return isinstance(text, str) and bool(_pattern("tag").fullmatch(text))


def check_reference(text: object, where: str) -> str:
    """``text`` if it is one image reference, else a one-line UserError naming ``where``."""
    if not is_reference(text):
        from cudaenv.errors import UserError

        shown = repr(text) if len(repr(text)) <= 120 else repr(text)[:117] + "..."
        raise UserError(f"{where}: expected one image reference like registry.example.com/team/image:tag "
                        f"(Docker's reference grammar, name at most {NAME_MAX} characters), got {shown}")
    return text


def is_registry_prefix(text: object) -> bool:
    """``registry.example.com:5000/team`` (a host, an optional port 1-65535, optional namespaces):
    where base images are mirrored or pushed. It must still leave room for a repository name."""
    if not isinstance(text, str) or len(text) > 200:
        return False
    import re

    match = re.fullmatch(rf"({_DOMAIN})((?:/{_COMPONENT})*)", text, re.ASCII)
    if not match:
        return False
    _, _, port = match.group(1).partition(":")
    return not port or 1 <= int(port) <= 65535
