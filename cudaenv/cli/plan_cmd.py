"""``cudaenv plan``: several projects on one host, sharing base images where they can."""

from __future__ import annotations

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.target import resolve_target, target_options
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.resolver.plan import plan


@click.command("plan")
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@target_options()
@click.option("--no-detect", is_flag=True, help="Do not look at this machine's driver and GPUs.")
@click.option("--nodes", "nodes_file", metavar="FILE",
              help="Plan across a cluster instead: `kubectl get nodes -o json` or Slurm's `scontrol show node` "
                   "('-' for stdin).")
@json_option
def plan_command(directories, driver, gpus, compute_capabilities, arch, no_detect, nodes_file, as_json) -> None:
    """Plan how several projects share one host, or a cluster (--nodes).

    Resolves every project DIRECTORY for the same target host, prefers stacks that share base
    images, prints the plan grouped by base image with each project's stack base (projects on the
    same stack share one) and, where a project's cudaenv.lock pins something else, what it pins;
    for projects that cannot run here, the smallest driver upgrade after which every project fits.
    Exit 0 when all fit, 1 otherwise.

    With --nodes, each project's stack (its cudaenv.lock, else what `cudaenv lock` would pin) is
    checked on every node, as `cudaenv check --nodes` does, and the projects are grouped by the
    nodes they can run on. Exit 0 when every project runs on at least one node, 1 otherwise.
    """
    matrix = load_matrix()
    if nodes_file is not None and (driver or gpus or compute_capabilities):
        from cudaenv.errors import UserError

        raise UserError("--nodes describes the hosts: leave out --driver, --gpu and --compute-capability")
    projects = [load_project(d) for d in directories]
    if nodes_file is not None:
        _plan_nodes(matrix, directories, projects, nodes_file, as_json)
        return
    target = resolve_target(matrix, driver=driver, gpus=gpus, compute_capabilities=compute_capabilities,
                            detect=not no_detect, arch=arch)
    entries, refused = _wheel_decided(matrix, projects, target.host)
    result = plan(matrix, entries, target.host, refused)
    by_name = dict(zip((name for name, _ in entries), projects))
    bases = {p.name: _stack_base(matrix, p.stack) for p in result.projects if p.stack is not None}
    differs = {p.name: _lock_differences(by_name[p.name], p.stack) for p in result.projects if p.stack is not None}
    if as_json:
        payload = result.as_dict()
        payload["stack_bases"] = len({digest for digest, _ in bases.values()})
        for entry in payload["projects"]:
            entry["stack_base"] = bases[entry["name"]][1] if entry["name"] in bases else None
            entry["lock_differs"] = ", ".join(locked for locked, _ in differs.get(entry["name"], ())) or None
        payload["host"] = target.report()
        emit_json(payload)
    else:
        click.echo(f"target: {target.describe()}")
        click.echo(f"{len(result.groups)} upstream base image(s), {len({d for d, _ in bases.values()})} stack base(s) "
                   f"for {len(entries)} project(s)")
        for base, members in result.groups:
            click.echo(f"\n{base}")
            for project in result.projects:
                if project.name in members:
                    s = project.stack
                    frameworks = ", ".join(f"{n} {v}" for n, v in s.frameworks) or "CUDA runtime only"
                    click.echo(f"  {project.name}: {frameworks}; CUDA {s.cuda}, Python {s.python}"
                               + (f" ({s.driver_compatibility})" if s.driver_compatibility else "")
                               + f"; stack base {bases[project.name][1]}")
                    if differs.get(project.name):
                        # `cudaenv lock` resolves the project alone, for its own [target]: following a
                        # plan that shares a base means pinning what the plan chose
                        locked = ", ".join(old for old, _ in differs[project.name])
                        planned = ", ".join(new for _, new in differs[project.name])
                        click.echo(f"    its cudaenv.lock has {locked}; to follow this plan, pin {planned} in its "
                                   f"cudaenv.toml (where it does not already) and run "
                                   f"`cudaenv lock {by_name[project.name].root}`")
        unfit = [p for p in result.projects if p.stack is None]
        if unfit:
            click.echo("\ncannot run on this host:")
            for project in unfit:
                reasons = [p.message for p in project.problems if not p.is_fix]
                click.echo(f"  {project.name}: {reasons[0] if reasons else 'no stack'}")
                for fix in (p for p in project.problems if p.is_fix):  # the fixes `resolve` offers
                    click.echo(f"    → {fix.message}")
            if result.driver_upgrade:
                click.echo(f"\nupgrade the driver to >= {result.driver_upgrade} and every project fits")
            else:
                click.echo("\nno driver upgrade alone makes every project fit")
    click.get_current_context().exit(0 if result.ok else 1)


def _stack_base(matrix, stack) -> tuple[str, str]:
    """(content hash, name) of the stack base a project on ``stack`` is built FROM: projects share
    disk by sharing it, not the upstream image under it."""
    from cudaenv.images.stackbase import content_hash, local_reference, readable_local_tags

    digest = content_hash(matrix, stack)
    names = readable_local_tags(stack)
    return digest, names[0] if names else local_reference(digest)


def _lock_differences(project, stack) -> list[tuple[str, str]]:
    """(what the lock pins, what the plan chose) for each of Python, CUDA and the frameworks that
    differ; empty with no lock, an unreadable one (`cudaenv lock --check` reports those) or the
    same stack."""
    from cudaenv.errors import UserError
    from cudaenv.project.lock import read_lock
    from cudaenv.resolver.model import DEFAULT_ARCH

    try:
        lock = read_lock(project.lock_path)
    except UserError:
        return []
    if lock is None:
        return []
    locked, found = lock.stack, []
    if (locked.get("arch") or DEFAULT_ARCH) != stack.arch:  # its image is for another CPU than this host's
        found.append((f"an {locked.get('arch') or DEFAULT_ARCH} stack", f'[target] arch = "{stack.arch}"'))
    if locked.get("python") != stack.python:
        found.append((f"Python {locked.get('python')}", f"Python {stack.python}"))
    if locked.get("cuda") != stack.cuda:
        found.append((f"CUDA {locked.get('cuda')}", f"CUDA {stack.cuda}"))
    frameworks = locked.get("frameworks") or {}
    if frameworks != dict(stack.frameworks):
        found.append((", ".join(f"{n} {v}" for n, v in frameworks.items()) or "no framework",
                      ", ".join(f"{n} {v}" for n, v in stack.frameworks) or "no framework"))
    return found


def _wheel_decided(matrix, projects, host):
    """Each project's constraints with the Python its whole project installs on from wheels (as
    `cudaenv lock` chooses it), and the projects for which no Python does, with why."""
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    from cudaenv.project.config import project_constraints
    from cudaenv.project.lock import installable
    from cudaenv.resolver.resolve import resolve

    entries, refused = [], {}
    for label, project in zip(_labels(projects), projects):
        constraints = project_constraints(matrix, project)  # among the builds its framework index serves
        alone = resolve(matrix, constraints, host, explain=False)
        chosen = installable(matrix, project, host, alone)
        if alone.ok and not chosen.ok:
            refused[label] = chosen
        elif alone.ok and chosen.stack.python != alone.stack.python:
            constraints = replace(constraints, python=SpecifierSet(f"=={chosen.stack.python}"))
        entries.append((label, constraints))
    return entries, refused


def _labels(projects) -> list[str]:
    """Each project's name, with its directory where two projects share a name."""
    names = [p.name for p in projects]
    duplicates = {n for n in names if names.count(n) > 1}
    return [p.name if p.name not in duplicates else f"{p.name} ({p.root})" for p in projects]


def _plan_nodes(matrix, directories, projects, nodes_file, as_json) -> None:
    from cudaenv.cli.check_cmd import NoStackForConfiguration, _node_label, _project_features, _stack_source
    from cudaenv.cluster.plan import plan_cluster
    from cudaenv.cluster.read import read_nodes
    from cudaenv.cluster.verdicts import known_hosts
    from cudaenv.errors import CudaenvError

    # Slurm nodes get their driver from [cluster.slurm.features]: the first project's mapping (a site's)
    name, kind, nodes = read_nodes(nodes_file, _project_features(matrix, directories[0]))
    hosts = known_hosts(matrix, nodes)
    entries = []
    for directory, project, label in zip(directories, projects, _labels(projects)):
        try:
            stack, source, _ = _stack_source(matrix, directory, None, {}, hosts)
            entries.append((label, source, stack, None))
        except NoStackForConfiguration as exc:  # a clean "no", as plan says; other bad input stays exit 2
            entries.append((label, str(project.config_path), None, str(exc)))
        except CudaenvError as exc:  # a lock whose pins clash with its stack: that project has no stack
            entries.append((label, str(project.lock_path), None, str(exc)))
    result = plan_cluster(matrix, entries, nodes)
    if as_json:
        payload = result.as_dict()
        payload.update({"nodes_file": name, "scheduler": kind, "nodes": [
            {"name": n.name, **n.as_dict()} for n in nodes]})
        emit_json(payload)
        click.get_current_context().exit(0 if result.ok else 1)
    by_name = {p.name: p for p in result.projects}
    click.echo(f"nodes: {name} ({'Kubernetes' if kind == 'kubernetes' else 'Slurm'}, {len(nodes)} node(s))")
    click.echo(f"{len(result.groups)} group(s) of {len(result.projects)} project(s) by the nodes they can run on")
    for node_names, members in result.groups:
        if not node_names:
            continue
        click.echo(f"\n{', '.join(node_names)}")
        for member in members:
            s = by_name[member].stack
            frameworks = ", ".join(f"{n} {v}" for n, v in s.frameworks) or "CUDA runtime only"
            click.echo(f"  {member}: {frameworks}; CUDA {s.cuda}, Python {s.python}")
    unfit = [p for p in result.projects if not p.nodes]
    if unfit:
        click.echo("\nno node can run:")
        for project in unfit:
            click.echo(f"  {project.name}:" + (f" {project.error}" if project.error else ""))
            for verdict in project.verdicts:
                if verdict.facts.has_gpu and verdict.reasons:
                    click.echo(f"    {_node_label(verdict)}: {verdict.reasons[0]}")
    click.get_current_context().exit(0 if result.ok else 1)
