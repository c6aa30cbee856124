"""Start-up fast paths, asserted by what gets imported (never by time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv


def test_version_answers_without_importing_click():
    code = ("import sys\nfrom cudaenv.entry import main\nsys.argv = ['cudaenv', '--version']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0\n"
            "assert 'click' not in sys.modules, 'click imported for --version'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"cudaenv {cudaenv.__version__}"


def test_the_entry_point_hands_everything_else_to_click():
    proc = subprocess.run([sys.executable, "-m", "cudaenv", "--verbose"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "No such option '--verbose'" in proc.stderr


# --- `cudaenv resolve` and `cudaenv --help` without click -------------------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "torch-classifier"
_FAST = "import sys\nfrom cudaenv.entry import main\n"
_CLICK = "import sys\nfrom cudaenv.cli import main\n"
_RUN = ("try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "sys.stdout.flush()\nsys.stderr.write('\\n[click imported: %s]' % ('click' in sys.modules))\n"
        "sys.exit(code)\n")


def _cli(prelude: str, args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80", **(env or {})}
    environ.pop("CUDAENV_DRIVER_VERSION", None)
    environ.pop("CUDAENV_GPUS", None)
    return subprocess.run([sys.executable, "-c", prelude + _RUN, *args], capture_output=True, text=True, cwd=cwd,
                          env=environ)


def _split(proc: subprocess.CompletedProcess) -> tuple[int, str, str, bool]:
    stderr, _, flag = proc.stderr.rpartition("\n[click imported: ")
    return proc.returncode, proc.stdout, stderr, flag.startswith("True")


RESOLVE_CASES = [  # (arguments, whether the fast path answers them itself)
    (["--torch", "==2.4.1", "--python", "3.11", "--driver", "550.54.15", "--json"], True),
    (["--torch=2.4.1", "--driver=550.54.15", "--gpu", "A100", "--gpu", "T4"], True),
    (["--json", "--tensorflow", "2.15", "--torch", ">=2.1", "--gpu", "T4", "--no-detect"], True),
    (["--torch", "2.6", "--driver", "470.82.01", "--gpu", "A100", "--json"], True),  # no stack: exit 1
    (["--torch", "9.9.9", "--driver", "550.54.15", "--json"], True),  # unknown version: exit 2
    (["--driver", "abc", "--torch", "2.4.1"], True),  # bad driver text: exit 2
    (["--gpu", "NoSuchGPU", "--driver", "550.54.15", "--json"], True),
    (["--compute-capability", "8.0", "--driver", "535.104.05", "--jax", "any", "--flavor", "wheels"], True),
    (["--cudnn", "9", "--cuda", ">=12.1", "--os", "ubuntu22.04", "--flavor", "runtime", "--driver", "550.54.15"], True),
    (["--torch", "==2.0.1+cu118", "--driver", "535.104.05", "--json"], True),
    ([str(EXAMPLE), "--json"], True),
    ([str(EXAMPLE), "--torch", "2.5", "--driver", "550.54.15"], True),
    ([str(EXAMPLE / "cudaenv.toml"), "--json"], False),  # a file, not a directory: click's message
    (["/no/such/dir", "--json"], False),
    ([str(EXAMPLE), str(EXAMPLE)], False),  # an extra argument
    (["--gpu", "", "--driver", "550.54.15", "--json"], False),  # click's "must not be empty"
    (["--driver", " ", "--json"], False),
    (["--flavor", "bogus", "--json"], False),
    (["--driver", "550.54.15", "--driver", "535.104.05", "--json"], False),  # repeated single option
    (["--torch"], False),  # missing value
    (["--json=yes"], False),
    (["--tor", "2.4"], False),  # unknown option
    (["-h"], False),
    (["--help"], False),
    (["--", "--json"], False),
]


@pytest.mark.parametrize("args,fast", RESOLVE_CASES, ids=[" ".join(a)[-60:] for a, _ in RESOLVE_CASES])
def test_resolve_answers_the_same_with_and_without_click(tmp_path, args, fast):
    env = {"CUDAENV_CACHE_DIR": str(tmp_path / "cache")}
    code, out, err, click_used = _split(_cli(_FAST, ["resolve", *args], tmp_path, env))
    expected = _split(_cli(_CLICK, ["resolve", *args], tmp_path, env))
    assert (code, out, err) == expected[:3]
    assert click_used is not fast, "the fast path answered" if not fast else "click was imported"
    if "--json" in args and "--" not in args:
        json.loads(out)  # one JSON object on every exit path


def test_resolve_reads_a_project_in_the_current_directory_on_the_fast_path(tmp_path):
    code, out, err, click_used = _split(_cli(_FAST, ["resolve", "--json"], EXAMPLE,
                                             {"CUDAENV_CACHE_DIR": str(tmp_path)}))
    assert code == 0, err
    assert not click_used
    assert json.loads(out)["stack"]["frameworks"]["torch"].startswith("2.")
    assert json.loads(out)["host"]["origin"] == "declared"  # the example's [target]


def test_the_fast_option_table_is_the_click_commands(monkeypatch):
    from cudaenv.cli import fast
    from cudaenv.cli.resolve_cmd import resolve_command
    from cudaenv.resolver.model import FLAVORS

    table = {}
    for param in resolve_command.params:
        if param.param_type_name == "argument":
            assert param.name == "directory" and param.nargs == 1 and not param.required
            continue
        kind = "flag" if param.is_flag else ("many" if param.multiple else "value")
        for opt in param.opts:
            table[opt] = (param.name, kind)
    assert table == fast.resolve_options()
    assert fast.FLAVORS == FLAVORS


def test_a_pyproject_that_never_names_cudaenv_is_not_parsed(tmp_path):
    from cudaenv.project.locate import find_config

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.black]\nline-length = 100\n")
    code = ("import sys\nfrom cudaenv.project.locate import find_config\nassert find_config(sys.argv[1]) is None\n"
            "assert 'tomllib' not in sys.modules and 'cudaenv.project.config' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.cudaenv.project]\nname = 'x'\n")
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    (tmp_path / "pyproject.toml").write_text('[tool]\n"cud\\u0061env" = { project = { name = "x" } }\n')
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"  # spelled with an escape: parsed


@pytest.mark.parametrize("columns", ["50", "64", "80", "100", "133", "400"])
def test_help_is_clicks_help_without_click(tmp_path, columns):
    fast = _split(_cli(_FAST, ["--help"], tmp_path, {"COLUMNS": columns}))
    slow = _split(_cli(_CLICK, ["--help"], tmp_path, {"COLUMNS": columns}))
    assert fast[:3] == slow[:3]
    assert fast[0] == 0 and "Commands:" in fast[1]
    assert not fast[3] and slow[3]


def test_help_text_names_every_command():
    from cudaenv.cli.commands import COMMANDS
    from cudaenv.cli.fast import group_help

    text = group_help(98)
    for name in COMMANDS:
        assert f"\n  {name} " in text


@pytest.mark.parametrize("args,fast", [(["--json"], True), ([], True), (["-a", "--json"], True),
                                       (["--bogus"], False), (["--help"], False)])
def test_ps_fails_the_same_with_and_without_click_when_the_engine_is_unreachable(tmp_path, args, fast):
    env = {"DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}"}
    code, out, err, click_used = _split(_cli(_FAST, ["ps", *args], tmp_path, env))
    assert (code, out, err) == _split(_cli(_CLICK, ["ps", *args], tmp_path, env))[:3]
    assert click_used is not fast
    if fast:
        assert code == 1 and "cannot reach the Docker engine" in err
    if "--json" in args:
        assert json.loads(out)["error"]["code"] == "engine"


# --- `cudaenv run [DIR] [--gpus X] [-- CMD...]` without click ------------------------------------
# Without Docker these end before a container: a directory with no project, a bad --gpus value
# (both checked before the image), or a declined form that click answers. The integration tests
# (test_run_containers.py) run containers through the same fast path and compare it with click.

RUN_CASES = [  # (arguments, with {project} and {empty} filled in, whether the fast path answers)
    (["{empty}", "--gpus", "none", "--", "true"], True),  # no project: exit 2
    (["--gpus", "none", "--", "true"], True),  # the current directory ({empty})
    ([], True),
    (["{project}", "--gpus", "bogus", "--", "true"], True),  # a bad --gpus value: exit 2
    (["--gpus=all,0", "{project}", "--", "sh", "-c", "exit 3"], True),
    (["{project}", "--gpus", " "], True),
    (["{project}", "--gpus", "auto:0"], True),
    (["{empty}", "--", "--help"], True),  # after --, the container's command
    (["{empty}", "--", "-d", "--gpus", "none"], True),
    (["{empty}", "--", "--", "--json"], True),
    (["{empty}", "--gpus", "none", "--gpus", "all", "--", "true"], False),  # given twice: click's choice
    (["{empty}", "--gpus"], False),  # missing value
    (["{empty}", "--gpus", "--", "true"], False),
    (["{empty}", "--gpus", "-1"], False),
    (["{empty}", "-d", "--", "true"], False),
    (["{empty}", "--name", "x", "--", "true"], False),
    (["{empty}", "-e", "A=1", "--", "true"], False),
    (["{empty}", "--rebuild", "--", "true"], False),
    (["{empty}", "--jupyter"], False),
    (["{empty}", "true"], False),  # a command without --: click's parsing
    (["{empty}", "{empty}", "--", "true"], False),
    (["/no/such/dir", "--", "true"], False),
    (["{project}/cudaenv.toml", "--", "true"], False),  # a file, not a directory
    (["--gpu", "none", "--", "true"], False),  # unknown option
    (["-h"], False),
    (["--help"], False),
    (["{empty}", "--help", "--", "true"], False),
]


@pytest.mark.parametrize("args,fast", RUN_CASES, ids=[" ".join(a)[-60:] for a, _ in RUN_CASES])
def test_run_answers_the_same_with_and_without_click(tmp_path, args, fast):
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [a.format(project=EXAMPLE, empty=empty) for a in args]
    env = {"CUDAENV_CACHE_DIR": str(tmp_path / "cache"), "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}"}
    code, out, err, click_used = _split(_cli(_FAST, ["run", *args], empty, env))
    expected = _split(_cli(_CLICK, ["run", *args], empty, env))
    assert (code, out, err) == expected[:3]
    assert click_used is not fast, "the fast path answered" if not fast else "click was imported"
    if fast:
        assert code == 2 and err.startswith("cudaenv: error: ") and "Traceback" not in err


def test_the_fast_run_parses_only_what_the_click_command_parses_the_same_way():
    from cudaenv.cli import fast
    from cudaenv.cli.run_cmd import CommandAfterDashes, run

    assert isinstance(run, CommandAfterDashes)
    params = {p.name: p for p in run.params}
    directory, gpus = params["directory"], params["gpus"]
    assert directory.nargs == 1 and not directory.required and directory.default == "."
    assert directory.type.exists and not directory.type.file_okay and directory.type.dir_okay
    assert gpus.opts == list(fast.RUN_OPTIONS) and not gpus.multiple and not gpus.is_flag and gpus.default is None
    for param in run.params:  # every other option is declined, so click answers it
        for opt in param.opts + param.secondary_opts:
            if opt.startswith("-") and opt not in fast.RUN_OPTIONS:
                assert fast.parse_run([opt, "x", "--", "true"]) is None, opt
    assert fast.parse_run(["--", "--gpus", "all"]) == {"directory": ".", "gpus": None, "command": ("--gpus", "all")}


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, EOFError])
def test_an_interrupted_run_ends_as_clicks_does(tmp_path, monkeypatch, capsys, interrupt):
    """Ctrl-C before the container's signal handlers are in place: "Aborted.", exit 130, on both paths."""
    from cudaenv.run import session as running
    from cudaenv.cli.group import main as click_main
    from cudaenv.entry import main as entry_main

    def interrupted(*_args, **_kwargs):
        raise interrupt()

    monkeypatch.setattr(running, "run_attached", interrupted)
    ended = []
    for main in (entry_main, click_main):
        with pytest.raises(SystemExit) as exit_info:
            main(["run", str(tmp_path), "--gpus", "none", "--", "true"])
        out, err = capsys.readouterr()
        ended.append((exit_info.value.code, out, err))
    assert ended[0] == ended[1] == (130, "", "\nAborted.\n")
