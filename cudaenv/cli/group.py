"""The click group: every command, parsed by click and imported only when it runs (``_lazy``).

The docker SDK and jinja2 never load for commands that do not need them.
"""

from __future__ import annotations

import sys

import click

from cudaenv import __version__
from cudaenv.cli._lazy import LazyGroup
from cudaenv.cli.commands import COMMANDS, GROUP_HELP, MAX_WIDTH


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": MAX_WIDTH},
    help=GROUP_HELP,
)
@click.version_option(__version__, "-V", "--version", prog_name="cudaenv", message="%(prog)s %(version)s")
@click.option("--engine", type=click.Choice(["docker", "podman"]), default=None, metavar="docker|podman",
              help="The container engine (default: CUDAENV_ENGINE, else Docker when it answers, else Podman).")
def cli(engine: str | None) -> None:
    """The group; its help text is GROUP_HELP (cudaenv.cli.commands)."""
    if engine is not None:
        import os

        # every get_engine() of this command, and the cudaenv processes it starts, use it
        os.environ["CUDAENV_ENGINE"] = engine


def _command_path(args: list[str]) -> str:
    """``cudaenv export slurm`` for ``export slurm --runtime``: the command words the arguments
    start with, as the group and its subgroups know them (for errors click raises without a context)."""
    words, command = ["cudaenv"], cli
    for arg in args:
        if arg.startswith("-") or not isinstance(command, click.Group):
            break
        command = command.get_command(click.Context(command, info_name=words[-1]), arg)
        if command is None:
            break
        words.append(arg)
    return " ".join(words)


def _fail(exc: BaseException, exit_code: int, message: str, code: str, as_json: bool) -> None:
    from cudaenv.cli.failure import fail

    fail(exc, exit_code, message, code, as_json)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning cudaenv errors into their exit codes and one line."""
    from cudaenv.cli.failure import end, wants_json
    from cudaenv.cli.output import reset_json

    args = list(sys.argv[1:] if argv is None else argv)
    as_json = wants_json(args)
    reset_json()
    try:
        rv = cli.main(args=args, prog_name="cudaenv", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):  # bare `cudaenv`: the help
            exc.show()
            sys.exit(exc.exit_code)
        # One line, as for every other bad input: what was wrong, and where the usage is.
        message = " ".join(exc.format_message().split())  # click lists choices on lines of their own
        if isinstance(exc, click.UsageError):
            context = getattr(exc, "ctx", None)
            path = context.command_path if context is not None else _command_path(args)
            message = f"{message} (see '{path} --help')"
        _fail(exc, exc.exit_code, message, "usage", as_json)
    except Exception as exc:  # cudaenv's errors, unreadable files, deep nesting: one line, exit 1 or 2
        end(exc, as_json)
        raise
    if argv is None and args[:1] in (["run"], ["resolve"]):
        # `run` and `resolve` in a process of their own have printed their answer (or the container
        # is gone) and closed every file and socket (each in a `with`): what is left is the
        # interpreter's teardown, whose final garbage collection walks every object the imports made
        # (5-10 ms, a noticeable share of `docker run`'s own time). Frozen objects are skipped by
        # that walk; atexit handlers, flushing and the exit status are the interpreter's as before.
        # A test calling main() keeps its heap.
        import gc

        gc.freeze()
    # In non-standalone mode click returns ctx.exit()'s code; commands signal a clean "no" that way.
    sys.exit(rv if isinstance(rv, int) else 0)
