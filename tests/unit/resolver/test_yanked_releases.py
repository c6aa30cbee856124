"""PEP 592 yanked releases (issue 34, item 4): PyPI keeps a yanked release installable only for an
exact pin (``==X`` or ``===X``), and uv, which writes the lock, follows that. So the resolver never
chooses a yanked release for a range, and an exact pin of one resolves with a warning that quotes
PyPI's reason. The shipped rows are real yanks: jax 0.4.15 ("accidentally required JAX_RELEASE=1")
and jax 0.4.32 (no reason given), read from PyPI's simple API on 2026-11-28."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import load_matrix, MatrixError
from cudaenv.matrix.builds import framework_builds
from cudaenv.matrix.load import RowReader, jax_release
from cudaenv.matrix.model import row_as_dict
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import UnknownVersion, pins_exactly, resolve


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def jax(matrix, spec: str):
    return resolve(matrix, Constraints(frameworks=(("jax", SpecifierSet(spec)),)), Host())


def caveats(resolution) -> list[str]:
    return [p.message for p in resolution.problems if p.code == "build-caveat"]


def test_the_shipped_rows_record_the_yanks_pypi_shows(matrix):
    yanked = {b.version: b.yanked for b in framework_builds(matrix)["jax"] if b.yanked is not None}
    assert yanked == {"0.4.15": "accidentally required JAX_RELEASE=1", "0.4.32": ""}


def test_an_exact_pin_of_a_yanked_release_resolves_with_a_warning_quoting_the_reason(matrix):
    resolution = jax(matrix, "==0.4.15")
    assert resolution.ok and resolution.stack.framework("jax") == "0.4.15"
    assert caveats(resolution) == ["jax 0.4.15 was yanked from PyPI ('accidentally required JAX_RELEASE=1'); "
                                   "the exact pin installs it anyway (PEP 592)"]


def test_a_yank_without_a_reason_says_pypi_gives_none(matrix):
    resolution = jax(matrix, "===0.4.32")
    assert resolution.ok and resolution.stack.framework("jax") == "0.4.32"
    assert caveats(resolution) == ["jax 0.4.32 was yanked from PyPI (PyPI gives no reason); "
                                   "the exact pin installs it anyway (PEP 592)"]


@pytest.mark.parametrize(("spec", "chosen"), [(">=0.4.31,<0.4.33", "0.4.31"), (">=0.4.14,<0.4.16", "0.4.14"),
                                               ("~=0.4.30", "0.4.38")],
                         ids=["range-around-0.4.32", "range-around-0.4.15", "compatible-release"])
def test_a_range_never_chooses_a_yanked_release(matrix, spec, chosen):
    resolution = jax(matrix, spec)
    assert resolution.ok and resolution.stack.framework("jax") == chosen and not caveats(resolution)


@pytest.mark.parametrize("spec", ["<=0.4.32,>0.4.31", "==0.4.32.*"], ids=["range", "wildcard"])
def test_a_range_only_yanked_releases_satisfy_is_refused_naming_the_yank_and_the_exact_pin(matrix, spec):
    with pytest.raises(UnknownVersion) as caught:
        jax(matrix, spec)
    message = str(caught.value)
    assert "matches only releases yanked from PyPI: jax 0.4.32 was yanked from PyPI (PyPI gives no reason)" in message
    assert "pin jax==0.4.32 to use it anyway" in message and caught.value.field == "frameworks.jax"


@pytest.mark.parametrize(("spec", "version", "exact"), [
    ("==0.4.32", "0.4.32", True), ("===0.4.32", "0.4.32", True), ("==0.4.32.0", "0.4.32", True),
    ("==0.4.32.*", "0.4.32", False), (">=0.4.32", "0.4.32", False), ("<=0.4.32,>=0.4.32", "0.4.32", False),
    ("==0.4.31", "0.4.32", False), ("===0.4.32.0", "0.4.32", False), ("", "0.4.32", False),
], ids=["eq", "arbitrary", "eq-padded", "wildcard", "ge", "ge-le", "other", "arbitrary-padded", "empty"])
def test_only_an_exact_pin_names_a_release(spec, version, exact):
    assert pins_exactly(SpecifierSet(spec), version) is exact


def test_no_spec_is_no_exact_pin():
    assert pins_exactly(None, "1.0") is False


def test_a_row_keeps_the_yank_through_its_json_form():
    base = {"version": "0.4.32", "jaxlib": "0.4.32", "python": ["3.12"], "source": "PyPI ; read 2026-11-28"}
    assert row_as_dict(jax_release(RowReader({**base, "yanked": True}, "jax.toml")))["yanked"] is True
    assert row_as_dict(jax_release(RowReader({**base, "yanked": "why"}, "jax.toml")))["yanked"] == "why"
    assert "yanked" not in row_as_dict(jax_release(RowReader(base, "jax.toml")))
    with pytest.raises(MatrixError, match="field 'yanked': expected true or PyPI's reason"):
        jax_release(RowReader({**base, "yanked": False}, "jax.toml"))
