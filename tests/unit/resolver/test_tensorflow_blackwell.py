"""TensorFlow on consumer Blackwell (sm_120): refused, with the reports that say why (issue #25).

Every TensorFlow release in the matrix is built with CUDA <= 12.5 for sm_60…sm_90 plus compute_90
PTX. By NVIDIA's PTX rule that PTX could be JIT-compiled for sm_120, which is what cudaenv used to
answer with a plain ✓. TensorFlow's users report otherwise: its kernels fail to load there
(CUDA_ERROR_INVALID_PTX: tensorflow/tensorflow#101746 for 2.16.2 and 2.20.0, #99592, #90291) and its
XLA emits PTX 8.5, which cannot target sm_120 (#111958). matrix/tensorflow.toml records it as
``ptx_unusable_on = ["12.0"]``; a build that reaches a GPU only through PTX without such reports runs
with a named caveat, never a plain yes.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.matrix import MatrixError, load_matrix
from cudaenv.matrix.builds import framework_builds
from cudaenv.resolver import gpu as gpu_rules
from cudaenv.resolver.check import check_stack
from tests.unit.resolver.helpers import codes, host, matrix, resolve_case

DRIVER = "580.95.05"  # R580 runs CUDA 12.5 natively and supports Blackwell


@pytest.mark.parametrize("pin", ["2.20", "2.21", "2.16.2", "any"])
def test_tensorflow_is_refused_on_an_rtx_5090_naming_the_reports(pin):
    res = resolve_case(DRIVER, ["RTX 5090"], tensorflow=pin)
    assert not res.ok
    assert codes(res) == ["gpu-unsupported-by-build"]
    message = res.problems[0].message
    assert "compute_90 PTX does not run on sm_120" in message
    assert "CUDA_ERROR_INVALID_PTX" in message and "tensorflow/tensorflow#101746" in message and "#111958" in message
    assert "no tensorflow build in the matrix includes it" in message


def test_an_older_release_is_no_way_around_it():
    """Resolution does not fall back to a release nobody reported on: every release records it."""
    res = resolve_case(DRIVER, ["NVIDIA GeForce RTX 5060 Ti"], tensorflow=">=2.4")
    assert not res.ok and res.stack is None and res.valid_cuda == ()


@pytest.mark.parametrize(("gpu", "sm"), [("RTX 4090", "sm_89"), ("H100", "sm_90"), ("A100", "sm_80")])
def test_tensorflow_runs_plainly_where_it_has_native_code(gpu, sm):
    res = resolve_case(DRIVER, [gpu], tensorflow="2.20")
    assert res.ok and res.stack.framework("tensorflow") == "2.20.0"
    assert "ptx-jit-only" not in codes(res)


def test_a_gpu_reached_only_through_ptx_without_reports_gets_a_named_caveat():
    """B200 (sm_100): no TensorFlow SASS, compute_90 PTX, and no report either way: a caveat, not a plain ✓."""
    res = resolve_case(DRIVER, ["B200"], tensorflow="2.20")
    assert res.ok
    (caveat,) = [p for p in res.problems if p.code == "ptx-jit-only"]
    assert caveat.message.startswith("B200 (sm_100) runs tensorflow 2.20.0 only through its compute_90 PTX")
    assert "no native code for it" in caveat.message


def test_check_refuses_a_tensorflow_stack_on_sm_120_and_says_why():
    stack = resolve_case(DRIVER, ["RTX 4090"], tensorflow="2.20").stack
    verdict = check_stack(matrix(), stack, host(DRIVER, ["NVIDIA GeForce RTX 5080"]))
    assert not verdict.compatible
    (reason,) = verdict.reasons
    assert reason.startswith("GPU RTX 5080 (sm_120) is not in the tensorflow 2.20.0 build's SM list")
    assert "CUDA_ERROR_INVALID_PTX" in reason and "tensorflow/tensorflow#101746, #99592" in reason


def test_check_names_the_ptx_caveat_where_the_stack_runs_only_through_ptx():
    stack = resolve_case(DRIVER, ["RTX 4090"], tensorflow="2.20").stack
    verdict = check_stack(matrix(), stack, host(DRIVER, ["B200"]))
    assert verdict.compatible
    assert any("only through its compute_90 PTX" in c for c in verdict.caveats)


def test_every_shipped_tensorflow_release_with_ptx_records_the_sm_120_reports():
    for build in framework_builds(matrix())["tensorflow"]:
        if build.ptx and "12.0" not in build.sass:
            assert build.ptx_unusable_on == ("12.0",), build.label
            assert "github.com/tensorflow/tensorflow/issues/101746" in build.ptx_unusable_source


@pytest.mark.parametrize(("unusable", "expected"), [((), True), (("12.0",), False), (("10.0",), True)])
def test_recorded_ptx_failures_close_only_the_ptx_path_on_that_capability(unusable, expected):
    assert gpu_rules.build_runs_on(("8.0", "9.0"), ("9.0",), "12.0", ptx_jit=True, ptx_unusable_on=unusable) is expected


def test_native_code_still_runs_where_the_ptx_fails():
    assert gpu_rules.build_runs_on(("12.0",), ("9.0",), "12.0", ptx_jit=True, ptx_unusable_on=("12.0",)) is True


def test_a_forged_row_without_the_reports_is_refused(tmp_path):
    (tmp_path / "tensorflow.toml").write_text(
        '[[release]]\nversion = "2.99.0"\npython = ["3.12"]\ncuda = "12.5"\ncudnn = "9.3"\n'
        'compute_capabilities = ["9.0"]\nptx = ["9.0"]\nptx_unusable_on = ["12.0"]\n'
        'source = "test fixture ; read 2026-11-26"\n')
    with pytest.raises(MatrixError) as info:
        load_matrix(overlays=[tmp_path])
    assert "version = '2.99.0'" in str(info.value) and "'ptx_unusable_source'" in str(info.value)


def test_a_row_whose_ptx_fails_on_an_unknown_capability_is_refused(tmp_path):
    (tmp_path / "tensorflow.toml").write_text(
        '[[release]]\nversion = "2.99.0"\npython = ["3.12"]\ncuda = "12.5"\ncudnn = "9.3"\n'
        'compute_capabilities = ["9.0"]\nptx = ["9.0"]\nptx_unusable_on = ["4.0"]\n'
        'ptx_unusable_source = "https://example.org/report ; read 2026-11-26"\n'
        'source = "test fixture ; read 2026-11-26"\n')
    with pytest.raises(MatrixError) as info:
        load_matrix(overlays=[tmp_path])
    assert "field 'ptx_unusable_on': compute capability 4.0 belongs to no architecture" in str(info.value)


def test_a_row_without_ptx_cannot_record_ptx_failures(tmp_path):
    (tmp_path / "tensorflow.toml").write_text(
        '[[release]]\nversion = "2.99.0"\npython = ["3.12"]\ncuda = "12.5"\ncudnn = "9.3"\n'
        'compute_capabilities = ["9.0"]\nptx_unusable_on = ["12.0"]\n'
        'ptx_unusable_source = "https://example.org/report ; read 2026-11-26"\n'
        'source = "test fixture ; read 2026-11-26"\n')
    with pytest.raises(MatrixError) as info:
        load_matrix(overlays=[tmp_path])
    assert "records no ptx to fail" in str(info.value)


def test_eight_of_one_board_get_one_caveat():
    res = resolve_case(DRIVER, ["B200"] * 8, tensorflow="2.20")
    assert [p.code for p in res.problems].count("ptx-jit-only") == 1
    stack = res.stack
    verdict = check_stack(matrix(), stack, host(DRIVER, ["B200"] * 8))
    assert sum("only through its compute_90 PTX" in c for c in verdict.caveats) == 1


@pytest.mark.parametrize(("cc", "selected"), [(("12", "0"), False), (("8", "9"), True), (("10", "0"), True)])
def test_the_kubernetes_placement_agrees_sm_120_nodes_cannot_run_tensorflow(cc, selected):
    from cudaenv.export.kubernetes import COMPUTE_KEYS, DRIVER_KEYS, node_affinity
    from tests.support.k8s_affinity import affinity_selects

    stack = resolve_case(None, [], tensorflow="2.20").stack
    labels = {COMPUTE_KEYS[0]: cc[0], COMPUTE_KEYS[1]: cc[1], "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              **dict(zip(DRIVER_KEYS, ("580", "95", "05")))}
    assert affinity_selects(node_affinity(matrix(), stack), labels) is selected
