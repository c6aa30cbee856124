"""`init` writes what the project constrains: no exact Python pin unless the project names one
(the resolved Python belongs to the lock), so projects on one host can still share bases."""

from __future__ import annotations

import sys

from tests.support.cli import cudaenv, isolated_env

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def init(root):
    return cudaenv("init", root, "--no-lock", "--driver", "550.54.15", "--gpu", "A100", env=isolated_env(), timeout=120)


def test_without_a_python_constraint_init_pins_no_python(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")
    proc = init(tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "cudaenv.toml").read_text()
    assert "python" not in tomllib.loads(text)["project"]
    assert "# python = " in text and "recorded in cudaenv.lock" in text


def test_a_python_version_file_is_written_as_the_projects_constraint(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")
    (tmp_path / ".python-version").write_text("3.11\n")
    proc = init(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tomllib.loads((tmp_path / "cudaenv.toml").read_text())["project"]["python"].endswith("3.11")
