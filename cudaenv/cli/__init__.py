"""The ``cudaenv`` command line: thin click commands that parse, call and print.

Each command lives in its own module and is imported only when it runs (see ``_lazy``), so the
docker SDK and jinja2 never load for commands that do not need them. The click group itself
lives in ``app``; ``cudaenv --version`` answers from here without importing click at all.
"""

from __future__ import annotations

import sys

from cudaenv import __version__

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
    "plan": ("cudaenv.cli.plan_cmd:plan_command", "Plan several projects on one host, sharing base images."),
}




def main(argv: list[str] | None = None) -> None:
    """Entry point: ``--version`` straight away, everything else through the click group."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        sys.stdout.write(f"cudaenv {__version__}\n")
        sys.exit(0)
    from cudaenv.cli.app import run_cli

    run_cli(args)


def __getattr__(name: str):
    if name == "cli":  # the click group, for tests and embedding: imported on first use
        from cudaenv.cli.app import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
