"""``cudaenv resolve``: the stack for one project on one target host, or why there is none."""

from __future__ import annotations

import click

from cudaenv.cli.output import json_option
from cudaenv.cli.resolving import render_resolution, run_resolve  # noqa: F401 - render_resolution re-exported
from cudaenv.cli.stack_options import stack_options
from cudaenv.cli.target import target_options


@click.command("resolve")
@click.argument("directory", required=False, type=click.Path(file_okay=False, exists=True))
@stack_options
@target_options()
@click.option("--no-detect", is_flag=True, help="Do not look at this machine's driver and GPUs.")
@json_option
def resolve_command(directory, driver, gpus, compute_capabilities, arch, no_detect, as_json, **options) -> None:
    """Pick a CUDA, cuDNN, Python and framework stack for a target host.

    Constraints come from the project in DIRECTORY (default: the current directory, when it has
    a cudaenv.toml or [tool.cudaenv] in pyproject.toml), like every other command. Flags refine
    them: a flag replaces the project's constraint of the same name (--torch replaces
    [frameworks] torch, --cuda replaces [cuda] version) and leaves the others as the project says.
    Without a project, flags alone (a bare version means ==). The host comes from
    --driver/--gpu/--compute-capability/--arch, else the project's [target], else the
    CUDAENV_DRIVER_VERSION / CUDAENV_GPUS environment, else this machine.

    Exit 0 when a stack exists, 1 when none does (the output says why and what would fix it),
    2 on bad input.

    \b
    Examples:
      cudaenv resolve --torch 2.6 --driver 535.104.05 --gpu A100
      cudaenv resolve --tensorflow 2.15 --torch '>=2.1' --gpu T4 --json
    """
    code = run_resolve(directory, driver=driver, gpus=gpus, compute_capabilities=compute_capabilities, arch=arch,
                       no_detect=no_detect, as_json=as_json, options=options)
    click.get_current_context().exit(code)
