"""``cudaenv export kubernetes``: the project's stack as a Job or Deployment manifest."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.params import GPU_COUNT, CommandAfterDashes, Count, ProjectDirectory


@click.command("kubernetes", cls=CommandAfterDashes, context_settings={"ignore_unknown_options": True})
@click.argument("directory", required=False, default=".", type=ProjectDirectory())
@click.option("--kind", type=click.Choice(["job", "deployment"]), default="job", show_default=True,
              help="A Job (runs to completion) or a Deployment (kept running).")
@click.option("--image", default=None, metavar="REF",
              help="The image as the nodes pull it, best by digest (REGISTRY/PATH@sha256:...). "
                   "Default: the digest `cudaenv push` recorded (cudaenv.pushed.json).")
@click.option("--name", default=None, help="metadata.name and the container's name (default: the project's name).")
@click.option("--namespace", default=None, help="metadata.namespace (default: none, kubectl's current namespace).")
@click.option("--gpus", type=GPU_COUNT, default=None, metavar="N",
              help="GPUs per pod (resources.limits nvidia.com/gpu); default from [run] gpus. 0: none, no GPU affinity.")
@click.option("--runtime-class", default=None, metavar="NAME",
              help="spec.runtimeClassName, for clusters whose NVIDIA runtime is a RuntimeClass (e.g. nvidia).")
@click.option("--user", default=None, metavar="UID[:GID]",
              help="runAsUser/runAsGroup (default: the numeric user `cudaenv build` puts in the image).")
@click.option("--shm-size", default=None, metavar="SIZE", help="/dev/shm size (default [run] shm_size), e.g. 16g.")
@click.option("--replicas", type=Count(0, 2**31 - 1), default=None, metavar="N", help="--kind deployment: replicas (default 1).")
@click.option("--backoff-limit", type=Count(0, 2**31 - 1), default=None, metavar="N", help="--kind job: retries (default 0).")
@click.option("-e", "--env", "env", multiple=True,
              help="Set NAME=value in the container (on top of [run] env); -e NAME: read NAME from a Secret "
                   "(--secret), never written into the manifest.")
@click.option("--secret", default=None, metavar="NAME",
              help="The Secret that -e NAME (no value) reads from, key NAME (default: NAME-env after --name).")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Write the manifest into DIR (NAME-KIND.yaml) instead of printing it.")
@click.option("--force", is_flag=True, help="Overwrite the manifest in DIR if it exists.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def kubernetes(directory, kind, image, name, namespace, gpus, runtime_class, user, shm_size, replicas, backoff_limit,
               env, secret, output, force, command) -> None:
    """Print a Job (or Deployment) that runs COMMAND (default: [run] command) in the project's image.

    The pod asks for the GPUs (resources.limits nvidia.com/gpu), picks nodes by GPU Feature
    Discovery labels whose driver and GPU can run the locked stack (the rules `cudaenv check`
    applies), mounts [run] shm_size of memory at /dev/shm, and runs as the image's non-root user:

    \b
        cudaenv push . --registry registry.example.com/ml
        cudaenv export kubernetes . -- python train.py | kubectl apply -f -
    """
    from cudaenv.errors import UserError
    from cudaenv.export.kubernetes import build_workload, file_name, header, manifest, render
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.project.lock import current_lock
    from cudaenv.export.environment import parse_export_env

    project = load_project(directory)
    matrix = load_matrix()
    lock, stale = current_lock(project, matrix)
    if lock is None or stale:
        raise UserError(f"{project.lock_path}: {stale[0]}; run `cudaenv lock {directory}` first")
    if image is None:
        from cudaenv.images.push import recorded

        pushed = recorded(project.root)  # every node pulls the same bytes
        if pushed is None:
            raise UserError("the cluster pulls the image: pass --image REGISTRY/PATH@sha256:..., or run "
                            f"`cudaenv push {directory} --registry HOST/NAMESPACE` first (its digest becomes the default)")
        image = pushed.by_digest
        click.echo(f"using the pushed image {image} (cudaenv.pushed.json)", err=True)
    values, passed = parse_export_env(env)
    workload = build_workload(project, matrix, lock.gpu_stack("a Kubernetes workload", project.lock_path), kind=kind, image=image, name=name,
                              namespace=namespace, gpus=gpus, runtime_class=runtime_class, user=user,
                              shm_size=shm_size, replicas=replicas, backoff_limit=backoff_limit,
                              command=tuple(command), env=values, passthrough=passed,
                              secret=secret)
    text = render(manifest(workload), header(workload))
    if output is None:
        click.echo(text, nl=False)
        return
    target = output / file_name(workload)
    if target.exists() and not force:
        raise UserError(f"{target} exists; pass --force to overwrite it")
    from cudaenv.project.lock import write_atomically

    output.mkdir(parents=True, exist_ok=True)
    write_atomically(target, text)
    click.echo(f"wrote {target}", err=True)
