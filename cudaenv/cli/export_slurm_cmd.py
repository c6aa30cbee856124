"""``cudaenv export slurm``: the project's stack as an sbatch script."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.params import GPU_COUNT, CommandAfterDashes, ProjectDirectory, target_name_option


@click.command("slurm", cls=CommandAfterDashes, context_settings={"ignore_unknown_options": True})
@click.argument("directory", required=False, default=".", type=ProjectDirectory())
@click.option("--runtime", type=click.Choice(["pyxis", "apptainer", "docker"]), default="pyxis", show_default=True,
              help="How nodes start containers: pyxis/enroot (srun --container-image), Apptainer, or Docker.")
@click.option("--image", default=None, metavar="REF",
              help="The image as the nodes pull it, best by digest (REGISTRY/PATH@sha256:...). "
                   "Default: the digest `cudaenv push` recorded (cudaenv.pushed.json); for --runtime docker "
                   "without one, the project's local tag.")
@target_name_option(what="the job")
@click.option("--gpus", type=GPU_COUNT, default=None, metavar="N",
              help="GPUs per job (--gres=gpu:N); default from [run] gpus. A CPU-only target asks for none.")
@click.option("--time", "time_limit", default=None, help="Time limit (sbatch --time), e.g. 4:00:00 or 2-00:00:00.")
@click.option("--partition", default=None, help="Partition(s) (sbatch --partition).")
@click.option("--account", default=None, help="Account to charge (sbatch --account).")
@click.option("--job-name", default=None, help="Job name (default: the project's name).")
@click.option("--output", default=None, metavar="PATH", help="Job log (sbatch --output; default %x-%j.out).")
@click.option("-e", "--env", "env", multiple=True,
              help="Set NAME=value in the container (on top of [run] env); -e NAME: the value sbatch's submitting "
                   "environment has when the job starts, never written into the script.")
@click.option("--no-constraint", is_flag=True, help="Leave out --constraint even when node features are configured.")
@click.option("--docker-gpus", type=click.Choice(["allocated", "none"]), default="allocated", show_default=True,
              help="--runtime docker: hand the job's GPUs (SLURM_JOB_GPUS) to the container, or none.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def slurm(directory, runtime, image, target_name, gpus, time_limit, partition, account, job_name, output, env, no_constraint,
          docker_gpus, command) -> None:
    """Print an sbatch script that runs COMMAND (default: [run] command) in the project's image.

    The stack comes from cudaenv.lock: the one target's, or --target NAME's where the project names
    several. A CPU-only target's job asks for no GPU (no --gres, no --nv, no GPU for Docker). Where
    the site tags nodes with features, describe them in [cluster.slurm.features] and a GPU job asks
    for the ones that can run the stack:

    \b
        cudaenv export slurm . --runtime pyxis --image reg.example.com/team/det@sha256:... \\
            --time 4:00:00 --partition gpu -- python train.py > train.sbatch
    """
    from cudaenv.export.slurm import build_job, image_for, render_script
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.cli.export_lock import locked_target, recorded_image
    from cudaenv.export.environment import parse_export_env

    project = load_project(directory)
    matrix = load_matrix()
    lock = locked_target(project, matrix, target_name, first=f"cudaenv lock {directory}")
    local_tag = None
    if image is None and runtime != "docker":
        pushed = recorded_image(project, lock.name)  # `cudaenv push` recorded the digest: every node pulls the same bytes
        if pushed is not None:
            image = pushed.by_digest
            click.echo(f"using the pushed image {image} (cudaenv.pushed.json)", err=True)
    if image is None and runtime == "docker":
        from cudaenv.images.build import buildkit_available
        from cudaenv.images.plan import plan_image

        plan = plan_image(project, matrix, lock, buildkit=buildkit_available(False))
        local_tag = plan.default_tag
    values, passed = parse_export_env(env)
    job = build_job(project, matrix, lock.resolved_stack(), runtime=runtime,
                    target=lock.name if project.several_targets else None,
                    image=image_for(runtime, image, local_tag), gpus=gpus, time=time_limit, partition=partition,
                    account=account, job_name=job_name, output=output, command=tuple(command), env=values,
                    passthrough=passed,
                    use_features=not no_constraint, docker_gpus=docker_gpus)
    click.echo(render_script(job), nl=False)
