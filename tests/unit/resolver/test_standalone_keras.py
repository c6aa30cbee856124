"""TensorFlow before 2.6 declares no keras requirement (its metadata names keras-applications and
keras-preprocessing, not keras), so an old project's standalone keras pin (keras==2.2.4 beside
tensorflow-gpu==1.13.1, keras==2.3.1 beside tensorflow 2.0) installs beside it as pip installs it.
Such a pin used to reject every TensorFlow 1.x build and end in "V100 (sm_70) cannot run the
libraries of CUDA  ()"."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import load_matrix
from cudaenv.resolver.model import Constraints
from cudaenv.resolver.resolve import resolve

from tests.unit.resolver.helpers import host


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def v100(matrix, **pins):
    constraints = Constraints(frameworks=tuple((name, SpecifierSet(spec)) for name, spec in pins.items()))
    return resolve(matrix, constraints, host("450.80.02", ["V100"]))


@pytest.mark.parametrize(("tensorflow", "keras", "package"), [("==1.13.1", "==2.2.4", "tensorflow-gpu==1.13.1"),
                                                               ("==2.0.0", "==2.3.1", "tensorflow-gpu==2.0.0")])
def test_a_standalone_keras_beside_an_old_tensorflow_resolves(matrix, tensorflow, keras, package):
    resolution = v100(matrix, tensorflow=tensorflow, keras=keras)
    assert resolution.ok, [p.message for p in resolution.problems]
    assert resolution.stack.requirements == (package,)


def test_a_keras_pin_a_newer_tensorflow_excludes_still_says_which_it_requires(matrix):
    resolution = v100(matrix, tensorflow=">=2.6", keras="==2.2.4")
    assert not resolution.ok
    assert resolution.problems[0].code == "companion-clash"
    assert "CUDA  ()" not in " ".join(p.message for p in resolution.problems)
