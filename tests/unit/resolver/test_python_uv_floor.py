"""Old framework wheels list Python 2.7 and 3.5 (torch 1.0 to 1.4), but uv works with Python 3.6 and
newer only: the lock's ``uv pip compile --python-version 2.7`` answers "Python <3.6 is not supported",
and uv makes every image's virtual environment, the wheels flavor's python:X.Y-slim included. So a
stack on such a Python is a "no" that says so (it used to be a stack whose lock then failed)."""

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


@pytest.mark.parametrize("python", ["==2.7", "==3.5", "<3.6"])
def test_a_python_uv_cannot_use_is_no_stack(matrix, python):
    constraints = Constraints(python=SpecifierSet(python), frameworks=(("torch", SpecifierSet("==1.4.0")),))
    resolution = resolve(matrix, constraints, host("450.80.02", ["V100"]))
    assert not resolution.ok
    assert resolution.problems[0].code == "python-uv"
    assert "works with Python 3.6 and newer only" in resolution.problems[0].message


def test_unpinned_the_oldest_python_is_one_uv_works_with(matrix):
    constraints = Constraints(python=SpecifierSet("<3.7"), frameworks=(("torch", SpecifierSet("==1.0.0")),))
    resolution = resolve(matrix, constraints, host("450.80.02", ["V100"]))
    assert resolution.ok and resolution.stack.python == "3.6"
