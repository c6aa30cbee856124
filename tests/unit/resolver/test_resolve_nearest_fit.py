"""The pin fix moves as little as possible: the release closest to what the user pinned that resolves
on this host, by release order, newer first on a tie (issue 25 §3)."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.resolver.resolve import _Context, _nearest_fitting
from tests.unit.resolver.helpers import constraints, host, matrix


def _nearest(pin, driver, gpus, **others):
    ctx = _Context(matrix(), constraints(torch=pin, **others), host(driver, gpus))
    relaxed = constraints(torch="any", **others)
    return _nearest_fitting(ctx, relaxed, "torch", SpecifierSet(pin))


@pytest.mark.parametrize("pin,driver,gpus,others,expected", [
    # every release fits an A100 on R560: between 2.5.1 and 2.6.0 both are one step away, the newer wins
    ("==2.5.5", "560.35.03", ["A100"], {}, "2.6.0"),
    ("==2.5.*", "560.35.03", ["A100"], {}, "2.5.0"),
    # an H100 runs no torch before 2.0 (no sm_90, no PTX): from 1.13.1 the next release up
    ("==1.13.1", "535.104.05", ["H100"], {}, "2.0.0"),
    # Python 3.8 wheels end with torch 2.4: from 2.6.0 the nearest one below, not the oldest
    ("==2.6.0", "560.35.03", ["A100"], {"python": "3.8"}, "2.4.1"),
    # no CUDA of torch 2.6.0 (11.8, 12.4, 12.6) allowed: 2.5.1 (12.1) is one step below 2.5.5, 2.7.0 (12.8) two above
    ("==2.5.5", "570.124.06", ["A100"], {"cuda": "!=11.8,!=12.4,!=12.6"}, "2.5.1"),
], ids=["tie-newer-first", "wildcard-pin", "next-up", "nearest-below", "one-below-before-two-above"])
def test_the_nearest_release_that_fits_is_found_by_release_order(pin, driver, gpus, others, expected):
    """torch 1.13.1 on an H100 -> 2.0.0, not the newest 2.x: the smallest change to the user's pin."""
    assert _nearest(pin, driver, gpus, **others) == expected


def test_a_pin_without_a_version_has_no_nearest_release():
    ctx = _Context(matrix(), constraints(torch="any"), host("560.35.03", ["A100"]))
    assert _nearest_fitting(ctx, constraints(torch="any"), "torch", SpecifierSet()) is None
