"""Which installable builds a matrix row yields (``cudaenv.matrix.builds``), field by field.

The resolver compares every framework's builds in one shape, so each rule that flattens a row here
(which variant carries PyPI's pins, which name a TensorFlow release installs under, which JAX extras
are aliases of one build, which CUDA minors a JAX range covers, the order builds are tried in)
decides a stack. The rows are built directly, so each test names exactly what a row says.
"""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import Matrix
from cudaenv.matrix.builds import Build, _cuda_floor_of_pins, _jax_rank, every_build, framework_builds
from cudaenv.matrix.model import (CudaRelease, JaxRelease, JaxVariant, MxnetRelease, MxnetVariant, TensorflowRelease,
                                  TorchRelease, TorchVariant, YankedCompanion)

SRC = "https://example.invalid/notes ; read 2026-11-28"


def cuda_releases(*versions: str) -> tuple[CudaRelease, ...]:
    return tuple(CudaRelease(version=v, min_compute_capability="5.0", max_compute_capability="9.0", source=SRC)
                 for v in versions)


def builds(**rows) -> dict[str, tuple[Build, ...]]:
    rows.setdefault("cuda_releases", cuda_releases("11.8.0", "12.1.1", "12.2.2", "12.3.2", "12.4.1", "12.6.3",
                                                   "12.8.1"))
    return framework_builds(Matrix(**rows))


# --- Build ------------------------------------------------------------------------------------------


def _build(**kw) -> Build:
    fields = dict(framework="torch", version="2.6.0", variant="cu124", cuda=("12.4",), python=frozenset({"3.12"}),
                  sass=(), ptx=(), cudnn=None, cudnn_range=None, requirements=(), companions=(), index_url=None,
                  find_links=None, pins=(), brings_own_cuda=True)
    return Build(**{**fields, **kw})


def test_a_build_is_labelled_framework_version_and_variant():
    assert _build().label == "torch 2.6.0 (cu124)"


def test_a_companion_is_found_by_name_and_an_absent_one_is_none():
    build = _build(companions=(("torchvision", "0.21.0"), ("torchaudio", "2.6.0")))
    assert build.companion("torchaudio") == "2.6.0"
    assert build.companion("torchvision") == "0.21.0"
    assert build.companion("keras") is None


# --- torch ------------------------------------------------------------------------------------------


def torch_release(**kw) -> TorchRelease:
    fields = dict(version="2.6.0", python=("3.11", "3.12"), source=SRC, torchvision="0.21.0", torchaudio="2.6.0",
                  pypi_cuda="12.4", pypi_requires=(("nvidia-cudnn-cu12", "==9.1.0.70"),),
                  variants=(TorchVariant(cuda="12.4", index_url="https://download.pytorch.org/whl/cu124",
                                         compute_capabilities=("8.0", "9.0"), ptx=("9.0",), cudnn="9.1.0.70"),
                            TorchVariant(cuda="11.8", index_url="https://download.pytorch.org/whl/cu118",
                                         compute_capabilities=("7.0",), ptx=("7.0",), cudnn="9.1.0.70",
                                         established=False, note="no wheel index record")))
    return TorchRelease(**{**fields, **kw})


def test_each_torch_variant_is_a_build_and_only_the_pypi_variant_carries_pypis_pins():
    got = builds(torch=(torch_release(yanked="bad metadata"),))["torch"]
    companions = (("torchvision", "0.21.0"), ("torchaudio", "2.6.0"))
    assert got == (
        Build(framework="torch", version="2.6.0", variant="cu124", cuda=("12.4",), python=frozenset({"3.11", "3.12"}),
              sass=("8.0", "9.0"), ptx=("9.0",), cudnn="9.1.0.70", cudnn_range=None, requirements=("torch==2.6.0",),
              companions=companions, index_url="https://download.pytorch.org/whl/cu124", find_links=None,
              pins=(("nvidia-cudnn-cu12", "==9.1.0.70"),), brings_own_cuda=True, established=True, on_pypi=True,
              yanked="bad metadata"),
        Build(framework="torch", version="2.6.0", variant="cu118", cuda=("11.8",), python=frozenset({"3.11", "3.12"}),
              sass=("7.0",), ptx=("7.0",), cudnn="9.1.0.70", cudnn_range=None, requirements=("torch==2.6.0",),
              companions=companions, index_url="https://download.pytorch.org/whl/cu118", find_links=None,
              pins=(), brings_own_cuda=True, established=False, on_pypi=False, yanked="bad metadata"),
    )
    assert [b.caveat for b in got] == ["", ""]


def test_a_torch_release_without_companions_lists_none():
    (build,) = builds(torch=(torch_release(torchvision=None, torchaudio=None, variants=torch_release().variants[:1]),))[
        "torch"]
    assert build.companions == ()
    assert build.yanked is None


def test_only_the_companions_a_release_names_are_listed():
    (build,) = builds(torch=(torch_release(torchvision=None, variants=torch_release().variants[:1]),))["torch"]
    assert build.companions == (("torchaudio", "2.6.0"),)
    (build,) = builds(torch=(torch_release(torchaudio=None, variants=torch_release().variants[:1]),))["torch"]
    assert build.companions == (("torchvision", "0.21.0"),)


def test_a_torchvision_range_stands_in_only_when_no_torchvision_pins_the_release():
    one = torch_release().variants[:1]
    (ranged,) = builds(torch=(torch_release(torchvision=None, torchvision_range=">=0.29.1", variants=one),))["torch"]
    assert ranged.companions == (("torchaudio", "2.6.0"), ("torchvision", ">=0.29.1"))
    assert ranged.companion("torchvision") == ">=0.29.1"
    (pinned,) = builds(torch=(torch_release(torchvision_range=">=0.29.1", variants=one),))["torch"]
    assert pinned.companions == (("torchvision", "0.21.0"), ("torchaudio", "2.6.0"))


def test_a_torch_release_no_variant_matches_pypi_on_has_no_pins_and_none_on_pypi():
    got = builds(torch=(torch_release(pypi_cuda="12.6"),))["torch"]
    assert [(b.variant, b.pins, b.on_pypi) for b in got] == [("cu124", (), False), ("cu118", (), False)]
    got = builds(torch=(torch_release(pypi_cuda=None),))["torch"]
    assert [(b.pins, b.on_pypi) for b in got] == [((), False), ((), False)]


def test_a_yanked_companion_goes_with_every_build_or_only_the_build_its_metadata_names():
    """torchaudio 2.0.0 (no local version required) pairs with every build; torchvision 0.15.0, whose
    metadata requires torch==2.0.0+cu124, only with the cu124 build, flagged as needing that label."""
    yanked = (YankedCompanion(package="torchvision", version="0.21.0", reason="incorrect torch dependency",
                              source=SRC, variant="cu124"),
              YankedCompanion(package="torchaudio", version="2.6.0", reason="", source=SRC))
    cu124, cu118 = builds(torch=(torch_release(yanked_companions=yanked),))["torch"]
    assert cu124.variant == "cu124" and cu124.yanked_companions == (
        ("torchvision", "0.21.0", "incorrect torch dependency", True), ("torchaudio", "2.6.0", "", False))
    assert cu118.variant == "cu118" and cu118.yanked_companions == (("torchaudio", "2.6.0", "", False),)


# --- TensorFlow -------------------------------------------------------------------------------------


def tf_release(**kw) -> TensorflowRelease:
    fields = dict(version="2.15.1", python=("3.11",), cuda="12.2", cudnn="8.9", source=SRC, keras=">=2.15.0,<2.16",
                  compute_capabilities=("8.0",), ptx=("9.0",), and_cuda=(("nvidia-cudnn-cu12", "==8.9.4.25"),))
    return TensorflowRelease(**{**fields, **kw})


def test_a_tensorflow_release_with_an_installable_extra_is_the_and_cuda_build():
    (build,) = builds(tensorflow=(tf_release(ptx_unusable_on=("12.0",), ptx_unusable_source=SRC, yanked=""),))[
        "tensorflow"]
    assert build == Build(
        framework="tensorflow", version="2.15.1", variant="and-cuda", cuda=("12.2",), python=frozenset({"3.11"}),
        sass=("8.0",), ptx=("9.0",), cudnn="8.9", cudnn_range=None, requirements=("tensorflow[and-cuda]==2.15.1",),
        companions=(("keras", ">=2.15.0,<2.16"),), index_url=None, find_links=None,
        pins=(("nvidia-cudnn-cu12", "==8.9.4.25"),), brings_own_cuda=True, caveat="", ptx_unusable_on=("12.0",),
        ptx_unusable_source=SRC, yanked="", packages=("tensorflow",))


def test_a_tensorflow_gpu_alias_is_one_more_package_of_the_build():
    (build,) = builds(tensorflow=(tf_release(and_cuda=(), keras=None, gpu_alias="tensorflow-gpu"),))["tensorflow"]
    assert build.packages == ("tensorflow", "tensorflow-gpu") and build.requirements == ("tensorflow==2.15.1",)
    (gpu,) = builds(tensorflow=(tf_release(and_cuda=(), keras=None, gpu_package="tensorflow-gpu"),))["tensorflow"]
    assert gpu.packages == ("tensorflow-gpu",) and gpu.requirements == ("tensorflow-gpu==2.15.1",)


def test_a_tensorflow_release_without_the_extra_is_plain_tensorflow_on_the_cuda_image():
    (build,) = builds(tensorflow=(tf_release(and_cuda=(), keras=None),))["tensorflow"]
    assert (build.variant, build.requirements, build.pins, build.brings_own_cuda, build.companions, build.caveat,
            build.ptx_unusable_source, build.yanked) == (
        "cuda12.2", ("tensorflow==2.15.1",), (), False, (), "", "", None)


def test_an_uninstallable_extra_makes_plain_tensorflow_with_a_caveat_naming_the_image_and_why():
    (build,) = builds(tensorflow=(tf_release(and_cuda_uninstallable="nvidia-nccl-cu12 2.18 has no wheel"),))[
        "tensorflow"]
    assert (build.variant, build.requirements, build.pins, build.brings_own_cuda) == (
        "cuda12.2", ("tensorflow==2.15.1",), (), False)
    assert build.caveat == ("tensorflow 2.15.1 runs as plain tensorflow on the CUDA 12.2 + cuDNN 8.9 image: its "
                            "[and-cuda] extra cannot be installed from PyPI (nvidia-nccl-cu12 2.18 has no wheel)")


def test_a_release_whose_cuda_build_is_tensorflow_gpu_installs_that_package():
    (build,) = builds(tensorflow=(tf_release(version="1.14.0", and_cuda=(), gpu_package="tensorflow-gpu"),))[
        "tensorflow"]
    assert build.requirements == ("tensorflow-gpu==1.14.0",)
    assert build.variant == "cuda12.2" and not build.brings_own_cuda
    # the [and-cuda] extra wins over the GPU package where a row names both (it is the newer way)
    (build,) = builds(tensorflow=(tf_release(gpu_package="tensorflow-gpu"),))["tensorflow"]
    assert build.requirements == ("tensorflow[and-cuda]==2.15.1",)


def test_a_release_with_a_gpu_route_carries_it_into_its_build():
    route = "nvidia-tensorflow (NVIDIA's TensorFlow 1.15 builds for newer GPUs)"
    (build,) = builds(tensorflow=(tf_release(version="1.14.0", and_cuda=(), gpu_package="tensorflow-gpu",
                                             gpu_route=route, gpu_route_source=SRC),))["tensorflow"]
    assert build.gpu_route == route
    (build,) = builds(tensorflow=(tf_release(),))["tensorflow"]
    assert build.gpu_route == ""


# --- JAX --------------------------------------------------------------------------------------------


def jax_variant(extra: str, cuda: str = ">=12.1,<13", requires=(("nvidia-cudnn-cu12", ">=9.1,<10.0"),), **kw):
    return JaxVariant(extra=extra, cuda=SpecifierSet(cuda), requires=requires, **kw)


def jax_release(*variants: JaxVariant, **kw) -> JaxRelease:
    return JaxRelease(**{**dict(version="0.4.30", jaxlib="0.4.30", python=("3.11", "3.12"), source=SRC,
                                variants=variants), **kw})


def test_a_jax_variant_is_one_build_over_every_cuda_minor_its_range_holds():
    variant = jax_variant("cuda12", cudnn=SpecifierSet(">=9.1,<10"), index_url="https://example.invalid/jax",
                          compute_capabilities=("8.0",), ptx=("9.0",))
    (build,) = builds(jax=(jax_release(variant, yanked="bad jaxlib"),))["jax"]
    assert build == Build(
        framework="jax", version="0.4.30", variant="cuda12", cuda=("12.1", "12.2", "12.3", "12.4", "12.6", "12.8"),
        python=frozenset({"3.11", "3.12"}), sass=("8.0",), ptx=("9.0",), cudnn=None,
        cudnn_range=SpecifierSet(">=9.1,<10"), requirements=("jax[cuda12]==0.4.30",), companions=(("jaxlib", "0.4.30"),),
        index_url=None, find_links="https://example.invalid/jax", pins=(("nvidia-cudnn-cu12", ">=9.1,<10.0"),),
        brings_own_cuda=True, yanked="bad jaxlib")


def test_a_jax_release_pip_cannot_install_carries_its_reason_into_every_build():
    release = jax_release(jax_variant("cuda12"), jax_variant("cuda11", cuda=">=11.8,<12"),
                          uninstallable="pins jaxlib 0.3.18+cuda11, never published")
    got = builds(jax=(release,))["jax"]
    assert [(b.variant, b.uninstallable) for b in got] == [
        ("cuda12", "pins jaxlib 0.3.18+cuda11, never published"), ("cuda11", "pins jaxlib 0.3.18+cuda11, never published")]
    assert [b.uninstallable for b in builds(jax=(jax_release(jax_variant("cuda12")),))["jax"]] == [None]


def test_a_jax_release_without_a_cuda_extra_installs_plain_jax_and_its_cuda_jaxlib_pin():
    variant = jax_variant("cuda110", cuda=">=11.0,<11.9", requires=(), no_extra=True,
                          packages=("jaxlib==0.2.9+cuda110",), index_url="https://example.invalid/jax_releases")
    (build,) = builds(jax=(jax_release(variant, version="0.2.9", jaxlib="0.2.9"),))["jax"]
    assert build.requirements == ("jax==0.2.9", "jaxlib==0.2.9+cuda110")
    assert (build.variant, build.cuda, build.find_links, build.companions) == (
        "cuda110", ("11.8",), "https://example.invalid/jax_releases", (("jaxlib", "0.2.9"),))
    # the extra's name is then only a label: pip never reads it
    (build,) = builds(jax=(jax_release(jax_variant("cuda=11", no_extra=True, requires=()), version="0.2.9"),))["jax"]
    assert build.requirements == ("jax==0.2.9",) and build.variant == "cuda=11"


@pytest.mark.parametrize("extra", ["cuda=11,cudnn=82", "-cuda", "cuda12_", "cuda 12", "cuda[12]", ""],
                         ids=["comma-list", "leading-dash", "trailing-underscore", "space", "brackets", "empty"])
def test_an_extra_pip_cannot_parse_is_no_build(extra):
    # the extras after it (here "gpu", ranked with it after every known extra) are still builds
    got = builds(jax=(jax_release(jax_variant(extra), jax_variant("cuda11", cuda=">=11.8,<12"),
                                  jax_variant("gpu", cuda=">=12.4,<13")),))["jax"]
    assert sorted(b.variant for b in got) == ["cuda11", "gpu"]


@pytest.mark.parametrize("extra", ["c", "cuda12", "cuda12_pip", "cuda13-local", "cuda.12", "CUDA12"],
                         ids=["one-letter", "plain", "underscore", "dash", "dot", "upper"])
def test_an_extra_pip_can_parse_is_a_build(extra):
    (build,) = builds(jax=(jax_release(jax_variant(extra)),))["jax"]
    assert build.requirements == (f"jax[{extra}]==0.4.30",)


def test_a_jax_range_no_cuda_minor_of_the_matrix_satisfies_is_no_build():
    got = builds(jax=(jax_release(jax_variant("cuda13", cuda=">=13.0,<14")),))["jax"]
    assert got == ()
    # and the release's other extras are still builds
    got = builds(jax=(jax_release(jax_variant("cuda13", cuda=">=13.0,<14"), jax_variant("cuda12")),))["jax"]
    assert [b.variant for b in got] == ["cuda12"]


def test_the_wheels_lower_bound_raises_the_cuda_floor_of_a_jax_build():
    requires = (("nvidia-cuda-nvcc-cu12", ">=12.6.85"), ("nvidia-cudnn-cu12", ">=9.1,<10.0"))
    (build,) = builds(jax=(jax_release(jax_variant("cuda12", requires=requires)),))["jax"]
    assert build.cuda == ("12.6", "12.8")
    # a floor above every minor the range holds leaves no build
    requires = (("nvidia-cuda-nvcc-cu12", ">=12.9.1"),)
    assert builds(jax=(jax_release(jax_variant("cuda12", requires=requires)),))["jax"] == ()


def test_a_local_jax_install_ignores_the_wheels_floor_and_brings_no_cuda():
    requires = (("nvidia-cuda-nvcc-cu12", ">=12.6.85"),)
    (build,) = builds(jax=(jax_release(jax_variant("cuda12_local", requires=requires)),))["jax"]
    assert build.cuda == ("12.1", "12.2", "12.3", "12.4", "12.6", "12.8")
    assert build.brings_own_cuda is False and build.pins == requires
    (build,) = builds(jax=(jax_release(jax_variant("cuda12", requires=())),))["jax"]
    assert build.brings_own_cuda is False and build.cuda[0] == "12.1"
    # no floor at all, not even CUDA 1.0: every minor the matrix records that the range holds
    (build,) = builds(cuda_releases=cuda_releases("0.9.0", "12.1.1"),
                      jax=(jax_release(jax_variant("cuda_local", cuda=">=0.1", requires=())),))["jax"]
    assert build.cuda == ("0.9", "12.1")


def test_jax_extras_that_are_aliases_of_one_build_keep_the_preferred_name():
    aliases = [jax_variant(extra) for extra in ("cuda", "cuda12_pip", "cuda12")]
    (build,) = builds(jax=(jax_release(*aliases),))["jax"]
    assert build.variant == "cuda12" and build.requirements == ("jax[cuda12]==0.4.30",)
    (build,) = builds(jax=(jax_release(jax_variant("cuda"), jax_variant("cuda12_pip")),))["jax"]
    assert build.variant == "cuda12_pip"
    # an extra outside the preference list comes after every known one
    (build,) = builds(jax=(jax_release(jax_variant("gpu"), jax_variant("cuda11_pip")),))["jax"]
    assert build.variant == "cuda11_pip"
    (build,) = builds(jax=(jax_release(jax_variant("gpu", requires=()), jax_variant("cuda11_local", requires=())),))[
        "jax"]
    assert build.variant == "cuda11_local"


def test_jax_extras_differing_in_cuda_cudnn_install_kind_or_source_are_separate_builds():
    variants = (jax_variant("cuda12"), jax_variant("cuda12_local"),
                jax_variant("cuda", cuda=">=12.4,<13"),
                jax_variant("cuda12_pip", cudnn=SpecifierSet(">=9.1")),
                jax_variant("cuda11", index_url="https://example.invalid/jax"))
    got = builds(jax=(jax_release(*variants),))["jax"]
    assert sorted(b.variant for b in got) == ["cuda", "cuda11", "cuda12", "cuda12_local", "cuda12_pip"]


def test_the_jax_extra_preference_order():
    assert [_jax_rank(e) for e in ("cuda13", "cuda12", "cuda11", "cuda12_pip", "cuda11_pip", "cuda", "cuda13-local",
                                   "cuda13_local", "cuda12_local", "cuda11_local", "gpu")] == list(range(10)) + [10]


def test_the_cuda_floor_of_pins_reads_only_nvidia_cuda_lower_bounds():
    assert _cuda_floor_of_pins(()) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">=12.6.85"),)) == (12, 6)
    assert _cuda_floor_of_pins((("nvidia-cuda-runtime-cu12", "==12.4.127"),)) == (12, 4)
    assert _cuda_floor_of_pins((("nvidia-cuda-runtime-cu12", "<13, >=12.2"),)) == (12, 2)
    assert _cuda_floor_of_pins((("nvidia-cuda-runtime-cu12", ">=12.2,<13"),)) == (12, 2)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">=12.6"), ("nvidia-cuda-runtime-cu12", ">=12.2"))) == (12, 6)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">=12.2"), ("nvidia-cuda-runtime-cu12", ">=12.6"))) == (12, 6)
    # not a CUDA package, not a lower bound, or no x.y in it: no floor
    assert _cuda_floor_of_pins((("nvidia-cudnn-cu12", ">=12.6"),)) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", "~=12.6"),)) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", "<=12.6"),)) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">12.6"),)) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">=12"),)) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">=x.6"),)) == (0,)
    assert _cuda_floor_of_pins((("nvidia-cuda-nvcc-cu12", ">=12.x"),)) == (0,)
    assert _cuda_floor_of_pins((("cuda-nvcc", ">=12.6"), ("nvidia-cuda-nvcc-cu12", ">=12.2"))) == (12, 2)


# --- MXNet ------------------------------------------------------------------------------------------


def test_each_mxnet_package_is_a_build_with_its_own_pythons_or_the_releases():
    release = MxnetRelease(version="1.9.1", python=("3.7", "3.8"), source=SRC, variants=(
        MxnetVariant(package="mxnet-cu112", cuda="11.2", cudnn="8.1", python=("3.8",)),
        MxnetVariant(package="mxnet-cu102", cuda="10.2")))
    got = builds(mxnet=(release,))["mxnet"]
    assert got == (
        Build(framework="mxnet", version="1.9.1", variant="mxnet-cu112", cuda=("11.2",), python=frozenset({"3.8"}),
              sass=(), ptx=(), cudnn="8.1", cudnn_range=None, requirements=("mxnet-cu112==1.9.1",), companions=(),
              index_url=None, find_links=None, pins=(), brings_own_cuda=False),
        Build(framework="mxnet", version="1.9.1", variant="mxnet-cu102", cuda=("10.2",),
              python=frozenset({"3.7", "3.8"}), sass=(), ptx=(), cudnn=None, cudnn_range=None,
              requirements=("mxnet-cu102==1.9.1",), companions=(), index_url=None, find_links=None, pins=(),
              brings_own_cuda=False),
    )
    assert all(b.established and not b.on_pypi and b.yanked is None and b.caveat == "" for b in got)


# --- order and memo ---------------------------------------------------------------------------------


def test_builds_come_newest_release_first_by_version_not_by_text():
    rows = tuple(torch_release(version=v, variants=torch_release().variants[:1]) for v in ("2.9.0", "2.10.0", "2.8.1"))
    assert [b.version for b in builds(torch=rows)["torch"]] == ["2.10.0", "2.9.0", "2.8.1"]


def test_within_a_release_established_builds_come_first_then_the_newest_cuda():
    variants = (TorchVariant(cuda="12.8", index_url="u128", established=False, note="n"),
                TorchVariant(cuda="11.8", index_url="u118"), TorchVariant(cuda="12.4", index_url="u124"),
                TorchVariant(cuda="12.6", index_url="u126"))
    got = builds(torch=(torch_release(variants=variants),))["torch"]
    assert [b.variant for b in got] == ["cu126", "cu124", "cu118", "cu128"]


def test_a_jax_build_is_ordered_by_the_newest_cuda_it_covers():
    variants = (jax_variant("cuda12", cuda=">=12.3,<12.4"), jax_variant("cuda", cuda=">=12.1,<12.5"))
    got = builds(jax=(jax_release(*variants),))["jax"]
    assert [(b.variant, b.cuda) for b in got] == [("cuda", ("12.1", "12.2", "12.3", "12.4")), ("cuda12", ("12.3",))]


def test_wheels_come_before_a_local_install_of_the_same_cuda():
    variants = (jax_variant("cuda12_local", requires=()), jax_variant("cuda12_pip"))
    got = builds(jax=(jax_release(*variants),))["jax"]
    assert [b.variant for b in got] == ["cuda12_pip", "cuda12_local"]


def test_an_mkl_package_comes_after_the_plain_one_of_the_same_cuda():
    for packages in (("mxnet-cu112mkl", "mxnet-cu112"), ("mxnet-cu112", "mxnet-cu112mkl")):
        release = MxnetRelease(version="1.9.1", python=("3.8",), source=SRC,
                               variants=tuple(MxnetVariant(package=p, cuda="11.2") for p in packages))
        assert [b.variant for b in builds(mxnet=(release,))["mxnet"]] == ["mxnet-cu112", "mxnet-cu112mkl"]


def test_every_framework_is_listed_even_without_rows():
    assert builds() == {"torch": (), "tensorflow": (), "jax": (), "mxnet": ()}


def test_the_builds_are_computed_once_per_matrix():
    matrix = Matrix(cuda_releases=cuda_releases("12.4.1"), torch=(torch_release(),))
    first = framework_builds(matrix)
    assert framework_builds(matrix) is first
    assert matrix.memo["resolver.builds.x86_64"] is first
    assert framework_builds(matrix, "aarch64") is framework_builds(matrix, "aarch64") is not first
    # every platform's builds come from one list, computed once and kept where the matrix cache looks
    assert every_build(matrix) is every_build(matrix) is matrix.memo["resolver.builds"]


def test_each_build_carries_its_platform_and_its_releases_source_builds():
    """A variant published for two CPU architectures is one build per architecture, and each build
    carries the dependencies its release lets build from source."""
    both, source = ("x86_64", "aarch64"), ("grpcio ; python_version < '3.8'",)
    variant = TorchVariant(cuda="12.4", index_url="https://download.pytorch.org/whl/cu124", compute_capabilities=("8.0",),
                           cudnn="9.1.0.70", platforms=both)
    got = builds(torch=(torch_release(variants=(variant,), source_builds=source),),
                 tensorflow=(tf_release(platforms=both, source_builds=source),),
                 jax=(jax_release(jax_variant("cuda12", platforms=both), source_builds=source),))
    every = every_build(Matrix(cuda_releases=cuda_releases("12.4.1"), torch=(torch_release(variants=(variant,),
                                                                                          source_builds=source),),
                               tensorflow=(tf_release(platforms=both, source_builds=source),),
                               jax=(jax_release(jax_variant("cuda12", platforms=both), source_builds=source),)))
    for framework in ("torch", "tensorflow", "jax"):
        assert sorted((b.platform, b.source_builds) for b in every[framework]) == [("aarch64", source),
                                                                                    ("x86_64", source)]
        assert {b.platform for b in got[framework]} == {"x86_64"}
