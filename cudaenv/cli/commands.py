"""The table of commands and the group's help text, as plain data.

The click group (``cudaenv.cli.group``) lists every command for ``cudaenv --help`` from this
table without importing a command's module; each is imported when it runs (``_lazy``).
"""

from __future__ import annotations

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

GROUP_HELP = """Containerized CUDA stacks for deep-learning projects.

cudaenv picks a CUDA, cuDNN, Python and framework stack that runs on your host's NVIDIA
driver and GPUs, explains why when none does, and builds and runs it as a container."""

MAX_WIDTH = 100  # the group's max_content_width
