"""Mutation score of the modules that decide a stack, per module, with mutmut.

Why: a rule that no test pins down (a flipped comparison, a dropped condition, a deleted check)
is a rule that can break silently. mutmut changes one thing at a time and runs the unit tests
that reach the changed function; a change no test notices is a *survivor*. The goal (DESIGN.md,
"Proof habits") is >= 90% of non-equivalent mutants killed in each decision module.

How it runs, and why so:

* Each module group is mutated in a scratch copy of the working tree (``git ls-files`` plus
  untracked, non-ignored files), never in the checkout, so the tree stays usable meanwhile.
* Each group names the unit-test files that specify it; mutmut records which of their tests reach
  which function and runs only those per mutant (a small subset, forked from a warm process).
  Tests that only run ``python -m cudaenv`` in a subprocess (tests/unit/test_check_cli.py) are left
  out: the mutated code never runs in them, and they cost minutes in mutmut's two full passes.
* Under ``nice`` and with ``--max-children`` (default 1): the machine is shared.
* ``CUDAENV_NO_CACHE=1``: the matrix cache would otherwise hand the tests a matrix loaded by the
  unmutated loader.
* mutmut's fork server: a mutant's tests start from a process that has collected them and run
  nothing, so no answer memoized by the unmutated code (a matrix's cached base images) hides the
  mutant.
* Parametrized tests need plain ASCII ids: mutmut runs each mutant's tests by node id, and an id
  pytest cannot find again (escaped characters such as ``'\\uff15'``) makes the run fail, which
  mutmut records as a kill.
* Groups whose tests call into a Go library (the ``dockerfile`` package, BuildKit's parser built
  as a C extension: tests/unit/render) run each mutant in a process that imported it itself
  (``FRESH_PROCESS``): the Go runtime's threads do not survive ``fork``, so a forked test that
  parses after the parent loaded it waits forever on a lock (a surviving mutant was recorded as a
  timeout after 2+ minutes, and sometimes the run hung for good).
* Equivalent mutants (a change no input can observe) are listed with the reason for each in
  ``bench/mutation_equivalent.toml`` and left out of the score; every other survivor counts.

Usage::

    python bench/mutation_score.py                      # every group, resolver first
    python bench/mutation_score.py resolver lock        # some groups
    python bench/mutation_score.py --list               # the groups, their files and tests
    python bench/mutation_score.py resolver --survivors # also print each survivor's diff
    python bench/mutation_score.py --json               # one JSON object on stdout
    python bench/mutation_score.py resolver --report-only  # score what a run (maybe still going) has judged
    python bench/mutation_score.py resolver --module cudaenv/resolver/resolve.py --function served_build  # one function

Exit status: 0 when every group run reaches the goal, 1 when one does not, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import re
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "bench" / "mutation_equivalent.toml"
GOAL = 0.90

# group -> (modules mutated, unit-test files that specify them); resolver first: it decides most
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "resolver": (
        ("cudaenv/resolver/driver.py", "cudaenv/resolver/gpu.py", "cudaenv/resolver/check.py",
         "cudaenv/resolver/images.py", "cudaenv/resolver/model.py", "cudaenv/resolver/resolve.py",
         "cudaenv/resolver/plan.py", "cudaenv/resolver/cpu.py"),
        ("tests/unit/resolver", "tests/unit/test_placement.py", "tests/unit/cluster/test_node_verdicts.py",
         "tests/unit/cluster/test_node_arch_and_bad_lists.py", "tests/unit/render/test_source_builds.py",
         "tests/unit/project/test_tensorflow_gpu_package.py"),
    ),
    "matrix": (
        ("cudaenv/matrix/load.py", "cudaenv/matrix/validate.py"),
        ("tests/unit/matrix/test_matrix_validation.py", "tests/unit/matrix/test_matrix_field_rules.py",
         "tests/unit/matrix/test_overlays.py", "tests/unit/matrix/test_overlay_injection.py",
         "tests/unit/matrix/test_matrix_additions.py", "tests/unit/matrix/test_shipped_matrix.py",
         "tests/unit/matrix/test_matrix_sources.py", "tests/unit/matrix/test_cross_reference_messages.py",
         "tests/unit/matrix/test_row_reader.py", "tests/unit/matrix/test_row_fields.py",
         "tests/unit/matrix/test_matrix_file_reading.py", "tests/unit/matrix/test_yanked_field.py",
         "tests/unit/resolver/test_host_arch.py"),
    ),
    "lock": (
        ("cudaenv/project/lock.py", "cudaenv/project/pins.py"),
        ("tests/unit/project/test_lock_validation.py", "tests/unit/project/test_lock_pins_match_stack.py",
         "tests/unit/project/test_project_rules.py", "tests/unit/project/test_lock_helpers.py",
         "tests/unit/test_local_version_pins.py", "tests/unit/test_index_credentials.py",
         "tests/unit/project/test_wheels_cuda.py", "tests/unit/project/test_exclude_newer.py",
         "tests/unit/project/test_uv_invocation.py", "tests/unit/project/test_pin_clash_rules.py",
         "tests/unit/project/test_lock_outcomes.py", "tests/unit/project/test_lock_file_messages.py",
         "tests/unit/project/test_lock_staleness_reasons.py", "tests/unit/project/test_lock_input_rules.py",
         "tests/unit/project/test_hash_lines.py", "tests/unit/project/test_lock_targets.py"),
    ),
    "config": (
        ("cudaenv/project/config.py",),
        ("tests/unit/project/test_config.py", "tests/unit/project/test_config_field_errors.py",
         "tests/unit/project/test_project_rules.py",
         "tests/unit/test_run_options.py", "tests/unit/render/test_quoting.py",
         "tests/unit/project/test_exclude_newer.py", "tests/unit/project/test_requirement_file_index.py",
         "tests/unit/project/test_tensorflow_gpu_package.py", "tests/unit/project/test_targets_config.py"),
    ),
    "reading": (
        ("cudaenv/project/reqfile.py", "cudaenv/project/pyproject.py", "cudaenv/project/inputs.py",
         "cudaenv/project/detect.py", "cudaenv/project/intent.py"),
        ("tests/unit/project/test_requirement_files.py", "tests/unit/project/test_detect_as_pip_reads.py",
         "tests/unit/project/test_pyproject_reading.py",
         "tests/unit/project/test_detect.py", "tests/unit/project/test_intent.py",
         "tests/unit/project/test_jax_cuda_extra.py", "tests/unit/project/test_lock_staleness_reasons.py",
         "tests/unit/project/test_lock_helpers.py", "tests/unit/test_image_key.py",
         "tests/unit/project/test_tensorflow_cpu_package.py"),
    ),
    "wheels": (
        ("cudaenv/project/wheels.py", "cudaenv/project/served.py", "cudaenv/project/graph.py",
         "cudaenv/project/init.py"),
        ("tests/unit/project/test_wheels.py", "tests/unit/project/test_wheels_cuda.py",
         "tests/unit/project/test_python_choice.py", "tests/unit/project/test_framework_index_config.py",
         "tests/unit/project/test_graph_frameworks.py", "tests/unit/project/test_init_writes_what_it_resolved.py",
         "tests/unit/project/test_init_python_constraint.py", "tests/unit/project/test_lock_outcomes.py",
         "tests/unit/project/test_served_rules.py", "tests/unit/project/test_init_rules.py",
         "tests/unit/project/test_graph_rules.py", "tests/unit/project/test_wheels_choice_rules.py",
         "tests/unit/project/test_uv_python_version.py"),
    ),
    "hosts": (
        ("cudaenv/hosts/detect.py", "cudaenv/hosts/cdi.py", "cudaenv/run/doctor.py"),
        ("tests/unit/host", "tests/unit/test_doctor_emulation.py", "tests/unit/test_doctor_cdi.py"),
    ),
    "images": (
        ("cudaenv/images/key.py", "cudaenv/images/accounting.py", "cudaenv/images/build.py"),
        ("tests/unit/test_image_key.py", "tests/unit/images", "tests/unit/test_build_log_parsing.py",
         "tests/unit/test_stack_base_plan.py"),
    ),
    "matrix-model": (
        ("cudaenv/matrix/builds.py", "cudaenv/matrix/model.py"),
        ("tests/unit/resolver/test_decision_rules.py", "tests/unit/resolver/test_resolve_stack_fields.py",
         "tests/unit/resolver/test_resolve_unknown_versions.py", "tests/unit/matrix/test_shipped_matrix.py",
         "tests/unit/matrix/test_row_fields.py", "tests/unit/matrix/test_builds_rules.py",
         "tests/unit/matrix/test_model_rows.py", "tests/unit/resolver/test_host_arch.py",
         "tests/unit/resolver/test_base_images.py"),
    ),
    "secrets": (
        ("cudaenv/secrets/context.py", "cudaenv/secrets/credentials.py"),
        ("tests/unit/test_index_credentials.py", "tests/unit/test_build_context_secrets.py",
         "tests/unit/test_secret_looking_files.py", "tests/unit/test_credential_sources.py",
         "tests/unit/test_context_exclusions.py",
         "tests/unit/render/test_dockerignore_text.py", "tests/unit/export/test_no_secret_written.py"),
    ),
    "render": (
        ("cudaenv/images/render.py",),
        ("tests/unit/render",),
    ),
    "cluster": (
        ("cudaenv/cluster/kubernetes.py", "cudaenv/cluster/slurm.py", "cudaenv/cluster/read.py",
         "cudaenv/cluster/verdicts.py", "cudaenv/cluster/plan.py", "cudaenv/project/which_target.py",
         "cudaenv/project/node_targets.py"),
        ("tests/unit/cluster", "tests/unit/test_plan_fixes.py", "tests/unit/project/test_which_target.py",
         "tests/unit/project/test_node_targets.py"),
    ),
    "engine": (
        ("cudaenv/engine/podman_engine.py",),
        ("tests/unit/test_podman_argv.py",),
    ),
    "export": (
        ("cudaenv/export/placement.py", "cudaenv/export/kubernetes.py", "cudaenv/export/slurm.py",
         "cudaenv/export/compose.py", "cudaenv/export/devcontainer.py", "cudaenv/export/environment.py"),
        ("tests/unit/export", "tests/unit/test_placement.py"),
    ),
}

# Groups whose tests load a library that is not fork-safe (a Go runtime: the ``dockerfile`` parser).
# mutmut's default forks each mutant from the process that ran the stats pass, where the library is
# loaded; there a Go call waits for threads that fork did not copy. The fork server instead forks from
# a process that imported only what FORK_SAFE_PRELOAD names (no test module, so no Go library): every
# mutant's pytest imports the Go library anew.
FRESH_PROCESS = {"render"}
FORK_SAFE_PRELOAD = ("pytest", "hypothesis", "jinja2", "cudaenv.images.render", "cudaenv.images.plan",
                     "cudaenv.matrix", "cudaenv.project", "cudaenv.resolver.resolve", "cudaenv.hosts.target")

KILLED = {1, 3}  # a test failed, or pytest itself did (mutmut counts both as a kill)
TIMEOUT = {36, -24, 24, 152}  # the mutant made a test hang: caught, counted as killed
# 255 is not among them: it is mutmut's worker failing to run the tests at all (pytest exit 4, a
# node id it cannot find again), which says nothing about the mutant: it is 'suspicious', not killed
SURVIVED = {0}
NO_TESTS = {5, 33}  # no selected test reaches the mutated function: a survivor too


def equivalents() -> dict[str, str]:
    """mutant name -> why no input can tell it from the original."""
    if not EQUIVALENT.is_file():
        return {}
    data = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8"))
    out = {}
    for entry in data.get("mutant", []):
        if not entry.get("reason", "").strip():
            raise SystemExit(f"{EQUIVALENT}: mutant {entry.get('name')!r} has no reason")
        if entry["name"] in out:
            raise SystemExit(f"{EQUIVALENT}: mutant {entry['name']!r} is listed twice")
        out[entry["name"]] = entry["reason"]
    return out


def tree_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    return [name.decode() for name in listed if name and (ROOT / name.decode()).is_file()]


def scratch_copy(target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    for name in tree_files():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)


def configure(copy: Path, modules: tuple[str, ...], tests: tuple[str, ...], fresh_process: bool = False) -> None:
    # each mutant's tests run in a process forked from mutmut's fork server, never from mutmut's own
    # process: forked from there they would inherit every answer the unmutated code memoized while
    # mutmut measured the tests (the shared test matrix's base images), and the mutant never ran.
    # The server has collected the tests (imported them), or, for FRESH_PROCESS groups, imported
    # only FORK_SAFE_PRELOAD.
    isolation = ['process_isolation = "forkserver"', 'forkserver_warmup = "collect"']
    if fresh_process:
        (copy / "mutmut-preload.txt").write_text("\n".join(FORK_SAFE_PRELOAD) + "\n", encoding="utf-8")
        isolation = ['process_isolation = "forkserver"', 'forkserver_warmup = "import"',
                     'preload_modules_file = "mutmut-preload.txt"']
    config = "\n".join([
        "", "[tool.mutmut]", *isolation,
        'source_paths = ["cudaenv"]',
        'also_copy = ["matrix", "templates", "examples", "README.md", "scripts", "bench", "docs", "mkdocs.yml", "sitecustomize.py"]',
        "only_mutate = " + json.dumps(list(modules)),
        "pytest_add_cli_args_test_selection = " + json.dumps(list(tests)),
        # tests that need Docker, Slurm or the network are integration checks here: a mutant is
        # judged by the unit tests alone, as the score promises
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "-m", "not docker and not slurm and not network"]',
        "",
    ])
    with open(copy / "pyproject.toml", "a", encoding="utf-8") as handle:
        handle.write(config)
    (copy / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")


# Copied into the scratch copy's mutants/ (on the PYTHONPATH tests/support/cli.py gives a
# ``cudaenv`` subprocess): mutated code reads mutmut's configuration from the working directory,
# and a CLI test that runs in a temporary directory would otherwise fail on that, not on the mutant.
SITECUSTOMIZE = """import os

_root = os.environ.get("MUTATION_SCORE_ROOT")
if _root and os.getcwd() != _root:
    _here = os.getcwd()
    try:
        os.chdir(_root)
        import mutmut.configuration

        mutmut.configuration.config()
    finally:
        os.chdir(_here)
"""


def mutmut_binary() -> str:
    found = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or shutil.which("mutmut")
    if not found:
        raise SystemExit("mutmut is not installed: pip install 'mutmut>=3.8' (into the environment running this)")
    return found


def unfindable_ids(tests: tuple[str, ...]) -> list[str]:
    """Test node ids mutmut could not hand back to pytest: pytest escapes a backslash or a
    non-ASCII character in a parametrize id, and the escaped id then matches no test (the
    mutant's run fails, and an equivalent mutant would look killed). An escaped newline (an id
    made from a multi-line value) is found again."""
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "-m", "not docker and not slurm and not network", *tests], cwd=ROOT,
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout
    escaped = re.compile(r"\\\\|\\[xuU][0-9a-fA-F]")  # an escaped backslash or non-ASCII character
    return [line for line in listed.splitlines() if "::" in line and (escaped.search(line) or not line.isascii())]


def _mangled(function: str) -> str:
    """mutmut's name for a function: ``x_NAME`` for a module-level one, ``xǁCLASSǁNAME`` for a
    method (``Host.platform``)."""
    if "." in function:
        cls, method = function.split(".", 1)
        return f"x\u01c1{cls}\u01c1{method}"
    return f"x_{function}"


def function_patterns(modules: tuple[str, ...], functions: tuple[str, ...]) -> list[str]:
    """mutmut name patterns for some functions of the modules: mutmut names a mutant
    ``cudaenv.resolver.resolve.x_served_build__mutmut_3`` and the function its tests reach
    ``cudaenv.resolver.resolve.x_served_build``; a pattern ending ``x_NAME*`` selects both (and any
    function whose name starts with NAME: the score counts only NAME's own mutants). A method is
    named ``CLASS.NAME`` (``Host.platform``: mutmut's ``xǁHostǁplatform``)."""
    return [f"{module[:-3].replace('/', '.')}.{_mangled(function)}*" for module in modules for function in functions]


def of_functions(codes: dict[str, int | None], functions: tuple[str, ...]) -> dict[str, int | None]:
    """The verdicts of these functions' own mutants (all of them when no function is named)."""
    if not functions:
        return codes
    names = "|".join(re.escape(_mangled(f)) for f in functions)
    return {k: c for k, c in codes.items() if re.search(r"\.(" + names + r")__mutmut_\d+$", k)}


def run_group(name: str, work: Path, children: int, log, only: tuple[str, ...] = (),
              functions: tuple[str, ...] = ()) -> tuple[float, Path]:
    modules, tests = GROUPS[name]
    modules = tuple(m for m in modules if not only or m in only)
    bad = unfindable_ids(tests)
    if bad:  # a mutant whose tests include one may end 255 (pytest found no such test): not a kill
        log(f"{name}: warning: {len(bad)} test ids with escaped characters; give them plain ASCII ids "
            f"(ids=[...]): " + "; ".join(bad[:5]))
    copy = work / (name if not only else f"{name}-part")
    scratch_copy(copy)
    configure(copy, modules, tests, fresh_process=name in FRESH_PROCESS)
    env = dict(os.environ, CUDAENV_NO_CACHE="1", PYTHONDONTWRITEBYTECODE="1", MUTATION_SCORE_ROOT=str(copy))
    env.pop("CUDAENV_MATRIX_PATH", None)
    started = time.monotonic()
    with open(work / f"{copy.name}.log", "w", encoding="utf-8") as output:
        subprocess.run(["nice", "-n", "15", mutmut_binary(), "run", "--max-children", str(children),
                        *function_patterns(modules, functions)], cwd=copy,
                       env=env, stdout=output, stderr=subprocess.STDOUT, check=False)
    log(f"{name}: mutmut finished in {time.monotonic() - started:.0f}s (log: {work / f'{copy.name}.log'})")
    return time.monotonic() - started, copy


def verdicts(copy: Path, module: str) -> dict[str, int | None]:
    meta = copy / "mutants" / (module + ".meta")
    if not meta.is_file():
        return {}
    return json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})


def score(codes: dict[str, int | None], excluded: dict[str, str]) -> dict:
    killed = [k for k, c in codes.items() if k not in excluded and (c in KILLED or c in TIMEOUT)]
    survived = [k for k, c in codes.items() if k not in excluded and (c in SURVIVED or c in NO_TESTS)]
    unchecked = [k for k, c in codes.items() if k not in excluded and c is None]
    other = [k for k, c in codes.items()
             if k not in excluded and c is not None and c not in KILLED | TIMEOUT | SURVIVED | NO_TESTS]
    judged = len(killed) + len(survived) + len(other)
    return {"mutants": len(codes), "equivalent": sum(1 for k in codes if k in excluded), "killed": len(killed),
            "survived": sorted(survived), "suspicious": sorted(other), "not_checked": len(unchecked),
            "score": round(len(killed) / judged, 4) if judged else None}


def survivor_diff(copy: Path, mutant: str) -> str:
    proc = subprocess.run([mutmut_binary(), "show", mutant], cwd=copy, capture_output=True, text=True)
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", help=f"groups to run (default: all): {', '.join(GROUPS)}")
    parser.add_argument("--list", action="store_true", help="print the groups, their modules and tests")
    parser.add_argument("--max-children", type=int, default=1, help="parallel mutants (default 1: shared machine)")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "cudaenv-mutation",
                        help="scratch directory for the copies and logs")
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    parser.add_argument("--module", action="append", default=[], metavar="PATH",
                        help="only these modules of the group(s) (repeatable), e.g. cudaenv/resolver/check.py")
    parser.add_argument("--function", action="append", default=[], metavar="NAME",
                        help="only the mutants of these functions of the --module(s) (repeatable), "
                             "e.g. served_build, or Host.platform for a method: for a few functions of a large module")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--report-only", action="store_true",
                        help="do not run mutmut: score the verdicts already in the scratch copies (a run that was "
                             "stopped, or is still going, counts what it judged; the rest is 'not checked')")
    args = parser.parse_args(argv)
    unknown = [g for g in args.groups if g not in GROUPS]
    known_modules = {m for modules, _ in GROUPS.values() for m in modules}
    if any(m not in known_modules for m in args.module):
        print(f"mutation_score: --module expects one of {', '.join(sorted(known_modules))}", file=sys.stderr)
        return 2
    if args.function and not args.module:
        print("mutation_score: --function needs --module (the functions' module)", file=sys.stderr)
        return 2
    if unknown:
        print(f"mutation_score: unknown group {unknown[0]!r}; expected one of {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    if args.list:
        for name, (modules, tests) in GROUPS.items():
            print(f"{name}:\n  mutates: {' '.join(modules)}\n  tests:   {' '.join(tests)}")
        return 0
    excluded = equivalents()
    args.work.mkdir(parents=True, exist_ok=True)
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    report: dict = {"goal": GOAL, "tool": "mutmut", "groups": {}}
    for name in args.groups or list(GROUPS):
        if args.report_only:
            seconds, copy = 0.0, args.work / (name if not args.module else f"{name}-part")
            if not (copy / "mutants").is_dir():
                log(f"{name}: no run in {copy}")
                continue
        else:
            seconds, copy = run_group(name, args.work, args.max_children, log, tuple(args.module),
                                      tuple(args.function))
        chosen = tuple(m for m in GROUPS[name][0] if not args.module or m in args.module)
        modules = {}
        for module in chosen:
            modules[module] = score(of_functions(verdicts(copy, module), tuple(args.function)), excluded)
        total = score({k: c for module in chosen
                       for k, c in of_functions(verdicts(copy, module), tuple(args.function)).items()}, excluded)
        report["groups"][name] = {"seconds": round(seconds), "total": total, "modules": modules}
        if not args.json:
            log(f"{name}:")
            for module, result in modules.items():
                shown = f"{result['score']:.1%}" if result["score"] is not None else "n/a"
                log(f"  {module:36} {shown:>7}  killed {result['killed']:4} of {result['mutants'] - result['equivalent'] - result['not_checked']:4}"
                    f"  (equivalent {result['equivalent']}, not checked {result['not_checked']})")
                if args.survivors:
                    for mutant in result["survived"]:
                        log(survivor_diff(copy, mutant))
    ok = bool(report["groups"]) and all(m["score"] is not None and m["score"] >= GOAL
             for g in report["groups"].values() for m in g["modules"].values() if m["mutants"])
    report["ok"] = ok
    if args.json:
        print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
