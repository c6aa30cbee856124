"""The Docker Engine API's read endpoints over its socket, with the standard library only.

Importing the docker SDK (and requests, urllib3 with it) costs several times Python's own start-up,
which `cudaenv ps` and `cudaenv run` on a current image would otherwise pay only to ask "which
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


class ApiError(Exception):
    """The engine answered with an error status: ``explanation`` is its message."""

    def __init__(self, status: int, explanation: str) -> None:
        super().__init__(f"{status} Server Error: ({explanation})")
        self.status_code, self.explanation = status, explanation


def _connect(environ: dict | None, timeout: float | None):
    where = endpoint(environ)
    if where is None:
        raise Unavailable("endpoint needs the SDK")
    kind, address = where
    try:
        if kind == "unix":
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            conn = socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_STREAM)
        conn.settimeout(timeout)
        conn.connect(address)
    except OSError as exc:
        raise Unavailable(str(exc)) from exc
    return conn


def _send(conn, method: str, path: str, body: object = None) -> None:
    data = b"" if body is None else json.dumps(body).encode("utf-8")
    head = f"{method} {path} HTTP/1.0\r\nHost: docker\r\nUser-Agent: cudaenv\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    conn.sendall(head.encode("ascii") + b"\r\n" + data)


def _head(raw: bytes) -> tuple[int, bytes, bytes]:
    """(status, the header block, what came after it) of a response's start."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if not sep or len(status_line) < 2 or not status_line[1].isdigit():
        raise Unavailable("not an HTTP response")
    if b"transfer-encoding: chunked" in head.lower():
        raise Unavailable("chunked response to an HTTP/1.0 request")
    return int(status_line[1]), head, rest


def request(method: str, path: str, body: object = None, *, environ: dict | None = None,
            timeout: float | None = TIMEOUT) -> tuple[int, object]:
    """(HTTP status, decoded JSON body or None) of one request; Unavailable when it cannot be
    asked, TimeoutError when ``timeout`` passes before the answer."""
    conn = _connect(environ, timeout)
    sent = False
    try:
        with conn:
            try:
                _send(conn, method, path, body)
            except OSError as exc:
                raise Unavailable(str(exc)) from exc
            sent = True
            try:
                chunks = []
                while True:  # HTTP/1.0: the engine closes the connection after the body
                    data = conn.recv(65536)
                    if not data:
                        break
                    chunks.append(data)
            except socket.timeout as exc:
                raise TimeoutError(path) from exc
            except OSError as exc:
                raise Unavailable(str(exc)) from exc
        status, _head_block, payload = _head(b"".join(chunks))
        if not payload.strip():
            return status, None
        try:
            return status, json.loads(payload)
        except ValueError:
            if status >= 400:
                return status, {"message": payload.decode("utf-8", "replace").strip()}
            raise Unavailable("not JSON") from None
    except Unavailable as exc:
        if method == "GET" or not sent:
            raise
        # The engine may have acted on it: asking again through the SDK could act twice (two
        # containers), so this is the engine's error, not a reason to fall back.
        raise ApiError(0, f"no readable answer from the engine to {method} {path.split('?')[0]}: {exc}") from exc


def checked(method: str, path: str, body: object = None, *, ok: tuple[int, ...] = (200, 201, 204),
            timeout: float | None = TIMEOUT) -> object:
    """The JSON answer of a request that must succeed; ApiError with the engine's message if not."""
    status, answer = request(method, path, body, timeout=timeout)
    if status not in ok:
        message = answer.get("message") if isinstance(answer, dict) else None
        raise ApiError(status, str(message or answer or status))
    return answer


def get(path: str, environ: dict | None = None) -> tuple[int, object]:
    """(HTTP status, decoded JSON body) of ``GET path``; Unavailable when it cannot be asked."""
    return request("GET", path, environ=environ)


def stream_logs(container_id: str, on_output, *, tty: bool) -> None:
    """Follow a container's stdout and stderr until it exits, handing each piece to ``on_output``
    (the engine frames them, 8-byte headers, unless the container has a TTY).

    A follower can be let go a moment before the last lines of a quick container reach its log,
    so once the stream ends the whole log is read again and whatever the stream had not yet
    delivered is handed on: the output is complete and nothing is repeated."""
    delivered = _logs(container_id, on_output, tty=tty, follow=True, skip=0)
    _logs(container_id, on_output, tty=tty, follow=False, skip=delivered)


def _logs(container_id: str, on_output, *, tty: bool, follow: bool, skip: int) -> int:
    """Hand on the log's bytes after the first ``skip``; how many bytes the log held in all."""
    conn = _connect(None, None)
    seen = 0

    def deliver(piece: bytes) -> None:
        nonlocal seen
        fresh = piece[max(0, skip - seen):]
        seen += len(piece)
        if fresh:
            on_output(fresh)

    with conn:
        _send(conn, "GET", f"/containers/{quote(container_id)}/logs?follow={int(follow)}&stdout=1&stderr=1")
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            data = conn.recv(65536)
            if not data:
                raise Unavailable("the log stream closed before it started")
            buffer += data
        status, _block, buffer = _head(buffer)
        if status != 200:
            raise Unavailable(f"logs answered {status}")
        while True:
            if tty:
                if buffer:
                    deliver(buffer)
                    buffer = b""
            else:
                while len(buffer) >= 8:
                    size = int.from_bytes(buffer[4:8], "big")
                    if len(buffer) < 8 + size:
                        break
                    if size:
                        deliver(buffer[8:8 + size])
                    buffer = buffer[8 + size:]
            data = conn.recv(65536)
            if not data:
                return seen
            buffer += data


def container_body(spec) -> dict:
    """The Engine API's create body for a ContainerSpec: what the docker SDK's
    ``containers.create(**create_kwargs(spec))`` sends (the tests compare the two containers)."""
    host: dict = {"Init": spec.init, "NetworkMode": "default"}
    if spec.mounts:
        host["Mounts"] = [{"Target": m.target, "Source": str(m.source), "Type": "bind", "ReadOnly": m.read_only}
                          for m in spec.mounts]
    if spec.gpus is not None and spec.gpus.cdi_devices:  # what `docker run --device nvidia.com/gpu=0` sends
        host["DeviceRequests"] = [{"Driver": "cdi", "Count": 0, "DeviceIDs": list(spec.gpus.cdi_devices),
                                   "Capabilities": [], "Options": {}}]
    elif spec.gpus is not None:
        ids = list(spec.gpus.device_ids)  # the SDK's DeviceRequest: every key, count 0 with ids
        count = 0 if ids else (spec.gpus.count if spec.gpus.count is not None else -1)
        host["DeviceRequests"] = [{"Driver": "nvidia", "Count": count, "DeviceIDs": ids,
                                   "Capabilities": [list(spec.gpus.capabilities)], "Options": {}}]
    if spec.shm_size:
        host["ShmSize"] = parse_bytes(spec.shm_size)
    if spec.ipc_mode:
        host["IpcMode"] = spec.ipc_mode
    if spec.ulimits:
        host["Ulimits"] = [{"Name": name, "Soft": soft, "Hard": hard} for name, (soft, hard) in sorted(spec.ulimits.items())]
    body: dict = {
        "Image": spec.image, "Cmd": list(spec.command) or None,
        "Env": [f"{k}={v}" for k, v in dict(spec.env).items()], "Labels": dict(spec.labels),
        "Tty": spec.tty, "OpenStdin": spec.stdin_open, "StdinOnce": False,
        "AttachStdin": False, "AttachStdout": False, "AttachStderr": False, "HostConfig": host,
    }
    if spec.working_dir:
        body["WorkingDir"] = spec.working_dir
    if spec.user:
        body["User"] = spec.user
    if spec.ports:
        body["ExposedPorts"] = {_port_key(port): {} for port in spec.ports}
        host["PortBindings"] = {_port_key(port): [_binding(value)] for port, value in spec.ports.items()}
    return body


def _port_key(port) -> str:
    key = str(port)
    return key if "/" in key else f"{key}/tcp"


def _binding(value) -> dict:
    if isinstance(value, tuple):
        return {"HostIp": value[0], "HostPort": str(value[1])}
    return {"HostIp": "", "HostPort": "" if value is None else str(value)}


_UNITS = {"b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def parse_bytes(text) -> int:
    """``"8g"`` -> bytes, read exactly as the docker SDK reads a size."""
    if isinstance(text, (int, float)):
        return int(text)
    if not text:
        return 0
    if text[-2:-1].isalpha() and text[-1] in "bB":
        text = text[:-1]
    suffix = text[-1].lower()
    digits = text if suffix.isdigit() else text[:-1]
    try:
        return int(float(digits) * _UNITS["b" if suffix.isdigit() else suffix])
    except (KeyError, ValueError):
        raise Unavailable(f"size {text!r}") from None  # the SDK words the error


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
