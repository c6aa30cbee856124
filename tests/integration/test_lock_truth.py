"""`cudaenv lock` against an index that serves the wrong build: the framework index pointed at
PyPI (the obvious mirror), whose torch is the CUDA 13 build with CUDA 13 libraries, under a CUDA
12.6 stack. uv pins it happily; cudaenv must refuse to write that lock, naming the index that
served it and the one to use."""

from __future__ import annotations

import pytest

from tests.integration.test_init_lock import run_cli

pytestmark = [pytest.mark.network]  # uv resolves against the loopback index

CUDA13_LIBS = [("cuda-toolkit", "13.0.3.0"), ("nvidia-cuda-runtime", "13.0.96"), ("nvidia-cudnn-cu13", "9.24.0.43")]


@pytest.fixture
def pypi_like_index(package_index):
    for name, version in CUDA13_LIBS:
        package_index.add(name, version)
    package_index.add("torch", "2.9.1", requires=[f"{n}=={v}" for n, v in CUDA13_LIBS])
    package_index.add("torchvision", "0.24.1", requires=["torch==2.9.1"])
    package_index.add("torchaudio", "2.9.1", requires=["torch==2.9.1"])
    return package_index


def test_a_lock_whose_pins_carry_another_cuda_is_never_written(tmp_path, pypi_like_index):
    (tmp_path / "cudaenv.toml").write_text(
        '[project]\nname = "truth"\npython = "3.11"\n\n[frameworks]\ntorch = "==2.9.1"\n\n[cuda]\nversion = "12.6"\n\n'
        '[target]\ndriver = "560.35.03"\ngpus = ["A100"]\n')
    proc = run_cli("lock", tmp_path, index=pypi_like_index)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert not (tmp_path / "cudaenv.lock").exists()
    assert "contradict the stack (CUDA 12.6" in proc.stderr
    assert "cuda-toolkit==13.0.3.0 carries CUDA 13.0" in proc.stderr
    assert f"came from {pypi_like_index.url}" in proc.stderr  # the index that served the wrong build
    assert "https://download.pytorch.org/whl/cu126" in proc.stderr  # and where to point instead
    assert "Traceback" not in proc.stderr
