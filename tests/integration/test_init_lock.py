"""`cudaenv init` and `cudaenv lock`, end to end through the command line.

Every test copies a fixture project (tests/fixtures/projects/) into a temporary directory and runs
``python -m cudaenv`` on it in a subprocess. The target host is always declared (``--driver`` /
``--gpu`` with ``--no-detect``, or the project's ``[target]``), so nothing depends on this machine,
and ``CUDAENV_MATRIX_PATH`` is empty unless a test adds an overlay, so a user's overlays never leak
in. Locks resolve with ``uv pip compile`` against the ``package_index`` fixture (a PEP 503 index on
loopback), which serves tiny stand-in wheels carrying the real packages' names, versions and
dependency metadata: every framework release in the fixtures' pin ranges, with its companions, so
whichever build the stack picks is there and the lock shows the stack's pin winning.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from tests.support.cli import cudaenv, isolated_env
from tests.support.lockfile import lock_view

PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "projects"

# Declared target hosts (driver branch + GPU model); nothing is detected.
HOST_550_A100 = ("--driver", "550.54.15", "--gpu", "A100", "--no-detect")
HOST_535_T4 = ("--driver", "535.104.05", "--gpu", "T4", "--no-detect")
HOST_535_A100 = ("--driver", "535.104.05", "--gpu", "A100", "--no-detect")
HOST_470_RTX3090 = ("--driver", "470.256.02", "--gpu", "RTX 3090", "--no-detect")

# --- stand-in wheels -----------------------------------------------------------------------------

TORCH_DEPS = ["filelock", "typing-extensions>=4.8.0", "fsspec"]
# torch release -> (torchvision, torchaudio) built with it; each companion pins its torch exactly
TORCH_RELEASES = {"2.0.1": ("0.15.2", "2.0.2"), "2.4.0": ("0.19.0", "2.4.0"), "2.4.1": ("0.19.1", "2.4.1"),
                  "2.5.0": ("0.20.0", "2.5.0"), "2.5.1": ("0.20.1", "2.5.1")}
# tensorflow release -> (keras range, the cuDNN wheel its [and-cuda] extra pulls in)
TENSORFLOW_RELEASES = {
    "2.14.0": (">=2.14.0,<2.15", "nvidia-cudnn-cu11==8.7.0.84"),
    "2.14.1": (">=2.14.0,<2.15", "nvidia-cudnn-cu11==8.7.0.84"),
    "2.15.0": (">=2.15.0,<2.16", "nvidia-cudnn-cu12==8.9.4.25"),
    "2.15.0.post1": (">=2.15.0,<2.16", "nvidia-cudnn-cu12==8.9.4.25"),
    "2.15.1": (">=2.15.0,<2.16", "nvidia-cudnn-cu12==8.9.4.25"),
}
LIBRARIES: list[tuple[str, str, list[str]]] = [
    ("filelock", "3.15.4", []),
    ("typing-extensions", "4.12.2", []),
    ("fsspec", "2024.6.1", []),
    ("numpy", "1.26.4", []),
    ("pillow", "10.4.0", []),
    ("packaging", "24.1", []),
    ("pyyaml", "6.0.2", []),
    ("tqdm", "4.66.5", []),
    ("regex", "2024.7.24", []),
    ("six", "1.16.0", []),
    ("certifi", "2024.8.30", []),
    ("charset-normalizer", "3.3.2", []),
    ("idna", "3.8", []),
    ("urllib3", "2.2.2", []),
    ("requests", "2.32.3", ["charset-normalizer>=2,<4", "idna>=2.5,<4", "urllib3>=1.21.1,<3", "certifi>=2017.4.17"]),
    ("safetensors", "0.4.4", []),
    ("huggingface-hub", "0.24.6", ["filelock", "fsspec>=2023.5.0", "packaging>=20.9", "pyyaml>=5.1", "requests",
                                   "tqdm>=4.42.1", "typing-extensions>=3.7.4.3"]),
    ("tokenizers", "0.19.1", ["huggingface-hub>=0.16.4,<1.0"]),
    ("transformers", "4.44.2", ["filelock", "huggingface-hub>=0.23.2,<1.0", "numpy>=1.17", "packaging>=20.0",
                                "pyyaml>=5.1", "regex!=2019.12.17", "requests", "safetensors>=0.4.1",
                                "tokenizers>=0.19,<0.20", "tqdm>=4.27"]),
    ("timm", "1.0.9", ["torch", "torchvision", "pyyaml", "huggingface-hub", "safetensors"]),
    # xformers builds pin one torch exactly (0.0.28.post1 is built against torch 2.4.1)
    ("xformers", "0.0.28.post1", ["numpy", "torch==2.4.1"]),
    ("keras", "2.14.0", []),
    ("keras", "2.15.0", []),
    ("protobuf", "3.20.3", []),
    ("protobuf", "4.25.4", []),
    ("nvidia-cudnn-cu11", "8.7.0.84", []),
    ("nvidia-cudnn-cu12", "8.9.4.25", []),
    ("onnx", "1.16.2", ["numpy>=1.20", "protobuf>=3.20.2"]),
    ("flatbuffers", "24.3.25", []),
    ("tf2onnx", "1.16.1", ["numpy>=1.14.1", "onnx>=1.4.1", "requests", "six", "flatbuffers>=1.12", "protobuf~=3.20"]),
    ("fastrlock", "0.8.2", []),
    ("cupy-cuda12x", "13.3.0", ["numpy>=1.22,<2.3", "fastrlock>=0.5"]),
]


def stand_in_wheels() -> list[tuple[str, str, list[str]]]:
    wheels = []
    for torch, (vision, audio) in TORCH_RELEASES.items():
        wheels += [("torch", torch, TORCH_DEPS),
                   ("torchvision", vision, [f"torch=={torch}", "numpy", "pillow>=5.3.0,!=8.3.*"]),
                   ("torchaudio", audio, [f"torch=={torch}"])]
    for version, (keras, cudnn) in TENSORFLOW_RELEASES.items():
        wheels.append(("tensorflow", version, ["numpy>=1.23.5,<2.0.0", "protobuf>=3.20.3,<5.0.0dev",
                                               f"keras{keras}", f'{cudnn}; extra == "and-cuda"']))
    return wheels + LIBRARIES


def publish(index, *, leave_out: tuple[str, ...] = ()):
    for name, version, requires in stand_in_wheels():
        if name not in leave_out:
            index.add(name, version, requires=requires)
    return index


@pytest.fixture
def index(package_index):
    """The loopback index serving every stand-in the fixture projects need."""
    return publish(package_index)


# --- running the CLI -----------------------------------------------------------------------------

def run_cli(*args, index=None, overlay: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in isolated_env(overlay=overlay).items() if not k.startswith(("UV_", "PIP_"))}
    if index is not None:
        env["CUDAENV_PYTHON_INDEX"] = env["CUDAENV_FRAMEWORK_INDEX"] = index.url
        env["UV_CACHE_DIR"] = str(index.root.with_name(index.root.name + "-uv-cache"))  # not the user's
    return cudaenv(*args, env=env, timeout=180)


def copy_project(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(PROJECTS / name, tmp_path / name))


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and directory under root, hidden ones included."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def read_toml(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def pins(lock: dict) -> dict[str, str]:
    """The lock's pinned requirements as {normalized name: version}."""
    out = {}
    for line in lock["requirements"]["pinned"]:
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", line
        out[re.sub(r"[-_.]+", "-", requirement.name).lower()] = spec.version
    return out


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("cudaenv: error: "), lines[0]
    return lines[0]


def no_temporary_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp") or ".cudaenv" in p.name)


def in_range(version: str, spec: str) -> bool:
    return SpecifierSet(spec).contains(version, prereleases=True)


def init_ok(project: Path, *host, index) -> subprocess.CompletedProcess:
    proc = run_cli("init", project, *host, index=index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


# --- init: PyTorch + transformers (requirements.txt) ----------------------------------------------

def test_init_torch_project_writes_config_with_detected_pins_and_declared_target(tmp_path, index):
    project = copy_project("torch-transformers", tmp_path)
    init_ok(project, *HOST_550_A100, index=index)

    config = read_toml(project / "cudaenv.toml")
    assert config["project"]["python"] == "3.11"  # from .python-version
    assert config["project"]["requirements"] == ["requirements.txt"]
    assert SpecifierSet(config["frameworks"]["torch"]) == SpecifierSet(">=2.4,<2.6")
    assert "transformers" not in config["frameworks"]  # not a framework: it stays in requirements.txt
    assert config["target"] == {"driver": "550.54.15", "gpus": ["A100"]}


def test_init_torch_project_lock_pins_the_stack_build_with_transformers_and_its_dependencies(tmp_path, index):
    project = copy_project("torch-transformers", tmp_path)
    init_ok(project, *HOST_550_A100, index=index)

    lock = lock_view(project / "cudaenv.lock")
    chosen = lock["stack"]["frameworks"]
    pinned = pins(lock)
    assert in_range(chosen["torch"], ">=2.4,<2.6")
    # several torch releases in range are on the index: the lock takes the stack's, with its companions
    assert pinned["torch"] == chosen["torch"]
    assert pinned["torchvision"] == chosen["torchvision"]
    assert pinned["transformers"] == "4.44.2"
    assert pinned["tokenizers"] == "0.19.1" and pinned["huggingface-hub"] == "0.24.6"  # transitive
    # the override is the environment's (a mirror, this test's index): the lock keeps the configured one
    assert lock["requirements"]["python_index"] == "https://pypi.org/simple"


def test_init_prints_what_it_found_what_it_chose_and_the_next_command(tmp_path, index):
    project = copy_project("torch-transformers", tmp_path)
    proc = init_ok(project, *HOST_550_A100, index=index)

    lines = proc.stdout.splitlines()
    found = next(line for line in lines if line.startswith("found: "))
    assert "torch" in found and "(requirements.txt)" in found and "Python 3.11 (.python-version)" in found
    chosen = lock_view(project / "cudaenv.lock")["stack"]["frameworks"]["torch"]
    assert any(line.startswith(f"✓ torch {chosen}") for line in lines), proc.stdout
    assert any(line.startswith("wrote ") and str(project / "cudaenv.toml") in line
               and str(project / "cudaenv.lock") in line for line in lines)
    assert lines[-1] == f"next: cudaenv build {project}"


def test_init_json_is_one_object_naming_the_files_it_wrote(tmp_path, index):
    project = copy_project("torch-transformers", tmp_path)
    proc = init_ok(project, *HOST_550_A100, "--json", index=index)

    payload = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    assert isinstance(payload, dict) and payload["ok"] is True
    assert payload["written"] == [str(project / "cudaenv.toml"), str(project / "cudaenv.lock")]
    assert all(Path(p).is_file() for p in payload["written"])
    lock = lock_view(project / "cudaenv.lock")
    assert payload["resolution"]["stack"]["frameworks"]["torch"] == lock["stack"]["frameworks"]["torch"]
    assert any("torch" in note for note in payload["found"])


def test_lock_written_by_init_is_current_for_lock_check(tmp_path, index):
    project = copy_project("torch-transformers", tmp_path)
    init_ok(project, *HOST_550_A100, index=index)

    proc = run_cli("lock", project, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_init_leaves_only_the_config_and_the_lock_behind(tmp_path, index):
    project = copy_project("torch-transformers", tmp_path)
    before = set(snapshot(project))
    init_ok(project, *HOST_550_A100, index=index)

    assert set(snapshot(project)) - before == {"cudaenv.toml", "cudaenv.lock"}


# --- init: TensorFlow 2.15 (pyproject.toml) -------------------------------------------------------

def test_init_tensorflow_pyproject_takes_pins_and_python_range_from_pyproject(tmp_path, index):
    project = copy_project("tensorflow-pyproject", tmp_path)
    init_ok(project, *HOST_535_T4, index=index)

    config = read_toml(project / "cudaenv.toml")
    assert SpecifierSet(config["frameworks"]["tensorflow"]) == SpecifierSet("==2.15.*")
    assert SpecifierSet(config["project"]["python"]) == SpecifierSet(">=3.10,<3.12")
    # its other dependencies live in pyproject.toml, so that is the requirements file
    assert config["project"]["requirements"] == ["pyproject.toml"]


def test_init_tensorflow_pyproject_locks_tensorflow_with_its_cuda_extra_and_project_dependencies(tmp_path, index):
    project = copy_project("tensorflow-pyproject", tmp_path)
    init_ok(project, *HOST_535_T4, index=index)

    lock = lock_view(project / "cudaenv.lock")
    tensorflow = lock["stack"]["frameworks"]["tensorflow"]
    pinned = pins(lock)
    assert in_range(tensorflow, "==2.15.*")
    assert lock["stack"]["python"] == "3.11"  # requires-python <3.12 and TF 2.15's newest wheels
    assert pinned["tensorflow"] == tensorflow
    assert pinned["nvidia-cudnn-cu12"] == "8.9.4.25"  # only through tensorflow[and-cuda]
    assert pinned["keras"] == "2.15.0"
    assert pinned["pillow"] == "10.4.0" and "tqdm" in pinned  # [project] dependencies


# --- init: both frameworks ------------------------------------------------------------------------

def test_init_with_torch_and_tensorflow_chooses_one_cuda_and_one_cudnn_both_are_built_for(tmp_path, index):
    project = copy_project("both-frameworks", tmp_path)
    init_ok(project, *HOST_535_A100, index=index)

    stack = lock_view(project / "cudaenv.lock")["stack"]
    assert stack["frameworks"]["torch"] == "2.0.1"
    assert in_range(stack["frameworks"]["tensorflow"], ">=2.14,<2.15")
    # TensorFlow 2.14: CUDA 11.8 and cuDNN 8.7; torch 2.0.1's cu118 build bundles cuDNN 8.7.0.84 too
    assert stack["cuda"] == "11.8" and stack["cudnn"] == "8.7"
    assert "torch==2.0.1" in stack["requirements"]
    assert f"tensorflow[and-cuda]=={stack['frameworks']['tensorflow']}" in stack["requirements"]


def test_init_refuses_torch_and_tensorflow_that_need_two_cudnn_versions(tmp_path, index):
    # torch 2.5.1 (cu118) bundles cuDNN 9.1.0.70; tensorflow[and-cuda] 2.14 pins nvidia-cudnn-cu11==8.7.0.84:
    # one environment holds one cuDNN, so nothing is written and the conflict is named
    project = copy_project("both-frameworks", tmp_path)
    requirements = project / "requirements.txt"
    requirements.write_text(requirements.read_text().replace("torch==2.0.1", "torch==2.5.1"))
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_535_A100, index=index)
    assert proc.returncode == 1
    assert "cuDNN" in proc.stdout and "cannot share one environment" in proc.stdout
    assert snapshot(project) == before


def test_init_with_torch_and_tensorflow_locks_both_with_the_project_requirements(tmp_path, index):
    project = copy_project("both-frameworks", tmp_path)
    init_ok(project, *HOST_535_A100, index=index)

    lock = lock_view(project / "cudaenv.lock")
    pinned = pins(lock)
    assert pinned["torch"] == "2.0.1"
    assert pinned["tensorflow"] == lock["stack"]["frameworks"]["tensorflow"]
    assert pinned["keras"] == "2.14.0"
    assert pinned["nvidia-cudnn-cu11"] == "8.7.0.84"
    assert pinned["tf2onnx"] == "1.16.1"
    assert pinned["protobuf"] == "3.20.3"  # tf2onnx's ~=3.20, resolved together with tensorflow's range


# --- init: no framework (plain CUDA runtime) ------------------------------------------------------

def test_init_without_a_framework_says_so_and_chooses_a_cuda_runtime_image(tmp_path, index):
    project = copy_project("plain-cuda", tmp_path)
    proc = init_ok(project, *HOST_535_T4, index=index)

    assert "✓ CUDA runtime only (no framework)" in proc.stdout
    stack = lock_view(project / "cudaenv.lock")["stack"]
    assert stack["flavor"] == "runtime"
    assert stack["frameworks"] == {}
    assert stack["base_image"].startswith("nvidia/cuda:") and "-runtime-" in stack["base_image"]
    assert read_toml(project / "cudaenv.toml")["frameworks"] == {}


def test_init_without_a_framework_locks_the_project_requirements(tmp_path, index):
    project = copy_project("plain-cuda", tmp_path)
    init_ok(project, *HOST_535_T4, index=index)

    assert pins(lock_view(project / "cudaenv.lock")) == {"cupy-cuda12x": "13.3.0", "fastrlock": "0.8.2",
                                                         "numpy": "1.26.4"}


# --- init: pins that admit no stack ---------------------------------------------------------------

def test_init_whose_pins_clash_with_the_host_exits_1_and_leaves_the_directory_unchanged(tmp_path):
    project = copy_project("pins-clash-host", tmp_path)
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_470_RTX3090)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert snapshot(project) == before


def test_init_whose_pins_clash_with_the_host_says_why_and_that_nothing_was_written(tmp_path):
    project = copy_project("pins-clash-host", tmp_path)
    proc = run_cli("init", project, *HOST_470_RTX3090)

    assert "no stack fits" in proc.stdout
    assert "driver 470.256.02" in proc.stdout
    assert ">= 525.60.13" in proc.stdout  # CUDA 12.x needs at least the 12.x minor-version floor
    assert "nothing written" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_init_json_when_no_stack_fits_is_one_object_with_problems_and_nothing_written(tmp_path):
    project = copy_project("pins-clash-host", tmp_path)
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_470_RTX3090, "--json")

    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["written"] == []
    assert payload["resolution"]["stack"] is None
    assert any(p["code"] == "driver-too-old" for p in payload["resolution"]["problems"])
    assert snapshot(project) == before


def test_init_takes_the_torch_release_a_pinned_xformers_requires(tmp_path, index):
    """xformers 0.0.28.post1 needs torch==2.4.1: the resolver no longer picks the newest torch in
    >=2.4,<2.6 (2.5.1), which uv then refused; the dependency graph decides the series."""
    project = copy_project("torch-transformers", tmp_path)
    with open(project / "requirements.txt", "a") as handle:
        handle.write("xformers==0.0.28.post1\n")
    proc = run_cli("init", project, *HOST_550_A100, index=index)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torch >=2.4.0,<=2.4.1: what xformers==0.0.28.post1 allows (dependency graph)" in proc.stdout
    lock = lock_view(project / "cudaenv.lock")
    assert lock["stack"]["frameworks"]["torch"] == "2.4.1" and "xformers==0.0.28.post1" in lock["requirements"]["pinned"]


def test_init_whose_requirements_conflict_with_the_chosen_build_writes_nothing(tmp_path, index):
    # xformers 0.0.28.post1 needs torch==2.4.1, and the project also pins torch 2.5.1 itself
    project = copy_project("torch-transformers", tmp_path)
    with open(project / "requirements.txt", "a") as handle:
        handle.write("xformers==0.0.28.post1\ntorch==2.5.1\n")
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_550_A100, index=index)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "xformers" in proc.stderr
    assert snapshot(project) == before


# --- init: existing configuration -----------------------------------------------------------------

def test_init_refuses_to_overwrite_an_existing_cudaenv_toml_without_force(tmp_path):
    project = copy_project("configured-torch", tmp_path)
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_550_A100, "--no-lock")

    assert proc.returncode == 2
    message = one_line_error(proc)
    assert str(project / "cudaenv.toml") in message and "--force" in message
    assert snapshot(project) == before


def test_init_refuses_when_pyproject_already_configures_cudaenv(tmp_path):
    project = copy_project("configured-pyproject", tmp_path)
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_535_T4, "--no-lock")

    assert proc.returncode == 2
    message = one_line_error(proc)
    assert str(project / "pyproject.toml") in message and "--force" in message
    assert snapshot(project) == before


def test_init_force_overwrites_an_existing_config(tmp_path):
    project = copy_project("configured-torch", tmp_path)
    original = (project / "cudaenv.toml").read_text()
    proc = run_cli("init", project, "--force", "--no-lock", "--driver", "535.104.05", "--gpu", "T4", "--no-detect")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    rewritten = (project / "cudaenv.toml").read_text()
    assert rewritten != original
    assert read_toml(project / "cudaenv.toml")["target"] == {"driver": "535.104.05", "gpus": ["T4"]}
    assert not (project / "cudaenv.lock").exists()  # --no-lock


# --- bad input: exit 2, one line naming the problem -----------------------------------------------

BAD_CONFIGS = [
    ("bad-invalid-toml", ["invalid TOML", "line 3"]),
    ("bad-unknown-key", ["unknown key 'project.pyhton'", "did you mean 'python'"]),
    ("bad-wrong-type", ["frameworks.torch", "got 2.5"]),
    ("bad-missing-requirements", ["project.requirements", "'requirements-gpu.txt' does not exist"]),
]


@pytest.mark.parametrize("check", [False, True], ids=["lock", "lock-check"])
@pytest.mark.parametrize(("name", "fragments"), BAD_CONFIGS, ids=[n for n, _ in BAD_CONFIGS])
def test_lock_on_an_invalid_config_exits_2_with_one_line_naming_file_and_problem(tmp_path, name, fragments, check):
    project = copy_project(name, tmp_path)
    before = snapshot(project)
    proc = run_cli("lock", project, *(["--check", "--json"] if check else []))

    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = one_line_error(proc)
    assert str(project / "cudaenv.toml") in message
    for fragment in fragments:
        assert fragment in message
    assert snapshot(project) == before


def test_init_on_an_invalid_pyproject_exits_2_naming_it(tmp_path):
    project = copy_project("bad-invalid-pyproject", tmp_path)
    before = snapshot(project)
    proc = run_cli("init", project, *HOST_550_A100, "--no-lock")

    assert proc.returncode == 2
    message = one_line_error(proc)
    assert str(project / "pyproject.toml") in message and "invalid TOML" in message
    assert snapshot(project) == before


def test_lock_without_a_config_exits_2_pointing_at_init(tmp_path):
    project = copy_project("torch-transformers", tmp_path)
    proc = run_cli("lock", project)

    assert proc.returncode == 2
    message = one_line_error(proc)
    assert "no cudaenv.toml" in message and "cudaenv init" in message


# --- lock -----------------------------------------------------------------------------------------

@pytest.fixture
def locked(tmp_path, index):
    """configured-torch, locked once against the stand-in index."""
    project = copy_project("configured-torch", tmp_path)
    proc = run_cli("lock", project, index=index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project


def test_lock_pins_the_stack_build_together_with_the_project_requirements(locked):
    lock = lock_view(locked / "cudaenv.lock")
    pinned = pins(lock)
    assert pinned["torch"] == lock["stack"]["frameworks"]["torch"]
    # torchvision is the project's (requirements.txt), not the stack's: uv pins the one built for its torch
    assert "torchvision" not in lock["stack"]["frameworks"]
    assert pinned["torchvision"] == TORCH_RELEASES[pinned["torch"]][0]
    assert "torchaudio" not in pinned  # named nowhere, so not installed
    assert pinned["timm"] == "1.0.9" and pinned["safetensors"] == "0.4.4"
    assert lock["target"]["driver"] == "550.54.15" and lock["target"]["gpus"] == ["A100"]  # the config's [target]


def test_lock_reports_what_it_locked_and_where(tmp_path, index):
    project = copy_project("configured-torch", tmp_path)
    proc = run_cli("lock", project, index=index)

    lock = lock_view(project / "cudaenv.lock")
    first, second = proc.stdout.strip().splitlines()
    assert first.startswith(f"locked vision-service: torch {lock['stack']['frameworks']['torch']}")
    assert f"{len(lock['requirements']['pinned'])} pinned requirements" in first
    assert second == f"wrote {project / 'cudaenv.lock'}"


def test_lock_json_is_one_object_with_the_stack_and_the_pins_it_wrote(tmp_path, index):
    project = copy_project("configured-torch", tmp_path)
    proc = run_cli("lock", project, "--json", index=index)

    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert isinstance(payload, dict) and payload["ok"] is True
    assert payload["lock"] == str(project / "cudaenv.lock")
    lock = lock_view(project / "cudaenv.lock")
    assert payload["pinned"] == lock["requirements"]["pinned"]
    assert payload["stack"]["frameworks"] == lock["stack"]["frameworks"]


def test_lock_leaves_no_temporary_files(locked):
    assert no_temporary_files(locked) == []
    assert sorted(p.name for p in locked.iterdir()) == ["cudaenv.lock", "cudaenv.toml", "requirements.txt"]


def test_relock_of_an_unchanged_project_is_byte_for_byte_identical(locked, index):
    first = (locked / "cudaenv.lock").read_bytes()
    proc = run_cli("lock", locked, index=index)

    assert proc.returncode == 0, proc.stderr
    assert (locked / "cudaenv.lock").read_bytes() == first


def test_failed_lock_leaves_the_existing_lock_byte_for_byte_unchanged(locked, index):
    before = (locked / "cudaenv.lock").read_bytes()
    with open(locked / "requirements.txt", "a") as handle:
        handle.write("xformers==0.0.28.post1\n")  # needs torch==2.4.1; the stack's torch is newer
    proc = run_cli("lock", locked, index=index)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "xformers" in proc.stderr and "Traceback" not in proc.stderr
    assert (locked / "cudaenv.lock").read_bytes() == before
    assert no_temporary_files(locked) == []


def test_lock_with_a_package_missing_from_the_index_fails_and_writes_no_lock(tmp_path, package_index):
    index = publish(package_index, leave_out=("timm",))
    project = copy_project("configured-torch", tmp_path)
    proc = run_cli("lock", project, index=index)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "timm" in proc.stderr
    assert not (project / "cudaenv.lock").exists()
    assert no_temporary_files(project) == []


def test_lock_when_the_config_admits_no_stack_exits_1_and_writes_no_lock(tmp_path, index):
    project = copy_project("configured-torch", tmp_path)
    config = project / "cudaenv.toml"
    config.write_text(config.read_text().replace('driver = "550.54.15"', 'driver = "418.87.01"'))
    proc = run_cli("lock", project, index=index)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no stack fits" in proc.stdout
    assert not (project / "cudaenv.lock").exists()


def test_lock_reads_the_configuration_from_pyproject_tool_cudaenv(tmp_path, index):
    project = copy_project("configured-pyproject", tmp_path)
    proc = run_cli("lock", project, index=index)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_view(project / "cudaenv.lock")
    assert lock["stack"]["flavor"] == "runtime"
    assert lock["target"]["driver"] == "535.104.05"
    assert pins(lock)["cupy-cuda12x"] == "13.3.0"


# --- lock --check ---------------------------------------------------------------------------------

def test_lock_check_exits_0_when_the_lock_is_current(locked, index):
    proc = run_cli("lock", locked, "--check", index=index)  # the index its pins' wheels are checked on

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to date" in proc.stdout


def test_lock_check_json_is_one_object_with_no_stale_reasons_when_current(locked, index):
    proc = run_cli("lock", locked, "--check", "--json", index=index)

    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {"ok": True, "lock": str(locked / "cudaenv.lock"), "stale": []}


def test_lock_check_exits_1_after_a_requirements_edit(locked):
    with open(locked / "requirements.txt", "a") as handle:
        handle.write("tqdm>=4.66\n")
    proc = run_cli("lock", locked, "--check")

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "requirements.txt changed since the lock was written" in proc.stdout  # the input, by name


def test_lock_check_exits_1_after_a_config_edit(locked):
    config = locked / "cudaenv.toml"
    config.write_text(config.read_text().replace("system_packages = []", 'system_packages = ["libgl1"]'))
    proc = run_cli("lock", locked, "--check")

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the configuration in cudaenv.toml changed" in proc.stdout


TORCH_OVERLAY = """
[[release]]
version = "2.5.99"
python = ["3.11"]
source = "test fixture ; read 2026-11-21"

[[release.variant]]
cuda = "12.4"
index_url = "https://download.pytorch.org/whl/cu124"
cudnn = "9.1.0.70"
compute_capabilities = ["8.0", "9.0"]
"""


def test_lock_check_exits_1_after_a_matrix_overlay_changes_the_resolution(locked, tmp_path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "torch.toml").write_text(TORCH_OVERLAY)  # a newer torch inside the config's >=2.4,<2.6
    proc = run_cli("lock", locked, "--check", "--json", overlay=overlay)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    stale = json.loads(proc.stdout)["stale"]
    assert any("resolved stack changed" in reason and "frameworks" in reason for reason in stale), stale


def test_lock_check_json_lists_why_the_lock_is_stale(locked):
    with open(locked / "requirements.txt", "a") as handle:
        handle.write("tqdm>=4.66\n")
    proc = run_cli("lock", locked, "--check", "--json")

    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["lock"] == str(locked / "cudaenv.lock")
    assert payload["stale"] and all(isinstance(reason, str) for reason in payload["stale"])


def test_lock_check_never_writes_the_lock(locked):
    with open(locked / "requirements.txt", "a") as handle:
        handle.write("tqdm>=4.66\n")
    before = snapshot(locked)
    run_cli("lock", locked, "--check")

    assert snapshot(locked) == before


def test_lock_check_exits_1_when_there_is_no_lock(tmp_path):
    project = copy_project("configured-torch", tmp_path)
    proc = run_cli("lock", project, "--check")

    assert proc.returncode == 1
    assert "no cudaenv.lock" in proc.stdout
