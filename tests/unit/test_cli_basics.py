"""The CLI skeleton: version, help, module entry point, and the --json contract of `info`."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import cudaenv
from cudaenv.cli import COMMANDS, cli

from tests.support.cli import cudaenv as run_cli


def test_version_flag_prints_package_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"cudaenv {cudaenv.__version__}"


def test_help_lists_every_registered_command():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output


def test_python_dash_m_runs_the_same_cli():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"cudaenv {cudaenv.__version__}"


def test_unknown_command_is_a_usage_error_with_exit_2():
    proc = run_cli("frobnicate")
    assert proc.returncode == 2
    assert "No such command 'frobnicate'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_info_json_is_one_object_naming_matrix_and_templates():
    proc = run_cli("info", "--json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["version"] == cudaenv.__version__
    assert "README.md" in payload["matrix_files"]
    assert payload["templates"], "templates/ must not be empty"


def test_help_does_not_import_the_docker_sdk():
    code = "import sys; from cudaenv.cli import main; sys.argv=['cudaenv','--help']\n" \
           "try:\n    main()\nexcept SystemExit:\n    pass\n" \
           "assert 'docker' not in sys.modules, 'docker SDK imported at start-up'\n" \
           "assert 'jinja2' not in sys.modules, 'jinja2 imported at start-up'\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("command", [("export", "slurm"), ("export", "kubernetes"), ("export", "compose"), ("run",)])
def test_help_examples_are_printed_as_written(command):
    """An example command in --help is copied into a terminal: click must not rewrap it."""
    import inspect

    from cudaenv.cli.group import cli

    group = cli
    ctx = None
    for name in command:
        ctx = click.Context(group, info_name=name, parent=ctx)
        group = group.get_command(ctx, name)
    written = [line.strip() for line in inspect.getdoc(group.callback).splitlines() if line.strip().startswith("cudaenv ")]
    assert written
    shown = [line.strip() for line in group.get_help(click.Context(group, info_name=command[-1])).splitlines()]
    for line in written:
        assert line in shown, f"{line!r} rewrapped in --help"
