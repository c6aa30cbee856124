"""The issue's three-target project (a CPU laptop, an A100 on 535.104.05, an H100 on 580.65.06), as
the configuration, lock and init tests write it."""

THREE_TARGET_TABLES = """[frameworks]
torch = ">=2.6"

[targets.laptop]
gpus = "none"

[targets.a100]
driver = "535.104.05"
gpus = ["A100"]

[targets.h100]
driver = "580.65.06"
gpus = ["H100"]
"""

THREE_TARGETS = '[project]\nname = "demo"\n\n' + THREE_TARGET_TABLES


def lock_offline(root, text: str = THREE_TARGETS, pins: tuple[str, ...] = ("filelock==3.16.1",)):
    """``root``/cudaenv.toml holding ``text`` and a current lock of its every target, as `cudaenv lock`
    writes it, with ``pins`` (and a CPU target's torch+cpu) in place of what uv would pin: the
    commands that read a lock see a real one, and no package index is asked. Returns the project."""
    from pathlib import Path

    from cudaenv.hosts.target import project_target
    from cudaenv.matrix import load_matrix
    from cudaenv.project import load_project
    from cudaenv.project.config import resolve_project
    from cudaenv.project.lock import LockFile, make_lock

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "cudaenv.toml").write_text(text)
    project = load_project(root)
    matrix = load_matrix(overlays=[])
    views = []
    for declared in project.named_targets:
        target = project_target(matrix, project, declared.name if project.targets else None)
        stack = resolve_project(matrix, project, target.host).stack
        pinned = list(pins) + ([f"torch=={stack.framework('torch')}+cpu"] if stack.cpu and stack.framework("torch")
                               else [])
        views.append(make_lock(project, stack, matrix_revision=matrix.revision, target=target.as_dict(),
                               pinned=pinned, name=declared.name))
    project.lock_path.write_text(LockFile.of(views).as_toml())
    return project
