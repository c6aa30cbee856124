"""What ``cudaenv resolve`` does once click has parsed its options: resolve, then print the
answer as text or as the one JSON object (``resolve_cmd`` is the click command)."""

from __future__ import annotations

import os

import sys
from dataclasses import dataclass

from cudaenv.cli.output import json_text, print_answer
from cudaenv.cli.stack_options import constraints_from_options

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path

    from cudaenv.resolver.model import Resolution, Stack


def run_resolve(directory: str | None, *, driver: str | None, gpus: tuple[str, ...],
                compute_capabilities: tuple[str, ...], no_detect: bool, as_json: bool, options: dict,
                arch: str | None = None) -> int:
    """Resolve, print (text or the one JSON object) and return the exit code: 0 a stack, 1 none.
    A project here or in DIRECTORY is read every time; nothing is remembered."""
    from cudaenv.project.locate import find_config

    here = find_config(".") if directory is None else None
    note = unread_dependencies_note(options) if directory is None and here is None else None
    answer = resolve_answer(directory, here=here, driver=driver, gpus=gpus, compute_capabilities=compute_capabilities,
                            no_detect=no_detect, as_json=as_json, options=options, arch=arch)
    print_answer(answer.text, as_json)
    print_note(note)
    return answer.code


def unread_dependencies_note(options: dict) -> str | None:
    """No project here and no framework asked for, yet a requirements file is here: the note that
    says it was not read (the answer is for the options alone) and how to make it a project.
    Printed on stderr after the answer (``print_note``); a failure prints its one line alone."""
    from cudaenv.cli.stack_options import FRAMEWORK_OPTIONS
    from cudaenv.project.locate import dependency_files

    if any(options.get(f"fw_{name}") for name in FRAMEWORK_OPTIONS):
        return None
    found = dependency_files(".")
    if not found:
        return None
    return (f"cudaenv: note: no cudaenv.toml here, so {', '.join(found)} {'is' if len(found) == 1 else 'are'} "
            "not read: this answer is for the options alone (`cudaenv init` makes a project of them)")


def print_note(note: str | None) -> None:
    if note:
        sys.stderr.write(note + "\n")
        sys.stderr.flush()


@dataclass(frozen=True)
class Answer:
    """What ``resolve`` prints on stdout and exits with."""

    text: str
    code: int


def resolve_answer(directory: str | None, *, here: Path | None, driver: str | None, gpus: tuple[str, ...],
                   compute_capabilities: tuple[str, ...], no_detect: bool, as_json: bool, options: dict,
                   arch: str | None = None) -> Answer:
    """The resolution as ``resolve`` prints it (bad input raises, as everywhere). ``here``: the
    configuration found in the working directory when no DIRECTORY was given (``find_config``)."""
    from cudaenv.matrix import load_matrix
    from cudaenv.resolver.model import Constraints
    from cudaenv.resolver.resolve import resolve
    from cudaenv.hosts.target import resolve_target

    project = None
    if directory is not None:
        from cudaenv.project import load_project

        project = load_project(directory)  # bad input is reported before any heavy loading
    elif here is not None:
        from cudaenv.project import load_project

        project = load_project(".")  # the project here, as lock/check/build/run use it
    from_flags = constraints_from_options(options)
    if project is None:
        constraints = from_flags or Constraints()
    else:
        constraints = project.constraints if from_flags is None else project.constraints.merged(from_flags)
    matrix = load_matrix()
    declared = project.target if project is not None else None
    if project is not None:
        from cudaenv.hosts.target import project_targets

        targets = project_targets(matrix, project)  # the project's own target errors name its file and table
        if project.several_targets and not (driver or gpus or compute_capabilities or arch):
            return _several_answer(matrix, project, targets, constraints, from_flags, as_json)
    target = resolve_target(
        matrix, driver=driver or (declared.driver if declared else None),
        gpus=gpus or (declared.gpus if declared else ()),
        compute_capabilities=compute_capabilities or (declared.compute_capabilities if declared else ()),
        detect=not no_detect, arch=arch or (declared.arch if declared else None),
        # a project's target without a GPU, unless the command line describes another host
        cpu=bool(declared and declared.cpu and not (driver or gpus or compute_capabilities)),
    )
    if project is not None:
        from cudaenv.project.config import resolve_project

        flagged = () if from_flags is None else (
            tuple(name for name, _ in from_flags.frameworks) + (("os",) if from_flags.os else ()))
        result = resolve_project(matrix, project, target.host, constraints, from_flags=flagged)
        from cudaenv.project.lock import installable

        result = installable(matrix, project, target.host, result, constraints)  # the whole project decides
    else:
        from cudaenv.project.served import INDEX_ENV

        if os.environ.get(INDEX_ENV):  # choose among the builds that index serves, as init and lock do
            from pathlib import Path

            from cudaenv.project.config import parse_config, project_constraints

            unconfigured = parse_config(Path.cwd(), {}, str(Path.cwd() / "cudaenv.toml"), None)
            constraints = project_constraints(matrix, unconfigured, constraints)
        result = resolve(matrix, constraints, target.host)
    if as_json:
        payload = result.as_dict()
        payload["host"] = target.report()
        text = json_text(payload)
    else:
        text = render_resolution(result, target.describe()) + "\n"
    return Answer(text, 0 if result.ok else 1)


def _several_answer(matrix, project, targets, constraints, from_flags, as_json: bool) -> Answer:
    """A project with [targets.NAME] tables and no host on the command line: a stack per target,
    as one JSON object ({"ok", "targets": {NAME: the one-target shape, with its "host"}}) or text."""
    from cudaenv.project.config import resolve_project
    from cudaenv.project.lock import installable

    flagged = () if from_flags is None else (
        tuple(name for name, _ in from_flags.frameworks) + (("os",) if from_flags.os else ()))
    answers = {}
    for name, target in targets:
        result = resolve_project(matrix, project, target.host, constraints, from_flags=flagged)
        answers[name] = (target, installable(matrix, project, target.host, result, constraints))
    ok = all(result.ok for _, result in answers.values())
    if as_json:
        payload = {"ok": ok, "targets": {name: {**result.as_dict(), "host": target.report()}
                                         for name, (target, result) in answers.items()}}
        return Answer(json_text(payload), 0 if ok else 1)
    text = "\n\n".join(f"[targets.{name}]\n" + render_resolution(result, target.describe())
                        for name, (target, result) in answers.items()) + "\n"
    return Answer(text, 0 if ok else 1)


def _framework_line(stack: Stack) -> str:
    from cudaenv.resolver.model import FRAMEWORKS

    if not stack.frameworks:
        return "CUDA runtime only (no framework)"
    main = [f"{n} {v}" for n, v in stack.frameworks if n in FRAMEWORKS]
    companions = [f"{n} {v}" for n, v in stack.frameworks if n not in FRAMEWORKS]
    return ", ".join(main) + (f" (with {', '.join(companions)})" if companions else "")


def render_resolution(result: Resolution, host_line: str) -> str:
    lines = [f"target: {host_line}"]
    if result.ok:
        s = result.stack
        cudnn = f", cuDNN {s.cudnn_version}" if s.cudnn_version else ""
        lines.append(f"✓ {_framework_line(s)}")
        if s.cpu:
            lines.append(f"  CPU only (no CUDA library), Python {s.python}")
            lines.append(f"  image:  {s.base_image} (CPU builds for a target without a GPU)")
            if s.requirements:
                index = f" --index-url {s.index_urls[0]}" if s.index_urls else ""
                lines.append(f"  install: pip install {' '.join(s.requirements)}{index}")
            lines.extend(f"! {p.message}" + (f" ({p.fix})" if p.fix else "") for p in result.problems)
            return "\n".join(lines)
        lines.append(f"  CUDA {s.cuda}{cudnn}, Python {s.python}")
        from cudaenv.images.render import flavor_reason

        why = flavor_reason(s)
        lines.append(f"  image:  {s.base_image} ({s.flavor} flavor: {why})")
        from cudaenv.resolver import driver as drv

        mode = {drv.NATIVE: "natively", drv.MINOR_VERSION: "through minor-version compatibility",
                drv.FORWARD: "through forward compatibility (cuda-compat in the image)"}.get(s.driver_compatibility)
        if mode:
            lines.append(f"  driver: runs CUDA {s.cuda} {mode}; native needs >= {s.min_driver}")
        else:
            lines.append(f"  driver: needs {drv.requirement_text(s.min_driver, s.min_driver_compat)}")
        if s.compute_capabilities:
            lines.append(f"  GPUs:   builds carry {', '.join('sm_' + c.replace('.', '') for c in s.compute_capabilities)}")
        lines.append(f"  valid CUDA here: {', '.join(result.valid_cuda)}")
        if s.requirements:
            index = f" --index-url {s.index_urls[0]}" if s.index_urls else ""
            links = "".join(f" --find-links {u}" for u in s.find_links)
            lines.append(f"  install: pip install {' '.join(s.requirements)}{index}{links}")
        for problem in result.problems:
            lines.append(f"! {problem.message}" + (f" ({problem.fix})" if problem.fix else ""))
        return "\n".join(lines)
    lines.append("✗ no stack fits:")
    fixes = [p for p in result.problems if p.is_fix]
    for problem in result.problems:
        if not problem.is_fix:
            lines.append(f"  - {problem.message}" + (f" ({problem.fix})" if problem.fix else ""))
    if fixes:
        lines.append("what would fix it:")
        lines.extend(f"  → {p.message}" for p in fixes)
    return "\n".join(lines)
