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
    "top": ("cudaenv.cli.top_cmd:top", "GPU use per container: utilization, memory, power, temperature."),
    "check": ("cudaenv.cli.check_cmd:check", "Check a stack against a host, a fleet or a cluster's nodes."),
    "doctor": ("cudaenv.cli.check_cmd:doctor", "Report this host: driver, GPUs, Docker, NVIDIA runtime, BuildKit."),
    "publish": ("cudaenv.cli.publish_cmd:publish", "Build and push base images to a team registry."),
    "push": ("cudaenv.cli.push_cmd:push", "Build and push the project's image; record its digest for export."),
    "images": ("cudaenv.cli.images_cmd:images", "Per stack base: its projects, the bytes held once; --prune unused bases."),
    "plan": ("cudaenv.cli.plan_cmd:plan_command", "Plan several projects on one host, or across a cluster's nodes."),
    "export": ("cudaenv.cli.export_cmd:export", "Take the stack elsewhere: devcontainer, compose, slurm, kubernetes."),
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


def _wants_json(argv: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it belongs to a container command)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _error_code(exc: BaseException) -> str:
    from cudaenv import errors

    for kind, code in ((errors.BuildError, "build-failed"), (errors.EngineError, "engine"),
                       (errors.MatrixError, "bad-matrix"), (errors.UserError, "bad-input"),
                       (errors.NoStackError, "no-stack")):
        if isinstance(exc, kind):
            return getattr(exc, "code", None) or code
    return getattr(exc, "code", None) if isinstance(getattr(exc, "code", None), str) else "failed"


def _fail(exc: BaseException, exit_code: int, message: str, code: str, as_json: bool) -> None:
    """One line on stderr; with --json also the one error object on stdout (unless the command
    already printed its own)."""
    from cudaenv.cli.output import emit_json, error_object, json_emitted

    if len(message) > 1000:  # bad input is named, never echoed back a megabyte at a time
        message = f"{message[:600]} … {message[-200:]}"
    click.echo(f"cudaenv: error: {message}", err=True)
    if as_json and not json_emitted():
        payload = error_object(exc, code=code, message=message)
        payload["exit_code"] = exit_code
        emit_json(payload)
    sys.exit(exit_code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning cudaenv errors into their exit codes and one line."""
    from cudaenv.errors import CudaenvError

    from cudaenv.cli.output import reset_json

    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(args)
    reset_json()
    try:
        rv = cli.main(args=args, prog_name="cudaenv", standalone_mode=False)
    except CudaenvError as exc:
        _fail(exc, exc.exit_code, str(exc), _error_code(exc), as_json)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if as_json:
            _fail(exc, exc.exit_code, exc.format_message(), "usage", as_json)
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # `cudaenv matrix list torch | head`: the reader left, not an error
        sys.stderr.close()
        sys.exit(0)
    except (OSError, UnicodeError) as exc:  # a file the user named cannot be read or written
        where = getattr(exc, "filename", None)
        if isinstance(where, str) and len(where) > 200:
            where = f"{where[:120]}… ({len(where)} chars)"
        reason = getattr(exc, "strerror", None) or exc.__class__.__name__
        _fail(exc, 2, f"{where}: {reason}" if where else f"{reason}: {str(exc)[:200]}", "bad-input", as_json)
    except RecursionError as exc:  # a TOML or JSON document nested thousands deep
        _fail(exc, 2, "input nested too deeply to read", "bad-input", as_json)
    # In non-standalone mode click returns ctx.exit()'s code; commands signal a clean "no" that way.
    sys.exit(rv if isinstance(rv, int) else 0)
