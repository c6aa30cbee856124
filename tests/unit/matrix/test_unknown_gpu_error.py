"""A GPU name the table lacks is bad input whose one line says how to go on: give the compute
capability instead, in the form the place it was written takes (issue #25)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.support.cli import cudaenv as run_cli, without_target_overrides

from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix
from cudaenv.hosts.target import gpu_by_name


def cudaenv(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, env=without_target_overrides())


def test_an_unknown_gpu_on_the_command_line_points_at_compute_capability():
    proc = cudaenv("resolve", "--torch", "2.6", "--driver", "550.54.15", "--gpu", "NVIDIA GeForce GTX 480")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "--gpu: unknown GPU 'NVIDIA GeForce GTX 480'" in proc.stderr
    assert "--compute-capability X.Y" in proc.stderr


def test_the_json_error_object_carries_the_same_pointer():
    proc = cudaenv("resolve", "--torch", "2.6", "--gpu", "Quadro Imaginary 9000", "--json")
    assert proc.returncode == 2, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["exit_code"] == 2
    assert "--compute-capability X.Y" in payload["error"]["message"]


def test_an_unknown_gpu_in_the_environment_points_at_the_option():
    env = {**os.environ, "CUDAENV_GPUS": "Quadro Imaginary 9000"}
    env.pop("CUDAENV_DRIVER_VERSION", None)
    proc = run_cli("resolve", "--torch", "2.6", env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("cudaenv: error: CUDAENV_GPUS: unknown GPU 'Quadro Imaginary 9000'")
    assert "--compute-capability X.Y" in proc.stderr


@pytest.mark.parametrize(("where", "how"), [
    ("--gpu", "--compute-capability X.Y"),
    ("/p/cudaenv.toml: target.gpus", 'target.compute_capabilities = ["X.Y"]'),
    ("/p/cudaenv.toml: cluster.slurm.features.a100.gpu", 'compute_capability = "X.Y" in place of gpu'),
])
def test_the_pointer_fits_where_the_name_was_written(where, how):
    with pytest.raises(UserError) as caught:
        gpu_by_name(load_matrix(overlays=[]), "Quadro Imaginary 9000", where=where)
    assert str(caught.value).startswith(f"{where}: unknown GPU 'Quadro Imaginary 9000': give its compute capability "
                                        f"instead, {how} ")


def test_a_card_the_issue_names_is_no_longer_unknown():
    proc = cudaenv("resolve", "--torch", "2.6", "--driver", "550.54.15", "--gpu", "Quadro M4000", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    assert "unknown GPU" not in proc.stdout + proc.stderr
