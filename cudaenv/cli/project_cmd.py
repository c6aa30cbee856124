"""``cudaenv init`` and ``cudaenv lock``: a project's configuration and its lock file."""

from __future__ import annotations

from pathlib import Path

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.resolving import render_resolution
from cudaenv.cli.target import resolve_target, target_options
from cudaenv.hosts.target import project_target
from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import CONFIG_FILE, find_config, parse_config
from cudaenv.resolver.resolve import resolve


@click.command("init")
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite an existing cudaenv.toml.")
@click.option("--no-lock", is_flag=True, help="Write cudaenv.toml only (no cudaenv.lock, no network).")
@click.option("--target", "target_name", metavar="NAME",
              help="Write the host as [targets.NAME] (added to, or updated in, an existing configuration; "
                   "--gpu none: a target without a GPU, CPU builds only).")
@target_options()
@click.option("--no-detect", is_flag=True, help="Do not look at this machine's driver and GPUs.")
@json_option
def init(directory: Path, force, no_lock, target_name, driver, gpus, compute_capabilities, arch, no_detect,
         as_json) -> None:
    """Create cudaenv.toml (and cudaenv.lock) for an existing project.

    Reads requirements*.txt, pyproject.toml, .python-version and environment.yml, detects this
    machine's driver and GPUs (or takes --driver/--gpu), resolves a stack, and writes a commented
    configuration. Never overwrites an existing one without --force; writes nothing when the
    project's pins admit no stack (and says why).

    With --target NAME the host is one named target: in an existing configuration [targets.NAME]
    is added or replaced (a single [target] becomes [targets.default]) and everything else is
    kept as written; then every target is locked.
    """
    from cudaenv.project.detect import detect_project
    from cudaenv.project.init import constraints_from_detected, render_config
    from cudaenv.project.lock import lock_project, write_atomically

    existing = find_config(directory)
    cpu = False
    if target_name is not None:
        cpu = _check_target_flags(target_name, driver, gpus, compute_capabilities)
        gpus = () if cpu else gpus
        if existing is not None and not force:
            _add_target(directory, existing, target_name, driver=driver, gpus=gpus,
                        compute_capabilities=compute_capabilities, arch=arch, cpu=cpu, no_detect=no_detect,
                        no_lock=no_lock, as_json=as_json)
            return
    if existing is not None and not force:
        locked = (existing.parent / "cudaenv.lock").is_file()
        raise UserError(f"{existing} already configures cudaenv; "
                        + ("" if locked else f"`cudaenv lock {directory}` locks it, or ")
                        + "pass --force to write it again")
    from cudaenv.project.lock import exclude_newer_from_env

    matrix = load_matrix().released_by(exclude_newer_from_env())  # no release the lock could not install
    detected = detect_project(directory)
    if not no_lock:  # the network is allowed: a framework only the dependency graph brings counts too
        from cudaenv.project.graph import add_graph_frameworks
        from cudaenv.project.lock import exclude_newer_from_env

        add_graph_frameworks(directory, detected, exclude_newer=exclude_newer_from_env())
    plan = constraints_from_detected(detected)
    target = resolve_target(matrix, driver=driver, gpus=gpus, compute_capabilities=compute_capabilities,
                            detect=not no_detect, arch=arch, cpu=cpu)
    from cudaenv.project.config import project_constraints
    from cudaenv.resolver.resolve import UnknownVersion

    requirement_files = detected.requirement_files or (
        ["pyproject.toml"] if detected.other_requirements and (directory / "pyproject.toml").is_file() else []) or (
        [detected.conda_file] if detected.conda_file else [])  # environment.yml's pip list
    # the framework index the environment (or the files' --index-url) names decides which builds
    # exist, and the package the files install a framework as which one, for init as for lock
    unconfigured = parse_config(directory, {"project": {"requirements": requirement_files}},
                                str(directory / CONFIG_FILE), None)
    try:
        result = resolve(matrix, project_constraints(matrix, unconfigured, plan.constraints), target.host)
    except UnknownVersion as exc:  # a pin from the project's files: name the file (and line) it came from
        where = detected.named.get((exc.field or "").rsplit(".", 1)[-1])
        if not where:
            raise
        raise UserError(f"{where[0]}: {exc}") from exc
    if not result.ok:
        if as_json:
            emit_json({"ok": False, "found": detected.found, "resolution": result.as_dict(), "written": []})
        else:
            _print_found(detected)
            click.echo(render_resolution(result, target.describe()))
            click.echo("nothing written: fix the pins above, or pass the target host with --driver/--gpu")
        click.get_current_context().exit(1)

    text = render_config(directory.resolve().name, detected, plan, result.stack, target.host, requirement_files,
                         known_gpu=lambda name: matrix.find_gpu(name) is not None, target_name=target_name)
    config_path = directory / CONFIG_FILE
    written = [str(config_path)]
    lock_text = None
    import tomlkit

    # what is about to be written must read back: a detected value that does not fit is bad input now
    project = parse_config(directory, tomlkit.parse(text).unwrap(), f"{config_path} (as init would write it)",
                           config_path)
    pending = None
    if no_lock:  # the lock would refuse a CPU-only tensorflow line (cudaenv.project.intent): say so now, offline
        from cudaenv.project.inputs import read_project_requirements
        from cudaenv.project.intent import cpu_package_lines

        cpu_line = cpu_package_lines(read_project_requirements(directory.resolve(), project.requirements).lines,
                                     result.stack.requirements, result.stack.python)
        if cpu_line:
            raise UserError(cpu_line)
    if not no_lock:
        from cudaenv.project.lock import IndexUnreachable, check_environment

        check_environment()
        click.echo("pinning the requirements with uv …", err=True)
        try:  # what init detected, not the floors it writes: the Python (and framework) may still move
            locked, lock = lock_project(project, matrix, plan.constraints)
        except IndexUnreachable as exc:  # the configuration is right; only the network is missing
            locked, lock, pending = None, None, str(exc)
        if lock is None and pending is None:  # no Python every requirement has wheels for, or [target] differs
            if as_json:
                emit_json({"ok": False, "found": detected.found, "resolution": locked.as_dict(), "written": []})
            else:
                _print_found(detected)
                click.echo(render_resolution(locked, target.describe()))
                click.echo("nothing written: fix the pins above, or pass the target host with --driver/--gpu")
            click.get_current_context().exit(1)
        if lock is not None:
            if locked.stack != result.stack:  # the whole project chose an older Python: write what was locked
                from cudaenv.project.lock import make_lock

                result = locked
                text = render_config(directory.resolve().name, detected, plan, result.stack, target.host,
                                     requirement_files, known_gpu=lambda name: matrix.find_gpu(name) is not None,
                                     target_name=target_name)
                project = parse_config(directory, tomlkit.parse(text).unwrap(),
                                       f"{config_path} (as init would write it)", config_path)
                lock = make_lock(project, result.stack, matrix_revision=matrix.revision, target=lock.target,
                                 pinned=list(lock.pinned), name=lock.name)
            lock_text = lock.as_toml()
            written.append(str(project.lock_path))
            result = locked  # what the lock holds is what init resolved (the wheels' CUDA where it differs)
    write_atomically(config_path, text)  # only now: a failed resolution leaves the project untouched
    if lock_text is not None:
        write_atomically(directory / "cudaenv.lock", lock_text)
    if as_json:
        emit_json({"ok": pending is None, "found": detected.found, "resolution": result.as_dict(), "written": written,
                   "lock_pending": pending})
        if pending:
            click.get_current_context().exit(1)
        return
    _print_found(detected)
    click.echo(render_resolution(result, target.describe()))
    click.echo(f"wrote {', '.join(written)}")
    if pending:
        click.echo(f"cudaenv.lock is pending: {pending}", err=True)
        click.get_current_context().exit(1)
    click.echo(f"next: cudaenv build {directory}" if str(directory) != "." else "next: cudaenv build")


def _check_target_flags(name: str, driver, gpus, compute_capabilities) -> bool:
    """--target NAME's name (as [targets.NAME] would be checked) and whether --gpu none makes it a
    target without a GPU; bad input is one line naming the flag."""
    from cudaenv.errors import shown
    from cudaenv.project.config import NO_GPUS, RESERVED_TARGET_NAMES, TARGET_NAME

    if not TARGET_NAME.fullmatch(name):
        raise UserError(f"--target: expected a target name of lower-case letters, digits and - (at most 32, "
                        f"e.g. cluster), got {shown(name)}")
    if name in RESERVED_TARGET_NAMES:
        raise UserError(f"--target: {name!r} is a reserved word (reserved: {', '.join(RESERVED_TARGET_NAMES)}); "
                        "pick another name")
    cpu = any(g.strip().lower() == NO_GPUS for g in gpus)
    if cpu and (len(gpus) > 1 or driver or compute_capabilities):
        raise UserError("--gpu none: a target without a GPU takes no other --gpu, --driver or --compute-capability")
    return cpu


def _add_target(directory: Path, existing: Path, name: str, *, driver, gpus, compute_capabilities, arch, cpu: bool,
                no_detect: bool, no_lock: bool, as_json: bool) -> None:
    """`init --target NAME` on a configured project: [targets.NAME] added or replaced, the rest of the
    file kept, checked as the configuration it becomes before anything is written; then every
    target locked (or, with --no-lock, the configuration alone written)."""
    import sys

    import tomlkit

    from cudaenv.project.init import add_target
    from cudaenv.project.lock import check_environment, lock_targets, write_atomically

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    matrix = load_matrix()
    target = resolve_target(matrix, driver=driver, gpus=gpus, compute_capabilities=compute_capabilities,
                            detect=not no_detect, arch=arch, cpu=cpu)
    if target.origin == "unknown":
        raise UserError(f"--target {name}: describe the target: --driver and --gpu (or --gpu none for one without "
                        "a GPU); no NVIDIA driver was detected here")
    in_pyproject = existing.name == "pyproject.toml"
    try:
        text = add_target(existing.read_text(encoding="utf-8"), name, target.host,
                          known_gpu=lambda gpu: matrix.find_gpu(gpu) is not None, in_pyproject=in_pyproject)
        data = tomllib.loads(text)
    except (tomlkit.exceptions.TOMLKitError, tomllib.TOMLDecodeError, KeyError, UnicodeDecodeError) as exc:
        raise UserError(f"{existing}: cannot add [targets.{name}] ({exc}); fix the file first") from exc
    label = f"{existing} (as init would write it)"
    project = parse_config(directory, data["tool"]["cudaenv"] if in_pyproject else data, label, existing)
    written = [str(existing)]
    lock_text, results = None, {}
    if not no_lock:
        check_environment()
        click.echo("pinning the requirements with uv …", err=True)
        results, whole = lock_targets(project, matrix)
        if whole is None:
            if as_json:
                emit_json({"ok": False, "target": name, "written": [],
                           "targets": {n: {"ok": r.ok, "resolution": r.as_dict()} for n, r in results.items()}})
            else:
                for other, result in results.items():
                    if not result.ok:
                        click.echo(f"target {other}:")
                        click.echo(render_resolution(result, project_target(matrix, project, other).describe()))
                click.echo(f"nothing written: every target must resolve before [targets.{name}] is added")
            click.get_current_context().exit(1)
        lock_text = whole.as_toml()
        written.append(str(project.lock_path))
    write_atomically(existing, text)
    if lock_text is not None:
        write_atomically(project.lock_path, lock_text)
    if as_json:
        emit_json({"ok": True, "target": name, "host": target.report(), "written": written,
                   "targets": {n: r.stack.as_dict() for n, r in results.items()}})
        return
    click.echo(f"[targets.{name}]: {target.describe()}")
    for other, result in results.items():
        s = result.stack
        runtime = "CPU only (no CUDA)" if s.cpu else f"CUDA {s.cuda}"
        what = ", ".join(f"{n} {v}" for n, v in s.frameworks) or "no framework"
        click.echo(f"  target {other}: {what}; {runtime}, Python {s.python}")
    click.echo(f"wrote {', '.join(written)}")


def _print_found(detected) -> None:
    found = list(detected.found)
    if not detected.frameworks:
        found.append("no framework requirements (a plain CUDA runtime project)")
    click.echo("found: " + "; ".join(found))


@click.command("lock")
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--check", is_flag=True, help="Exit 1 when cudaenv.lock no longer matches the configuration or matrix.")
@json_option
def lock(directory: Path, check: bool, as_json: bool) -> None:
    """Resolve the project and write cudaenv.lock with its requirements fully pinned.

    The lock is for the configured [target], or every [targets.NAME] (one stack each, shared
    where targets resolve alike), never this machine. With --check nothing is written: exit 0
    when the lock is current, 1 when it is stale, naming the stale target (what CI runs).
    """
    from cudaenv.project.lock import check_environment, current_locks, lock_targets, write_atomically

    project = load_project(directory)
    matrix = load_matrix()
    several = project.several_targets
    if check:
        from cudaenv.project.lock import IndexUnreachable, wheel_problems

        whole, reasons = current_locks(project, matrix)
        unchecked = None
        if whole is not None and not reasons:  # a current lock must also install: wheels for every pin
            try:
                for key, names in whole.shared.items():  # each shared entry once
                    view = whole.target(names[0])
                    reasons += [f"target {', '.join(names)}: {r}" if several else r
                                for r in wheel_problems(project, view)]
            except IndexUnreachable as exc:  # nothing could install from there either; say so, do not guess
                unchecked = str(exc)
                click.echo(f"! {project.lock_path}: wheels not checked: {unchecked}", err=True)
        if as_json:
            stale_targets = sorted({r.split(":", 1)[0].removeprefix("target ") for r in reasons
                                    if r.startswith("target ")}) if several else []
            emit_json({"ok": not reasons, "lock": str(project.lock_path), "stale": reasons,
                       **({"stale_targets": stale_targets} if several else {}),
                       **({"wheels_unchecked": unchecked} if unchecked else {})})
        else:
            for reason in reasons:
                click.echo(f"✗ {project.lock_path}: {reason}")
            if not reasons:
                click.echo(f"✓ {project.lock_path} is up to date"
                           + (f" ({len(whole.targets)} targets)" if several else ""))
        click.get_current_context().exit(1 if reasons else 0)
    check_environment()
    click.echo(f"locking {project.name}: resolving the stack and pinning requirements with uv …", err=True)
    from cudaenv.project.lock import LOCK_FORMAT, lock_format_of

    old_format = lock_format_of(project.lock_path)
    results, whole = lock_targets(project, matrix)
    if whole is None:
        if as_json:
            if several:
                emit_json({"ok": False, "lock": None, "targets": {name: {"ok": r.ok, "resolution": r.as_dict()}
                                                                  for name, r in results.items()}})
            else:
                emit_json({"ok": False, "lock": None, "resolution": next(iter(results.values())).as_dict()})
        else:
            for name, result in results.items():
                if several:
                    click.echo(f"target {name}: " + ("resolves" if result.ok else "no stack"))
                if not result.ok or not several:
                    click.echo(render_resolution(result, project_target(matrix, project,
                                                                        name if several else None).describe()))
            if several:
                click.echo("nothing written: every target must resolve for the lock to be written")
        click.get_current_context().exit(1)
    write_atomically(project.lock_path, whole.as_toml())
    if old_format is not None and old_format < LOCK_FORMAT:
        click.echo(f"cudaenv: note: {project.lock_path} was lock format {old_format}; rewritten as format "
                   f"{LOCK_FORMAT} (targets: {', '.join(whole.names)})", err=True)
    # what a user of this stack must know (a yanked release, a base deleted from Docker Hub, PTX only):
    # said on every lock, not only by `resolve`
    said: set = set()
    per_target: dict[str, list] = {}
    for name, result in results.items():
        warnings = [p for p in result.problems if not p.is_fix and p.code != "cuda-from-wheels"]
        per_target[name] = warnings
        prefix = f"target {name}: " if several else ""
        for problem in result.problems:
            if problem.code == "cuda-from-wheels":
                click.echo(f"note: {prefix}{problem.message}", err=True)
        for problem in warnings:
            line = f"cudaenv: warning: {prefix}{problem.message}" + (f" ({problem.fix})" if problem.fix else "")
            if line not in said:
                said.add(line)
                click.echo(line, err=True)
    shared = whole.shared
    if as_json:
        if not several:
            view, result = whole.targets[0], next(iter(results.values()))
            emit_json({"ok": True, "lock": str(project.lock_path), "stack": result.stack.as_dict(),
                       "pinned": list(view.pinned), "warnings": [p.as_dict() for p in per_target[view.name]]})
            return
        emit_json({"ok": True, "lock": str(project.lock_path),
                   "targets": {view.name: {"stack_id": view.entry_id(), "stack": results[view.name].stack.as_dict(),
                                           "pinned": list(view.pinned), "host": view.target,
                                           "warnings": [p.as_dict() for p in per_target[view.name]]}
                               for view in whole.targets},
                   "stacks": {key: list(names) for key, names in shared.items()}})
        return
    for view in whole.targets:
        s = results[view.name].stack
        what = ', '.join(f'{n} {v}' for n, v in s.frameworks) or ('CUDA runtime' if not s.cpu else 'no framework')
        runtime = "CPU only (no CUDA)" if s.cpu else f"CUDA {s.cuda}"
        head = f"locked {project.name}" + (f" for target {view.name}" if several else "")
        together = [n for n in shared[view.entry_id()] if n != view.name]
        also = f" (one stack with {', '.join(together)})" if several and together else ""
        click.echo(f"{head}: {what}; {runtime}, Python {s.python}; {len(view.pinned)} pinned requirements{also}")
    click.echo(f"wrote {project.lock_path}" + (f" ({len(whole.targets)} targets, {len(shared)} stacks)" if several else ""))
