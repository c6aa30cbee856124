"""The whole path, with the real uv against a loopback index: `cudaenv init` locks the project that
pip reads — a Windows-saved file, a nested include, a local wheel folder, the project's own code —
and the lock then goes stale when any file it read changes."""

from __future__ import annotations

import json
import os
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tests.support.cli import cudaenv as run_cli
from tests.support.package_index import build_wheel
from tests.support.lockfile import lock_view


def env_for(index_url, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_")) or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_PYTHON_INDEX=index_url, UV_CACHE_DIR=str(cache),
               UV_PYTHON_DOWNLOADS="never")
    return env


def test_init_locks_what_pip_reads_and_the_lock_follows_every_file_it_read(tmp_path, package_index):
    package_index.add("omegaconf", "2.1.1", requires=["antlr4-runtime==4.8"])
    package_index.add("antlr4-runtime", "4.8")
    package_index.add("six", "1.16.0")
    package_index.add("six", "1.17.0")
    project = tmp_path / "app"
    (project / "reqs").mkdir(parents=True)
    (project / "wheels").mkdir()
    build_wheel(project / "wheels", "local-only", "1.0")  # on no index: only the folder has it
    (project / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0.1"\ndependencies = ["six"]\n'
                                            '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n')
    (project / "requirements.txt").write_bytes(
        b"\xef\xbb\xbf-r reqs/base.txt\r\n-e .\r\n--find-links ./wheels\r\nlocal-only==1.0\t# from the folder\r\n")
    (project / "reqs" / "base.txt").write_text("omegaconf==2.1.1 \\\n    --hash=sha256:00\n-c pins.txt\n")
    (project / "reqs" / "pins.txt").write_text("six<1.17\n")
    env = env_for(package_index.url, tmp_path / "uv-cache")

    proc = run_cli("init", project, "--driver", "550.54.15", "--gpu", "A100", env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_view(project / "cudaenv.lock")
    pinned = lock["requirements"]["pinned"]
    assert {"omegaconf==2.1.1", "antlr4-runtime==4.8", "local-only==1.0", "six==1.16.0"} <= set(pinned)
    assert not any(pin.startswith(("-e", ".", "/", "app")) or "file:" in pin for pin in pinned)  # own code: not a pin
    assert lock["requirements"]["own_code"] == ["."]
    assert lock["requirements"]["find_links"] == ["wheels"]

    check = run_cli("lock", project, "--check", "--json", env=env, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    (project / "reqs" / "pins.txt").write_text("six<1.18\n")  # a constraint two includes down
    check = run_cli("lock", project, "--check", "--json", env=env, timeout=300)
    assert check.returncode == 1
    assert "reqs/pins.txt changed" in json.dumps(json.loads(check.stdout))
