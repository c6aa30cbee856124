"""What ``cudaenv ps`` does once click has parsed its options (``run_cmd.ps``): list and print.

Containers come from the engine (``cudaenv.engine``), whose listing asks the Docker socket
directly, so neither click nor the docker SDK loads for `cudaenv ps`.
"""

from __future__ import annotations

import json
import sys

from cudaenv.cli.output import emit_json, table


def _echo(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _uptime(started_at: str) -> int | None:
    import datetime

    if not started_at:
        return None
    text = started_at.rstrip("Z").split(".")[0]
    try:
        started = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    return int((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds())


def _human(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _gpu_memory_by_container() -> dict[str, dict[int, int]] | None:
    """12-digit container ID -> {GPU index: MiB} from NVML; None where NVML is not there (checked
    cheaply first, so hosts without an NVIDIA driver never import it)."""
    from cudaenv.hosts.nvml_probe import probably_available

    if not probably_available():
        return None
    from cudaenv.hosts.nvml import NvmlUnavailable, session

    from cudaenv.monitor.sample import memory_by_container, take_sample

    try:
        with session() as nvml:
            return memory_by_container(take_sample(nvml, None))
    except NvmlUnavailable:
        return None


def _gpu_memory_cell(usage: dict[str, int]) -> str:
    return ", ".join(f"GPU {index}: {mib} MiB" for index, mib in usage.items()) or "-"


def run_ps(show_all: bool, as_json: bool) -> int:
    """Every cudaenv container on this host: project, stack, GPUs held, status, uptime."""
    from cudaenv.run.containers import LABEL_DIR, LABEL_GPUS, LABEL_PROJECT, LABEL_STACK, project_containers
    from cudaenv.engine import get_engine

    rows = []
    gpu_memory = _gpu_memory_by_container()
    for c in project_containers(get_engine()):
        if c.status != "running" and not show_all:
            continue
        stack = json.loads(c.labels.get(LABEL_STACK) or "{}")
        uptime = _uptime(c.started_at) if c.status == "running" else None
        rows.append({
            "name": c.name, "id": c.id[:12], "project": c.labels.get(LABEL_PROJECT), "project_dir": c.labels.get(LABEL_DIR),
            "cuda": stack.get("cuda"), "python": stack.get("python"), "frameworks": stack.get("frameworks") or {},
            "gpus": c.labels.get(LABEL_GPUS, "none"), "status": c.status, "exit_code": c.exit_code,
            "uptime_seconds": uptime, "image": c.image,
        })
        if gpu_memory is not None:  # only where NVML answers: "no GPU memory" and "cannot tell" differ
            rows[-1]["gpu_memory_mib"] = {str(i): mib for i, mib in sorted(gpu_memory.get(c.id[:12], {}).items())}
    rows.sort(key=lambda r: (r["project"] or "", r["name"]))
    if as_json:
        emit_json({"containers": rows})
        return 0
    if not rows:
        _echo("no cudaenv containers" + ("" if show_all else " running (-a shows exited ones)"))
        return 0
    headers = ("NAME", "PROJECT", "STACK", "GPUS", "STATUS", "UPTIME") + (("GPU MEM",) if gpu_memory is not None else ())
    _echo(table(headers, [
        (r["name"], r["project"], ", ".join(f"{k} {v}" for k, v in r["frameworks"].items()) + f" | CUDA {r['cuda']}",
         r["gpus"], r["status"] + (f" ({r['exit_code']})" if r["exit_code"] is not None else ""), _human(r["uptime_seconds"]))
        + ((_gpu_memory_cell(r["gpu_memory_mib"]),) if gpu_memory is not None else ())
        for r in rows
    ]))
    return 0
