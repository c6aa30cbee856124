"""The click group behind ``cudaenv``: commands come from ``COMMANDS`` and load lazily."""

from __future__ import annotations

import sys

import click

from cudaenv import __version__
from cudaenv.cli import COMMANDS
from cudaenv.cli._lazy import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "-V", "--version", prog_name="cudaenv", message="%(prog)s %(version)s")
def cli() -> None:
    """Containerized CUDA stacks for deep-learning projects.

    cudaenv picks a CUDA, cuDNN, Python and framework stack that runs on your host's NVIDIA
    driver and GPUs, explains why when none does, and builds and runs it as a container.
    """


def run_cli(argv: list[str]) -> None:
    """Run the CLI, turning cudaenv errors into their exit codes and one line."""
    from cudaenv.errors import CudaenvError

    try:
        rv = cli.main(args=argv, prog_name="cudaenv", standalone_mode=False)
    except CudaenvError as exc:
        click.echo(f"cudaenv: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # `cudaenv matrix list torch | head`: the reader left, not an error
        sys.stderr.close()
        sys.exit(0)
    # In non-standalone mode click returns ctx.exit()'s code; commands signal a clean "no" that way.
    sys.exit(rv if isinstance(rv, int) else 0)
