"""Rows added for issue #16 and how the resolver reads them: CUDA 13.5.0 without a minimum driver
(the branch table decides, nothing invented), 13.2.2's Table 3 driver, R565 reporting CUDA 12.7
without a 12.7 toolkit, cuDNN 9.28.1 (CUDA 13 only), torchvision ranges for torch 2.14.1/2.15.0."""

from __future__ import annotations

import pytest

from cudaenv.matrix import load_matrix
from cudaenv.matrix.builds import framework_builds
from cudaenv.resolver.driver import driver_support, native_requirement, runs_natively


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def release(matrix, version):
    return next(r for r in matrix.cuda_releases if r.version == version)


def test_cuda_13_5_0_is_known_with_its_ptxas_range_and_no_invented_driver(matrix):
    row = release(matrix, "13.5.0")
    assert row.min_driver is None and row.forward_compat_branches == ()
    assert (row.min_compute_capability, row.max_compute_capability) == ("7.5", "12.1")
    assert "cuda-toolkit/13.5.0" in row.source and "read 2026-11-24" in row.source


def test_without_a_table_3_driver_cuda_13_5_needs_the_branch_that_runs_it(matrix):
    assert native_requirement(matrix, "13.5") == "620"
    assert runs_natively(matrix, "620.70.06", "13.5")
    assert not runs_natively(matrix, "615.20.01", "13.5")
    assert driver_support(matrix, "615.20.01").max_minor_version_cuda == "13.5"


def test_cuda_13_2_2_minimum_driver_is_table_3s(matrix):
    assert release(matrix, "13.2.2").min_driver == "595.71.05"


def test_r565_reports_12_7_but_runs_no_newer_toolkit_than_12_6(matrix):
    assert matrix.driver_branch(565).max_cuda == "12.7"
    assert driver_support(matrix, "565.57.01").max_native_cuda == "12.6"
    assert not runs_natively(matrix, "565.57.01", "12.8")


def test_cudnn_9_28_1_is_a_cuda_13_build_only(matrix):
    assert matrix.cudnn_supports_cuda("9.28.1", "13.5") is True
    assert matrix.cudnn_supports_cuda("9.28.1", "12.9") is False


@pytest.mark.parametrize(("torch", "spec"), [("2.14.1", ">=0.29.1,<=0.29.2"), ("2.15.0", "==0.29.2")])
def test_torch_without_a_pinned_torchvision_carries_the_range_pypi_admits(matrix, torch, spec):
    row = next(r for r in matrix.torch if r.version == torch)
    assert row.torchvision is None and row.torchvision_range == spec and row.torchvision_source
    builds = [b for b in framework_builds(matrix)["torch"] if b.version == torch]
    assert builds and all(b.companion("torchvision") == spec for b in builds)


def resolve(*args):
    import json

    from click.testing import CliRunner

    from cudaenv.cli import cli

    result = CliRunner().invoke(cli, ["resolve", "--driver", "620.70.06", "--gpu", "H100", "--json", *args])
    return result.exit_code, json.loads(result.stdout)


def test_a_torchvision_inside_the_range_resolves_and_is_installed_as_asked():
    code, data = resolve("--torch", "2.15.0", "--torchvision", "0.29.2")
    assert code == 0 and data["ok"], data
    assert "torchvision==0.29.2" in data["stack"]["requirements"]


def test_a_torchvision_outside_the_range_is_a_clean_no_naming_the_range():
    code, data = resolve("--torch", "2.15.0", "--torchvision", "0.29.1")
    assert code == 1 and not data["ok"]
    assert any(p["code"] == "companion-clash" and "==0.29.2" in p["message"] for p in data["problems"])
