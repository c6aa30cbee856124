"""PEP 592 yanked releases (issue 34, item 4): PyPI keeps a yanked release installable only for an
exact pin (``==X`` or ``===X``), and uv, which writes the lock, follows that. So the resolver never
chooses a yanked release for a range, and an exact pin of one resolves with a warning that quotes
PyPI's reason. The shipped rows are real yanks: jax 0.4.15 ("accidentally required JAX_RELEASE=1")
and jax 0.4.32 (no reason given), read from PyPI's simple API on 2026-11-28."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import load_matrix, MatrixError
from cudaenv.matrix.builds import framework_builds
from cudaenv.matrix.load import RowReader, jax_release
from cudaenv.matrix.model import row_as_dict
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import (UnknownVersion, _admit_yanked, check_companion_not_only_yanked,
                                      check_not_only_yanked, pins_exactly, resolve)


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


def jax(matrix, spec: str):
    return resolve(matrix, Constraints(frameworks=(("jax", SpecifierSet(spec)),)), Host())


def caveats(resolution) -> list[str]:
    return [p.message for p in resolution.problems if p.code == "build-caveat"]


def test_the_shipped_rows_record_the_yanks_pypi_shows(matrix):
    yanked = {b.version: b.yanked for b in framework_builds(matrix)["jax"]
              if b.yanked is not None and b.uninstallable is None}
    assert yanked == {"0.2.23": "Install command errors", "0.4.0": "Bad jaxlib GPU release",
                      "0.4.15": "accidentally required JAX_RELEASE=1", "0.4.32": ""}
    # 0.3.18 is yanked too, and more: its extras pin a jaxlib never published, so no build installs
    assert {b.uninstallable is not None for b in framework_builds(matrix)["jax"] if b.version == "0.3.18"} == {True}


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


@pytest.mark.parametrize(("spec", "shown"), [("<=0.4.32,>0.4.31", "<=0.4.32,>0.4.31"), ("==0.4.32.*", "0.4.32.*")],
                         ids=["range", "wildcard"])
def test_a_range_only_yanked_releases_satisfy_is_refused_naming_the_yank_and_the_exact_pin(matrix, spec, shown):
    with pytest.raises(UnknownVersion) as caught:
        jax(matrix, spec)
    message = str(caught.value)
    # one release matches: no count of others follows the yank
    assert "matches only releases yanked from PyPI: jax 0.4.32 was yanked from PyPI (PyPI gives no reason); pip" in message
    assert "pin jax==0.4.32 to use it anyway" in message and caught.value.field == "frameworks.jax"
    assert message.startswith(f"jax {shown} matches only releases yanked from PyPI: ")  # the range as written


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


def test_a_release_no_pin_can_install_is_answered_with_why(matrix):
    """jax 0.3.18's extras all pin jaxlib==0.3.18, which was never published: even the exact pin
    cannot install it, so the answer is that reason, not a stack whose lock would fail."""
    with pytest.raises(UnknownVersion) as caught:
        jax(matrix, "==0.3.18")
    assert str(caught.value) == ("jax 0.3.18: jax 0.3.18 cannot be installed: every extra pins jaxlib==0.3.18, which "
                                 "was never published (no jaxlib-v0.3.18 tag or changelog entry; PyPI's yank reason "
                                 "says so) (pin another release)")
    assert caught.value.field == "frameworks.jax"  # the project's field that names the release
    assert jax(matrix, ">=0.3.17,<0.3.20").stack.framework("jax") == "0.3.19"  # a range passes it by


def test_jax_before_its_cuda_extras_installs_the_cuda_jaxlib_by_its_own_pin(matrix):
    """jax 0.2.0-0.2.10 declared no CUDA extra: pip would install jax[cuda110] without any jaxlib. The
    stack installs plain jax and the exact CUDA jaxlib from the find-links page the docs name."""
    resolution = jax(matrix, "==0.2.0")
    assert resolution.ok
    assert resolution.stack.requirements == ("jax==0.2.0", "jaxlib==0.1.55+cuda110")
    assert resolution.stack.find_links == ("https://storage.googleapis.com/jax-releases/jax_releases.html",)


def test_an_extra_pip_cannot_read_is_no_build(matrix):
    """jax 0.2.23 declared the extras "cuda=11,cudnn=805" and "cuda=11,cudnn=82": no requirement
    line can name them, so only its readable extras are builds."""
    variants = {b.variant for b in framework_builds(matrix)["jax"] if b.version == "0.2.23"}
    assert variants and all("=" not in v and "," not in v for v in variants)


def test_an_exact_pin_of_a_yanked_torchvision_resolves_with_the_torch_build_its_metadata_requires(matrix):
    """torchvision 0.15.0 was yanked ("Contains an incorrect torch dependency"): its wheels require
    torch==2.0.0+cu117, which only PyTorch's cu117 index serves (PyPI's 2.0.0 has no local label)."""
    from dataclasses import replace

    from tests.unit.resolver.helpers import constraints, host

    resolution = resolve(matrix, constraints(torchvision="==0.15.0"), host("535.104.05", ["A100"]))
    assert resolution.ok
    assert resolution.stack.frameworks == (("torch", "2.0.0"), ("torchvision", "0.15.0"))
    assert resolution.stack.requirements == ("torch==2.0.0", "torchvision==0.15.0")
    assert resolution.stack.index_urls == ("https://download.pytorch.org/whl/cu117",)
    assert caveats(resolution) == ["torchvision 0.15.0 was yanked from PyPI ('Contains an incorrect torch dependency'); "
                                   "the exact pin installs it anyway (PEP 592), with the cu117 build of torch 2.0.0 "
                                   "its metadata requires"]
    pypi_only = resolve(matrix, replace(constraints(torchvision="==0.15.0"), framework_index="pypi"),
                        host("535.104.05", ["A100"]))
    assert not pypi_only.ok
    assert any("https://download.pytorch.org/whl/cu117" in p.message for p in pypi_only.problems if p.is_fix)


def test_a_yanked_companion_without_a_build_requirement_pairs_with_every_build(matrix):
    from tests.unit.resolver.helpers import constraints, host

    resolution = resolve(matrix, constraints(torchaudio="==2.0.0"), host("535.104.05", ["A100"]))
    assert resolution.ok and resolution.stack.framework("torchaudio") == "2.0.0"
    assert caveats(resolution) == ["torchaudio 2.0.0 was yanked from PyPI ('Contains an incorrect torch dependency'); "
                                   "the exact pin installs it anyway (PEP 592)"]


def test_a_range_never_takes_a_yanked_companion(matrix):
    from tests.unit.resolver.helpers import constraints, host

    resolution = resolve(matrix, constraints(torch="==2.0.0", torchvision=">=0.15"), host("535.104.05", ["A100"]))
    assert resolution.ok and resolution.stack.framework("torchvision") == "0.15.1" and not caveats(resolution)


@pytest.mark.parametrize(("name", "spec", "version"), [("torchvision", ">=0.15.0,<0.15.1", "0.15.0"),
                                                       ("torchvision", "==0.15.0.*", "0.15.0"),
                                                       ("torchaudio", ">2.0.0a0,<2.0.1", "2.0.0")])
def test_a_companion_range_only_yanked_releases_satisfy_names_the_yank_not_no_release(matrix, name, spec, version):
    """torchvision 0.15.0 is in the matrix, yanked (its reason recorded): a range only it satisfies is
    refused as a jax range is, with PyPI's reason and the exact pin, not as a release the matrix lacks."""
    constraints = Constraints(frameworks=(("torch", SpecifierSet("==2.0.0")), (name, SpecifierSet(spec))))
    with pytest.raises(UnknownVersion) as caught:
        resolve(matrix, constraints, Host())
    message = str(caught.value)
    assert (f"matches only releases yanked from PyPI: {name} {version} was yanked from PyPI "
            "('Contains an incorrect torch dependency')") in message
    assert f"pin {name}=={version} to use it anyway" in message and caught.value.field == f"frameworks.{name}"


def test_a_yanked_build_that_already_has_a_caveat_keeps_it_and_adds_the_yank(matrix):
    """A build with its own caveat (TensorFlow run as plain tensorflow when its [and-cuda] extra cannot be
    installed) that is also yanked warns about both, its own caveat first."""
    build = next(b for b in framework_builds(matrix)["jax"] if b.version == "0.4.15")
    admitted = _admit_yanked(replace(build, caveat="its own caveat"), SpecifierSet("==0.4.15"))
    assert admitted.caveat == ("its own caveat; jax 0.4.15 was yanked from PyPI ('accidentally required "
                               "JAX_RELEASE=1'); the exact pin installs it anyway (PEP 592)")


def test_a_range_only_several_yanked_releases_satisfy_names_the_newest_with_its_reason_and_counts_the_rest(matrix):
    """Two releases (each with several builds) both yanked: the newest is named with PyPI's reason, the
    other counted once."""
    builds = [replace(b, yanked="bad wheels") for b in framework_builds(matrix)["jax"] if b.version in ("0.4.30", "0.4.31")]
    assert len(builds) > 2
    with pytest.raises(UnknownVersion) as caught:
        check_not_only_yanked(builds, "jax", SpecifierSet(">=0.4.30,<0.4.32"))
    assert str(caught.value) == ("jax <0.4.32,>=0.4.30 matches only releases yanked from PyPI: jax 0.4.31 was yanked "
                                 "from PyPI ('bad wheels') (and 1 more); pip and uv install a yanked release only for "
                                 "an exact pin (pin jax==0.4.31 to use it anyway, or allow a release that was not "
                                 "yanked)")


@pytest.mark.parametrize(("spec", "expected"), [
    # 0.10.0 is newer than 0.9.0 by version, not by text; the other yank is counted once
    (">=0.9,<0.11", "torchvision <0.11,>=0.9 matches only releases yanked from PyPI: torchvision 0.10.0 was yanked "
                    "from PyPI ('newer reason') (and 1 more); pip and uv install a yanked release only for an exact "
                    "pin (pin torchvision==0.10.0 to use it anyway, or allow a release that was not yanked)"),
    ("<0.10", "torchvision <0.10 matches only releases yanked from PyPI: torchvision 0.9.0 was yanked from PyPI "
              "('older reason'); pip and uv install a yanked release only for an exact pin (pin torchvision==0.9.0 "
              "to use it anyway, or allow a release that was not yanked)"),
], ids=["two-yanks", "one-yank"])
def test_a_companion_range_names_its_newest_yank_by_version_and_counts_the_rest(matrix, spec, expected):
    yanks = (("torchvision", "0.9.0", "older reason", False), ("torchvision", "0.10.0", "newer reason", True),
             ("torchaudio", "0.10.0", "not this package", False))
    builds = [replace(b, yanked_companions=yanks) for b in framework_builds(matrix)["torch"] if b.version == "2.0.0"]
    with pytest.raises(UnknownVersion) as caught:
        check_companion_not_only_yanked(builds, "torchvision", SpecifierSet(spec))
    assert str(caught.value) == expected and caught.value.field == "frameworks.torchvision"
    check_companion_not_only_yanked(builds, "torchvision", SpecifierSet(">0.10"))  # no yank in range: nothing to say
