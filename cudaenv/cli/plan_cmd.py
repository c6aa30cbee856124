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

    A project of several targets ([targets.NAME]) is planned target by target, as PROJECT:TARGET,
    and grouped by target name: each target is resolved for the host it declares, alongside the
    same target of the other projects (one host, one plan); with --nodes, a node runs the one target
    of the project that `cudaenv check --nodes` names for it, and the project runs when one of its
    targets runs on some node. Projects of one target are planned as before.
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
    labelled = list(zip(_labels(projects), projects))
    single = [(label, project, None) for label, project in labelled if not project.several_targets]
    sections = _target_sections(matrix, labelled)
    ok = True
    if single or not sections:  # the projects of one target, on this host: as before
        payload, ok = _plan_section(matrix, single, target, as_json, heading="target: ")
    else:  # only projects of several targets: no plan for this host, but the same shape
        payload = plan(matrix, [], target.host).as_dict()
        payload.update({"stack_bases": 0, "host": target.report()})
    if sections:
        payload["targets"] = []
        for index, (name, declared, members) in enumerate(sections):
            first = index == 0 and not single  # nothing printed above it
            section, fits = _plan_section(matrix, members, declared, as_json,
                                          heading=f"{'' if first else chr(10)}target {name}: ")
            payload["targets"].append({"target": name, **section})
            ok = ok and fits
        payload["ok"] = ok
    if as_json:
        emit_json(payload)
    click.get_current_context().exit(0 if ok else 1)


def _target_sections(matrix, labelled):
    """(target name, declared Target, [(PROJECT:TARGET, project, target name)]) for the projects of
    several targets: the same name declared for the same host is one section, planned together."""
    from cudaenv.hosts.target import project_target

    sections: dict[tuple, list] = {}
    declared_of: dict[tuple, object] = {}
    for label, project in labelled:
        if not project.several_targets:
            continue
        for declared in project.named_targets:
            target = project_target(matrix, project, declared.name)
            key = (declared.name, target.host)
            declared_of.setdefault(key, target)
            sections.setdefault(key, []).append((f"{label}:{declared.name}", project, declared.name))
    return [(name, declared_of[(name, host)], members) for (name, host), members in sections.items()]


def _plan_section(matrix, members, target, as_json, *, heading):
    """One plan: ``members`` ((label, project, target name or None)) resolved for ``target``'s host;
    printed unless ``as_json``. Returns (its JSON payload, whether every member fits)."""
    host = target.host
    entries, refused = _wheel_decided(matrix, [(label, project, name) for label, project, name in members], host)
    result = plan(matrix, entries, host, refused)
    if host.cpu:  # no driver to upgrade on a host without a GPU
        from dataclasses import replace

        result = replace(result, driver_upgrade=None)
    by_name = {label: (project, name) for label, project, name in members}
    bases = {p.name: _stack_base(matrix, p.stack) for p in result.projects if p.stack is not None}
    differs = {p.name: _lock_differences(by_name[p.name][0], p.stack, by_name[p.name][1])
               for p in result.projects if p.stack is not None}
    payload = result.as_dict()
    payload["stack_bases"] = len({digest for digest, _ in bases.values()})
    for entry in payload["projects"]:
        entry["stack_base"] = bases[entry["name"]][1] if entry["name"] in bases else None
        entry["lock_differs"] = ", ".join(locked for locked, _ in differs.get(entry["name"], ())) or None
        if by_name[entry["name"]][1] is not None:
            entry.update({"project": entry["name"].rsplit(":", 1)[0], "target": by_name[entry["name"]][1]})
    payload["host"] = target.report()
    if as_json:
        return payload, result.ok
    click.echo(f"{heading}{target.describe()}")
    click.echo(f"{len(result.groups)} upstream base image(s), {len({d for d, _ in bases.values()})} stack base(s) "
               f"for {len(entries)} project(s)")
    for base, names in result.groups:
        click.echo(f"\n{base}")
        for project in result.projects:
            if project.name in names:
                s = project.stack
                frameworks = ", ".join(f"{n} {v}" for n, v in s.frameworks) or "CUDA runtime only"
                device = "CPU only" if s.cpu else f"CUDA {s.cuda}"
                click.echo(f"  {project.name}: {frameworks}; {device}, Python {s.python}"
                           + (f" ({s.driver_compatibility})" if s.driver_compatibility else "")
                           + f"; stack base {bases[project.name][1]}")
                if differs.get(project.name):
                    # `cudaenv lock` resolves the project alone, for its own [target]: following a
                    # plan that shares a base means pinning what the plan chose
                    locked = ", ".join(old for old, _ in differs[project.name])
                    planned = ", ".join(new for _, new in differs[project.name])
                    click.echo(f"    its cudaenv.lock has {locked}; to follow this plan, pin {planned} in its "
                               f"cudaenv.toml (where it does not already) and run "
                               f"`cudaenv lock {by_name[project.name][0].root}`")
    unfit = [p for p in result.projects if p.stack is None]
    if unfit:
        click.echo("\ncannot run on this host:" if by_name[unfit[0].name][1] is None
                   else "\ncannot run on this target's host:")
        for project in unfit:
            reasons = [p.message for p in project.problems if not p.is_fix]
            click.echo(f"  {project.name}: {reasons[0] if reasons else 'no stack'}")
            for fix in (p for p in project.problems if p.is_fix):  # the fixes `resolve` offers
                click.echo(f"    → {fix.message}")
        if result.driver_upgrade:
            click.echo(f"\nupgrade the driver to >= {result.driver_upgrade} and every project fits")
        elif not host.cpu:
            click.echo("\nno driver upgrade alone makes every project fit")
    return payload, result.ok


def _stack_base(matrix, stack) -> tuple[str, str]:
    """(content hash, name) of the stack base a project on ``stack`` is built FROM: projects share
    disk by sharing it, not the upstream image under it."""
    from cudaenv.images.stackbase import content_hash, local_reference, readable_local_tags

    digest = content_hash(matrix, stack)
    names = readable_local_tags(stack)
    return digest, names[0] if names else local_reference(digest)


def _lock_differences(project, stack, target: str | None = None) -> list[tuple[str, str]]:
    """(what the lock pins, what the plan chose) for each of Python, CUDA and the frameworks that
    differ; empty with no lock, an unreadable one (`cudaenv lock --check` reports those) or the
    same stack."""
    from cudaenv.errors import UserError
    from cudaenv.project.lock import read_lock
    from cudaenv.resolver.model import DEFAULT_ARCH

    try:
        lock = read_lock(project.lock_path, target)  # ``target``: that target's part of the lock
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


def _wheel_decided(matrix, members, host):
    """Each project's constraints with the Python its whole project installs on from wheels (as
    `cudaenv lock` chooses it), and the projects for which no Python does, with why. ``members``:
    (label, project, target name or None)."""
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    from cudaenv.project.config import project_constraints
    from cudaenv.project.lock import installable
    from cudaenv.resolver.resolve import resolve

    entries, refused = [], {}
    for label, project, _ in members:
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
        if project.several_targets:
            entries += _target_entries(matrix, project, label, nodes)
            continue
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
    targets = result.group_targets or (None,) * len(result.groups)
    for target, (node_names, members) in zip(targets, result.groups):
        if not node_names:
            continue
        click.echo(f"\n{', '.join(node_names)}" + (f" (target {target})" if target else ""))
        for member in members:
            s = by_name[member].stack
            frameworks = ", ".join(f"{n} {v}" for n, v in s.frameworks) or "CUDA runtime only"
            device = "CPU only" if s.cpu else f"CUDA {s.cuda}"
            click.echo(f"  {member}: {frameworks}; {device}, Python {s.python}")
    unfit = [p for p in result.projects if not p.nodes]
    if unfit:
        click.echo("\nno node can run:")
        for project in unfit:
            click.echo(f"  {project.name}:" + (f" {project.error}" if project.error else ""))
            cpu = project.stack is not None and project.stack.cpu  # a CPU target: the nodes without a GPU
            for verdict in project.verdicts:
                if verdict.facts.has_gpu != cpu and verdict.reasons:
                    click.echo(f"    {_node_label(verdict)}: {verdict.reasons[0]}")
    click.get_current_context().exit(0 if result.ok else 1)


def _target_entries(matrix, project, label, nodes) -> list:
    """A project of several targets on a cluster: one entry per target (PROJECT:TARGET) whose nodes
    are those that run that target by the rule `check --nodes` names them with; a target without a
    stack is an entry that runs nowhere, with why."""
    from dataclasses import replace

    from cudaenv.cli.check_cmd import NoStackForConfiguration, _target_stack, warn_stale
    from cudaenv.cluster.plan import ProjectOnCluster
    from cudaenv.errors import CudaenvError
    from cudaenv.project.node_targets import judge_nodes

    stacks, failed, stale = [], {}, {}
    for declared in project.named_targets:
        try:
            target, stale[declared.name] = _target_stack(matrix, project, declared.name)
            stacks.append(target)
        except NoStackForConfiguration as exc:  # a clean "no", as plan says; other bad input stays exit 2
            failed[declared.name] = (str(project.config_path), str(exc))
        except CudaenvError as exc:  # the target's pins clash with its stack: it has no stack
            failed[declared.name] = (str(project.lock_path), str(exc))
    warn_stale(project, stale)
    judged = judge_nodes(matrix, stacks, nodes)
    by_name = {t.name: t for t in stacks}
    entries = []
    for declared in project.named_targets:
        name = declared.name
        if name in failed:
            entries.append(ProjectOnCluster(f"{label}:{name}", failed[name][0], None, failed[name][1],
                                            project=label, target=name))
            continue
        verdicts = []
        for node in judged:
            verdict = node.verdict(name)
            if node.chosen != name and verdict.compatible:  # it fits, and the node runs another target
                verdict = replace(verdict, compatible=False, mode=None,
                                  reasons=(f"runs target {node.chosen} of {label} instead",))
            verdicts.append(verdict)
        entries.append(ProjectOnCluster(f"{label}:{name}", by_name[name].source, by_name[name].stack, None,
                                        tuple(verdicts), project=label, target=name))
    return entries
