"""Everything after `--` is the container's command; the optional DIRECTORY never takes a word of it."""

from __future__ import annotations

import pytest

from cudaenv.cli.run_cmd import run


@pytest.mark.parametrize("args,directory,command", [
    (["--", "python", "train.py"], ".", ("python", "train.py")),
    (["--detach", "--gpus", "auto", "--", "python", "serve.py"], ".", ("python", "serve.py")),
    ([".", "--gpus", "none", "--", "python", "train.py", "--epochs", "3"], ".", ("python", "train.py", "--epochs", "3")),
    (["--", "sh", "-c", "echo -- twice"], ".", ("sh", "-c", "echo -- twice")),
    (["--"], ".", ()),
])
def test_the_words_after_dashes_are_the_command(tmp_path, monkeypatch, args, directory, command):
    monkeypatch.chdir(tmp_path)
    ctx = run.make_context("run", list(args))
    assert str(ctx.params["directory"]) == directory
    assert tuple(ctx.params["command"]) == command


def test_a_directory_before_the_dashes_is_still_the_directory(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path)
    ctx = run.make_context("run", ["proj", "--", "python"])
    assert str(ctx.params["directory"]) == "proj" and ctx.params["command"] == ("python",)


@pytest.mark.parametrize("command_name", ["run", "slurm"])
def test_an_option_the_command_lacks_before_the_dashes_is_refused_not_run(tmp_path, monkeypatch, command_name):
    """`cudaenv export slurm . --json -- python x.py` wrote a job running `--json python x.py`: an
    unknown option before `--` is a usage error (exit 2), never a word of the container's command."""
    import click

    from cudaenv.cli.export_slurm_cmd import slurm

    monkeypatch.chdir(tmp_path)
    command = {"run": run, "slurm": slurm}[command_name]
    with pytest.raises(click.NoSuchOption, match="--json"):
        command.make_context(command_name, [".", "--json", "--", "python", "x.py"])
    ctx = command.make_context(command_name, [".", "--", "python", "--json"])  # after the dashes it is the command's
    assert tuple(ctx.params["command"]) == ("python", "--json")
