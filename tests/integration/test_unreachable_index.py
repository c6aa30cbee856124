"""When an index cannot be reached, cudaenv says so (not "cannot be resolved together"); `init`
still writes cudaenv.toml and says the lock is pending; a malformed requirements file is bad input."""

from __future__ import annotations

import json
import socket

import pytest

from tests.integration.test_init_lock import run_cli

pytestmark = [pytest.mark.network]


class Nowhere:
    """An index URL on a loopback port nothing listens on (connection refused, at once)."""

    def __init__(self, tmp_path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/simple"
        self.root = tmp_path / "nowhere-index"
        self.root.mkdir()


def project(tmp_path, requirements="six==1.16.0\n"):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.txt").write_text(requirements)
    (root / "train.py").write_text("print('hi')\n")
    return root


def test_lock_says_which_index_it_cannot_reach(tmp_path):
    root = project(tmp_path)
    (root / "cudaenv.toml").write_text('[project]\nname = "p"\npython = "3.11"\nrequirements = ["requirements.txt"]\n\n'
                                       '[target]\ndriver = "550.54.15"\n')
    index = Nowhere(tmp_path)
    proc = run_cli("lock", root, "--json", index=index)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "index-unreachable"
    assert f"cannot reach {index.url}/ (connection refused)" in error["message"]
    assert "cannot be resolved together" not in proc.stderr


def test_init_writes_the_config_and_says_the_lock_is_pending_when_the_index_is_unreachable(tmp_path):
    root = project(tmp_path)
    proc = run_cli("init", root, "--driver", "550.54.15", "--gpu", "A100", index=Nowhere(tmp_path))
    assert proc.returncode == 1
    text = (root / "cudaenv.toml").read_text()
    assert "# python_index" in text and "# framework_index" in text  # where a mirror goes, commented
    assert not (root / "cudaenv.lock").exists()
    assert "cudaenv.lock is pending: cannot reach" in proc.stderr and "cudaenv lock" in proc.stderr


def test_a_malformed_requirements_file_is_bad_input_naming_file_and_line(tmp_path):
    root = project(tmp_path, "six==1.16.0\n# a comment\nnumpy >= = 2\n")
    (root / "cudaenv.toml").write_text('[project]\nname = "p"\npython = "3.11"\nrequirements = ["requirements.txt"]\n')
    proc = run_cli("lock", root, index=Nowhere(tmp_path))
    assert proc.returncode == 2
    assert "cudaenv: error: requirements.txt:3: 'numpy >= = 2' is not a requirement pip can read" in proc.stderr
