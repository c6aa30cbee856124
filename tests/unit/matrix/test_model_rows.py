"""The matrix rows' derived values and their JSON form (``cudaenv.matrix.model``).

``cudaenv matrix show --json`` prints rows through ``row_as_dict``: the keys must read as the TOML
files spell them (``variant``, ``yanked = true``), an absent optional field is left out, and a
specifier or a requirement table is plain JSON. The image tag and the CUDA x.y of a release are
what a Dockerfile's FROM line and the resolver read.
"""

from __future__ import annotations

import json

from packaging.specifiers import SpecifierSet

from cudaenv.matrix.model import (BaseImage, CudaRelease, CudnnRelease, ImageCudnn, JaxRelease, JaxVariant,
                                  TensorflowRelease, TorchRelease, TorchVariant, row_as_dict)

SRC = "https://example.invalid/notes ; read 2026-11-28"


def cuda(version: str) -> CudaRelease:
    return CudaRelease(version=version, min_compute_capability="5.0", max_compute_capability="9.0", source=SRC)


def test_a_cuda_release_names_its_minor_and_major():
    assert (cuda("12.4.1").xy, cuda("12.4.1").major) == ("12.4", 12)
    assert (cuda("9.0.176").xy, cuda("9.0.176").major) == ("9.0", 9)
    assert (cuda("11.8.0").xy, cuda("11.8.0").major) == ("11.8", 11)


def test_a_torch_variant_is_tagged_cu_and_its_cuda_without_the_dot():
    assert TorchVariant(cuda="12.4", index_url="u").tag == "cu124"
    assert TorchVariant(cuda="11.8", index_url="u").tag == "cu118"
    assert TorchVariant(cuda="9.2", index_url="u").tag == "cu92"


def image() -> BaseImage:
    return BaseImage(cuda="12.4.1", repository="nvidia/cuda", tag_version="12.4.1", os=("ubuntu22.04",), source=SRC,
                     cudnn=(ImageCudnn(tag="cudnn", version="9.1.0.70", os=("ubuntu22.04",)),))


def test_an_image_tag_joins_version_flavor_and_os_with_cudnn_when_asked():
    assert image().tag("devel", "ubuntu22.04") == "12.4.1-devel-ubuntu22.04"
    assert image().tag("runtime", "ubuntu20.04", "cudnn8") == "12.4.1-cudnn8-runtime-ubuntu20.04"
    assert image().tag("base", "ubuntu22.04", None) == "12.4.1-base-ubuntu22.04"
    assert image().tag("base", "ubuntu22.04", "") == "12.4.1-base-ubuntu22.04"


def test_an_image_row_as_json_keeps_false_flags_and_nests_its_cudnn_rows():
    assert row_as_dict(image()) == {
        "cuda": "12.4.1", "repository": "nvidia/cuda", "tag_version": "12.4.1", "os": ["ubuntu22.04"], "source": SRC,
        "cudnn": [{"tag": "cudnn", "version": "9.1.0.70", "os": ["ubuntu22.04"]}], "removed": False,
        "superseded": False}


def torch_row(**kw) -> TorchRelease:
    fields = dict(version="2.6.0", python=("3.11", "3.12"), source=SRC, torchvision="0.21.0", pypi_cuda="12.4",
                  pypi_requires=(("nvidia-cublas-cu12", "==12.4.5.8"), ("nvidia-cudnn-cu12", "==9.1.0.70")),
                  variants=(TorchVariant(cuda="12.4", index_url="https://download.pytorch.org/whl/cu124",
                                         compute_capabilities=("8.0", "9.0"), cudnn="9.1.0.70", note="n"),))
    return TorchRelease(**{**fields, **kw})


def test_a_torch_row_as_json_reads_as_the_toml_spells_it():
    data = row_as_dict(torch_row())
    assert data == {
        "version": "2.6.0", "python": ["3.11", "3.12"], "source": SRC,
        "variant": [{"cuda": "12.4", "index_url": "https://download.pytorch.org/whl/cu124",
                     "compute_capabilities": ["8.0", "9.0"], "cudnn": "9.1.0.70", "established": True, "note": "n"}],
        "torchvision": "0.21.0", "pypi_cuda": "12.4",
        "pypi_requires": {"nvidia-cublas-cu12": "==12.4.5.8", "nvidia-cudnn-cu12": "==9.1.0.70"}}
    assert json.loads(json.dumps(data)) == data


def test_a_yank_reads_true_without_a_reason_the_reason_with_one_and_is_absent_otherwise():
    assert row_as_dict(torch_row(yanked=""))["yanked"] is True
    assert row_as_dict(torch_row(yanked="broken wheel"))["yanked"] == "broken wheel"
    assert "yanked" not in row_as_dict(torch_row())
    # the fields after the yank are still shown
    assert row_as_dict(torch_row(yanked="", note="see PyPI"))["note"] == "see PyPI"
    assert row_as_dict(torch_row(yanked="why", note="see PyPI"))["note"] == "see PyPI"


def test_an_empty_source_is_still_shown_but_an_empty_note_is_not():
    assert row_as_dict(torch_row(source="", note="")) == {
        **row_as_dict(torch_row()), "source": ""}
    assert row_as_dict(torch_row(note="x"))["note"] == "x"


def test_specifiers_and_requirement_tables_become_plain_json():
    jax = JaxRelease(version="0.4.30", jaxlib="0.4.30", python=("3.11",), source=SRC, yanked="bad", variants=(
        JaxVariant(extra="cuda12", cuda=SpecifierSet(">=12.1,<13"), cudnn=SpecifierSet(">=9.1,<10"),
                   requires=(("nvidia-cudnn-cu12", ">=9.1,<10.0"),)),
        JaxVariant(extra="cuda12_local", cuda=SpecifierSet(">=12.1,<13"))))
    data = row_as_dict(jax)
    assert data == {
        "version": "0.4.30", "jaxlib": "0.4.30", "python": ["3.11"], "source": SRC, "yanked": "bad",
        "variant": [{"extra": "cuda12", "cuda": str(SpecifierSet(">=12.1,<13")), "cudnn": str(SpecifierSet(">=9.1,<10")),
                     "requires": {"nvidia-cudnn-cu12": ">=9.1,<10.0"}, "no_extra": False},
                    {"extra": "cuda12_local", "cuda": str(SpecifierSet(">=12.1,<13")), "no_extra": False}]}
    assert json.loads(json.dumps(data)) == data
    assert row_as_dict(CudnnRelease(version="9.1.0", cuda=SpecifierSet(">=12.0,<13"), source=SRC)) == {
        "version": "9.1.0", "cuda": str(SpecifierSet(">=12.0,<13")), "source": SRC}


def test_a_tensorflow_row_without_the_extra_leaves_and_cuda_out():
    row = TensorflowRelease(version="1.14.0", python=("3.7",), cuda="10.0", cudnn="7.4", source=SRC,
                            gpu_package="tensorflow-gpu", and_cuda=(), yanked=None)
    assert row_as_dict(row) == {"version": "1.14.0", "python": ["3.7"], "cuda": "10.0", "cudnn": "7.4", "source": SRC,
                                "gpu_package": "tensorflow-gpu"}
    with_extra = TensorflowRelease(version="2.15.1", python=("3.11",), cuda="12.2", cudnn="8.9", source=SRC,
                                   and_cuda=(("nvidia-cudnn-cu12", "==8.9.4.25"),))
    assert row_as_dict(with_extra)["and_cuda"] == {"nvidia-cudnn-cu12": "==8.9.4.25"}
