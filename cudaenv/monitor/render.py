"""The ``cudaenv top`` screen as plain lines: the same text for the live view and ``--once``."""

from __future__ import annotations

from cudaenv.monitor.sample import Group, Sample

BAR_WIDTH = 10


def _bar(percent: int | None) -> str:
    if percent is None:
        return "[" + " " * BAR_WIDTH + "]  n/a"
    filled = round(BAR_WIDTH * min(max(percent, 0), 100) / 100)
    return "[" + "#" * filled + " " * (BAR_WIDTH - filled) + f"] {percent:3d}%"


def _mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value} MiB"


def _gpu_lines(reading) -> list[str]:
    power = "n/a" if reading.power_watts is None else f"{reading.power_watts:.0f} W"
    if reading.power_limit_watts is not None:
        power += f" / {reading.power_limit_watts:.0f} W"
    temperature = "n/a" if reading.temperature_c is None else f"{reading.temperature_c} C"
    if reading.memory_total_mib:
        memory_percent = round(100 * (reading.memory_used_mib or 0) / reading.memory_total_mib)
        memory = f"{_bar(memory_percent)}  {reading.memory_used_mib} / {reading.memory_total_mib} MiB"
    else:
        memory = "n/a"
    return [f"GPU {reading.index}  {reading.name}  temp {temperature}  power {power}",
            f"  util {_bar(reading.utilization_percent)}   mem {memory}"]


def _owner_line(group: Group) -> str:
    """Memory first, so a narrow terminal cuts the stack words, never the number."""
    owner = group.owner
    if owner.kind == "cudaenv":
        label = f"cudaenv {owner.project or '?'}  {owner.name}" + (f"  {owner.stack}" if owner.stack else "")
    elif owner.kind == "container":
        label = f"other container  {owner.runtime} {owner.name or owner.id}"
    else:
        label = "host (not in a container)"
    return f"  {_mib(group.used_memory_mib):>10}  {label}"


def render(sample: Sample, width: int = 120) -> list[str]:
    """The screen's lines, each cut to ``width`` columns."""
    lines = [f"cudaenv top  {sample.time}  driver {sample.driver or '?'}  {len(sample.gpus)} GPU(s)", ""]
    for note in sample.notes:
        lines.append(f"note: {note}")
    if not sample.gpus:
        lines.append("no NVIDIA GPU visible to NVML")
    for gpu in sample.gpus:
        lines.extend(_gpu_lines(gpu.reading))
        if not gpu.groups:
            lines.append("  no processes")
        for group in gpu.groups:
            lines.append(_owner_line(group))
            for process in group.processes:
                lines.append(f"  {_mib(process.used_memory_mib):>10}    pid {process.pid:<8} {process.command or '?'}"
                             + ("  (graphics)" if process.kind == "graphics" else ""))
        lines.append("")
    return [line[:width] for line in lines]
