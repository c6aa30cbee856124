"""Answers that must not wait for click: ``cudaenv --help``, ``cudaenv resolve``, ``cudaenv ps``
and the common ``cudaenv run [DIR] [--gpus X] [-- CMD...]``.

Importing click costs about twice the bare interpreter's start-up, ``cudaenv resolve`` is what
scripts and CI call in loops, and ``cudaenv run`` on an unchanged image should cost little more
than ``docker run`` (issue #14). So the entry point tries these first. Each either answers exactly
as click would, or declines (returns None) and click takes over: an option it does not know, a
repeated single-valued option, a missing value, ``-h``, ``--`` — anything click would reject or
treat specially goes to click, which prints its own usage error. The option table is checked
against the click command's parameters by the tests, so adding an option to one without the
other makes the fast path decline rather than disagree.
"""

from __future__ import annotations

import os
import sys


def resolve_options() -> dict[str, tuple[str, str]]:
    """option -> (destination, kind): "value" once, "many" repeatable, "flag"."""
    from cudaenv.cli.stack_options import FRAMEWORK_OPTIONS

    return {
        **{f"--{name}": (f"fw_{name}", "value") for name in FRAMEWORK_OPTIONS},
        "--python": ("python", "value"), "--cuda": ("cuda", "value"), "--cudnn": ("cudnn", "value"),
        "--flavor": ("flavor", "value"), "--os": ("os_name", "value"),
        "--driver": ("driver", "value"), "--gpu": ("gpus", "many"),
        "--compute-capability": ("compute_capabilities", "many"),
        "--no-detect": ("no_detect", "flag"), "--json": ("as_json", "flag"),
    }


_NOT_BLANK = ("driver", "gpus")  # click's callback rejects "" and "  " for these
FLAVORS = ("auto", "wheels", "runtime", "devel")  # = cudaenv.resolver.model.FLAVORS (a test keeps them equal)


def parse_resolve(args: list[str]) -> dict | None:
    """``resolve``'s arguments as the click command would receive them, or None to let click parse."""
    options = resolve_options()
    values: dict = {dest: () if kind == "many" else (False if kind == "flag" else None)
                    for dest, kind in options.values()}
    seen: set[str] = set()
    directory = None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-"):
            if directory is not None:
                return None  # click: "Got unexpected extra argument"
            directory = arg
            continue
        name, has_value, inline = arg.partition("=")
        if name not in options:
            return None  # -h, --help, --, an unknown or abbreviated option: click's to answer
        dest, kind = options[name]
        if kind == "flag":
            if has_value:
                return None
            values[dest] = True
            continue
        if has_value:
            value = inline
        elif rest:
            value = rest.pop(0)
        else:
            return None  # "requires an argument"
        if kind == "many":
            values[dest] += (value,)
        elif dest in seen:
            return None  # a single-valued option given twice: leave the choice to click
        else:
            values[dest] = value
        seen.add(dest)
    if values["flavor"] is not None and values["flavor"] not in FLAVORS:
        return None
    for dest in _NOT_BLANK:
        given = values[dest] if isinstance(values[dest], tuple) else (values[dest],)
        if any(v is not None and not v.strip() for v in given):
            return None
    if directory is not None and not _click_accepts_directory(directory):
        return None
    values["directory"] = directory
    return values


def _click_accepts_directory(path: str) -> bool:
    """What ``click.Path(file_okay=False, exists=True)`` accepts: exists, not a regular file, readable."""
    import stat

    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(info.st_mode) and os.access(path, os.R_OK)


def resolve(args: list[str], *, remember: bool = False) -> int | None:
    """Run ``cudaenv resolve ARGS`` without click; None when click must parse them. ``remember``:
    a process of its own, whose answers may be remembered (``cudaenv.cli.resolving.run_resolve``)."""
    parsed = parse_resolve(args)
    if parsed is None:
        return None
    from cudaenv.cli.output import reset_json
    from cudaenv.cli.resolving import run_resolve

    reset_json()
    directory, driver, gpus = parsed.pop("directory"), parsed.pop("driver"), parsed.pop("gpus")
    ccs, no_detect, as_json = parsed.pop("compute_capabilities"), parsed.pop("no_detect"), parsed.pop("as_json")
    return run_resolve(directory, driver=driver, gpus=gpus, compute_capabilities=ccs, no_detect=no_detect,
                       as_json=as_json, options=parsed, remember_as=args if remember else None)


# --- `cudaenv --help` ----------------------------------------------------------------------------


def group_help(width: int | None = None) -> str:
    """The text click prints for ``cudaenv --help``, laid out the way click's HelpFormatter does
    (terminal width clamped to the group's max_content_width, a two-column command list); a test
    compares it with click's own output at several widths."""
    import textwrap

    from cudaenv.cli.commands import COMMANDS, GROUP_HELP, MAX_WIDTH

    if width is None:
        width = max(min(_terminal_columns(), MAX_WIDTH) - 2, 50)
    out = ["Usage: cudaenv [OPTIONS] COMMAND [ARGS]...", ""]
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in GROUP_HELP.split("\n\n")]
    out.append("\n\n".join(textwrap.fill(p, width, initial_indent="  ", subsequent_indent="  ",
                                         replace_whitespace=False) for p in paragraphs))
    for title, rows in (("Options", [("-V, --version", "Show the version and exit."),
                                     ("-h, --help", "Show this message and exit.")]),
                        ("Commands", [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)])):
        out += ["", f"{title}:"]
        first = min(max(len(n) for n, _ in rows), 30) + 2
        for name, text in rows:
            lines = textwrap.wrap(text, max(width - first - 2, 10), replace_whitespace=False) or [""]
            lead = f"  {name}" + (" " * (first - len(name)) if len(name) <= first - 2 else "\n" + " " * (first + 2))
            out.append(lead + lines[0])
            out += [" " * (first + 2) + line for line in lines[1:]]
    return "\n".join(out) + "\n"


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` (what click asks), without importing shutil and
    the compression modules it probes: $COLUMNS, else the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return columns


PS_OPTIONS = {"-a": "show_all", "--all": "show_all", "--json": "as_json"}  # all flags


def parse_ps(args: list[str]) -> dict | None:
    """``ps``'s flags as the click command receives them, or None to let click parse."""
    if any(arg not in PS_OPTIONS for arg in args):
        return None
    return {"show_all": "-a" in args or "--all" in args, "as_json": "--json" in args}


def ps(args: list[str]) -> int | None:
    parsed = parse_ps(args)
    if parsed is None:
        return None
    from cudaenv.cli.listing import run_ps
    from cudaenv.cli.output import reset_json

    reset_json()
    return run_ps(**parsed)


# --- `cudaenv run [DIR] [--gpus X] [-- CMD...]` --------------------------------------------------

RUN_OPTIONS = ("--gpus",)  # the only option the fast path parses; any other goes to click


def parse_run(args: list[str]) -> dict | None:
    """``run``'s arguments as the click command receives them (``CommandAfterDashes``: everything
    after the first ``--`` is the command, whole), or None to let click parse. Before ``--`` only
    an optional DIRECTORY and one ``--gpus X`` / ``--gpus=X``; a command without ``--``, another
    option, ``-h``, a repeated ``--gpus`` or a value that looks like an option all go to click."""
    if "--" in args:
        cut = args.index("--")
        before, command = args[:cut], tuple(args[cut + 1:])
    else:
        before, command = list(args), ()
    directory = gpus = None
    rest = list(before)
    while rest:
        arg = rest.pop(0)
        name, has_value, inline = arg.partition("=")
        if name == "--gpus":
            if gpus is not None:
                return None  # given twice: click's choice
            if has_value:
                value = inline
            elif rest:
                value = rest.pop(0)
            else:
                return None  # "requires an argument"
            if value.startswith("-"):
                return None
            gpus = value
            continue
        if arg.startswith("-") or directory is not None:
            return None  # another option, or a second word (click makes it part of the command)
        directory = arg
    directory = "." if directory is None else directory
    if not _click_accepts_directory(directory):
        return None
    return {"directory": directory, "gpus": gpus, "command": command}


def run(args: list[str]) -> int | None:
    """Run ``cudaenv run ARGS`` without click; None when click must parse them."""
    parsed = parse_run(args)
    if parsed is None:
        return None
    try:
        from pathlib import Path

        from cudaenv.cli.output import reset_json
        from cudaenv.run.session import run_attached

        reset_json()
        return run_attached(Path(parsed["directory"]), gpus=parsed["gpus"], command=parsed["command"])
    except (KeyboardInterrupt, EOFError):  # as click ends a command it aborts (cudaenv.cli.group.main)
        sys.stderr.write("\nAborted.\n")
        sys.stderr.flush()
        return 130


FAST = ("resolve", "ps", "run", "--help", "-h")  # what the entry point offers this module first


def main(args: list[str], *, remember: bool = False) -> int | None:
    """The exit code when a fast path answered, else None (click takes over). ``remember``: this
    is a real process (the entry point read sys.argv), so answers may be remembered."""
    if args in (["--help"], ["-h"]):
        sys.stdout.write(group_help())
        sys.stdout.flush()
        return 0
    if args and args[0] == "resolve":
        return resolve(args[1:], remember=remember)
    if args and args[0] == "ps":
        return ps(args[1:])
    if args and args[0] == "run":
        return run(args[1:])
    return None
