"""User strings never reach a Dockerfile instruction unquoted.

Where a value can come from (and what guards it):

* ``cudaenv.toml``: project name, system packages, base registry and index URLs are checked against
  their grammars when the configuration is read (rejected, exit 2); ``[run] command`` becomes a JSON
  exec-form CMD; ``[run] env`` is applied at run time and never written into the Dockerfile;
* the lock (``cudaenv.lock``, or the ``CUDAENV_PYTHON_INDEX``/``CUDAENV_FRAMEWORK_INDEX`` overrides
  recorded in it): pinned requirements and index URLs reach RUN lines through ``shquote``;
* matrix rows (shipped or a user overlay): framework requirements and find-links, also ``shquote``d.

The RUN lines that carry such values are executed here for real, by bash, with recording stand-ins
for ``uv``, ``apt-get`` and ``rm``: each hostile value must arrive as exactly one argument, and the
payloads (which only ``touch`` canary files) must never run.
"""

from __future__ import annotations

import json
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cudaenv.errors import UserError

from cudaenv.images.plan import plan_image
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.config import ConfigError
from cudaenv.project.lock import make_lock, read_lock
from cudaenv.images.render import BuildSettings, build_context, dockerquote, render_dockerfile
from cudaenv.resolver.model import Constraints
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import resolve_target
from cudaenv.versions import parse_specifier

from tests.support.cli import cudaenv as run_cli

STUBBED = ("uv", "apt-get", "rm")


@pytest.fixture(autouse=True)
def no_index_overrides(monkeypatch):
    """The CUDAENV_*_INDEX overrides of whoever runs the suite must not replace the lock's values."""
    monkeypatch.delenv("CUDAENV_PYTHON_INDEX", raising=False)
    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX", raising=False)


# --- a Dockerfile as Docker reads it ----------------------------------------------------------------


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comment and blank lines skipped, backslash-continued
    lines joined (the backslash removed, nothing inserted), as Docker's parser does."""
    found: list[tuple[str, str]] = []
    current: str | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue  # also inside a continuation, where Docker skips them too
        current = stripped if current is None else current + line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        keyword, _, arguments = current.partition(" ")
        found.append((keyword.upper(), arguments.strip()))
        current = None
    if current is not None:
        found.append(("<unterminated>", current))
    return found


def shell_of(run_arguments: str) -> str:
    """A RUN's shell command, without BuildKit's leading ``--mount=...`` flags."""
    while run_arguments.startswith("--"):
        run_arguments = run_arguments.split(None, 1)[1]
    return run_arguments


# --- recording stand-ins for the programs RUN lines call --------------------------------------------


@pytest.fixture
def recorder(tmp_path):
    """bin/ with uv, apt-get and rm that write their argv (NUL-separated) to calls/, and an empty
    canaries/ directory that the payloads of broken quoting would create files in."""
    bin_dir, calls, canaries = tmp_path / "bin", tmp_path / "calls", tmp_path / "canaries"
    for directory in (bin_dir, calls, canaries):
        directory.mkdir()
    for name in STUBBED:
        stub = bin_dir / name
        stub.write_text('#!/bin/bash\nf=$(mktemp "$RECORD/$(basename "$0").XXXXXX")\n'
                        'for a in "$@"; do printf \'%s\\0\' "$a" >> "$f"; done\n')
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)

    def run(shell_command: str) -> None:
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RECORD": str(calls), "HOME": str(tmp_path)}
        proc = subprocess.run(["/bin/bash", "-o", "pipefail", "-c", shell_command], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr

    def invocations(program: str) -> list[list[str]]:
        return [path.read_bytes().decode().split("\0")[:-1] for path in sorted(calls.glob(f"{program}.*"))]

    run.invocations = invocations
    run.canaries = canaries
    return run


# --- stacks and hostile values ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(scope="module")
def torch_stack(matrix):
    target = resolve_target(matrix, driver="550.54.15", gpus=("A100",), compute_capabilities=(), detect=False)
    result = resolve(matrix, Constraints(python=parse_specifier("3.11"),
                                         frameworks=(("torch", parse_specifier("==2.6.0")),)), target.host)
    assert result.ok
    return result.stack


def hostile_values(canaries: Path) -> dict:
    c = canaries
    return {
        "python_index": f"https://pypi.example/simple; touch {c}/python-index",
        "framework_index": f"https://wheels.example/cu126 && touch {c}/framework-index",
        "find_links": f"https://links.example/$(touch {c}/find-links)",
        "requirement": f"torch==2.6.0`touch {c}/requirement`",
        "pinned": (f"numpy==2.1.3 | touch {c}/pinned-pipe",
                   f"six==1.16.0'; touch {c}/pinned-quote; echo '",
                   f"tqdm${{IFS}}$(touch {c}/pinned-subst)",
                   "glob*?[a]"),
        "system_packages": (f"curl; touch {c}/package", f'git"$(touch {c}/package-dq)"'),
    }


def hostile_dockerfile(stack, values: dict, *, buildkit: bool, ca_cert: bool) -> str:
    stack = replace(stack, requirements=(values["requirement"],), find_links=(values["find_links"],))
    settings = BuildSettings(project="quoting", python_index=values["python_index"],
                             framework_index=values["framework_index"], pinned=values["pinned"],
                             system_packages=values["system_packages"], buildkit=buildkit, ca_cert=ca_cert)
    return render_dockerfile(build_context(stack, settings))


BUILDERS = [pytest.param(True, False, id="buildkit"), pytest.param(True, True, id="buildkit-ca-cert"),
            pytest.param(False, False, id="classic")]


def executed_runs(text: str, recorder) -> None:
    """Run every RUN line that carries user values (framework, system-package, requirement layers)."""
    runs = [shell_of(args) for keyword, args in instructions(text) if keyword == "RUN"]
    carrying = [run for run in runs if "uv pip install" in run or ("apt-get" in run and "tini" not in run)]
    assert len(carrying) == 3
    for run in carrying:
        recorder(run)


# --- the RUN lines, executed ------------------------------------------------------------------------


@pytest.mark.parametrize("buildkit, ca_cert", BUILDERS)
def test_hostile_values_run_no_payload(torch_stack, recorder, buildkit, ca_cert):
    executed_runs(hostile_dockerfile(torch_stack, hostile_values(recorder.canaries), buildkit=buildkit,
                                     ca_cert=ca_cert), recorder)
    assert sorted(p.name for p in recorder.canaries.iterdir()) == []


@pytest.mark.parametrize("buildkit, ca_cert", BUILDERS)
def test_hostile_index_urls_and_find_links_reach_uv_as_single_arguments(torch_stack, recorder, buildkit, ca_cert):
    values = hostile_values(recorder.canaries)
    executed_runs(hostile_dockerfile(torch_stack, values, buildkit=buildkit, ca_cert=ca_cert), recorder)
    calls = recorder.invocations("uv")
    assert len(calls) == 2
    for argv in calls:
        assert argv[argv.index("--index-url") + 1] == values["python_index"]
        assert argv[argv.index("--extra-index-url") + 1] == values["framework_index"]
        assert argv[argv.index("--find-links") + 1] == values["find_links"]


@pytest.mark.parametrize("buildkit, ca_cert", BUILDERS)
def test_hostile_requirements_reach_uv_as_the_exact_argument_list(torch_stack, recorder, buildkit, ca_cert):
    values = hostile_values(recorder.canaries)
    executed_runs(hostile_dockerfile(torch_stack, values, buildkit=buildkit, ca_cert=ca_cert), recorder)
    tails = sorted((argv[argv.index("--find-links") + 2:] for argv in recorder.invocations("uv")), key=len)
    assert tails == [[values["requirement"]], list(values["pinned"])]


@pytest.mark.parametrize("buildkit, ca_cert", BUILDERS)
def test_hostile_system_packages_reach_apt_get_as_the_exact_argument_list(torch_stack, recorder, buildkit, ca_cert):
    values = hostile_values(recorder.canaries)
    executed_runs(hostile_dockerfile(torch_stack, values, buildkit=buildkit, ca_cert=ca_cert), recorder)
    calls = recorder.invocations("apt-get")
    assert len(calls) == 2
    update = next(argv for argv in calls if "update" in argv)
    install = next(argv for argv in calls if "install" in argv)
    assert update[-1] == "update"
    assert install[-len(values["system_packages"]):] == list(values["system_packages"])
    assert install[install.index("--no-install-recommends") + 1:] == list(values["system_packages"])


@pytest.mark.parametrize("buildkit, ca_cert", BUILDERS)
def test_hostile_values_add_no_instruction(torch_stack, tmp_path, buildkit, ca_cert):
    benign = {"python_index": "https://pypi.example/simple", "framework_index": "https://wheels.example/cu126",
              "find_links": "https://links.example/", "requirement": "torch==2.6.0",
              "pinned": ("numpy==2.1.3", "six==1.16.0", "tqdm==4.67.1", "rich==13.9.4"),
              "system_packages": ("curl", "git")}
    hostile = hostile_values(tmp_path)
    texts = [hostile_dockerfile(torch_stack, values, buildkit=buildkit, ca_cert=ca_cert)
             for values in (benign, hostile)]
    keywords = [[k for k, _ in instructions(text)] for text in texts]
    assert keywords[0] == keywords[1]


# --- a newline in a value the lock file carries ------------------------------------------------------

NEWLINE_PAYLOAD = "\nFROM attacker.example/backdoor:latest\n#"


def write_runtime_project(directory: Path, extra: str = "") -> None:
    (directory / "cudaenv.toml").write_text(
        '[project]\nname = "quoting"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        '[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n\n[build]\nflavor = "runtime"\n' + extra)


def locked_plan(directory: Path, matrix, **lock_values):
    """The project's plan from a cudaenv.lock written by cudaenv, then edited to carry ``lock_values``."""
    project = load_project(directory)
    target = resolve_target(matrix, driver="550.54.15", gpus=("A100",), compute_capabilities=(), detect=False)
    stack = resolve(matrix, project.constraints, target.host).stack
    lock = make_lock(project, stack, matrix_revision=matrix.revision, target=target.as_dict(),
                     pinned=["six==1.16.0"])
    lock = replace(lock, **lock_values)
    project.lock_path.write_text(lock.as_toml())
    return plan_image(project, matrix, read_lock(project.lock_path), buildkit=True)


@pytest.mark.parametrize("field", ["pinned", "python_index", "framework_index"])
def test_newline_in_a_lock_value_is_refused_before_any_dockerfile_exists(tmp_path, matrix, field):
    """A newline ends a Dockerfile instruction whatever the shell quoting: a tampered lock value
    such as '...\\nFROM other-image' must never reach the template (it would start a new stage)."""
    write_runtime_project(tmp_path)
    (tmp_path / "requirements.txt").write_text("six==1.16.0\n")
    locked_plan(tmp_path, matrix, framework_index="https://wheels.example/simple")  # the benign lock works
    values = {"pinned": ("six==1.16.0" + NEWLINE_PAYLOAD,),
              "python_index": "https://pypi.org/simple" + NEWLINE_PAYLOAD,
              "framework_index": "https://wheels.example/simple" + NEWLINE_PAYLOAD}
    with pytest.raises(UserError, match=f"requirements.{field}"):
        locked_plan(tmp_path, matrix, **{"framework_index": "https://wheels.example/simple", field: values[field]})


@pytest.mark.parametrize("variable", ["CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX"])
def test_newline_in_an_index_override_is_refused(tmp_path, matrix, monkeypatch, variable):
    write_runtime_project(tmp_path)
    locked_plan(tmp_path, matrix, framework_index="https://wheels.example/simple")
    monkeypatch.setenv(variable, "https://mirror.example/simple" + NEWLINE_PAYLOAD)
    with pytest.raises(UserError, match=variable):
        locked_plan(tmp_path, matrix, framework_index="https://wheels.example/simple")


def test_a_pin_that_is_really_an_option_is_refused(tmp_path, matrix):
    write_runtime_project(tmp_path)
    with pytest.raises(UserError, match="not a pinned requirement"):
        locked_plan(tmp_path, matrix, pinned=("--index-url=https://attacker.example/simple",))


def test_shquote_refuses_control_characters_even_outside_the_lock():
    from cudaenv.images.render import UnsafeValue, shquote

    for value in ("a\nb", "a\rb", "a\x00b"):
        with pytest.raises(UnsafeValue):
            shquote(value)


# --- values from cudaenv.toml -------------------------------------------------------------------------

HOSTILE_CONFIG_STRINGS = ["curl; rm -rf /", "less\nRUN touch /pwned", "$(touch /pwned)", "`touch /pwned`",
                          "--allow-unauthenticated", "a b"]


@pytest.mark.parametrize("value", HOSTILE_CONFIG_STRINGS)
def test_config_rejects_hostile_system_packages(tmp_path, value):
    write_runtime_project(tmp_path, f"system_packages = [{json.dumps(value)}]\n")
    with pytest.raises(ConfigError, match=r"build\.system_packages"):
        load_project(tmp_path)


@pytest.mark.parametrize("value", HOSTILE_CONFIG_STRINGS + ["Upper", "-leading-dash"])
def test_config_rejects_hostile_project_names(tmp_path, value):
    (tmp_path / "cudaenv.toml").write_text(f"[project]\nname = {json.dumps(value)}\n")
    with pytest.raises(ConfigError, match=r"project\.name"):
        load_project(tmp_path)


@pytest.mark.parametrize("value", ["registry.example.com; rm -rf /", "registry.example.com\nFROM evil",
                                   "$(touch /pwned)", "https://registry.example.com"])
def test_config_rejects_hostile_base_registries(tmp_path, value):
    write_runtime_project(tmp_path, f"base_registry = {json.dumps(value)}\n")
    with pytest.raises(ConfigError, match=r"build\.base_registry"):
        load_project(tmp_path)


@pytest.mark.parametrize("key", ["python_index", "framework_index"])
@pytest.mark.parametrize("value", ["https://pypi.example/simple\nFROM evil", "https://pypi.example/simple 'x'",
                                   "file:///etc/passwd", "https://pypi.example/\"simple\""])
def test_config_rejects_index_urls_with_whitespace_quotes_or_other_schemes(tmp_path, key, value):
    write_runtime_project(tmp_path, f"{key} = {json.dumps(value)}\n")
    with pytest.raises(ConfigError, match=rf"build\.{key}"):
        load_project(tmp_path)


def test_hostile_config_value_is_a_one_line_error_with_exit_2(tmp_path):
    write_runtime_project(tmp_path, 'system_packages = ["curl; rm -rf /"]\n')
    proc = run_cli("dockerfile", str(tmp_path), timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "build.system_packages" in proc.stderr and "Traceback" not in proc.stderr


HOSTILE_COMMAND = ["python", "-c", "import sys; print(sys.argv)", "curl; rm -rf /", "$(touch /pwned)",
                   "`touch /pwned`", "line one\nRUN touch /pwned", 'quote " and \' single', "back\\slash \\",
                   "${HOME}", "naïve ünïcode", "]", '"]']


def test_hostile_command_becomes_the_exact_json_exec_form_cmd(tmp_path, matrix):
    write_runtime_project(tmp_path, f"\n[run]\ncommand = {json.dumps(HOSTILE_COMMAND)}\n")
    plan = locked_plan(tmp_path, matrix)
    cmds = [args for keyword, args in instructions(plan.dockerfile) if keyword == "CMD"]
    assert len(cmds) == 1
    assert json.loads(cmds[0]) == HOSTILE_COMMAND


def test_hostile_command_adds_no_instruction(tmp_path, matrix):
    write_runtime_project(tmp_path, '\n[run]\ncommand = ["python", "main.py"]\n')
    benign = [k for k, _ in instructions(locked_plan(tmp_path, matrix).dockerfile)]
    write_runtime_project(tmp_path, f"\n[run]\ncommand = {json.dumps(HOSTILE_COMMAND)}\n")
    assert [k for k, _ in instructions(locked_plan(tmp_path, matrix).dockerfile)] == benign


def test_run_env_values_never_reach_the_dockerfile(tmp_path, matrix):
    env = {"WANDB_API_KEY": "sk-secret-0123456789", "HOSTILE": "curl; rm -rf / $(touch /pwned)\nRUN id"}
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    write_runtime_project(tmp_path, f"\n[run]\nenv = {{ {table} }}\n")
    assert load_project(tmp_path).run.env  # the values were read...
    dockerfile = locked_plan(tmp_path, matrix).dockerfile
    for name, value in env.items():  # ...and are applied at run time only
        assert name not in dockerfile
        assert value not in dockerfile and value.split("\n")[0] not in dockerfile


def test_matrix_values_from_a_user_overlay_are_quoted_too(torch_stack, recorder):
    """A user overlay row is data too: its requirement and find-links reach uv as written."""
    overlay = replace(torch_stack, requirements=(f"torch==2.6.0; touch {recorder.canaries}/overlay",),
                      find_links=(f"https://x.example/ && touch {recorder.canaries}/overlay-links",))
    text = render_dockerfile(build_context(overlay, BuildSettings(project="quoting")))
    recorder(next(shell_of(a) for k, a in instructions(text) if k == "RUN" and "uv pip install" in a))
    (argv,) = recorder.invocations("uv")
    assert argv[-1] == overlay.requirements[0]
    assert argv[argv.index("--find-links") + 1] == overlay.find_links[0]
    assert list(recorder.canaries.iterdir()) == []


# --- LABEL and ENV values, through a real Docker build ---------------------------------------------

LABEL_VALUES = ['a "quoted" word', "dollar $HOME and ${HOME:-x} and $(id) and `id`", "back\\slash and \\",
                "it's", "tab\there", "naïve ünïcode"]


@pytest.mark.docker
def test_dockerquote_round_trips_through_docker_label_and_env(engine, standin_image, tmp_path):
    import uuid

    from cudaenv.engine import BuildRequest

    lines = [f"FROM {standin_image}"]
    for i, value in enumerate(LABEL_VALUES):
        lines += [f"LABEL io.cudaenv.test-{i}={dockerquote(value)}", f"ENV CUDAENV_TEST_{i}={dockerquote(value)}"]
    tag = f"cudaenv-test/quoting:{uuid.uuid4().hex[:10]}"
    try:
        engine.build(BuildRequest(context=tmp_path, tags=(tag,), dockerfile_text="\n".join(lines) + "\n"))
        config = engine.client.images.get(tag).attrs["Config"]
        env = dict(item.split("=", 1) for item in config["Env"])
        assert [config["Labels"][f"io.cudaenv.test-{i}"] for i in range(len(LABEL_VALUES))] == LABEL_VALUES
        assert [env[f"CUDAENV_TEST_{i}"] for i in range(len(LABEL_VALUES))] == LABEL_VALUES
    finally:
        engine.remove_image(tag, force=True)


def test_dockerquote_keeps_a_newline_inside_the_instruction():
    label, env = dockerquote("one" + NEWLINE_PAYLOAD), dockerquote("two" + NEWLINE_PAYLOAD)
    text = f"FROM scratch\nLABEL a={label}\nENV B={env}\n"
    assert [k for k, _ in instructions(text)] == ["FROM", "LABEL", "ENV"]
