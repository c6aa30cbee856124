"""A jaxlib pin's local label names the CUDA of its build, as torch's ``+cu110`` does: jaxlib
0.1.x spelled it ``+cuda101`` .. ``+cuda112`` (JAX's install docs of the time: ``jaxlib==0.1.61+cuda110
-f https://storage.googleapis.com/jax-releases/jax_releases.html``), later releases ``+cuda11.cudnn86``
and ``+cuda12.cudnn89`` (a CUDA major). init reads that CUDA instead of choosing another build, whose
jaxlib pin would then contradict the project's own line."""

from __future__ import annotations

import pytest

from cudaenv.project.detect import detect_project


@pytest.mark.parametrize(("lines", "cuda"), [
    ("jax==0.2.10\njaxlib==0.1.61+cuda101\n", "10.1"),
    ("jax==0.2.10\njaxlib==0.1.61+cuda110\n", "11.0"),
    ("jax==0.4.20\njaxlib==0.4.20+cuda11.cudnn86\n", "11.*"),
    ("jax==0.4.20\njaxlib==0.4.20+CUDA12.cudnn89\n", "12.*"),
    ("jax==0.4.20\njaxlib==0.4.20\n", None),
])
def test_the_jaxlib_label_names_the_cuda(tmp_path, lines, cuda):
    (tmp_path / "requirements.txt").write_text(lines)
    found = detect_project(tmp_path)
    assert found.cuda == cuda and found.frameworks == {"jax": "==0.2.10" if "0.2.10" in lines else "==0.4.20"}
