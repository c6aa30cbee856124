"""A row's ``yanked`` field (PEP 592) as the loader reads it: ``yanked = true`` is a yank PyPI gives
no reason for (the empty reason, which the resolver's warning spells "PyPI gives no reason"), a
string is PyPI's reason, and an absent field is no yank (None). The three must stay apart: a yank
read as a reason would quote a reason PyPI never gave."""

from __future__ import annotations

import pytest

from cudaenv.matrix import MatrixError
from cudaenv.matrix.load import RowReader, jax_release, tensorflow_release, torch_release

SRC = "PyPI ; read 2026-11-28"
ROWS = {
    "torch": (torch_release, {"version": "2.6.0", "python": ["3.12"], "source": SRC}),
    "tensorflow": (tensorflow_release, {"version": "2.15.1", "python": ["3.11"], "cuda": "12.2", "cudnn": "8.9",
                                        "source": SRC}),
    "jax": (jax_release, {"version": "0.4.32", "jaxlib": "0.4.32", "python": ["3.12"], "source": SRC}),
}


def test_yanked_true_is_a_yank_without_a_reason():
    assert RowReader({"yanked": True}, "x.toml").yanked() == ""


def test_a_yank_reason_is_kept_as_written_and_no_field_is_no_yank():
    assert RowReader({"yanked": "accidentally required JAX_RELEASE=1"}, "x.toml").yanked() == \
        "accidentally required JAX_RELEASE=1"
    assert RowReader({}, "x.toml").yanked() is None


@pytest.mark.parametrize("kind", sorted(ROWS), ids=sorted(ROWS))
def test_every_framework_row_reads_its_yank_the_same_way(kind):
    build, row = ROWS[kind]
    assert build(RowReader({**row, "yanked": True}, f"{kind}.toml")).yanked == ""
    assert build(RowReader({**row, "yanked": "bad wheel"}, f"{kind}.toml")).yanked == "bad wheel"
    assert build(RowReader(row, f"{kind}.toml")).yanked is None
    with pytest.raises(MatrixError) as caught:
        build(RowReader({**row, "yanked": False}, f"{kind}.toml"))
    assert str(caught.value) == (f"{kind}.toml: field 'yanked': expected true or PyPI's reason for the yank "
                                 "(a non-empty string), got False")
