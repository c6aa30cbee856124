"""A jax extra that names a CUDA major (``jax[cuda12]``, as google-deepmind/alphafold3's
pyproject.toml asks) is the project's choice of CUDA: init keeps the stack on that major, where the
newest CUDA the host runs would otherwise pull in a second set of CUDA wheels (CUDA 13 beside 12)."""

from __future__ import annotations

import pytest

from cudaenv.project.detect import detect_project


@pytest.mark.parametrize(("line", "cuda"), [
    ("jax[cuda12]==0.10.2", "12.*"),
    ("jax[cuda12_pip]==0.4.20", "12.*"),
    ("jax[cuda11_local]==0.4.10", "11.*"),
    ("jax[cuda13]>=0.8", "13.*"),
    ("jax[cpu]==0.10.2", None),
    ("jax==0.10.2", None),
])
def test_a_jax_cuda_extra_names_the_cuda_major(tmp_path, line, cuda):
    (tmp_path / "requirements.txt").write_text(f"{line}\n")
    assert detect_project(tmp_path).cuda == cuda


def test_alphafold3s_own_file_keeps_cuda_12():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fixtures" / "real-projects" / "alphafold3"
    assert detect_project(root).cuda == "12.*"
