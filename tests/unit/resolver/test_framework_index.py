"""The index decides which builds exist: resolution chooses among the builds the framework index
serves (issue 23, class 1), and a torch project gets torchvision / torchaudio only when it names
them (class 5)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.resolver.model import PYPI, PYPI_INDEX
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import codes, constraints, host, matrix

CU126 = "https://download.pytorch.org/whl/cu126"


def resolve_from(index, driver, gpus=("A100",), **kw):
    return resolve(matrix(), replace(constraints(**kw), framework_index=index), host(driver, gpus))


def test_pypi_serves_torch_2_10_0_as_the_newest_build_r550_runs():
    """PyPI's torch 2.11+ are CUDA 13 builds (R580 and up); its 2.10.0 is CUDA 12.8, which R550 runs
    through minor-version compatibility. The cu126 builds of newer releases are not on PyPI."""
    result = resolve_from(PYPI, "550.54.15", torch="any")
    stack = result.stack
    assert (stack.framework("torch"), stack.cuda, stack.driver_compatibility) == ("2.10.0", "12.8", "minor-version")
    assert stack.index_urls == (PYPI_INDEX,)
    assert stack.nvidia_requires and dict(stack.nvidia_requires)["nvidia-cuda-runtime-cu12"] == "==12.8.90"


def test_without_a_framework_index_every_builds_own_index_counts():
    stack = resolve_from(None, "550.54.15", torch="any").stack
    assert stack.framework("torch") != "2.10.0" and stack.index_urls[0].startswith("https://download.pytorch.org/")


@pytest.mark.parametrize("version", ["2.10.0", "2.14.1", "2.15.0"])
def test_every_pypi_stack_is_the_releases_pypi_cuda(version):
    release = next(r for r in matrix().torch if r.version == version)
    stack = resolve_from(PYPI, "580.65.06", torch=f"=={version}").stack
    assert stack.cuda == release.pypi_cuda


def test_a_pytorch_index_serves_only_its_own_cuda():
    """R580 would take torch 2.15.0 on CUDA 13.0; whl/cu126 (or a mirror of it) has torch up to 2.14.1."""
    stack = resolve_from(CU126, "580.65.06", torch="any").stack
    assert (stack.framework("torch"), stack.cuda, stack.index_urls) == ("2.14.1", "12.6", (CU126,))
    assert resolve_from(None, "580.65.06", torch="any").stack.framework("torch") == "2.15.0"


def test_builds_from_no_index_are_what_they_are():
    """TensorFlow comes from PyPI whatever the torch index says."""
    plain = resolve_from(None, "550.54.15", tensorflow="any").stack
    assert resolve_from(CU126, "550.54.15", tensorflow="any").stack == plain


def test_a_build_the_index_does_not_serve_is_explained_with_what_it_serves_and_where_the_build_is():
    result = resolve_from(PYPI, "580.65.06", torch="==2.10.0", cuda="==12.6")
    assert not result.ok and codes(result)[0] == "index-lacks-build"
    message = result.problems[0].message
    assert "the framework index (PyPI) serves no build of torch 2.10.0" in message
    assert "it serves 2.10.0 for CUDA 12.8" in message and CU126 in message
    fix = next(p for p in result.problems if p.code == "fix-framework-index")
    assert CU126 in fix.message


def test_a_torch_only_project_installs_torch_alone():
    stack = resolve_from(None, "580.65.06", torch="==2.11.0").stack
    assert stack.requirements == ("torch==2.11.0",)
    assert dict(stack.frameworks) == {"torch": "2.11.0"}


def test_the_companions_a_project_names_are_installed_with_torch():
    stack = resolve_from(None, "580.65.06", torch="==2.11.0", torchaudio="any").stack
    assert stack.requirements == ("torch==2.11.0", "torchaudio==2.11.0")
    assert dict(stack.frameworks) == {"torch": "2.11.0", "torchaudio": "2.11.0"}


def test_a_companion_only_a_range_admits_is_installed_within_that_range():
    stack = resolve_from(None, "580.65.06", torch="==2.15.0", torchvision="any").stack
    assert stack.requirements == ("torch==2.15.0", "torchvision==0.29.2")


def test_a_pinned_build_the_index_does_not_serve_is_explained_even_when_another_build_is_served():
    """``torch==2.10.0+cu126`` with ``cuda >= 12.6`` on PyPI: PyPI serves 2.10.0 for CUDA 12.8, which
    the CUDA bound admits, but the pin names the cu126 build, which PyPI does not serve."""
    pinned = replace(constraints(torch="==2.10.0", cuda=">=12.6"), framework_index=PYPI, variants=(("torch", "cu126"),))
    result = resolve(matrix(), pinned, host("580.65.06", ["A100"]))
    assert not result.ok and codes(result)[0] == "index-lacks-build"
    assert f"(2.10.0 for CUDA 12.6 from {CU126}); it serves 2.10.0 for CUDA 12.8" in result.problems[0].message


def test_a_served_build_that_fails_for_another_reason_is_not_blamed_on_the_index():
    """PyPI serves torch 2.10.0 (CUDA 12.8); on R470 it fails for the driver, not for the index."""
    result = resolve_from(PYPI, "470.82.01", torch="==2.10.0")
    assert not result.ok and "index-lacks-build" not in codes(result)
    assert codes(result)[0] == "driver-too-old"


def test_each_framework_is_checked_against_the_index():
    """torch 2.10.0 is served by PyPI; the TensorFlow pin after it is not from an index at all, and a
    second indexed framework is still looked at after a served one."""
    result = resolve_from(PYPI, "580.65.06", torch="==2.10.0", jax="==0.4.30", cuda="==12.6")
    assert not result.ok
    assert [p.message.split(" that ")[0] for p in result.problems if p.code == "index-lacks-build"] == [
        "the framework index (PyPI) serves no build of torch 2.10.0"]


def pinned(driver="580.65.06", gpus=("A100",), variants=(), **kw):
    return resolve(matrix(), replace(constraints(**kw), variants=variants), host(driver, gpus))


def test_a_pinned_torch_build_does_not_narrow_another_framework():
    """torch 2.10.0+cu126 beside JAX: only torch's builds are narrowed to cu126; JAX's CUDA 12 build
    shares CUDA 12.6 with it."""
    stack = pinned(torch="==2.10.0", jax="any", variants=(("torch", "cu126"),)).stack
    assert stack.cuda == "12.6" and stack.framework("jax") is not None


def test_relaxing_a_pinned_build_drops_the_build_it_named_and_quotes_it():
    """torch +cu126 beside torchvision +cu128: each fix relaxes one pin with the build it named."""
    result = pinned(torch="==2.10.0", torchvision="==0.25.0", variants=(("torch", "cu126"), ("torchvision", "cu128")))
    assert [(p.code, p.message) for p in result.problems] == [
        ("conflicting-pins", "the pins name different builds of torch (torch +cu126, torchvision +cu128): "
                             "one environment installs one build"),
        ("fix-relax-pin", "relax the torch pin (2.10.0+cu126): torch 2.10.0 fits this host"),
        ("fix-relax-pin", "relax the torchvision pin (0.25.0+cu128): torch 2.10.0 fits this host, with the "
                          "torchvision it pairs with")]


@pytest.mark.parametrize("keras, shown", [("==2.15.0", "keras 2.15.0+cu122"), (None, "keras +cu122")],
                         ids=["pinned", "unpinned"])
def test_a_local_version_on_keras_is_bad_input_naming_the_field(keras, shown):
    from cudaenv.resolver.resolve import UnknownVersion

    kw = {"keras": keras} if keras else {"tensorflow": "any"}
    with pytest.raises(UnknownVersion) as caught:
        pinned(variants=(("keras", "cu122"),), **kw)
    assert str(caught.value) == (f"{shown}: keras is not built per CUDA, so no local version names one of its "
                                 "builds (pin keras without +cu122)")
    assert caught.value.field == "frameworks.keras"
