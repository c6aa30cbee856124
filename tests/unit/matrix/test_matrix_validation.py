"""A broken matrix file is one clear error naming the file, the row and the field — for each kind
of mistake, in shipped files and overlays alike (the fixtures are loaded as overlays)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.matrix import MatrixError, load_matrix

from tests.support.cli import cudaenv as run_cli

BROKEN = Path(__file__).resolve().parents[2] / "fixtures" / "matrix-broken"

CASES = {
    # case directory: fragments the one-line message must contain
    "invalid-toml": ["torch.toml", "invalid TOML"],
    "not-utf8": ["gpus.toml", "not UTF-8 text", "at byte 39"],
    "unknown-field": ["gpus.toml", "[[gpu]] #1", "name = 'Z100'", "unknown field 'compute_capabilty'",
                      "did you mean 'compute_capability'"],
    "wrong-type": ["tensorflow.toml", "version = '2.99.0'", "field 'python'", 'a list of Python versions like ["3.11"]', "'3.11'"],
    "bad-version": ["cuda.toml", "field 'version'", 'a CUDA release "X.Y.Z"', "'12.x'"],
    "bad-specifier": ["cudnn.toml", "field 'cuda'", "PEP 440 specifier", "'twelve and up'"],
    "missing-field": ["drivers.toml", "branch = 999", "missing required field 'max_cuda'"],
    "missing-source-date": ["gpus.toml", "field 'source'", "the date it was read"],
    "duplicate-row": ["torch.toml", "[[release]] #2", "duplicate of row #1"],
    "unknown-table": ["jax.toml", "unknown table 'releases'", "did you mean 'release'"],
    "unknown-file": ["torhc.toml", "not a matrix file"],
    "unknown-cuda": ["torch.toml", "version = '2.99.0'", "variant cu1299", "field 'cuda'", "CUDA 12.99 is not a release in cuda.toml"],
    "cc-not-in-architecture": ["gpus.toml", "name = 'Z100'", "field 'compute_capability'", "8.6 is not a hopper compute capability"],
    "unknown-cudnn": ["tensorflow.toml", "field 'cudnn'", "cuDNN 6.5 is not a release in cudnn.toml"],
    "duplicate-gpu-alias": ["gpus.toml", "'NVIDIA A100-SXM4-80GB' also names 'A100'"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_overlay_names_file_row_field_and_expectation(case):
    with pytest.raises(MatrixError) as info:
        load_matrix(overlays=[BROKEN / case])
    message = str(info.value)
    assert "\n" not in message
    for fragment in CASES[case]:
        assert fragment in message, f"{fragment!r} missing from: {message}"


def test_every_broken_fixture_has_a_case():
    assert sorted(p.name for p in BROKEN.iterdir()) == sorted(CASES)


def test_missing_overlay_directory_is_an_error(tmp_path):
    with pytest.raises(MatrixError, match="overlay directory does not exist"):
        load_matrix(overlays=[tmp_path / "nope"])


def test_shipped_matrix_missing_a_file_is_an_error(tmp_path):
    (tmp_path / "cuda.toml").write_text("")
    with pytest.raises(MatrixError, match="shipped matrix is missing"):
        load_matrix(shipped=tmp_path, overlays=[])


def test_cli_reports_broken_overlay_in_one_line_with_exit_2():
    proc = run_cli("matrix", "check", env={"CUDAENV_MATRIX_PATH": str(BROKEN / "wrong-type"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "tensorflow.toml" in lines[0] and "field 'python'" in lines[0]
    assert "Traceback" not in proc.stderr
