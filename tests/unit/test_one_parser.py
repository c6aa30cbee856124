"""One parser: every command, ``--help`` and ``--version`` go through click, and no printed answer
is ever cached. Lazy imports stay: asserted by what gets imported (never by time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv

from tests.support.cli import cudaenv as run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "torch-classifier"
_REPORT = ("from cudaenv.entry import main\n"
           "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
           "sys.stdout.flush()\n"
           "sys.stderr.write('\\n[imported: %s]' % ' '.join(sorted(m for m in ('click', 'docker', 'jinja2', "
           "'cudaenv.resolver.resolve') if m in sys.modules)))\n"
           "sys.exit(code)\n")


def _cli(args: list[str], cwd: Path, env: dict | None = None) -> tuple[int, str, str, set[str]]:
    """The console script's main() in a process of its own: exit code, stdout, stderr, and which of
    click, docker, jinja2 and the resolver it imported."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80", **(env or {})}
    environ.pop("CUDAENV_DRIVER_VERSION", None)
    environ.pop("CUDAENV_GPUS", None)
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + _REPORT, *args], capture_output=True, text=True,
                          cwd=cwd, env=environ)
    stderr, _, flag = proc.stderr.rpartition("\n[imported: ")
    return proc.returncode, proc.stdout, stderr, set(flag.rstrip("]").split())


def test_version_is_clicks_version_option(tmp_path):
    code, out, _err, imported = _cli(["--version"], tmp_path)
    assert code == 0
    assert out.strip() == f"cudaenv {cudaenv.__version__}"
    assert "click" in imported


def test_the_entry_point_is_the_click_group():
    from cudaenv.cli import main as cli_main
    from cudaenv.entry import main

    assert main is cli_main
    proc = run_cli("--verbose")
    assert proc.returncode == 2
    assert "No such option '--verbose'" in proc.stderr


def test_no_second_parser_or_answer_cache_is_left():
    package = Path(cudaenv.__file__).parent
    for gone in ("cli/fast.py", "core/answers.py"):
        assert not (package / gone).exists(), gone


@pytest.mark.parametrize("args", [
    ["--torch", "==2.4.1", "--python", "3.11", "--driver", "550.54.15", "--json"],
    ["--torch", "2.6", "--driver", "470.82.01", "--gpu", "A100", "--json"],  # no stack: exit 1
])
def test_resolve_goes_through_click_and_writes_no_answer(tmp_path, args):
    cache = tmp_path / "cache"
    first = _cli(["resolve", *args], tmp_path, {"CUDAENV_CACHE_DIR": str(cache)})
    again = _cli(["resolve", *args], tmp_path, {"CUDAENV_CACHE_DIR": str(cache)})
    assert first[0] in (0, 1) and first[:3] == again[:3]
    json.loads(first[1])
    assert {"click", "cudaenv.resolver.resolve"} <= again[3], "the second call resolved afresh, through click"
    assert not {"docker", "jinja2"} & again[3], "resolve loads neither the docker SDK nor jinja2"
    assert not (cache / "answers").exists()
    assert [p.name.split("-")[0] for p in cache.iterdir()] == ["matrix"], "only the matrix's data cache is written"


def test_resolve_reads_a_project_in_the_current_directory(tmp_path):
    code, out, err, _imported = _cli(["resolve", "--json"], EXAMPLE, {"CUDAENV_CACHE_DIR": str(tmp_path)})
    assert code == 0, err
    assert json.loads(out)["stack"]["frameworks"]["torch"].startswith("2.")
    assert json.loads(out)["host"]["origin"] == "declared"  # the example's [target]


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


def test_help_names_every_command_without_importing_them(tmp_path):
    from cudaenv.cli.commands import COMMANDS

    code, out, _err, imported = _cli(["--help"], tmp_path)
    assert code == 0
    for name in COMMANDS:
        assert f"\n  {name} " in out
    assert not {"docker", "jinja2", "cudaenv.resolver.resolve"} & imported


@pytest.mark.parametrize("args", [["--json"], [], ["-a", "--json"]])
def test_ps_fails_cleanly_when_the_engine_is_unreachable(tmp_path, args):
    env = {"DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}"}
    code, out, err, _imported = _cli(["ps", *args], tmp_path, env)
    assert code == 1 and "cannot reach the Docker engine" in err and "Traceback" not in err
    if "--json" in args:
        assert json.loads(out)["error"]["code"] == "engine"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, EOFError])
def test_an_interrupted_run_ends_with_aborted_and_130(tmp_path, monkeypatch, capsys, interrupt):
    """Ctrl-C before the container's signal handlers are in place: "Aborted.", exit 130."""
    from cudaenv.entry import main
    from cudaenv.run import session

    def interrupted(*_args, **_kwargs):
        raise interrupt()

    monkeypatch.setattr(session, "run_attached", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(tmp_path), "--gpus", "none", "--", "true"])
    out, err = capsys.readouterr()
    assert (exit_info.value.code, out, err) == (130, "", "\nAborted.\n")
