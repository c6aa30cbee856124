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
