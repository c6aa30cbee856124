"""`cudaenv init` / `cudaenv lock` choose among the builds the framework index serves, follow the
CUDA the locked wheels carry where the host runs it, write a configuration that locks to what init
resolved, and install only the companions a project names (issue 23, classes 1, 2, 4 and 5).

The loopback index stands in for PyPI and for PyTorch's ``whl/cuXYZ``: its stand-in ``torch`` wheels
carry the real releases' versions and CUDA requirements, read from the matrix rows that recorded
them from PyPI (``pypi_requires``), so uv pins exactly the CUDA libraries the real index would. The last
test asks the real PyPI the same question."""

from __future__ import annotations

import os
import subprocess

import pytest
from tests.support.cli import cudaenv

from cudaenv.matrix import load_matrix
from tests.integration.test_init_lock import pins, read_toml, run_cli
from tests.support.lockfile import lock_view

pytestmark = [pytest.mark.network]  # uv resolves against the loopback index

HOST_550_A100 = ("--driver", "550.54.15", "--gpu", "A100", "--no-detect")
HOST_580_A100 = ("--driver", "580.65.06", "--gpu", "A100", "--no-detect")
CU126 = "https://download.pytorch.org/whl/cu126"


def _release(version: str):
    return next(r for r in load_matrix(overlays=[]).torch if r.version == version)


def publish_pypi_torch(index, *versions: str) -> None:
    """PyPI's torch releases as stand-ins: each requires the CUDA wheels its PyPI build requires."""
    for version in versions:
        release = _release(version)
        requires = [f"{name}{spec}" for name, spec in release.pypi_requires]
        for name, spec in release.pypi_requires:
            if not index_has(index, name, spec.lstrip("=")):
                index.add(name, spec.lstrip("="))
        index.add("torch", version, requires=requires)


def index_has(index, name: str, version: str) -> bool:
    return any(w.name.startswith(f"{name.replace('-', '_')}-{version}-") for w in index.wheels)


def write_project(root, *, requirements: str, build: str = "", frameworks: str = 'torch = "any"\n', target=HOST_580_A100):
    root.mkdir()
    (root / "requirements.txt").write_text(requirements)
    driver, gpu = target[1], target[3]
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "index-test"\nrequirements = ["requirements.txt"]\n\n[frameworks]\n{frameworks}\n'
        f'[target]\ndriver = "{driver}"\ngpus = ["{gpu}"]\n\n[build]\n{build}')
    return root


def lock(root, index):
    """`cudaenv lock` with the loopback index as the only index (python and framework)."""
    return run_cli("lock", root, index=index)


# --- class 1: the index decides which builds exist ------------------------------------------------

def test_pypi_as_framework_index_locks_the_cuda_build_pypi_serves(tmp_path, package_index):
    """R550 + A100, unpinned torch, PyPI only: PyPI's torch 2.14.1 is its CUDA 13.0 build, which R550
    cannot run, and PyPI serves no cu126 build; the newest torch PyPI serves for a CUDA R550 runs is
    2.10.0 (CUDA 12.8, by minor-version compatibility)."""
    publish_pypi_torch(package_index, "2.10.0", "2.14.1")
    root = write_project(tmp_path / "p", requirements="torch\n", target=HOST_550_A100,
                         build=f'framework_index = "{package_index.url}"\nframework_index_mirrors = "pypi"\n')
    proc = lock(root, package_index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    locked = lock_view(root / "cudaenv.lock")
    assert locked["stack"]["frameworks"] == {"torch": "2.10.0"}
    assert locked["stack"]["cuda"] == "12.8" and locked["stack"]["driver_compatibility"] == "minor-version"
    assert pins(locked)["torch"] == "2.10.0" and pins(locked)["nvidia-cuda-runtime-cu12"].startswith("12.8.")
    check = run_cli("lock", "--check", root, index=package_index)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_mirror_of_a_pytorch_index_locks_that_indexs_build(tmp_path, package_index):
    """R580 + A100 would run torch 2.15.0 (CUDA 13.0); a mirror of whl/cu126 serves only cu126 builds,
    so the lock is the newest torch built for CUDA 12.6: 2.14.1+cu126."""
    package_index.add("nvidia-cuda-runtime-cu12", "12.6.77")
    package_index.add("torch", "2.14.1+cu126", requires=["nvidia-cuda-runtime-cu12==12.6.77"])
    root = write_project(tmp_path / "p", requirements="torch\n",
                         build=f'framework_index = "{package_index.url}"\nframework_index_mirrors = "{CU126}"\n')
    proc = lock(root, package_index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    locked = lock_view(root / "cudaenv.lock")
    assert locked["stack"]["frameworks"] == {"torch": "2.14.1"} and locked["stack"]["cuda"] == "12.6"
    assert locked["stack"]["index_urls"] == [CU126]
    assert pins(locked)["torch"] == "2.14.1+cu126"


def test_a_pin_the_index_does_not_serve_is_refused_naming_what_it_serves(tmp_path, package_index):
    root = write_project(tmp_path / "p", requirements="numpy\n", frameworks='torch = "==2.10.0+cu126"\n',
                         build=f'framework_index = "{package_index.url}"\nframework_index_mirrors = "pypi"\n')
    proc = lock(root, package_index)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the framework index (PyPI) serves no build of torch 2.10.0 that the project allows" in proc.stdout
    assert "it serves 2.10.0 for CUDA 12.8" in proc.stdout
    assert CU126 in proc.stdout  # where that build is, and a fix naming it
    assert not (root / "cudaenv.lock").exists()


# --- class 2: the wheels' CUDA is the truth ---------------------------------------------------------

def test_the_lock_adopts_a_cuda_the_wheels_carry_when_the_host_runs_it(tmp_path, package_index):
    """A mirror that does not say what it mirrors: the stack is chosen as CUDA 13.0 (native on R580),
    the mirror's torch 2.15.0 is PyPI's CUDA 13.2 build, and R580 runs 13.2 by minor-version
    compatibility: the lock follows the wheels and `lock --check` calls it current."""
    publish_pypi_torch(package_index, "2.15.0")
    root = write_project(tmp_path / "p", requirements="torch\n", frameworks='torch = "==2.15.0"\n',
                         build=f'framework_index = "{package_index.url}"\n')
    proc = lock(root, package_index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "carry CUDA 13.2 (cuda-toolkit==13.2.2)" in proc.stderr
    locked = lock_view(root / "cudaenv.lock")
    assert locked["stack"]["cuda"] == "13.2" and locked["stack"]["driver_compatibility"] == "minor-version"
    assert locked["stack"]["index_urls"] == ["https://download.pytorch.org/whl/cu132"]
    check = run_cli("lock", "--check", root, index=package_index)
    assert check.returncode == 0, check.stdout + check.stderr


def test_wheels_carrying_a_cuda_the_host_cannot_run_are_refused(tmp_path, package_index):
    """The same mirror on R570 with torch 2.9.1: the stack is CUDA 12.8, the wheels carry 13.0, which
    needs the R580 branch (forward compatibility is for data-center GPUs only): refused, saying why."""
    package_index.add("cuda-toolkit", "13.0.3.0")
    package_index.add("torch", "2.9.1", requires=["cuda-toolkit==13.0.3.0"])
    root = write_project(tmp_path / "p", requirements="torch\n", frameworks='torch = "==2.9.1"\n',
                         build=f'framework_index = "{package_index.url}"\n',
                         target=("--driver", "570.86.15", "--gpu", "RTX 4090"))
    proc = lock(root, package_index)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cuda-toolkit==13.0.3.0 carries CUDA 13.0" in proc.stderr
    assert "The wheels' CUDA 13.0 (cuda-toolkit==13.0.3.0) cannot be adopted: driver 570.86.15" in proc.stderr
    assert "Traceback" not in proc.stderr and not (root / "cudaenv.lock").exists()


# --- classes 4 and 5: init writes what it resolved; only the companions the project names ---------

def test_init_locks_the_stack_it_printed_with_the_companions_the_project_names(tmp_path, package_index):
    """torchaudio has no release after 2.11.0: a project using it resolves to torch 2.11.0 on
    Python 3.14, and the configuration init writes must lock exactly that (it used to say only
    torch >= 2.11, which lock resolved to 2.15.0 on Python 3.15), without adding torchvision."""
    for version in ("2.11.0", "2.15.0"):
        package_index.add("torch", version)
    package_index.add("torchaudio", "2.11.0", requires=["torch==2.11.0"])
    package_index.add("torchvision", "0.26.0", requires=["torch==2.11.0"])
    root = tmp_path / "audio"
    root.mkdir()
    (root / "requirements.txt").write_text("torch\ntorchaudio\n")
    proc = run_cli("init", root, *HOST_580_A100, index=package_index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✓ torch 2.11.0 (with torchaudio 2.11.0)" in proc.stdout
    locked = lock_view(root / "cudaenv.lock")
    assert locked["stack"]["frameworks"] == {"torch": "2.11.0", "torchaudio": "2.11.0"}
    assert locked["stack"]["python"] == "3.14"
    assert pins(locked)["torch"] == "2.11.0" and "torchvision" not in pins(locked)
    check = run_cli("lock", "--check", root, index=package_index)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_torch_only_project_gets_no_torchvision_or_torchaudio(tmp_path, package_index):
    package_index.add("torch", "2.15.0")
    package_index.add("torchvision", "0.29.2", requires=["torch>=2.14.0"])
    root = tmp_path / "plain"
    root.mkdir()
    (root / "requirements.txt").write_text("torch\n")
    proc = run_cli("init", root, *HOST_580_A100, index=package_index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    locked = lock_view(root / "cudaenv.lock")
    assert locked["stack"]["requirements"] == ["torch==2.15.0"]
    assert set(pins(locked)) == {"torch"}


# --- real PyPI ------------------------------------------------------------------------------------

def test_init_with_pypi_as_the_only_index_gives_a_lock_uv_installs(tmp_path):
    """The issue's case against the real PyPI: unpinned torch on R550 + A100."""
    root = tmp_path / "real"
    root.mkdir()
    (root / "requirements.txt").write_text("torch\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_", "PIP_"))}
    env.update(CUDAENV_CACHE_DIR=os.environ.get("CUDAENV_CACHE_DIR", ""), CUDAENV_MATRIX_PATH="",
               CUDAENV_FRAMEWORK_INDEX="https://pypi.org/simple")
    proc = cudaenv("init", str(root), *HOST_550_A100, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    locked = lock_view(root / "cudaenv.lock")
    assert locked["stack"]["frameworks"]["torch"] == "2.10.0" and locked["stack"]["cuda"] == "12.8"
    (root / "pinned.txt").write_text("\n".join(locked["requirements"]["pinned"]) + "\n")
    from uv import find_uv_bin

    dry = subprocess.run([find_uv_bin(), "pip", "install", "--dry-run", "--only-binary", ":all:", "--python-version",
                          locked["stack"]["python"], "--python-platform", locked["requirements"]["platform"],
                          "--target", str(tmp_path / "target"), "-r", str(root / "pinned.txt")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stderr
    assert "+ torch==2.10.0" in dry.stderr + dry.stdout
