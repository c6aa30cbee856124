"""``cudaenv publish``: base images for a team's registry."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option, table
from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix


@click.command("publish")
@click.option("--registry", required=True, metavar="HOST[:PORT]/NAMESPACE",
              help="Where to push, e.g. registry.example.com/ml or 127.0.0.1:5000/team.")
@click.option("--cuda", metavar="SPEC", help="CUDA versions, e.g. 12.4 or '>=12.1,<12.9'.")
@click.option("--python", metavar="SPEC", help="Python versions: a list like 3.11,3.12 or a specifier.")
@click.option("--os", "os_name", metavar="OS", help="nvidia/cuda image OS, e.g. ubuntu22.04.")
@click.option("--flavor", type=click.Choice(["runtime", "devel", "wheels"]), default="runtime", show_default=True)
@click.option("--cudnn", metavar="SPEC", help="Use the cuDNN-flavoured nvidia/cuda images with this cuDNN, e.g. 9.")
@click.option("--framework", "frameworks", multiple=True, metavar="NAME==VERSION",
              help="Add a framework layer (repeatable), e.g. torch==2.6.0.")
@click.option("--from-projects", "projects", multiple=True, type=click.Path(file_okay=False, exists=True),
              help="Publish exactly the bases these projects' cudaenv.lock files use (repeatable).")
@click.option("--base-registry", default="", metavar="PREFIX", help="Mirror for the upstream base images.")
@click.option("--ca-cert", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="CA bundle for builds behind a TLS-intercepting proxy (a BuildKit secret; not in any layer).")
@click.option("--retries", default=2, show_default=True, type=click.IntRange(min=0),
              help="Retries after a transient registry failure (backoff 1 s, 2 s, ...).")
@click.option("--dry-run", is_flag=True, help="Print the plan (images and tags) without building or pushing.")
@json_option
def publish(registry, cuda, python, os_name, flavor, cudnn, frameworks, projects, base_registry, ca_cert, retries,
            dry_run, as_json) -> None:
    """Build base images (OS, CUDA, cuDNN, Python, optional framework) and push them.

    Each image is layers 1-3 of a project image, from the same templates, tagged readably
    (cuda12.4.1-cudnn9-runtime-py3.11-ubuntu22.04[-torch2.6.0]) and by content hash. An image
    whose hash the registry already has is skipped without rebuilding; transient failures are
    retried with backoff; one failure does not stop the others. The end is a table of pushed /
    skipped / failed, and exit 1 when anything failed. Credentials come from `docker login` or
    CUDAENV_REGISTRY_USER / CUDAENV_REGISTRY_PASSWORD and are never printed.
    """
    from cudaenv.images.publish import plan_items, publish_items, select_stacks, stacks_from_projects

    from cudaenv.project.config import REGISTRY
    from cudaenv.core.references import is_registry_prefix, names_registry

    for option, value in (("--registry", registry), ("--base-registry", base_registry)):
        if not value:
            continue
        host = value.split("/", 1)[0]
        if not REGISTRY.fullmatch(value) or not is_registry_prefix(value) or not names_registry(host):
            raise UserError(f"{option} {value!r}: expected HOST[:PORT]/NAMESPACE without a scheme, "
                            "e.g. registry.example.com/ml or 127.0.0.1:5000/team")
    matrix = load_matrix()
    notes: list[str] = []
    if projects:
        if cuda or python or frameworks:
            raise UserError("--from-projects takes the bases from the locks: leave out --cuda/--python/--framework")
        stacks = stacks_from_projects(projects)
    else:
        stacks, notes = select_stacks(matrix, cuda=cuda, python=python, os_name=os_name, flavor=flavor,
                                      frameworks=frameworks, cudnn=cudnn)
    if not stacks:
        raise UserError("the selection matches no stack: " + ("; ".join(notes) or "nothing selected"))
    from cudaenv.engine.builders import find_cli_builder

    buildkit = find_cli_builder() is not None
    if ca_cert and not buildkit:
        raise UserError("--ca-cert needs a BuildKit builder (docker buildx, or a docker CLI before 23.0)")
    items = plan_items(matrix, stacks, registry, base_registry=base_registry, ca_cert=ca_cert is not None,
                       buildkit=buildkit)
    if dry_run:
        if as_json:
            emit_json({"dry_run": True, "images": [{"image": i.name, "tags": [f"{i.repository}:{t}" for t in i.tags],
                                                   "content_hash": i.content_hash, "stack": i.stack.as_dict()}
                                                  for i in items], "notes": notes})
            return
        click.echo(f"would publish {len(items)} image(s) to {registry}:")
        for item in items:
            frameworks_text = ", ".join(f"{n} {v}" for n, v in item.stack.frameworks) or "no framework"
            click.echo(f"  {item.name}  ({item.stack.base_image}, Python {item.stack.python}, {frameworks_text})")
            for tag in item.tags[1:]:
                click.echo(f"      also {item.repository}:{tag}")
        for note in notes:
            click.echo(f"  skipped: {note}")
        return

    from cudaenv.engine import get_engine

    engine = get_engine()
    tty = sys.stderr.isatty()
    outcomes = publish_items(engine, items, secrets={"cudaenv_ca": ca_cert} if ca_cert else None, attempts=retries + 1,
                             progress=lambda line: click.echo(line, err=True),
                             build_output=(lambda line: click.echo(line, err=True)) if tty else None)
    failed = [o for o in outcomes if o.status == "failed"]
    if as_json:
        emit_json({"ok": not failed, "results": [o.as_dict() for o in outcomes], "notes": notes})
    else:
        click.echo(table(("IMAGE", "RESULT", "DETAIL"), [(o.item.name, o.status, o.detail) for o in outcomes]))
        counts = {s: sum(o.status == s for o in outcomes) for s in ("pushed", "skipped", "failed")}
        click.echo(", ".join(f"{n} {s}" for s, n in counts.items()))
    click.get_current_context().exit(1 if failed else 0)
