"""``cudaenv check`` (does a stack run on these hosts?) and ``cudaenv doctor`` (this host)."""

from __future__ import annotations

import json

import click

from cudaenv.cli.output import emit_json, json_option
from cudaenv.cli.stack_options import constraints_from_options, stack_options
from cudaenv.cli.params import target_name_option
from cudaenv.cli.target import target_options
from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix


def annotation_escape(text: str, *, property_value: bool = False) -> str:
    """GitHub Actions workflow-command escaping (data: % CR LF; properties also : and ,)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def annotation(level: str, file: str | None, message: str) -> str:
    props = f" file={annotation_escape(file, property_value=True)},title=cudaenv check" if file else " title=cudaenv check"
    return f"::{level}{props}::{annotation_escape(message)}"


def github_annotations(file: str | None, wheels, hosts) -> None:
    """GitHub Actions annotations for a check: an error per wheel problem, then per host (``hosts``:
    (label, reasons, caveats)) an error per reason and a warning per caveat, each named by its host."""
    for reason in wheels:
        click.echo(annotation("error", file, reason))
    for label, reasons, caveats in hosts:
        for reason in reasons:
            click.echo(annotation("error", file, f"{label}: {reason}"))
        for caveat in caveats:
            click.echo(annotation("warning", file, f"{label}: {caveat}"))


class NoStackForConfiguration(UserError):
    """A project's configuration admits no stack for its [target]: bad input for `check` (exit 2);
    `plan --nodes` reports that project as running nowhere instead."""


def _stack_source(matrix, directory, image, options, hosts=None):
    """(Stack, label for humans, file for annotations) from exactly one source. Stack flags are
    resolved for the fleet's oldest driver (with its GPUs), so one stack is picked that the whole
    fleet can run when there is one."""
    from cudaenv.resolver.model import Host, Stack
    from cudaenv.resolver.resolve import resolve

    constraints = constraints_from_options(options)
    given = [name for name, value in (("DIRECTORY", directory), ("--image", image), ("stack flags", constraints)) if value]
    if len(given) > 1:
        raise UserError(f"check takes one stack source, got {' and '.join(given)}")
    if image:
        from cudaenv.engine import get_engine

        labels = get_engine().image_labels(image)
        if labels is None:
            raise UserError(f"--image {image!r}: no such image on this engine (build or pull it first)")
        if "io.cudaenv.stack" not in labels:
            raise UserError(f"--image {image!r}: not built by cudaenv (no io.cudaenv.stack label)")
        try:
            return Stack.from_dict(json.loads(labels["io.cudaenv.stack"])), f"image {image}", None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UserError(f"--image {image!r}: its io.cudaenv.stack label is not a cudaenv stack ({exc.__class__.__name__})") from exc
    if constraints is not None:
        from cudaenv.versions import numeric_key

        known = [h for h in hosts or () if h.driver]
        weakest = min(known, key=lambda h: numeric_key(h.driver)) if known else Host()
        result = resolve(matrix, constraints, weakest, explain=False)
        if not result.ok:  # nothing fits the weakest host: check the best stack anyway, to say why
            result = resolve(matrix, constraints, Host())
        if not result.ok:
            reasons = "; ".join(result.reasons)
            raise UserError(f"the stack flags admit no stack: {reasons}")
        return result.stack, "the stack flags", None
    from cudaenv.project import load_project
    from cudaenv.project.lock import read_lock

    from cudaenv.hosts.target import project_target

    project = load_project(directory or ".")
    lock = read_lock(project.lock_path)
    stale = []
    if lock is not None:
        from cudaenv.project.lock import current_lock

        _, stale = current_lock(project, matrix)
    if stale:  # judge what `cudaenv build` would build (it relocks first), and say so
        click.echo(f"cudaenv: warning: {project.lock_path.name} is stale ({'; '.join(stale)}): judging the stack "
                   "`cudaenv build` would lock; run `cudaenv lock` to update it", err=True)
    if lock is not None and not stale:
        from cudaenv.errors import CudaenvError
        from cudaenv.project.pins import clash_message, pin_clashes

        stack = lock.gpu_stack("a host check", project.lock_path)
        clashes = pin_clashes(stack, lock.pinned)
        if clashes:  # judge what the lock installs, not only what its stack says
            raise CudaenvError(f"{project.lock_path}: {clash_message(clashes, stack, lock.framework_index)}")
        return stack, str(project.lock_path), str(project.lock_path)
    # the stack `cudaenv lock` would pin: resolved for the project's [target], not for any host
    from cudaenv.project.config import resolve_project

    from cudaenv.project.lock import installable

    declared = project_target(matrix, project).host
    result = installable(matrix, project, declared, resolve_project(matrix, project, declared))  # as lock chooses
    if not result.ok:
        reasons = "; ".join(result.reasons)
        raise NoStackForConfiguration(f"{project.config_path}: the configuration admits no stack: {reasons}")
    why = f"{project.lock_path.name} is stale: judging what `cudaenv build` would lock" if stale else "no lock yet"
    return result.stack, f"{project.config_path} ({why})", str(project.config_path)


def _hosts(matrix, drivers, gpus, compute_capabilities, no_detect, declared=None, arch=None):
    """The hosts to check: --driver values (a fleet); else ``declared``, the project's [target] (or
    the target --target NAME names) where it declares a driver; else this machine (or the CUDAENV_*
    declaration)."""
    from cudaenv.resolver.model import Host
    from cudaenv.hosts.target import check_driver_text, resolve_target

    if not drivers and not gpus and not compute_capabilities and arch is None and declared is not None:
        from cudaenv.hosts.target import environment_overrides

        declared_driver, declared_gpus = environment_overrides()
        if declared.driver and not declared_driver and not declared_gpus:
            return [resolve_target(matrix, driver=declared.driver, gpus=declared.gpus,
                                   compute_capabilities=declared.compute_capabilities, detect=False,
                                   arch=declared.arch).host]
    if drivers:
        base = resolve_target(matrix, driver=drivers[0], gpus=gpus, compute_capabilities=compute_capabilities,
                              arch=arch)
        return [Host(check_driver_text(d, "--driver"), base.host.gpus, base.host.arch) for d in drivers]
    target = resolve_target(matrix, driver=None, gpus=gpus, compute_capabilities=compute_capabilities, detect=not no_detect,
                            arch=arch)
    return [target.host]


def _host_label(host) -> str:
    driver = f"driver {host.driver}" if host.driver else "driver unknown"
    gpus = ", ".join(g.label for g in host.gpus) if host.gpus else "GPUs unknown"
    return f"{driver}, {gpus}"


@click.command("check")
@click.argument("directory", required=False, type=click.Path(file_okay=False, exists=True))
@click.option("--image", metavar="NAME", help="Check the stack recorded in an image's io.cudaenv.* labels.")
@stack_options
@target_options(fleet=True)
@click.option("--no-detect", is_flag=True, help="Do not look at this machine's driver and GPUs.")
@click.option("--nodes", "nodes_file", metavar="FILE",
              help="A cluster's nodes: `kubectl get nodes -o json`, or Slurm's `scontrol show node [--json]` "
                   "or `sinfo --json` output ('-' for stdin).")
@click.option("--format", "output_format", type=click.Choice(["text", "github"]), default="text",
              help="'github' adds GitHub Actions annotations (::error file=...::).")
@target_name_option(what="check")
@json_option
def check(directory, image, drivers, gpus, compute_capabilities, arch, no_detect, nodes_file, output_format, as_json,
          target_name, **options) -> None:
    """Does a stack run on a host, on a whole fleet (--driver repeated), or on a cluster's nodes?

    The stack comes from a project DIRECTORY (its cudaenv.lock, else its configuration), from an
    image (--image), or from stack flags (--torch 2.4.1 --cuda 12.4 --python 3.11). The host is
    this machine or the declared one; with --nodes, every node of a cluster, read from its GPU
    Feature Discovery labels (Kubernetes) or its GRES and features (Slurm, whose driver comes only
    from [cluster.slurm.features]). Each verdict says why: native, minor-version compatibility
    (with its caveat), forward compatibility, or what stops it.

    Exit 0 when everything is compatible, 1 when anything is not — with --nodes, as for a fleet,
    when any node cannot run it (a node without GPUs included: list only GPU nodes, e.g.
    `kubectl get nodes -l nvidia.com/gpu.count -o json`, to ask about those) — and 2 on bad input.

    A project with several targets ([targets.NAME]) is judged target by target, by the rule `cudaenv
    build` picks with: a host or node with a GPU runs a GPU target whose stack passes the check (the
    one that names its GPU first), one without a GPU runs a CPU target of its CPU. Each host or node
    is reported with the target it runs, or every target's reason; exit 0 when each runs one.
    --target NAME judges that one target only.
    """
    from cudaenv.resolver.check import check_stack

    matrix = load_matrix()
    uses_project = not image and constraints_from_options(options) is None
    project = None
    if uses_project:
        from cudaenv.project import load_project

        project = load_project(directory or ".", required=False)
        if target_name is not None:
            project.target_named(target_name)  # an unknown name is bad input naming the targets there are
    elif target_name is not None:
        raise UserError("--target names one of a project's targets: give the project DIRECTORY, not --image or "
                        "stack flags")
    several = project is not None and project.several_targets
    if nodes_file is not None:
        if drivers or gpus or compute_capabilities or arch:
            raise UserError("--nodes describes the hosts: leave out --driver, --gpu, --compute-capability and --arch")
        if several:
            _check_nodes_targets(matrix, directory, project, target_name, nodes_file, output_format, as_json)
        else:
            _check_nodes(matrix, directory, image, options, nodes_file, output_format, as_json)
        return
    if several:
        _check_hosts_targets(matrix, project, target_name, (drivers, gpus, compute_capabilities, arch), no_detect,
                             output_format, as_json)
        return
    hosts = _hosts(matrix, drivers, gpus, compute_capabilities, no_detect,
                   declared=project.target if project is not None else None, arch=arch)
    stack, source, file = _stack_source(matrix, directory, image, options, hosts)
    results = []
    for host in hosts:
        verdict = check_stack(matrix, stack, host)
        results.append({"stack": _stack_summary(stack), "source": source,
                        "host": {"driver": host.driver, "gpus": [g.label for g in host.gpus], "arch": host.platform},
                        **verdict.as_dict()})
    wheels, unchecked = _lock_wheels(directory, image, options, file)
    compatible = all(r["compatible"] for r in results) and not wheels
    if as_json:
        locked = {} if wheels is None else {"wheels": wheels, "wheels_unchecked": unchecked}  # a lock's pins
        emit_json({"compatible": compatible, "results": results, **locked})
    else:
        wheels = wheels or []
        for reason in wheels:
            click.echo(f"✗ {file}: {reason}")
        if unchecked:
            click.echo(f"! {file}: wheels not checked: {unchecked}")
        summary = _stack_summary(stack)
        click.echo(f"stack: {summary['frameworks'] or 'CUDA runtime'} | CUDA {stack.cuda} | Python {stack.python} ({source})")
        for host, result in zip(hosts, results):
            if result["compatible"]:
                how = {"native": "native", "minor-version": "minor-version compatibility",
                       "forward": "forward compatibility", None: "driver unknown"}[result["mode"]]
                click.echo(f"  ✓ {_host_label(host)}: {how}")
                for caveat in result["caveats"]:
                    click.echo(f"      ! {caveat}")
            else:
                click.echo(f"  ✗ {_host_label(host)}:")
                for reason in result["reasons"]:
                    click.echo(f"      {reason}")
        bad = sum(not r["compatible"] for r in results)
        click.echo(f"{bad} of {len(results)} host(s) cannot run this stack" if bad else
                   f"compatible with all {len(results)} host(s)")
        if output_format == "github":
            github_annotations(file, wheels, [(_host_label(host), result["reasons"], result["caveats"])
                                              for host, result in zip(hosts, results)])
    click.get_current_context().exit(0 if compatible else 1)


def _lock_wheels(directory, image, options, file) -> tuple[list[str] | None, str | None]:
    """For a project's lock: why its pins cannot install from wheels on its Python (empty when they
    can; None when the stack is not a lock's), and why that could not be asked (an index out of
    reach: a caveat, as in `cudaenv lock --check`)."""
    if image or constraints_from_options(options) is not None or not file or not file.endswith("cudaenv.lock"):
        return None, None
    from cudaenv.project import load_project
    from cudaenv.project.lock import IndexUnreachable, read_lock, wheel_problems

    project = load_project(directory or ".")
    lock = read_lock(project.lock_path)
    if lock is None:
        return None, None
    try:
        return wheel_problems(project, lock), None
    except IndexUnreachable as exc:
        return [], str(exc)


def _project_features(matrix, directory):
    """A callable giving the project's checked [cluster.slurm.features] (asked for Slurm input only)."""

    def features():
        from cudaenv.export.slurm import features_table, site_features
        from cudaenv.project import load_project

        project = load_project(directory or ".", required=False)
        where = str(project.config_path) if project.config_path else str(project.root)
        return site_features(matrix, features_table(project), where)

    return features


def _node_label(verdict) -> str:
    facts = verdict.facts
    if verdict.host is None and not facts.has_gpu:
        return f"{facts.name} (no GPU)"
    driver = f"driver {facts.driver}" if facts.driver else "driver unknown"
    gpu = verdict.host.gpus[0].label if verdict.host and verdict.host.gpus else (facts.product or "GPU unknown")
    count = f" x{facts.gpu_count}" if facts.gpu_count and facts.gpu_count > 1 else ""
    return f"{facts.name} ({driver}, {gpu}{count})"


def _check_nodes(matrix, directory, image, options, nodes_file, output_format, as_json) -> None:
    """``check --nodes``: the stack against every node of a cluster, each with its own verdict."""
    from cudaenv.cluster.read import read_nodes
    from cudaenv.cluster.verdicts import judge_nodes, known_hosts

    uses_project = not image and constraints_from_options(options) is None
    name, kind, nodes = read_nodes(nodes_file, _project_features(matrix, directory) if uses_project else None)
    stack, source, file = _stack_source(matrix, directory, image, options, known_hosts(matrix, nodes))
    verdicts = judge_nodes(matrix, stack, nodes)
    compatible = all(v.compatible for v in verdicts)
    runnable = [v.name for v in verdicts if v.compatible]
    if as_json:
        emit_json({"compatible": compatible, "stack": _stack_summary(stack), "source": source,
                   "nodes_file": name, "scheduler": kind, "runnable": runnable,
                   "nodes": [v.as_dict() for v in verdicts]})
    else:
        summary = _stack_summary(stack)
        click.echo(f"stack: {summary['frameworks'] or 'CUDA runtime'} | CUDA {stack.cuda} | Python {stack.python} ({source})")
        click.echo(f"nodes: {name} ({'Kubernetes' if kind == 'kubernetes' else 'Slurm'}, {len(verdicts)} node(s))")
        how = {"native": "native", "minor-version": "minor-version compatibility", "forward": "forward compatibility"}
        for verdict in verdicts:
            if verdict.compatible:
                click.echo(f"  ✓ {_node_label(verdict)}: {how.get(verdict.mode, verdict.mode)}")
                for caveat in verdict.caveats:
                    click.echo(f"      ! {caveat}")
            else:
                click.echo(f"  ✗ {_node_label(verdict)}:")
                for reason in verdict.reasons:
                    click.echo(f"      {reason}")
        click.echo(f"{len(runnable)} of {len(verdicts)} node(s) can run this stack"
                   + (f": {', '.join(runnable)}" if runnable else ""))
        if output_format == "github":
            github_annotations(file, (), [(f"node {v.name}", v.reasons, v.caveats) for v in verdicts])
    click.get_current_context().exit(0 if compatible else 1)


def _target_stack(matrix, project, name):
    """(TargetStack, why its part of the lock is stale) for target ``name``: its part of a current
    lock, else what `cudaenv lock` would pin for its declared host (what `cudaenv build` relocks)."""
    from cudaenv.errors import CudaenvError
    from cudaenv.hosts.target import project_target
    from cudaenv.project.config import resolve_project
    from cudaenv.project.lock import current_lock, installable
    from cudaenv.project.node_targets import TargetStack
    from cudaenv.project.pins import clash_message, pin_clashes

    declared = project_target(matrix, project, name).host
    lock, stale = current_lock(project, matrix, name)
    if lock is not None and not stale:
        stack = lock.resolved_stack()
        clashes = pin_clashes(stack, lock.pinned)
        if clashes:  # judge what the lock installs, not only what its stack says
            raise CudaenvError(f"{project.lock_path}: target {name}: "
                               f"{clash_message(clashes, stack, lock.framework_index)}")
        return TargetStack(name, stack, declared, str(project.lock_path)), []
    result = installable(matrix, project, declared, resolve_project(matrix, project, declared))
    if not result.ok:
        raise NoStackForConfiguration(f"{project.config_path}: targets.{name}: the configuration admits no stack: "
                                      f"{'; '.join(result.reasons)}")
    locked = project.lock_path.is_file()
    why = f"{project.lock_path.name} is stale: judging what `cudaenv build` would lock" if locked else "no lock yet"
    return TargetStack(name, result.stack, declared, f"{project.config_path} ({why})"), stale if locked else []


def _target_stacks(matrix, project, target_name=None) -> tuple:
    """Every target's stack in the configuration's order (only ``target_name``'s when given), with
    one warning on stderr when the lock is stale for any of them."""
    found, stale = [], {}
    for declared in project.named_targets:
        if target_name is None or declared.name == target_name:
            target, reasons = _target_stack(matrix, project, declared.name)
            found.append(target)
            stale[declared.name] = reasons
    warn_stale(project, stale)
    return tuple(found)


def warn_stale(project, stale: dict) -> None:
    """One warning on stderr for the targets whose part of the lock is stale (``stale``: target ->
    reasons); what every stale target says (the inputs, the matrix) is said once."""
    stale = {name: reasons for name, reasons in stale.items() if reasons}
    if not stale:
        return
    common = set.intersection(*(set(r) for r in stale.values()))
    said = []
    for name, reasons in stale.items():
        for reason in reasons:
            text = reason if reason in common and len(stale) > 1 else f"target {name}: {reason}"
            if text not in said:
                said.append(text)
    click.echo(f"cudaenv: warning: {project.lock_path.name} is stale ({'; '.join(said)}): judging the stacks "
               "`cudaenv build` would lock; run `cudaenv lock` to update it", err=True)


def _stack_words(stack) -> str:
    summary = _stack_summary(stack)
    device = "CPU only" if stack.cpu else f"CUDA {stack.cuda}"
    return f"{summary['frameworks'] or ('CPU' if stack.cpu else 'CUDA runtime')} | {device} | Python {stack.python}"


def _targets_report(targets) -> list[dict]:
    return [{"target": t.name, "cpu": t.stack.cpu, "stack": _stack_summary(t.stack), "source": t.source}
            for t in targets]


_HOW = {"native": "native", "minor-version": "minor-version compatibility", "forward": "forward compatibility"}


def _runs_words(target: str, mode, cpu: bool) -> str:
    return f"runs {target} ({'CPU only' if cpu else _HOW.get(mode, mode or 'driver unknown')})"


def _check_nodes_targets(matrix, directory, project, target_name, nodes_file, output_format, as_json) -> None:
    """``check --nodes`` for a project of several targets: which target each node runs (which_target's
    rule), or every target's reason when none fits; --target NAME judges that one only."""
    from cudaenv.cluster.read import read_nodes
    from cudaenv.project.node_targets import judge_nodes

    name, kind, nodes = read_nodes(nodes_file, _project_features(matrix, directory))
    targets = _target_stacks(matrix, project, target_name)
    judged = judge_nodes(matrix, targets, nodes, named=target_name is not None)
    compatible = all(n.compatible for n in judged)
    runnable = [n.name for n in judged if n.compatible]
    by_target = {t.name: [n.name for n in judged if n.chosen == t.name] for t in targets}
    cpu = {t.name: t.stack.cpu for t in targets}
    file = str(project.lock_path) if project.lock_path.is_file() else str(project.config_path)
    if as_json:
        emit_json({"compatible": compatible, "target": target_name, "targets": _targets_report(targets),
                   "nodes_file": name, "scheduler": kind, "runnable": runnable, "by_target": by_target,
                   "nodes": [n.as_dict() for n in judged]})
        click.get_current_context().exit(0 if compatible else 1)
    for target in targets:
        click.echo(f"target {target.name}: {_stack_words(target.stack)} ({target.source})")
    click.echo(f"nodes: {name} ({'Kubernetes' if kind == 'kubernetes' else 'Slurm'}, {len(judged)} node(s))")
    for node in judged:
        if node.compatible:
            chosen = node.verdict(node.chosen)
            click.echo(f"  ✓ {_node_label(node)}: {_runs_words(node.chosen, chosen.mode, cpu[node.chosen])}")
            for caveat in chosen.caveats:
                click.echo(f"      ! {caveat}")
        else:
            click.echo(f"  ✗ {_node_label(node)}: " + ("no target fits" if target_name is None
                                                       else f"cannot run {target_name}"))
            for reason in node.reasons:
                click.echo(f"      {reason}")
    what = "a target" if target_name is None else f"target {target_name}"
    click.echo(f"{len(runnable)} of {len(judged)} node(s) run {what}"
               + (f": {', '.join(f'{n.name} ({n.chosen})' for n in judged if n.compatible)}" if runnable else ""))
    if output_format == "github":
        github_annotations(file, (), [(f"node {node.name}", node.reasons,
                                       [f"{node.chosen}: {c}" for c in node.verdict(node.chosen).caveats]
                                       if node.chosen else []) for node in judged])
    click.get_current_context().exit(0 if compatible else 1)


def _check_hosts_targets(matrix, project, target_name, declared_options, no_detect, output_format, as_json) -> None:
    """``check DIRECTORY`` for a project of several targets: the target each host (this machine, the
    declared one, a fleet) runs by which_target's rule, as `cudaenv build` picks it; --target NAME
    judges that one target, on its declared host unless hosts are given."""
    from dataclasses import replace

    from cudaenv.hosts.target import machine_arch
    from cudaenv.project.which_target import choose_fit, judge_stacks
    from cudaenv.resolver.check import check_stack

    drivers, gpus, compute_capabilities, arch = declared_options
    declared = project.target_named(target_name) if target_name is not None else None
    hosts = _hosts(matrix, drivers, gpus, compute_capabilities, no_detect, declared=declared, arch=arch)
    from cudaenv.resolver.model import Host

    if target_name is None and no_detect and hosts == [Host()]:
        raise UserError(f"{project.config_path}: names several targets "
                        f"({', '.join(t.name for t in project.named_targets)}) and which one a host runs depends on "
                        "its GPUs: with --no-detect, describe the host (--driver and --gpu; --arch alone for one "
                        "without a GPU) or pass --target NAME")
    if not (drivers or gpus or compute_capabilities or arch) and not no_detect:
        # this machine: its CPU decides which CPU target it runs, whether or not a driver was found
        hosts = [replace(h, arch=machine_arch()) if h.arch is None and not h.gpus and not h.driver else h
                 for h in hosts]
    targets = _target_stacks(matrix, project, target_name)
    by_name = {t.name: t for t in targets}
    results = []
    for host in hosts:
        fits = judge_stacks(matrix, [(t.name, t.stack, t.declared) for t in targets], host,
                            named=target_name is not None)
        chosen = choose_fit(fits)
        mode, caveats = None, []
        if chosen is not None and not chosen.cpu:
            verdict = check_stack(matrix, by_name[chosen.name].stack, host)
            mode, caveats = verdict.mode, list(verdict.caveats)
        elif chosen is not None and host.gpus:  # a CPU target asked for by name on a GPU host
            caveats = [f"a CPU target on a host with a GPU ({host.gpus[0].label}): the GPU goes unused"]
        target = by_name[chosen.name] if chosen else None
        results.append({"host": {"driver": host.driver, "gpus": [g.label for g in host.gpus], "arch": host.platform},
                        "target": chosen.name if chosen else None, "compatible": chosen is not None, "mode": mode,
                        "reasons": [] if chosen else [f"{f.name}: {r}" for f in fits for r in f.reasons],
                        "caveats": caveats, "stack": _stack_summary(target.stack) if target else None,
                        "source": target.source if target else None, "targets": [f.as_dict() for f in fits]})
    picked = [r["target"] for r in results if r["target"] and by_name[r["target"]].source == str(project.lock_path)]
    wheels, unchecked = _targets_wheels(project, list(dict.fromkeys(picked)))
    compatible = all(r["compatible"] for r in results) and not wheels
    file = str(project.lock_path) if project.lock_path.is_file() else str(project.config_path)
    if as_json:
        emit_json({"compatible": compatible, "target": target_name, "targets": _targets_report(targets),
                   "results": results, "wheels": wheels, "wheels_unchecked": unchecked})
        click.get_current_context().exit(0 if compatible else 1)
    for reason in wheels:
        click.echo(f"✗ {file}: {reason}")
    if unchecked:
        click.echo(f"! {file}: wheels not checked: {unchecked}")
    for target in targets:
        click.echo(f"target {target.name}: {_stack_words(target.stack)} ({target.source})")
    for host, result in zip(hosts, results):
        if result["compatible"]:
            words = _runs_words(result["target"], result["mode"], by_name[result["target"]].stack.cpu)
            click.echo(f"  ✓ {_target_host_label(host)}: {words}")
            for caveat in result["caveats"]:
                click.echo(f"      ! {caveat}")
        else:
            click.echo(f"  ✗ {_target_host_label(host)}: " + ("no target fits" if target_name is None
                                                       else f"cannot run {target_name}"))
            for reason in result["reasons"]:
                click.echo(f"      {reason}")
    bad = sum(not r["compatible"] for r in results)
    if bad:
        click.echo(f"{bad} of {len(results)} host(s) " + ("run no target" if target_name is None
                                                          else f"cannot run target {target_name}"))
    else:
        click.echo(f"all {len(results)} host(s) run " + ("a target" if target_name is None else f"target {target_name}"))
    if output_format == "github":
        github_annotations(file, wheels, [(_target_host_label(host), result["reasons"],
                                           [f"{result['target']}: {caveat}" for caveat in result["caveats"]])
                                          for host, result in zip(hosts, results)])
    click.get_current_context().exit(0 if compatible else 1)


def _target_host_label(host) -> str:
    """A host as the targets' report names it: which target it runs turns on its GPUs and CPU."""
    if host.driver or host.gpus:
        return _host_label(host) + (f", {host.platform}" if host.platform != "x86_64" else "")
    return f"no NVIDIA driver or GPU, {host.arch or 'CPU not stated'}"


def _targets_wheels(project, names) -> tuple[list[str], str | None]:
    """The wheel check of ``_lock_wheels`` for each target that is run from the lock, each reason
    after its target's name."""
    from cudaenv.project.lock import IndexUnreachable, read_lock, wheel_problems

    problems = []
    for name in names:
        try:
            problems += [f"target {name}: {p}" for p in wheel_problems(project, read_lock(project.lock_path, name))]
        except IndexUnreachable as exc:
            return problems, str(exc)
    return problems, None


def _stack_summary(stack) -> dict:
    return {"python": stack.python, "cuda": stack.cuda, "cudnn": stack.cudnn,
            "frameworks": ", ".join(f"{n} {v}" for n, v in stack.frameworks), "base_image": stack.base_image,
            "min_driver": stack.min_driver}


@click.command("doctor")
@json_option
def doctor(as_json: bool) -> None:
    """A report of this host: driver, GPUs, Docker, NVIDIA container runtime, BuildKit.

    One line per check with ✓ or ✗, and for each ✗ what to do. Exit 1 when any check fails.
    """
    from cudaenv.run.doctor import run_checks

    checks, host = run_checks(load_matrix())
    ok = all(c.ok for c in checks)
    if as_json:
        emit_json({"ok": ok, "checks": [c.as_dict() for c in checks], "host": host})
    else:
        for c in checks:
            click.echo(f"{'✓' if c.ok else '✗'} {c.name}: {c.detail}")
            if not c.ok and c.fix:
                click.echo(f"    → {c.fix}")
    click.get_current_context().exit(0 if ok else 1)
