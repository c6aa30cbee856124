"""Issue 23, class 3: the framework a project really uses, from what it names and what that brings,
and what it meant (tensorflow-cpu beside JAX keeps the GPU for JAX). Several cases are real files
from tests/fixtures/real-projects (see its SOURCES.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudaenv.project.config import ConfigError
from cudaenv.project.detect import detect_project
from cudaenv.project.intent import clashing_distributions

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "real-projects"


def real(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(CORPUS / name, target)
    return target


@pytest.mark.parametrize(("line", "framework"), [
    ("accelerate>=1.4.0", "torch"), ("peft", "torch"), ("trl", "torch"), ("transformers[torch]>=4.40", "torch"),
    ("tf_keras>=2.19.0", "tensorflow"), ("tensorflow-hub", "tensorflow"), ("tensorflow-datasets", "tensorflow"),
    ("tensorflow-addons", "tensorflow"), ("tensorflow-text", "tensorflow"), ("keras-hub", "tensorflow"),
    ("keras-cv", "tensorflow"), ("keras-nlp", "tensorflow"),
    ("flax", "jax"), ("optax", "jax"), ("chex", "jax"), ("orbax-checkpoint", "jax"), ("equinox", "jax"),
])
def test_a_framework_that_arrives_through_a_library_is_detected(tmp_path, line, framework):
    (tmp_path / "requirements.txt").write_text(f"numpy\n{line}\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {framework: ""}
    assert any(note.startswith(f"{framework} through ") and "(requirements.txt)" in note for note in found.found)


def test_a_named_framework_keeps_its_pin_when_a_library_also_brings_it(tmp_path):
    (tmp_path / "requirements.txt").write_text("accelerate\ntorch>=2.4\n")
    assert detect_project(tmp_path).frameworks == {"torch": ">=2.4"}


def test_trl_real_requirements_use_torch(tmp_path):
    assert detect_project(real("trl", tmp_path)).frameworks == {"torch": ""}


def test_keras_io_real_requirements_use_tensorflow(tmp_path):
    assert detect_project(real("keras-io", tmp_path)).frameworks == {"tensorflow": ""}


def test_diffrax_real_pyproject_uses_jax(tmp_path):
    assert set(detect_project(real("diffrax", tmp_path)).frameworks) == {"jax"}


def test_tensorflow_cpu_beside_jax_leaves_the_gpu_to_jax(tmp_path):
    """vision_transformer: 'tensorflow-cpu>=2.4.0  # Using tensorflow-cpu to have all GPU memory for JAX.'
    and tensorflow-datasets, which would otherwise bring a GPU TensorFlow."""
    found = detect_project(real("vision-transformer", tmp_path))
    assert found.frameworks == {"jax": ""}
    assert found.cpu_only == {"tensorflow"}
    assert "tensorflow-cpu>=2.4.0" in found.other_requirements


def test_alphafold_pins_jax_and_keeps_tensorflow_on_the_cpu(tmp_path):
    found = detect_project(real("alphafold", tmp_path))
    assert found.frameworks == {"jax": "==0.4.13"}
    assert "tensorflow-cpu==2.16.1" in found.other_requirements


def test_jax_cpu_extra_is_not_a_gpu_framework(tmp_path):
    (tmp_path / "requirements.txt").write_text("jax[cpu]==0.6.0\nflax\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {} and found.cpu_only == {"jax"}


def test_jaxlib_pin_does_not_constrain_the_jax_release(tmp_path):
    """flax's mnist example pins jax==0.3.4 with jaxlib==0.3.2+cuda11.cudnn82: different numbers."""
    found = detect_project(real("flax-mnist", tmp_path))
    assert found.frameworks["jax"] == "==0.3.4"


def test_tensorflow_and_tensorflow_cpu_together_are_refused_naming_both_lines(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\ntensorflow==2.16.1\nflax\ntensorflow-cpu==2.16.1\n")
    with pytest.raises(ConfigError) as caught:
        detect_project(tmp_path)
    message = str(caught.value)
    assert "requirements.txt:2" in message and "requirements.txt:4" in message
    assert "overwrite each other" in message and "\n" not in message


def test_a_marker_for_another_platform_does_not_count_as_a_second_distribution(tmp_path):
    """keras: tensorflow-cpu for Linux, tensorflow for macOS."""
    found = detect_project(real("keras", tmp_path))
    assert "tensorflow" not in found.frameworks and found.cpu_only >= {"tensorflow"}


def test_a_lock_with_two_tensorflow_distributions_is_refused():
    why = clashing_distributions(["tensorflow-cpu==2.20.0", "tensorflow-text==2.20.0", "tensorflow==2.20.0"])
    assert why is not None and "tensorflow==2.20.0" in why and "tensorflow-cpu==2.20.0" in why


def test_the_clash_message_names_both_pins_in_order():
    why = clashing_distributions(["tensorflow-cpu==2.20.0", "tensorflow==2.20.0"])
    assert why.startswith("the lock would install tensorflow==2.20.0 and tensorflow-cpu==2.20.0, which install")


def test_a_pin_spelled_in_capitals_is_the_same_distribution():
    # PEP 503: names compare case-insensitively, so TensorFlow==X is the tensorflow distribution
    why = clashing_distributions(["TensorFlow==2.20.0", "tensorflow-CPU==2.20.0"])
    assert why is not None and "tensorflow==2.20.0 and tensorflow-cpu==2.20.0" in why


def test_one_tensorflow_distribution_is_fine():
    assert clashing_distributions(["tensorflow[and-cuda]==2.20.0", "tensorflow-text==2.20.0", "keras==3.12.0"]) is None
