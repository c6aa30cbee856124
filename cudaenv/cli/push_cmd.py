"""``cudaenv push``: the project's image in a registry, named by digest from then on."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.params import DIRECTORY
from cudaenv.errors import BuildError, UserError
from cudaenv.images.build import BuildProgress, build_project, report_build_error


@click.command("push")
@DIRECTORY
@click.option("--registry", required=True, metavar="HOST[:PORT]/NAMESPACE",
              help="Where to push, e.g. registry.example.com/ml or 127.0.0.1:5000/team.")
@click.option("--retries", default=2, show_default=True, type=click.IntRange(min=0),
              help="Retries after a transient registry failure (backoff 1 s, 2 s, ...).")
@click.option("--network", default=None, help="Network for RUN steps when the image must be built, e.g. 'host'.")
@json_option
def push(directory: Path, registry: str, retries: int, network: str | None, as_json: bool) -> None:
    """Build DIRECTORY's image when needed, push it as REGISTRY/NAME:<inputs hash>, and record
    the digest the registry reports in cudaenv.pushed.json (next to cudaenv.lock), which
    `cudaenv export` uses to name the image immutably. Credentials as for `cudaenv publish`.
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
    progress = BuildProgress(False)
    try:
        plan, result = build_project(project, load_matrix(), engine, progress=progress, network=network)
    except BuildError as exc:
        progress.close()
        report_build_error(exc)
        if as_json:
            emit_json({"ok": False, "error": str(exc), "step": exc.step, "log_tail": exc.log_tail})
        click.get_current_context().exit(1)
    target = f"{registry}/{project.name}:{plan.inputs_hash[:12]}"
    say = (lambda _line: None) if as_json else (lambda line: click.echo(line, err=True))
    pushed = push_image(engine, result.image_id, target, attempts=retries + 1, progress=say)
    path = record(project.root, pushed)
    if as_json:
        emit_json({"ok": True, "reference": pushed.reference, "digest": pushed.digest,
                   "image": pushed.by_digest, "recorded_in": str(path)})
        return
    click.echo(f"✓ pushed {pushed.by_digest}\n  recorded in {path}")
