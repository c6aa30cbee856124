"""``cudaenv export``: artefacts for running the project elsewhere, one lazily imported
subcommand per target (the same lazy table as the top-level commands)."""

from __future__ import annotations

import click

from cudaenv.cli._lazy import LazyGroup

# name -> (module:command, one-line help)
EXPORT_COMMANDS: dict[str, tuple[str, str]] = {
    "devcontainer": ("cudaenv.cli.export_devcontainer_cmd:devcontainer", ".devcontainer/devcontainer.json for VS Code."),
    "compose": ("cudaenv.cli.export_compose_cmd:compose", "A compose.yaml: one service per project, GPUs reserved."),
    "slurm": ("cudaenv.cli.export_slurm_cmd:slurm", "An sbatch script: GRES, node features, pyxis/Apptainer/Docker."),
    "kubernetes": ("cudaenv.cli.export_kubernetes_cmd:kubernetes",
                   "A Job or Deployment: GPU limit, node affinity on GPU Feature Discovery labels."),
}


@click.group("export", cls=LazyGroup, lazy_commands=EXPORT_COMMANDS)
def export() -> None:
    """Write what another system needs to run the project's stack."""
