"""``cudaenv export kubernetes``: the project's stack as a Job or Deployment manifest, one per
target asked for (``--target`` repeated, or ``--all-targets``), each with its own node affinity."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.params import GPU_COUNT, CommandAfterDashes, Count, ProjectDirectory, target_name_option


@click.command("kubernetes", cls=CommandAfterDashes, context_settings={"ignore_unknown_options": True})
@click.argument("directory", required=False, default=".", type=ProjectDirectory())
@click.option("--kind", type=click.Choice(["job", "deployment"]), default="job", show_default=True,
              help="A Job (runs to completion) or a Deployment (kept running).")
@target_name_option(what="the workload", multiple=True)
@click.option("--all-targets", is_flag=True,
              help="One workload per target of the project (named NAME-TARGET), each on the nodes that run its stack.")
@click.option("--image", "images", multiple=True, metavar="REF",
              help="The image as the nodes pull it, best by digest (REGISTRY/PATH@sha256:...); for several targets "
                   "one each, as TARGET=REF. Default (a project of one target): the digest `cudaenv push` recorded "
                   "(cudaenv.pushed.json).")
@click.option("--name", default=None, help="metadata.name and the container's name (default: the project's name; "
                                            "for several targets, NAME-TARGET).")
@click.option("--namespace", default=None, help="metadata.namespace (default: none, kubectl's current namespace).")
@click.option("--gpus", type=GPU_COUNT, default=None, metavar="N",
              help="GPUs per pod (resources.limits nvidia.com/gpu); default from [run] gpus. 0: none, no GPU affinity. "
                   "A CPU-only target's pod asks for none.")
@click.option("--runtime-class", default=None, metavar="NAME",
              help="spec.runtimeClassName, for clusters whose NVIDIA runtime is a RuntimeClass (e.g. nvidia); "
                   "GPU targets only.")
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
              help="Write each manifest into DIR (NAME-KIND.yaml) instead of printing it.")
@click.option("--force", is_flag=True, help="Overwrite the manifests in DIR if they exist.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def kubernetes(directory, kind, target_names, all_targets, images, name, namespace, gpus, runtime_class, user,
               shm_size, replicas, backoff_limit, env, secret, output, force, command) -> None:
    """Print a Job (or Deployment) that runs COMMAND (default: [run] command) in the project's image.

    The pod asks for the GPUs (resources.limits nvidia.com/gpu), picks nodes by GPU Feature
    Discovery labels whose driver and GPU can run the locked stack (the rules `cudaenv check`
    applies), mounts [run] shm_size of memory at /dev/shm, and runs as the image's non-root user.
    A project of several targets names the one (--target NAME) or ones (--target repeated,
    --all-targets: one workload each, as several YAML documents); a CPU-only target's pod asks
    for no GPU and is placed by its CPU architecture alone:

    \b
        cudaenv push . --registry registry.example.com/ml
        cudaenv export kubernetes . -- python train.py | kubectl apply -f -
        cudaenv export kubernetes . --all-targets --image laptop=REF --image a100=REF -o k8s/
    """
    from cudaenv.cli.export_lock import locked_target
    from cudaenv.errors import UserError
    from cudaenv.export.environment import parse_export_env
    from cudaenv.export.kubernetes import build_workload, default_name, file_name, header, manifest, render, secret_for
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project

    project = load_project(directory)
    matrix = load_matrix()
    names = chosen_targets(project, target_names, all_targets)
    several = len(names) > 1
    locks = [locked_target(project, matrix, target, first=f"cudaenv lock {directory}") for target in names]
    by_target = images_for(project, directory, [lock.name for lock in locks], images)
    values, passed = parse_export_env(env)
    base = name if name is not None else default_name(project.name)
    if several and passed and secret is None:
        secret = secret_for(base)  # one Secret for every target's workload
    workloads = []
    for lock in locks:
        stack = lock.resolved_stack()
        workloads.append(build_workload(
            project, matrix, stack, kind=kind, image=by_target[lock.name],
            # NAME-TARGET in a project of several targets, so targets exported one at a time never
            # collide (a --name given for one workload is taken as it is)
            name=workload_name(base, lock.name) if several or (project.several_targets and name is None) else name,
            namespace=namespace,
            gpus=None if several and stack.cpu else gpus,
            runtime_class=None if several and stack.cpu else runtime_class, user=user, shm_size=shm_size,
            replicas=replicas, backoff_limit=backoff_limit, command=tuple(command), env=values, passthrough=passed,
            secret=secret, target=lock.name if project.several_targets else None))
    texts = [render(manifest(workload), header(workload)) for workload in workloads]
    if output is None:
        click.echo("---\n".join(texts), nl=False)
        return
    paths = [output / file_name(workload) for workload in workloads]
    existing = [str(path) for path in paths if path.exists()]
    if existing and not force:
        raise UserError(f"{', '.join(existing)} exist{'s' if len(existing) == 1 else ''}; pass --force to overwrite "
                        + ("it" if len(existing) == 1 else "them"))
    from cudaenv.project.lock import write_atomically

    output.mkdir(parents=True, exist_ok=True)
    for path, text in zip(paths, texts):
        write_atomically(path, text)
        click.echo(f"wrote {path}", err=True)


def chosen_targets(project, target_names: tuple[str, ...], all_targets: bool) -> list[str | None]:
    """The targets to export, in the order asked (--all-targets: the configuration's order); [None]:
    the project's only target (a project of several then says which there are)."""
    from cudaenv.errors import UserError

    if all_targets:
        if target_names:
            raise UserError("--all-targets and --target: give one or the other")
        return [t.name for t in project.named_targets]
    if len(set(target_names)) != len(target_names):
        twice = sorted({t for t in target_names if target_names.count(t) > 1})
        raise UserError(f"--target {twice[0]}: given twice")
    if not target_names and project.several_targets:
        raise UserError(f"{project.config_path}: names several targets "
                        f"({', '.join(t.name for t in project.named_targets)}); pass --target NAME (repeatable: one "
                        "workload each) or --all-targets")
    return list(target_names) or [None]


def workload_name(base: str, target: str) -> str:
    """``BASE-TARGET``, the base cut so that the whole stays an RFC 1123 label (target names are at
    most 32 characters of the same alphabet, so names stay distinct per target)."""
    return f"{base[:62 - len(target)].rstrip('-')}-{target}"


def images_for(project, directory, targets: list[str], images: tuple[str, ...]) -> dict[str, str]:
    """Target name -> the image its nodes pull. One target: ``--image REF`` (or ``TARGET=REF``), else
    the recorded push of a project of one target. Several: ``--image TARGET=REF`` for each, since
    one image carries one stack (a reference never holds ``=``)."""
    from cudaenv.errors import UserError

    given: dict[str, str] = {}
    plain: list[str] = []
    for item in images:
        target, sep, ref = item.partition("=")
        if not sep:
            plain.append(item)
            continue
        if target not in targets:
            raise UserError(f"--image {item}: {target!r} is not a target exported here ({', '.join(targets)})")
        if target in given:
            raise UserError(f"--image {target}=...: given twice")
        given[target] = ref
    if len(targets) > 1:
        if plain:
            raise UserError(f"--image {plain[0]}: exporting targets {', '.join(targets)} takes one image each, as "
                            "--image TARGET=REF (one image carries one target's stack)")
        from cudaenv.cli.export_lock import recorded_image

        for name in targets:  # an image index `cudaenv push --target …` recorded serves the targets it names
            pushed = recorded_image(project, name) if name not in given else None
            if pushed is not None:
                given[name] = pushed.by_digest
                click.echo(f"target {name}: using the pushed image {pushed.by_digest} (cudaenv.pushed.json)", err=True)
        missing = [t for t in targets if t not in given]
        if missing:
            raise UserError(f"--image: no image for target{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
                            "give one each as --image TARGET=REF")
        return given
    (target,) = targets
    if len(plain) + len(given) > 1:
        raise UserError("--image: given more than once for one workload")
    if plain or given:
        return {target: plain[0] if plain else given[target]}
    from cudaenv.cli.export_lock import recorded_image

    pushed = recorded_image(project, target)  # every node pulls the same bytes
    if pushed is None and project.several_targets:
        raise UserError(f"the cluster pulls the image: pass --image REGISTRY/PATH@sha256:... (target {target}'s image; "
                        "cudaenv.pushed.json records no image for it: `cudaenv push --target` records one)")
    if pushed is None:
        raise UserError("the cluster pulls the image: pass --image REGISTRY/PATH@sha256:..., or run "
                        f"`cudaenv push {directory} --registry HOST/NAMESPACE` first (its digest becomes the default)")
    click.echo(f"using the pushed image {pushed.by_digest} (cudaenv.pushed.json)", err=True)
    return {target: pushed.by_digest}
