"""``cudaenv push``: the project's image in a registry, named by digest from then on."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.params import DIRECTORY, target_name_option
from cudaenv.errors import BuildError, UserError
from cudaenv.images.build import BuildProgress, build_project, report_build_error


@click.command("push")
@DIRECTORY
@click.option("--registry", required=True, metavar="HOST[:PORT]/NAMESPACE",
              help="Where to push, e.g. registry.example.com/ml or 127.0.0.1:5000/team.")
@click.option("--retries", default=2, show_default=True, type=click.IntRange(min=0),
              help="Retries after a transient registry failure (backoff 1 s, 2 s, ...).")
@click.option("--network", default=None, help="Network for RUN steps when the image must be built, e.g. 'host'.")
@target_name_option(what="the push", multiple=True)
@json_option
def push(directory: Path, registry: str, retries: int, network: str | None, target_names, as_json: bool) -> None:
    """Build DIRECTORY's image when needed, push it as REGISTRY/NAME:<inputs hash>, and record
    the digest the registry reports in cudaenv.pushed.json (next to cudaenv.lock), which
    `cudaenv export` uses to name the image immutably. Credentials as for `cudaenv publish`.

    A project of several targets pushes the target this host runs, or --target NAME. Targets of
    different CPU architectures (--target a100 --target gh200) are built each and pushed as one
    OCI image index, under one tag and digest: every node pulls the image of its own CPU, and the
    exports use that digest for each of those targets. Two targets of one architecture cannot
    share an index (a node could not tell which to pull): push them one at a time.
    """
    from cudaenv.engine import get_engine
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.project.config import REGISTRY
    from cudaenv.images.push import push_image, record
    from cudaenv.core.references import names_registry

    if not REGISTRY.fullmatch(registry) or not names_registry(registry.split("/", 1)[0]):
        raise UserError(f"--registry {registry!r}: expected HOST[:PORT]/NAMESPACE without a scheme, "
                        "e.g. registry.example.com/ml or 127.0.0.1:5000/team")
    project = load_project(directory)
    engine = get_engine()
    matrix = load_matrix()
    names = tuple(dict.fromkeys(target_names))
    members = index_members(project, matrix, names) if len(names) > 1 else None
    progress = BuildProgress(False)
    built = []
    try:
        for name in names or (None,):
            built.append(build_project(project, matrix, engine, progress=progress, network=network, target_name=name))
    except BuildError as exc:
        progress.close()
        report_build_error(exc)
        if as_json:
            emit_json({"ok": False, "error": str(exc), "step": exc.step, "log_tail": exc.log_tail})
        click.get_current_context().exit(1)
    say = (lambda _line: None) if as_json else (lambda line: click.echo(line, err=True))
    if members is None:
        [(plan, result)] = built
        target = f"{registry}/{project.name}:{plan.inputs_hash[:12]}"
        pushed = push_image(engine, result.image_id, target, attempts=retries + 1, progress=say)
        if project.several_targets:
            from dataclasses import replace

            pushed = replace(pushed, targets=(plan.lock.name,))
    else:
        import hashlib

        from cudaenv.images.push import push_index

        joined = "\0".join(plan.inputs_hash for plan, _ in built)
        target = f"{registry}/{project.name}:{hashlib.sha256(joined.encode()).hexdigest()[:12]}"
        pushed = push_index(engine, [(result.image_id, members[plan.lock.name], plan.lock.name)
                                     for plan, result in built], target, attempts=retries + 1, progress=say)
    path = record(project.root, pushed)
    if as_json:
        emit_json({"ok": True, "reference": pushed.reference, "digest": pushed.digest,
                   "image": pushed.by_digest, "recorded_in": str(path), "targets": list(pushed.targets)})
        return
    what = f" (image index of {', '.join(pushed.targets)})" if members else ""
    click.echo(f"✓ pushed {pushed.by_digest}{what}\n  recorded in {path}")


def index_members(project, matrix, names: tuple[str, ...]) -> dict[str, str]:
    """Target name -> the OCI architecture of its image, for an image index of ``names``; bad input
    (exit 2) before anything is built when two of them are for one architecture."""
    from cudaenv.hosts.target import project_target
    from cudaenv.resolver.model import OCI_ARCH

    arches: dict[str, str] = {}
    for name in names:
        project.target_named(name)  # an unknown name: the error lists the targets
        arches[name] = OCI_ARCH[project_target(matrix, project, name).host.platform]
    for arch in set(arches.values()):
        same = [n for n, a in arches.items() if a == arch]
        if len(same) > 1:
            raise UserError(f"--target: {', '.join(same)} are all {arch}: one image index holds one image per CPU "
                            "architecture (a node could not tell which to pull); push them one at a time")
    return arches
