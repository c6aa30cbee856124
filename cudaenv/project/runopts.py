"""The values of `cudaenv run` options and of a project's [run] table: parsed in one place, so
cudaenv.toml is checked with exactly the rules the command line uses."""

from __future__ import annotations

import os
import re

from cudaenv.errors import UserError


def parse_gpus(spec: str) -> tuple[str, tuple[str, ...] | int | None]:
    """``all`` / ``none`` / ``auto`` / ``auto:N`` / ``N`` (a count, as docker's --gpus) /
    ``0,1`` or ``device=1`` (indices or UUIDs) -> (kind, value)."""
    text = spec.strip()
    if text in ("all", "none", "auto"):
        return text, None
    if m := re.fullmatch(r"auto:([1-9][0-9]{0,3})", text):
        return "auto", int(m.group(1))
    if text == "0":
        raise UserError("--gpus 0 would give the container no GPU: say --gpus none for that, or device=0 for the "
                        "first GPU")
    if re.fullmatch(r"[1-9][0-9]{0,3}", text):  # ASCII digits only; no host has 10,000 GPUs
        return "count", int(text)
    ids = tuple(part.strip() for part in text.removeprefix("device=").split(",") if part.strip())
    if ids and all(re.fullmatch(r"[0-9]{1,4}|GPU-[0-9a-fA-F-]{1,64}|MIG-[A-Za-z0-9_/-]{1,80}", i) for i in ids):
        seen: set[str] = set()
        for device in ids:  # 1 and 01 are one device; a count from the list (Slurm, Kubernetes) would be off
            key = str(int(device)) if device.isdigit() else device.lower()
            if key in seen:
                raise UserError(f"--gpus {spec!r}: device {device} is named twice")
            seen.add(key)
        return "ids", ids
    raise UserError(f"--gpus {spec!r}: expected all, none, auto, auto:N, a count, or devices like 0,1 / device=1 / GPU-<uuid>")


def parse_env(values: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UserError(f"-e {item!r}: expected NAME=value")
        env[name] = value if sep else os.environ.get(name, "")  # -e NAME passes the caller's value through
    return env


def parse_ports(values: tuple[str, ...]) -> dict[str, int | tuple[str, int] | None]:
    """``8888``, ``8888:8888`` or ``127.0.0.1:8888:8888`` (publish on loopback only) -> SDK ports."""
    ports: dict[str, int | tuple[str, int] | None] = {}
    for item in values:
        m = re.fullmatch(r"(?:((?:[0-9]{1,3}\.){3}[0-9]{1,3}):)?(?:([0-9]{1,5}):)?([0-9]{1,5})(?:/(tcp|udp))?", item)
        if not m or (m.group(1) and not m.group(2)):
            raise UserError(f"port {item!r}: expected CONTAINER, HOST:CONTAINER or ADDRESS:HOST:CONTAINER, "
                            "e.g. 127.0.0.1:8888:8888")
        address, host, container, proto = m.group(1), m.group(2), m.group(3), m.group(4) or "tcp"
        if not all(1 <= int(n) <= 65535 for n in (host, container) if n is not None):
            raise UserError(f"port {item!r}: port numbers are 1 to 65535")
        if address and not all(int(octet) <= 255 for octet in address.split(".")):
            raise UserError(f"port {item!r}: {address} is not an IPv4 address")
        ports[f"{container}/{proto}"] = (address, int(host)) if address else (int(host) if host else None)
    return ports
