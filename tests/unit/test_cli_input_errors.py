"""Bad input on the command line and in project files: exit 2, one line naming what was wrong
and what was expected, no traceback (DESIGN's exit-code contract)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cudaenv.resolver import driver as drv
from tests.support.cli import cudaenv as run_cli


def cudaenv(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_DRIVER") and k != "CUDAENV_GPUS"}
    return run_cli(*args, cwd=cwd, env=env)


@pytest.mark.parametrize("args, expected", [
    (("resolve", "--torch", "2.6", "--driver", ""), "Invalid value for '--driver': must not be empty"),
    (("resolve", "--torch", "2.6", "--gpu", " "), "Invalid value for '--gpu': must not be empty"),
    (("resolve", "--torch", "2.6", "--driver", "550.54.15", "--os", "ubuntu2205"),
     "os 'ubuntu2205' is not an nvidia/cuda image OS in the matrix; nearest: ubuntu22.04"),
    (("publish", "--registry", "https://registry.example.com/ml", "--cuda", "12.4"),
     "--registry 'https://registry.example.com/ml': expected HOST[:PORT]/NAMESPACE without a scheme"),
    (("publish", "--registry", "team", "--cuda", "12.4"), "--registry 'team': expected HOST[:PORT]/NAMESPACE"),
    (("publish", "--registry", "127.0.0.1:5000/t", "--base-registry", "mirror", "--cuda", "12.4"),
     "--base-registry 'mirror': expected HOST[:PORT]/NAMESPACE"),
    (("matrix", "update", "--index", "file:///srv/pypi"), "--index 'file:///srv/pypi': expected an https:// URL"),
    (("matrix", "update", "--index", "http://pypi.example"), "--index 'http://pypi.example': expected an https:// URL"),
    # a driver is a branch of 3-4 digits and one or two more parts, as nvidia-smi prints it
    (("resolve", "--torch", "2.6", "--driver", "1.0"), "--driver: expected a driver version like 535.104.05"),
    (("resolve", "--torch", "2.6", "--driver", "535.104.05.1"), "--driver: expected a driver version like 535.104.05"),
    (("check", "--driver", "5.3.5.1", "--torch", "2.6"), "expected a driver version like 535.104.05"),
    (("matrix", "show", "driver", "0.0.0"), "driver version '0.0.0' is not a version like 535.104.05"),
    # click's own usage errors, in one line with where the usage is
    (("resolve", "/nonexistent"), "Directory '/nonexistent' does not exist. (see 'cudaenv resolve --help')"),
    (("matrix", "list", "bogus"), "'bogus' is not one of"),
    (("export", "slurm", "--runtime", "dockr"), "'dockr' is not one of 'pyxis', 'apptainer', 'docker'"),
    # counts: ASCII digits, within reason (int() reads "２" as 2 and a hundred digits as a number)
    (("export", "slurm", "--gpus", "２"), "Invalid value for '--gpus': expected a whole number from 0 to 9999"),
    (("export", "kubernetes", "--gpus", "1" * 25), "Invalid value for '--gpus': expected a whole number"),
    (("images", "--base", "bad ref"), "--base: expected one image reference"),
    # examples fit the field, and suggestions go by version order, not spelling
    (("resolve", "--python", "three"), "--python 'three': expected a version such as 3.11 or a PEP 440 "
                                       "specifier such as '>=3.10,<3.13'"),
    (("resolve", "--cuda", "x"), "expected a version such as 12.4 or a PEP 440 specifier such as '>=12.1,<13'"),
    (("resolve", "--torch", "2.4.99", "--driver", "550.54.15"), "nearest known: 2.4.0, 2.4.1 (see"),
    (("resolve", "--torch", "9.1", "--driver", "550.54.15"), "matches no release in the matrix; nearest known: "),
    # a mistyped option where the optional directory goes is the unknown option it is
    (("run", "--jsn", "--", "true"), "No such option '--jsn'"),
    (("export", "slurm", "-nodir", "--", "true"), "a directory whose name starts with '-' is written ./-nodir"),
    # click's multi-line messages fold into the one line, and the usage is named even without a context
    (("matrix", "list"), "Choose from: architecture, cuda, cudnn"),
    (("export", "slurm", "--runtime"), "Option '--runtime' requires an argument. (see 'cudaenv export slurm --help')"),
    (("resolve", "--jax", "=>0.4"), "expected a version such as 0.4.30 or a PEP 440 specifier such as '>=0.4.30,<0.5'"),
    (("resolve", "--jax", "0.4.0rc1", "--driver", "550.54.15"), "nearest known: 0.4.0, 0.4.1, 0.4.2 (see"),
])
def test_bad_option_values_exit_2_with_one_clear_line(args, expected):
    proc = cudaenv(*args)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("gpus", ["99999999999999999999999", '"99999999999999999999999"', '"0,12345"', '"２"'])
def test_a_device_index_past_any_host_is_refused_in_the_config(tmp_path: Path, gpus):
    (tmp_path / "cudaenv.toml").write_text(f'[cuda]\nversion = "12.4"\n[run]\ngpus = {gpus}\n')
    proc = cudaenv("lock", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "run.gpus" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_an_unknown_gpu_in_the_config_names_the_file_and_the_key_to_use(tmp_path: Path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "2.6"\n[target]\ndriver = "550.54.15"\n'
                                           'gpus = ["Quadro Imaginary 9000"]\n')
    proc = cudaenv("lock", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert f"{tmp_path / 'cudaenv.toml'}: target.gpus: unknown GPU 'Quadro Imaginary 9000'" in proc.stderr
    assert "target.compute_capabilities" in proc.stderr
    assert not (tmp_path / "cudaenv.lock").exists()


def test_an_empty_driver_in_the_config_is_refused_naming_the_key(tmp_path: Path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "2.6"\n[target]\ndriver = " "\n')
    proc = cudaenv("lock", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "target.driver" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("pyproject, expected", [
    ('[project]\nname = "x"\ndependencies = "torch"\n', "project.dependencies: expected a list"),
    ('[project]\nname = "x"\ndependencies = [3]\n', "project.dependencies: expected requirement strings"),
    ('[project]\nname = "x"\nrequires-python = "three"\n', "'three' is not a PEP 440 specifier"),
    ('project = 1\n', "[project] must be a table"),
])
def test_init_refuses_a_malformed_pyproject_without_writing_anything(tmp_path: Path, pyproject, expected):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    proc = cudaenv("init", str(tmp_path), "--driver", "550.54.15")
    assert proc.returncode == 2, proc.stderr
    assert f"{tmp_path / 'pyproject.toml'}: " in proc.stderr and expected in proc.stderr
    assert not (tmp_path / "cudaenv.toml").exists()


def test_the_driver_requirement_has_one_wording():
    assert drv.requirement_text("560.28.03", "525.60.13") == \
        ">= 560.28.03 natively (or >= 525.60.13 through minor-version compatibility)"
    assert drv.requirement_text("410.48", None) == ">= 410.48 natively"
    assert drv.requirement_text(None, None) == "unknown to this matrix"


def test_a_config_field_error_gives_an_example_of_that_field(tmp_path: Path):
    (tmp_path / "cudaenv.toml").write_text('[project]\npython = "three"\n')
    proc = cudaenv("resolve", str(tmp_path))
    assert proc.returncode == 2 and "project.python: expected a version such as 3.11" in proc.stderr, proc.stderr


def test_an_unknown_target_says_why_and_what_to_give(tmp_path: Path):
    proc = cudaenv("resolve", "--torch", "2.4.1", "--no-detect", cwd=tmp_path)
    first = proc.stdout.splitlines()[0]
    assert first == ("target: driver unknown; GPUs unknown (unknown: detection off; give --driver and --gpu for the "
                     "machine this is for)"), first


def test_init_over_an_unlocked_configuration_points_at_lock(tmp_path: Path):
    """`init` wrote cudaenv.toml but locking failed (an index was down): running it again should
    lead to `cudaenv lock`, not only to overwriting what was written."""
    (tmp_path / "cudaenv.toml").write_text('[cuda]\nversion = "12.4"\n')
    proc = cudaenv("init", str(tmp_path))
    assert proc.returncode == 2 and f"`cudaenv lock {tmp_path}` locks it, or pass --force" in proc.stderr
    (tmp_path / "cudaenv.lock").write_text("")
    again = cudaenv("init", str(tmp_path))
    assert again.returncode == 2 and "cudaenv lock" not in again.stderr and "--force" in again.stderr


def test_a_directory_whose_name_starts_with_a_dash_is_still_a_directory(tmp_path: Path):
    (tmp_path / "-data").mkdir()
    proc = cudaenv("export", "slurm", "-data", "--image", "r/a/b:1", "--", "true", cwd=tmp_path)
    assert proc.returncode == 2 and "-data: no cudaenv.toml" in proc.stderr, proc.stderr
