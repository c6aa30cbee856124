"""A base image that cannot be pulled says how to use a mirror ([build] base_registry)."""

from __future__ import annotations

import os
import uuid

import pytest

from tests.support.cli import cudaenv

pytestmark = [pytest.mark.docker, pytest.mark.registry]


def test_a_base_the_registry_lacks_fails_with_the_base_registry_hint(tmp_path, standins):
    # CUDA 12.1's image is never served by the suite's registry: the pull fails for real
    (tmp_path / "cudaenv.toml").write_text(
        f'[project]\nname = "pullfail-{uuid.uuid4().hex[:6]}"\npython = "3.11"\n\n[cuda]\nversion = "12.1"\n\n'
        f'[target]\ndriver = "550.54.15"\n\n[build]\nflavor = "runtime"\nbase_registry = "{standins.host}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    proc = cudaenv("build", tmp_path, "--network", "host", timeout=600, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "→ the base image could not be pulled" in proc.stderr and "[build] base_registry" in proc.stderr
    assert "Traceback" not in proc.stderr
