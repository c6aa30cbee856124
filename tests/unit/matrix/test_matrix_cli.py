"""`cudaenv matrix list/show`: the JSON shapes other tools read, and clear errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cudaenv.cli import cli

from tests.support.cli import cudaenv as run_cli


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result


@pytest.mark.parametrize("kind", ["cuda", "driver", "gpu", "cudnn", "torch", "tensorflow", "jax", "mxnet", "image"])
def test_list_json_is_an_array_of_objects_with_identity_and_source(kind):
    result = run("matrix", "list", kind, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert isinstance(rows, list) and rows
    identity = "name" if kind == "gpu" else "version"
    for row in rows:
        assert row.get(identity), row
        assert row.get("source"), row


def test_list_human_output_is_a_table_with_a_header():
    result = run("matrix", "list", "torch")
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["version", "python"]
    assert any(line.startswith("2.6.0 ") for line in lines)


def test_show_gpu_json_has_compute_capability_as_string():
    result = run("matrix", "show", "gpu", "NVIDIA A100-SXM4-80GB", "--json")
    data = json.loads(result.output)
    assert data["name"] == "A100"
    assert data["compute_capability"] == "8.0"


def test_show_driver_reports_native_and_minor_version_cuda():
    result = run("matrix", "show", "driver", "535.104.05", "--json")
    data = json.loads(result.output)
    # R535 reports CUDA 12.2; minor-version compatibility runs any 12.x (floor 525.60.13).
    assert data["max_cuda_native"] == "12.2"
    assert data["max_cuda_minor_version"].startswith("12.")
    assert data["max_cuda_minor_version"] != "12.2"


def test_show_old_driver_runs_only_its_major():
    data = json.loads(run("matrix", "show", "driver", "470.82.01", "--json").output)
    assert data["max_cuda_native"] == "11.4"
    assert data["max_cuda_minor_version"] == "11.8"
    assert "kepler" in data["architectures"]


def test_show_torch_release_lists_variants():
    data = json.loads(run("matrix", "show", "torch", "2.6.0", "--json").output)
    assert {v["cuda"] for v in data["variant"]} >= {"11.8", "12.4", "12.6"}
    assert data["pypi_cuda"] == "12.4"


def test_show_unknown_version_via_main_exits_2(capsys):
    from cudaenv.cli import main

    with pytest.raises(SystemExit) as info:
        main(["matrix", "show", "torch", "2.6.9"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown torch '2.6.9'" in err and "nearest" in err


@pytest.mark.parametrize("spelling,version", [("2.6", "2.6.0"), ("==2.6.0", "2.6.0"), (">=2.4,<2.6", "2.5.1")])
def test_matrix_show_accepts_the_spellings_the_framework_flags_accept(spelling, version):
    import json

    proc = run_cli("matrix", "show", "torch", spelling, "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["version"] == version
