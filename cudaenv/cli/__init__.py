"""The ``cudaenv`` command line: thin click commands that parse, call and print.

Each command lives in its own module and is imported only when it runs (see ``_lazy``), so the
docker SDK and jinja2 never load for commands that do not need them.
"""

from __future__ import annotations

import sys

import click

from cudaenv import __version__
from cudaenv.cli._lazy import LazyGroup

# name -> (module:command, one-line help for `cudaenv --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("cudaenv.cli.info:info", "Show this installation: version, matrix and templates."),
    "matrix": ("cudaenv.cli.matrix_cmd:matrix", "Look at the compatibility matrix (list, show, check, update)."),
    "resolve": ("cudaenv.cli.resolve_cmd:resolve_command", "Pick a stack for a target host, or explain why none fits."),
    "init": ("cudaenv.cli.project_cmd:init", "Create cudaenv.toml and cudaenv.lock for an existing project."),
    "lock": ("cudaenv.cli.project_cmd:lock", "Pin the stack and the project's requirements in cudaenv.lock."),
    "dockerfile": ("cudaenv.cli.build_cmd:dockerfile", "Print the Dockerfile `cudaenv build` would use."),
    "build": ("cudaenv.cli.build_cmd:build", "Build the project's image (locking first when needed)."),
    "run": ("cudaenv.cli.run_cmd:run", "Run a command in the project's image with GPUs (builds when needed)."),
    "shell": ("cudaenv.cli.run_cmd:shell", "An interactive shell in the project's environment."),
    "exec": ("cudaenv.cli.run_cmd:exec_command", "Run a command in a running cudaenv container."),
    "ps": ("cudaenv.cli.run_cmd:ps", "List cudaenv containers: project, stack, GPUs, status, uptime."),
    "stop": ("cudaenv.cli.run_cmd:stop", "Stop and remove a project's containers."),
    "check": ("cudaenv.cli.check_cmd:check", "Check a stack (project, image or flags) against hosts or a fleet."),
    "doctor": ("cudaenv.cli.check_cmd:doctor", "Report this host: driver, GPUs, Docker, NVIDIA runtime, BuildKit."),
    "publish": ("cudaenv.cli.publish_cmd:publish", "Build and push base images to a team registry."),
    "push": ("cudaenv.cli.push_cmd:push", "Build and push the project's image; record its digest for export."),
    "plan": ("cudaenv.cli.plan_cmd:plan_command", "Plan several projects on one host, sharing base images."),
}


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


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning cudaenv errors into their exit codes and one line."""
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
