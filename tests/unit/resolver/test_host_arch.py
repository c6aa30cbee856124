"""GPUs that only come with an Arm host (Grace superchips, Jetson) are refused, not resolved as if
they sat in an x86_64 machine: cudaenv's images and the wheels in its matrix are x86_64 only."""

from __future__ import annotations

import json

import pytest

from cudaenv.errors import MatrixError
from cudaenv.matrix import load_matrix
from cudaenv.resolver.check import check_stack
from cudaenv.resolver.model import Host, TargetGpu
from cudaenv.resolver.resolve import resolve
from tests.support.cli import cudaenv, without_target_overrides
from tests.unit.resolver.helpers import constraints, host, matrix

ARM_HOSTED = ["GH200", "GB200", "GB300", "GB10", "Jetson AGX Orin", "Jetson Nano", "Jetson T5000"]


@pytest.mark.parametrize("name", ARM_HOSTED)
def test_grace_and_jetson_rows_are_marked_aarch64(name):
    assert matrix().find_gpu(name).host_arch == "aarch64"


@pytest.mark.parametrize("name", ["H100", "B200", "B300", "A100", "RTX 5090", "L40S"])
def test_gpus_sold_for_x86_hosts_are_x86_64(name):
    assert matrix().find_gpu(name).host_arch == "x86_64"


@pytest.mark.parametrize("name", ["GH200", "GB200", "Jetson AGX Orin"])
def test_resolve_refuses_a_gpu_whose_host_is_not_x86_64(name):
    result = resolve(matrix(), constraints(torch="any"), host("580.65.06", [name]))
    assert not result.ok
    problem = next(p for p in result.problems if p.code == "host-arch-unsupported")
    assert "aarch64" in problem.message and "x86_64" in problem.message


def test_the_refusal_does_not_need_a_driver():
    result = resolve(matrix(), constraints(torch="any"), host(None, ["GB10"]))
    assert not result.ok and [p.code for p in result.problems] == ["host-arch-unsupported"]


def test_the_same_gpu_generation_on_an_x86_host_resolves():
    # GH200's GPU is a Hopper sm_90 like the H100: only the host differs
    assert resolve(matrix(), constraints(torch="any"), host("580.65.06", ["H100"])).ok


def test_a_gpu_given_only_by_compute_capability_is_not_refused():
    gpu = TargetGpu("9.0", None, "hopper", False)  # host unknown: nothing to refuse
    assert resolve(matrix(), constraints(torch="any"), Host("580.65.06", (gpu,))).ok


def test_check_says_why_a_resolved_stack_cannot_run_there():
    stack = resolve(matrix(), constraints(torch="==2.9.1"), host("580.65.06", ["H100"])).stack
    verdict = check_stack(matrix(), stack, host("580.65.06", ["GH200"]))
    assert not verdict.compatible
    assert any("aarch64" in r and "x86_64" in r for r in verdict.reasons)


def _cli(*args):
    proc = cudaenv(*args, "--json", env=without_target_overrides(), timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def test_cudaenv_resolve_exits_1_with_the_problem_code():
    code, result = _cli("resolve", "--torch", "any", "--driver", "580.65.06", "--gpu", "NVIDIA GH200 480GB")
    assert code == 1 and result["ok"] is False
    assert [p["code"] for p in result["problems"]] == ["host-arch-unsupported"]


def test_cudaenv_check_exits_1_and_names_the_host():
    code, result = _cli("check", "--torch", "2.4.1", "--cuda", "12.4", "--python", "3.11", "--driver", "580.65.06",
                        "--gpu", "GB200")
    assert code == 1 and result["compatible"] is False
    assert any("aarch64" in r for r in result["results"][0]["reasons"])


def test_host_arch_must_be_a_known_architecture(tmp_path):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nname = "Test GPU"\ncompute_capability = "9.0"\narchitecture = "hopper"\ndatacenter = true\n'
        'host_arch = "arm64"\nsource = "overlay test ; read 2026-11-24"\n')
    with pytest.raises(MatrixError, match=r"gpus.toml.*Test GPU.*field 'host_arch': expected 'x86_64' or 'aarch64'"):
        load_matrix(overlays=[tmp_path], use_cache=False)


def test_an_overlay_can_mark_its_own_gpu_aarch64(tmp_path):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nname = "Site Arm GPU"\ncompute_capability = "9.0"\narchitecture = "hopper"\ndatacenter = true\n'
        'host_arch = "aarch64"\nsource = "site inventory ; read 2026-11-24"\n')
    m = load_matrix(overlays=[tmp_path], use_cache=False)
    assert m.find_gpu("Site Arm GPU").host_arch == "aarch64"


def test_a_detected_grace_gpu_carries_its_host_arch():
    from cudaenv.hosts.detect import DetectedGpu
    from cudaenv.hosts.target import identify_gpu

    found = identify_gpu(matrix(), DetectedGpu(0, "NVIDIA GH200 480GB", "9.0"))
    assert found.host_arch == "aarch64"
    unknown = identify_gpu(matrix(), DetectedGpu(0, "Some Future GPU", "9.0"))
    assert unknown.host_arch is None  # not in the matrix: nothing known, nothing refused
