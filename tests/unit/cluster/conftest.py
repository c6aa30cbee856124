from __future__ import annotations

import pytest

from cudaenv.matrix import load_matrix


@pytest.fixture(scope="session")
def matrix():
    return load_matrix(overlays=[])  # the shipped matrix only: a user overlay must not change verdicts here
