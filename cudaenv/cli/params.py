"""Arguments and option types the command line shares, stricter than click's own.

click's ``int`` reads whatever Python's ``int()`` reads: ``２`` (a full-width digit) is 2 and a
number of a hundred digits is a number. A count a user typed is bad input unless it is written in
ASCII digits and within reason, and the error says so in one line, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import click

# The project directory most commands take as their one argument (default: here).
DIRECTORY = click.argument("directory", required=False, default=".",
                           type=click.Path(file_okay=False, exists=True, path_type=Path))


class Count(click.ParamType):
    """A whole number in ASCII digits from ``low`` to ``high``."""

    name = "count"

    def __init__(self, low: int = 0, high: int = 9999) -> None:
        self.low, self.high = low, high

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if not (text.isascii() and text.isdigit()) or len(text) > len(str(self.high)):
                self.fail(f"expected a whole number from {self.low} to {self.high} in ASCII digits, got {value!r}",
                          param, ctx)
            number = int(text)
        if not self.low <= number <= self.high:
            self.fail(f"expected a whole number from {self.low} to {self.high}, got {number}", param, ctx)
        return number

    def __repr__(self) -> str:
        return f"Count({self.low}, {self.high})"


GPU_COUNT = Count(0, 9999)  # = runopts: no host (or pod) has 10,000 GPUs


class ProjectDirectory(click.Path):
    """An existing directory. Commands that pass unknown options on to a container command
    (``run``, ``export kubernetes``/``slurm``) would otherwise take a mistyped option for the
    directory and say "Directory '--jsn' does not exist"; a word starting with ``-`` where the
    directory goes, and no such directory, is reported as the unknown option it is.""" 

    def __init__(self) -> None:
        from pathlib import Path

        super().__init__(file_okay=False, exists=True, path_type=Path)

    def convert(self, value, param, ctx):
        import os

        if isinstance(value, str) and value.startswith("-") and not os.path.isdir(value):
            raise click.NoSuchOption(value, message=f"No such option '{value}' (a directory whose name starts "
                                                    f"with '-' is written ./{value})", ctx=ctx)
        return super().convert(value, param, ctx)


class CommandAfterDashes(click.Command):
    """Everything after the first ``--`` is the container's command, whole: the optional DIRECTORY
    must never take its first word (``cudaenv run -- python train.py`` runs python in the project
    in the current directory)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            return super().parse_args(ctx, args)
        cut = args.index("--")
        rest = super().parse_args(ctx, args[:cut])
        before = tuple(ctx.params.get("command") or ())
        unknown = next((word for word in before if word.startswith("-")), None)
        if unknown is not None:  # an option this command lacks, before `--`: never slipped into the command
            raise click.NoSuchOption(unknown, ctx=ctx)
        ctx.params["command"] = before + tuple(args[cut + 1:])
        return rest


def not_blank(ctx, param, value):
    import click

    values = value if isinstance(value, tuple) else (value,)
    if any(v is not None and not v.strip() for v in values):
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    return value


def target_name_option(*, what: str = "this command", multiple: bool = False):
    """``--target NAME``: which of the project's named targets ([targets.NAME]) ``what`` serves.
    One spelling for every command, so the option reads the same in build, run, check and exports;
    ``multiple``: repeatable (``target_names``, a tuple), for a command that serves several at once."""
    import click

    if multiple:
        return click.option("--target", "target_names", metavar="NAME", multiple=True, callback=not_blank,
                            help=f"The project's target ([targets.NAME]) {what} serves (repeatable: one each). "
                                 "Needed when the project names several targets.")
    return click.option("--target", "target_name", metavar="NAME", callback=not_blank,
                        help=f"The project's target ([targets.NAME]) {what} serves. Needed when the project "
                             "names several targets and none is picked from this host.")
