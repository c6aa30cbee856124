"""The lock an export reads: one target's part of cudaenv.lock, current, and named with
``--target`` where the project names several. Exports serve a named target; they never detect
one (``cudaenv.project.which_target`` is for the host a command runs on, and a manifest or an
sbatch script runs elsewhere)."""

from __future__ import annotations


def locked_target(project, matrix, target_name: str | None, *, first: str, why: str = ""):
    """The current ``Lock`` of ``target_name`` (None: the project's only target), else exit 2 in one
    line: the targets when several are named and none is given, the targets when the name is not
    one of them, or why the lock is stale and ``first`` (the command that makes it current; ``why``:
    what else it does, in a few words)."""
    from cudaenv.errors import UserError
    from cudaenv.project.lock import current_lock

    if target_name is not None:
        project.target_named(target_name)  # a name the project does not have: the error lists those it has
    lock, stale = current_lock(project, matrix, target_name)
    if lock is None or stale:
        which = f"target {target_name}: " if target_name is not None and project.several_targets else ""
        raise UserError(f"{project.lock_path}: {which}{stale[0]}; run `{first}` first{why}")
    return lock


def recorded_image(project, target: str | None = None):
    """The digest `cudaenv push` recorded: a project of one target's image, or, for ``target`` of a
    project of several, the image (or image index) pushed for the targets the record names with it.
    A record that names no targets is of no named target, so it is nobody's default there (None:
    pass --image)."""
    from cudaenv.images.push import recorded

    pushed = recorded(project.root)
    if pushed is None or not project.several_targets:
        return pushed
    return pushed if target is not None and target in pushed.targets else None

