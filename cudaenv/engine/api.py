"""The Docker Engine API's read endpoints over its socket, with the standard library only.

Importing the docker SDK (and requests, urllib3 with it) costs several times Python's own start-up,
which `cudaenv ps` and the fast path of `cudaenv run` would otherwise pay only to ask "which
containers carry this label?" or "does this image exist, with which labels?". These are single
GET requests: HTTP/1.0 over the unix socket (or plain TCP) that ``DOCKER_HOST`` names — the same
endpoint the SDK's ``from_env`` uses, so rootless sockets work the same way. Where the SDK is
needed to reach the engine at all (TLS, ssh://, named pipes) or anything unexpected happens,
``endpoint()`` or the call answers None and the caller uses the SDK, which reports errors its way.

Reads only: everything that changes state still goes through ``DockerEngine`` and the SDK.
"""

from __future__ import annotations

import json
import os
import socket

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text: str) -> str:
    """Percent-encode everything but RFC 3986's unreserved characters (``urllib.parse.quote``
    with ``safe=""``, without importing urllib.parse and ipaddress with it)."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))

DEFAULT_SOCKET = "/var/run/docker.sock"
TIMEOUT = 120  # seconds, as DockerEngine's client


class Unavailable(Exception):
    """This module cannot answer; the SDK path must (and will word any error)."""


def endpoint(environ: dict | None = None) -> tuple[str, str | tuple[str, int]] | None:
    """("unix", path) or ("tcp", (host, port)) for DOCKER_HOST, or None where only the SDK will do."""
    env = os.environ if environ is None else environ
    if env.get("DOCKER_CERT_PATH") or env.get("DOCKER_TLS_VERIFY", "") != "":
        return None  # TLS: the SDK's job
    host = env.get("DOCKER_HOST") or f"unix://{DEFAULT_SOCKET}"
    if host.startswith("unix://"):
        return ("unix", host[len("unix://"):] or DEFAULT_SOCKET)
    if host.startswith(("tcp://", "http://")):
        rest = host.split("://", 1)[1].rstrip("/")
        if "/" in rest:
            return None  # a path prefix: leave it to the SDK
        name, _, port = rest.rpartition(":")
        if not name or not port.isdigit() or name.startswith("["):
            return None
        return ("tcp", (name, int(port)))
    return None  # ssh://, npipe://, fd://


def get(path: str, environ: dict | None = None) -> tuple[int, object]:
    """(HTTP status, decoded JSON body) of ``GET path``; Unavailable when it cannot be asked."""
    where = endpoint(environ)
    if where is None:
        raise Unavailable("endpoint needs the SDK")
    kind, address = where
    try:
        if kind == "unix":
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            conn = socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_STREAM)
        with conn:
            conn.settimeout(TIMEOUT)
            conn.connect(address)
            conn.sendall(f"GET {path} HTTP/1.0\r\nHost: docker\r\nUser-Agent: cudaenv\r\n\r\n".encode("ascii"))
            chunks = []
            while True:  # HTTP/1.0: the engine closes the connection after the body
                data = conn.recv(65536)
                if not data:
                    break
                chunks.append(data)
    except OSError as exc:
        raise Unavailable(str(exc)) from exc
    head, sep, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if not sep or len(status_line) < 2 or not status_line[1].isdigit():
        raise Unavailable("not an HTTP response")
    status = int(status_line[1])
    if b"chunked" in head.lower():
        raise Unavailable("chunked response to an HTTP/1.0 request")
    try:
        return status, json.loads(body) if body.strip() else None
    except ValueError as exc:
        raise Unavailable("not JSON") from exc


def container_list(label: str, *, running_only: bool = False, environ: dict | None = None) -> list[dict]:
    """The full description (``inspect``) of every container carrying ``label``, as the SDK's
    ``containers.list(all=..., filters={"label": label})`` collects them: a list, then one
    inspect per container."""
    filters = quote(json.dumps({"label": [label]}))
    status, listed = get(f"/containers/json?all={0 if running_only else 1}&filters={filters}", environ)
    if status != 200 or not isinstance(listed, list):
        raise Unavailable(f"listing answered {status}")
    out = []
    for item in listed:
        status, attrs = get(f"/containers/{quote(str(item.get('Id', '')))}/json", environ)
        if status == 404:
            continue  # removed between the list and the inspect (the SDK would skip it too)
        if status != 200 or not isinstance(attrs, dict):
            raise Unavailable(f"inspect answered {status}")
        out.append(attrs)
    return out


def image_inspect(reference: str, environ: dict | None = None) -> dict | None:
    """The engine's description of a local image, None when there is no such image."""
    status, attrs = get(f"/images/{quote(reference)}/json", environ)
    if status == 404:
        return None
    if status != 200 or not isinstance(attrs, dict):
        raise Unavailable(f"image inspect answered {status}")
    return attrs
