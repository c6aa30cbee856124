"""``cudaenv images``: per stack base, which projects use it, the bytes it holds once, what each adds."""

from __future__ import annotations

import click

from cudaenv.cli.output import emit_json, json_option


def size_text(count: int) -> str:
    """Decimal units, as Docker prints image sizes."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"  # pragma: no cover - the loop returns at GB


@click.command("images")
@click.option("--prune", is_flag=True, help="Remove the stack bases no cudaenv project image uses (nothing else).")
@click.option("--base", "bases", multiple=True, metavar="IMAGE",
              help="Only this stack base (a name or image ID; repeatable): what it holds, and --prune only it.")
@json_option
def images(prune: bool, bases: tuple[str, ...], as_json: bool) -> None:
    """Show cudaenv's images by stack base: the projects on each, the bytes the base holds once,
    and what each project adds. Disk is counted by distinct layers (chain IDs), which is what
    the engine stores; `docker system df` calls layers "shared" even when they are stored twice.
    """
    from cudaenv.engine import get_engine
    from cudaenv.images.accounting import inventory, prune as prune_bases
    from cudaenv.core.references import check_reference

    for base in bases:  # a name or an image ID (both fit Docker's reference grammar): bad input otherwise
        check_reference(base.removeprefix("sha256:"), "--base")
    engine = get_engine()
    found = inventory(engine, only=bases)
    removals = prune_bases(engine, found, progress=lambda line: click.echo(line, err=True)) if prune else []
    if as_json:
        emit_json({"ok": all(r.removed for r in removals), **found.as_dict(),
                   "pruned": [r.as_dict() for r in removals]})
        if not all(r.removed for r in removals):
            click.get_current_context().exit(1)
        return
    if not found.stacks and not found.unattached:
        click.echo("no cudaenv images here yet (`cudaenv build` makes a stack base and a project image)")
    for stack in found.stacks:
        base = stack.base
        digest = base.info.labels.get("io.cudaenv.content-hash", "")[:16]
        click.echo(f"{base.name}  (hash-{digest}, {base.info.id[7:19]}): {size_text(stack.bytes)} held once")
        if base.other_tags:
            click.echo(f"  also tagged {', '.join(base.other_tags)}: yours, so `cudaenv images --prune` keeps it")
        elif not stack.used:
            click.echo("  no project uses it: `cudaenv images --prune` removes it")
        for use in stack.projects:
            click.echo(f"  {use.shown_project:24} {use.image.name:48} "
                       f"+{size_text(use.adds_bytes)} in {use.layers_added} layers")
        for other in stack.others:
            click.echo(f"  {'(not a cudaenv project)':24} {other.name:48} built on it: keeps it in use")
    if found.unattached:
        click.echo("on no local stack base (built before stack bases, or their base was rebuilt or removed: "
                   "`cudaenv build` puts them back on one):")
        for use in found.unattached:
            info = use.image.info
            click.echo(f"  {use.shown_project:24} {use.image.name:48} {size_text(use.adds_bytes)}")
    if found.stacks or found.unattached:
        click.echo(f"disk: {size_text(found.distinct_bytes)} by distinct layers "
                   f"({size_text(found.summed_bytes)} if every image were stored on its own)")
    for removal in removals:
        if removal.removed:
            click.echo(f"removed {removal.base} ({removal.image_id[7:19]}): {size_text(removal.bytes)} freed")
        else:
            click.echo(f"kept {removal.base}: {removal.reason}", err=True)
    if prune and not removals:
        click.echo("nothing to prune: every stack base here is used by a project image")
    if not all(r.removed for r in removals):
        click.get_current_context().exit(1)
