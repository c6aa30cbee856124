"""A version, OS or build the matrix does not have is bad input (exit 2), and its error is the whole
answer: it names the configuration key and the nearest things that do exist, so the user can fix the
pin in one step (issue 25 §3 pins each wording and each rule that picks the suggestions)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix.builds import framework_builds
from cudaenv.resolver.model import Constraints
from cudaenv.resolver.resolve import UnknownVersion, check_variant_exists, check_versions_exist, nearest_versions
from tests.unit.resolver.helpers import matrix

LIST = "(see `cudaenv matrix list {}`)"


def _constraints(frameworks=(), **kw) -> Constraints:
    return Constraints(frameworks=tuple((n, SpecifierSet(s)) for n, s in frameworks), **kw)


# Matrix facts: torch's releases run 1.12.0 ... 2.15.0 with 2.4.0 and 2.4.1 in the 2.4 series; jax 0.4.x
# starts at 0.4.1; the newest torchvision recorded as a version is 0.29.0 (later ones only as ranges);
# torch 2.12.0 was built for cu126/cu130/cu132, 2.12.1 also for cu129; nvidia/cuda images exist for
# ubuntu20.04/22.04/24.04/26.04 among others.
BAD = [
    pytest.param(dict(os="ubuntu22.4"),
                 "os 'ubuntu22.4' is not an nvidia/cuda image OS in the matrix; nearest: ubuntu22.04, ubuntu26.04, ubuntu20.04",
                 "build.os", id="os-typo-gets-the-three-closest"),
    pytest.param(dict(frameworks=[("pytorch", "==2.4")]),
                 "unknown framework 'pytorch' (known: torch, tensorflow, jax, mxnet, torchvision, torchaudio, keras, jaxlib)",
                 None, id="unknown-framework"),
    pytest.param(dict(frameworks=[("torch", "==2.4.99")]),
                 "torch 2.4.99 matches no release in the matrix; nearest known: 2.4.0, 2.4.1 " + LIST.format("torch"),
                 "frameworks.torch", id="between-releases-of-a-series"),
    pytest.param(dict(frameworks=[("torch", "===2.4.99")]),
                 "torch ===2.4.99 matches no release in the matrix; nearest known: 2.4.0, 2.4.1 " + LIST.format("torch"),
                 "frameworks.torch", id="arbitrary-equality"),
    pytest.param(dict(frameworks=[("jax", "==0.4.0rc1")]),
                 "jax 0.4.0rc1 matches no release in the matrix; nearest known: 0.4.0, 0.4.1, 0.4.2 " + LIST.format("jax"),
                 "frameworks.jax", id="before-a-series-starts"),
    pytest.param(dict(frameworks=[("torch", "==9.0")]),
                 "torch 9.0 matches no release in the matrix; nearest known: 2.15.0 " + LIST.format("torch"),
                 "frameworks.torch", id="past-the-newest"),
    pytest.param(dict(frameworks=[("torch", "==2.99.*")]),
                 "torch 2.99.* matches no release in the matrix; nearest known: 2.15.0 " + LIST.format("torch"),
                 "frameworks.torch", id="wildcard"),
    pytest.param(dict(frameworks=[("torch", ">=99")]),
                 "torch >=99 matches no release in the matrix; known: 1.0.0 … 2.15.0 " + LIST.format("torch"),
                 "frameworks.torch", id="a-range-gets-the-known-span"),
    pytest.param(dict(frameworks=[("torch", "==0.4.1")]),
                 "torch 0.4.1 matches no release in the matrix; the matrix records every torch release from 1.0.0 on, "
                 "and none older (pin torch>=1.0.0, or add the older release's row in a matrix overlay) " + LIST.format("torch"),
                 "frameworks.torch", id="older-than-the-matrix"),
    pytest.param(dict(frameworks=[("torchvision", "==0.99.0")]),
                 "torchvision 0.99.0 matches no release in the matrix; nearest known: 0.29.0 " + LIST.format("torch"),
                 "frameworks.torchvision", id="companion-version"),
    pytest.param(dict(frameworks=[("torchvision", "==0.29.2"), ("torch", "==9.0")]),
                 "torch 9.0 matches no release in the matrix; nearest known: 2.15.0 " + LIST.format("torch"),
                 "frameworks.torch", id="a-companion-range-covers-it-and-the-next-pin-is-still-checked"),
    pytest.param(dict(frameworks=[("keras", "==99"), ("torch", "==9.0")]),
                 "torch 9.0 matches no release in the matrix; nearest known: 2.15.0 " + LIST.format("torch"),
                 "frameworks.torch", id="keras-has-only-ranges-and-the-next-pin-is-still-checked"),
    pytest.param(dict(frameworks=[("torch", "==2.12.0")], variants=(("torch", "cu129"),)),
                 "torch 2.12.0+cu129: no such build was published; torch 2.12.0 is built for cu126, cu130, cu132 "
                 + LIST.format("torch"), "frameworks.torch", id="missing-build"),
    pytest.param(dict(frameworks=[("torch", ">=2.11,<2.13")], variants=(("torch", "cu999"),)),
                 "torch <2.13,>=2.11+cu999: no such build was published; torch 2.12.1 is built for cu126, cu129, cu130, "
                 "cu132; torch 2.12.0 is built for cu126, cu130, cu132; torch 2.11.0 is built for cu126, cu128, cu129, cu130 "
                 + LIST.format("torch"), "frameworks.torch", id="missing-build-newest-three-releases-first"),
    pytest.param(dict(frameworks=[("torch", ">=2.9,<2.13")], variants=(("torch", "cu999"),)),
                 "torch <2.13,>=2.9+cu999: no such build was published; torch 2.12.1 is built for cu126, cu129, cu130, "
                 "cu132; torch 2.12.0 is built for cu126, cu130, cu132; torch 2.11.0 is built for cu126, cu128, cu129, cu130 "
                 + LIST.format("torch"), "frameworks.torch", id="missing-build-only-the-newest-three-by-version"),
    pytest.param(dict(variants=(("torch", "cu999"),)),
                 "torch (any)+cu999: no such build was published; torch 2.15.0 is built for cu130, cu132; torch 2.14.1 is "
                 "built for cu126, cu130, cu132; torch 2.14.0 is built for cu126, cu130, cu132 " + LIST.format("torch"),
                 "frameworks.torch", id="missing-build-of-an-unpinned-framework"),
    pytest.param(dict(frameworks=[("torch", "==2.12.0"), ("torchvision", "==0.27.0")], variants=(("torchvision", "cu129"),)),
                 "torchvision 0.27.0+cu129: no such build was published; torchvision 0.27.0 is built for cu126, cu130, cu132 "
                 + LIST.format("torch"), "frameworks.torchvision", id="missing-companion-build"),
]


@pytest.mark.parametrize("kw,message,field", BAD)
def test_an_unknown_version_names_its_key_and_the_nearest_known(kw, message, field):
    """One line the user can act on: what matched nothing, where it came from, what exists near it."""
    with pytest.raises(UnknownVersion) as caught:
        check_versions_exist(matrix(), _constraints(**kw))
    assert (str(caught.value), caught.value.field) == (message, field)


def test_an_unknown_os_with_no_close_name_lists_every_known_os():
    """Nothing close to 'windows': the error lists the OS names nvidia/cuda images do come in."""
    known = sorted({o for image in matrix().images for o in image.os})
    with pytest.raises(UnknownVersion) as caught:
        check_versions_exist(matrix(), _constraints(os="windows"))
    assert str(caught.value) == ("os 'windows' is not an nvidia/cuda image OS in the matrix; known: " + ", ".join(known))
    assert caught.value.field == "build.os"


@pytest.mark.parametrize("kw", [dict(os="ubuntu22.04"), dict(frameworks=[("torchvision", "==0.29.2")]),
                                dict(frameworks=[("keras", "==99")]), dict(frameworks=[("torch", "==2.12.1")], variants=(("torch", "cu129"),))],
                         ids=["known-os", "companion-in-a-range", "keras-ranges-only", "published-build"])
def test_what_the_matrix_has_passes(kw):
    """A known OS, a companion a framework's range admits, keras (ranges only) and a published build are fine."""
    check_versions_exist(matrix(), _constraints(**kw))


def test_a_build_whose_existence_is_not_established_says_so_in_the_list():
    """The list is of builds that may be installed; one no source shows was published is marked as such."""
    builds = {name: tuple(replace(b, established=b.variant != "cu130") for b in rows)
              for name, rows in framework_builds(matrix()).items()}
    with pytest.raises(UnknownVersion) as caught:
        check_variant_exists(builds, _constraints([("torch", "==2.12.0")]), "torch", "cu129")
    assert str(caught.value) == ("torch 2.12.0+cu129: no such build was published; torch 2.12.0 is built for cu126, "
                                 "cu130 (existence not established), cu132 " + LIST.format("torch"))


def test_a_variant_of_a_name_that_is_no_framework_is_not_checked_here():
    """check_versions_exist reports unknown names; the variant check does not invent a second error."""
    check_variant_exists(framework_builds(matrix()), _constraints(), "pytorch", "cu129")


@pytest.mark.parametrize("wanted,known,expected", [
    ("2.4.99", ["2.3.0", "2.4.0", "2.4.1", "2.5.0"], ["2.4.0", "2.4.1"]),
    ("0.4.0", ["0.3.25", "0.4.1", "0.4.2", "0.4.3", "0.4.4"], ["0.4.1", "0.4.2", "0.4.3"]),
    ("0.4.3", ["0.4.1", "0.4.2", "0.4.4", "0.4.5", "0.4.6"], ["0.4.2", "0.4.4", "0.4.5"]),
    ("0.4.9", ["0.4.1", "0.4.2", "0.4.4", "0.4.5", "0.4.6"], ["0.4.4", "0.4.5", "0.4.6"]),
    ("0.4.2", ["0.4.1", "0.4.2", "0.4.3", "0.4.4"], ["0.4.1", "0.4.2", "0.4.3"]),
    ("2.4.*", ["2.3.0", "2.4.0", "2.4.1", "2.5.0"], ["2.4.0", "2.4.1"]),
    ("2.7", ["2.10.0", "2.5.0", "2.6.0", "2.8.0", "2.9.0"], ["2.6.0", "2.8.0"]),
    ("3.0", ["2.10.0", "2.9.0", "1.0.0"], ["2.10.0"]),
    ("0.5", ["1.0.0", "2.0.0", "0.1.0", "0.4.0"], ["0.4.0", "1.0.0"]),
    ("2.4.1.5", ["2.4.1", "2.4.10", "2.4.2", "2.4.11"], ["2.4.1", "2.4.2", "2.4.10"]),
    ("not-a-version", ["1.0.0"], []),
    ("2", ["1.13.1", "2.0.0", "2.0.1", "2.1.0"], ["2.0.0", "2.0.1"]),
    ("2.0.5", ["1.9", "2", "2.1"], ["2"]),
], ids=["series-two", "series-start", "series-middle", "series-end", "series-exact", "wildcard", "between-series",
        "past-the-newest", "below-and-above", "version-order-not-spelling", "unparsable", "major-alone-is-x.0",
        "known-major-alone"])
def test_nearest_versions_go_by_version_order(wanted, known, expected):
    """torch 2.4.99 is near 2.4.1 and 2.5.0, not 2.14.1: suggestions follow version order, not spelling."""
    assert nearest_versions(wanted, known) == expected
