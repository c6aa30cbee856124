"""Rows that name what another matrix file must hold (a compute capability, a CUDA release, a cuDNN
build, an architecture, a minor-version floor) are checked against it, and a broken reference is one
error naming the file that holds the row, the row and the field, with what is known instead.

Each case writes an overlay row (or, for a row overlays cannot remove, a copy of the shipped matrix)
and compares the whole message: the file named must be the overlay's, not the shipped one's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cudaenv.matrix import MatrixError, load_matrix
from cudaenv.versions import numeric_key

SHIPPED = load_matrix(overlays=[])
ARCHITECTURES = ", ".join(sorted(a.name for a in SHIPPED.architectures))
SOURCE = 'source = "cross-reference test ; read 2026-11-26"'


def cuda_release(version: str, *, low: str = "5.0", high: str = "9.0") -> str:
    return (f'[[release]]\nversion = "{version}"\nreleased = "2026-01"\nmin_driver = "590.10"\n'
            f'min_compute_capability = "{low}"\nmax_compute_capability = "{high}"\n{SOURCE}\n')


def tensorflow_release(*, cuda: str = "12.2", cudnn: str = "8.9") -> str:
    return (f'[[release]]\nversion = "2.99.0"\npython = ["3.11"]\ncuda = "{cuda}"\ncudnn = "{cudnn}"\n'
            f'compute_capabilities = ["8.0"]\nptx = ["8.0"]\n{SOURCE}\n')


TORCH_ON_CUDA_12_77 = ('[[release]]\nversion = "2.99.0"\npython = ["3.12"]\n' + SOURCE + '\n\n[[release.variant]]\n'
                       'cuda = "12.77"\nindex_url = "https://download.pytorch.org/whl/cu1277"\n'
                       'compute_capabilities = ["8.0"]\n')


def refusal(directory: Path, **files: str) -> str:
    for name, text in files.items():
        (directory / f"{name}.toml").write_text(text, encoding="utf-8")
    with pytest.raises(MatrixError) as caught:
        load_matrix(overlays=[directory])
    return str(caught.value)


def test_a_cuda_releases_compute_capability_bounds_must_name_an_architectures_capability(tmp_path):
    where = f"{tmp_path / 'cuda.toml'}: [[release]] version = '12.99.0'"
    assert refusal(tmp_path, cuda=cuda_release("12.99.0", low="4.9")) == (
        f"{where}: field 'min_compute_capability': compute capability 4.9 belongs to no architecture in gpus.toml")
    assert refusal(tmp_path, cuda=cuda_release("12.99.0", high="9.9")) == (
        f"{where}: field 'max_compute_capability': compute capability 9.9 belongs to no architecture in gpus.toml")


def test_a_cuda_major_from_11_on_needs_its_minor_version_floor(tmp_path):
    """Minor-version compatibility exists from CUDA 11: a release of a newer major without a
    [[major]] row would leave its floor unknown; CUDA 10 had no such compatibility, so no row."""
    assert refusal(tmp_path, cuda=cuda_release("14.0.0")) == (
        f"{tmp_path / 'cuda.toml'}: [[release]] version = '14.0.0': CUDA 14.x has no [[major]] row (minor-version floor)")
    load_matrix(overlays=[_write(tmp_path / "ten", cuda=cuda_release("10.99.0", low="3.0", high="7.5"))])


def test_cuda_11_without_its_major_row_is_refused_too(tmp_path):
    """The first major with the rule: 11.x rows in a matrix whose cuda.toml lacks `major = 11`."""
    shipped = tmp_path / "shipped"
    shutil.copytree(Path(SHIPPED.origins[("cuda_majors", 11)]).parent, shipped)
    text = (shipped / "cuda.toml").read_text(encoding="utf-8")
    without = re.sub(r"\[\[major\]\]\nmajor = 11\n.*?\n\n", "", text, count=1, flags=re.S)
    assert without != text
    (shipped / "cuda.toml").write_text(without, encoding="utf-8")
    with pytest.raises(MatrixError) as caught:
        load_matrix(shipped=shipped, overlays=[])
    first_11 = min((r.version for r in SHIPPED.cuda_releases if r.major == 11), key=numeric_key)
    assert str(caught.value) == (f"{shipped / 'cuda.toml'}: [[release]] version = {first_11!r}: "
                                 "CUDA 11.x has no [[major]] row (minor-version floor)")


def test_a_driver_branch_names_known_architectures(tmp_path):
    branch = f'[[branch]]\nbranch = 999\nmax_cuda = "13.0"\narchitectures = ["hopper", "fermi2"]\n{SOURCE}\n'
    assert refusal(tmp_path, drivers=branch) == (
        f"{tmp_path / 'drivers.toml'}: [[branch]] branch = 999: field 'architectures': unknown architecture 'fermi2' "
        f"(known: {ARCHITECTURES})")


def test_an_unknown_cuda_lists_the_known_ones_in_version_order(tmp_path):
    """9.2 sorts before 10.0 as a version (after 13.x as text)."""
    message = refusal(tmp_path, cuda=cuda_release("9.2.148", low="3.0", high="7.2"), torch=TORCH_ON_CUDA_12_77)
    known = sorted({*SHIPPED.cuda_minors, "9.2"}, key=numeric_key)
    assert known.index("9.2") < known.index("10.0")  # shipped CUDA now starts at 9.0; 9.2 still before 10.0
    assert message == (f"{tmp_path / 'torch.toml'}: [[release]] version = '2.99.0' variant cu1277: field 'cuda': "
                       f"CUDA 12.77 is not a release in cuda.toml (known: {', '.join(known)})")


def test_a_cudnn_must_have_a_build_for_the_rows_cuda(tmp_path):
    """cuDNN 8.0 is a release, but only for CUDA 10.x/11.x: a CUDA 12.2 row cannot load it."""
    assert refusal(tmp_path, tensorflow=tensorflow_release(cudnn="8.0")) == (
        f"{tmp_path / 'tensorflow.toml'}: [[release]] version = '2.99.0': field 'cudnn': "
        "cuDNN 8.0 has no build for CUDA 12.2 in cudnn.toml")


def _write(directory: Path, **files: str) -> Path:
    directory.mkdir()
    for name, text in files.items():
        (directory / f"{name}.toml").write_text(text, encoding="utf-8")
    return directory


def test_a_field_like_no_other_gets_no_guess(tmp_path):
    """A suggestion only when a known field is close: an unrelated name is named alone."""
    row = cuda_release("12.99.0").replace(SOURCE, SOURCE + '\nxyzzy = "1"')
    assert refusal(tmp_path, cuda=row) == f"{tmp_path / 'cuda.toml'}: [[release]] #1 (version = '12.99.0'): unknown field 'xyzzy'"


def test_a_row_of_no_recorded_file_is_named_by_its_table():
    """A matrix assembled in code (no file behind a row) still says which table the row is in."""
    import dataclasses

    from cudaenv.matrix.validate import check_cross_references

    release = dataclasses.replace(SHIPPED.cuda_releases[-1], min_compute_capability="4.9")
    broken = dataclasses.replace(SHIPPED, cuda_releases=(*SHIPPED.cuda_releases[:-1], release), origins={})
    with pytest.raises(MatrixError) as caught:
        check_cross_references(broken)
    assert str(caught.value) == (f"cuda_releases: [[release]] version = {release.version!r}: field "
                                 "'min_compute_capability': compute capability 4.9 belongs to no architecture in gpus.toml")


# --- one case per reference: (file, row text, the message after "<file>: ") ---------------------

def _torch(*, release: str = "", variant: str = "") -> str:
    return (f'[[release]]\nversion = "2.99.0"\npython = ["3.12"]\n{release}{SOURCE}\n\n[[release.variant]]\n'
            f'cuda = "12.8"\nindex_url = "https://download.pytorch.org/whl/cu128"\ncompute_capabilities = ["8.0"]\n'
            f'{variant}')


def _tensorflow(extra: str = "", **fields: str) -> str:
    text = tensorflow_release(**fields)
    return text.replace(SOURCE, extra + SOURCE) if extra else text


def _gpu(architecture: str, cc: str, name: str = "Z100", aliases: str = "") -> str:
    return (f'[[gpu]]\nname = "{name}"\n{aliases}compute_capability = "{cc}"\narchitecture = "{architecture}"\n'
            f'datacenter = true\n{SOURCE}\n')


def _jax(*, extra: str = "cuda12", cuda: str = ">=12.1,<13", cc: str = "8.0") -> str:
    return (f'[[release]]\nversion = "0.99.0"\njaxlib = "0.99.0"\npython = ["3.12"]\n{SOURCE}\n\n[[release.variant]]\n'
            f'extra = "{extra}"\ncuda = "{cuda}"\ncudnn = ">=9,<10"\npackages = ["jax-cuda12-plugin==0.99.0"]\n'
            f'compute_capabilities = ["{cc}"]\n')


def _image(cuda: str, tag: str) -> str:
    return f'[[image]]\ncuda = "{cuda}"\nrepository = "nvidia/cuda"\ntag_version = "{tag}"\nos = ["ubuntu24.04"]\n{SOURCE}\n'


AMPERE = next(a for a in SHIPPED.architectures if a.name == "ampere")
KNOWN_CUDA = ", ".join(sorted(SHIPPED.cuda_minors, key=numeric_key))
TORCH_ROW = "[[release]] version = '2.99.0'"
TORCH_VARIANT = f"{TORCH_ROW} variant cu128"
TF_ROW = "[[release]] version = '2.99.0'"
NO_ARCH = "belongs to no architecture in gpus.toml"
PTX_SOURCE = 'ptx_unusable_source = "https://example.com/report ; read 2026-11-26"\n'

REFERENCES = {
    "torch-variant-sass": ("torch", _torch(variant='ptx = ["8.0"]\n').replace('compute_capabilities = ["8.0"]',
                                                                            'compute_capabilities = ["4.9"]'),
                           f"{TORCH_VARIANT}: field 'compute_capabilities': compute capability 4.9 {NO_ARCH}"),
    "torch-variant-ptx": ("torch", _torch(variant='ptx = ["4.9"]\n'),
                          f"{TORCH_VARIANT}: field 'ptx': compute capability 4.9 {NO_ARCH}"),
    "torch-variant-cudnn": ("torch", _torch(variant='cudnn = "8.0"\n'),
                            f"{TORCH_VARIANT}: field 'cudnn': cuDNN 8.0 has no build for CUDA 12.8 in cudnn.toml"),
    "torch-pypi-cuda": ("torch", _torch(release='pypi_cuda = "12.77"\n'),
                        f"{TORCH_ROW}: field 'pypi_cuda': CUDA 12.77 is not a release in cuda.toml (known: {KNOWN_CUDA})"),
    "tf-cuda": ("tensorflow", _tensorflow(cuda="12.77"),
                f"{TF_ROW}: field 'cuda': CUDA 12.77 is not a release in cuda.toml (known: {KNOWN_CUDA})"),
    "tf-sass": ("tensorflow", _tensorflow().replace('compute_capabilities = ["8.0"]', 'compute_capabilities = ["4.9"]'),
                f"{TF_ROW}: field 'compute_capabilities': compute capability 4.9 {NO_ARCH}"),
    "tf-ptx": ("tensorflow", _tensorflow().replace('ptx = ["8.0"]', 'ptx = ["4.9"]'),
               f"{TF_ROW}: field 'ptx': compute capability 4.9 {NO_ARCH}"),
    "tf-ptx-unusable-on": ("tensorflow", _tensorflow('ptx_unusable_on = ["4.9"]\n' + PTX_SOURCE),
                           f"{TF_ROW}: field 'ptx_unusable_on': compute capability 4.9 {NO_ARCH}"),
    "tf-ptx-unusable-no-source": ("tensorflow", _tensorflow('ptx_unusable_on = ["12.0"]\n'),
                                  f"{TF_ROW}: fields 'ptx_unusable_on' and 'ptx_unusable_source': expected both "
                                  "(where the PTX fails, and the reports that say so) or neither"),
    "tf-ptx-unusable-no-ptx": ("tensorflow", _tensorflow('ptx_unusable_on = ["12.0"]\n' + PTX_SOURCE)
                               .replace('ptx = ["8.0"]\n', ""),
                               f"{TF_ROW}: field 'ptx_unusable_on': the release records no ptx to fail"),
    "tf-cudnn-unknown": ("tensorflow", _tensorflow(cudnn="6.5"),  # NVIDIA never released a cuDNN 6.5 (6.0, then 7.x)
                         f"{TF_ROW}: field 'cudnn': cuDNN 6.5 is not a release in cudnn.toml"),
    "gpu-architecture": ("gpus", _gpu("fermi2", "9.0"),
                         "[[gpu]] name = 'Z100': field 'architecture': unknown architecture 'fermi2'"),
    "gpu-cc": ("gpus", _gpu("ampere", "9.0"),
               f"[[gpu]] name = 'Z100': field 'compute_capability': 9.0 is not a ampere compute capability "
               f"({', '.join(AMPERE.compute_capabilities)})"),
    "gpu-alias": ("gpus", _gpu("hopper", "9.0", aliases='aliases = ["NVIDIA A100-SXM4-80GB"]\n'),
                  "[[gpu]] name = 'Z100': name or alias 'NVIDIA A100-SXM4-80GB' also names 'A100'"),
    "branch-architecture": ("drivers", f'[[branch]]\nbranch = 999\nmax_cuda = "13.0"\narchitectures = ["fermi2"]\n{SOURCE}\n',
                            f"[[branch]] branch = 999: field 'architectures': unknown architecture 'fermi2' "
                            f"(known: {ARCHITECTURES})"),
    "jax-cuda": ("jax", _jax(extra="cuda99", cuda=">=99,<100"),
                 "[[release]] version = '0.99.0' variant 'cuda99': field 'cuda': no CUDA release in cuda.toml "
                 "satisfies <100,>=99"),
    "jax-sass": ("jax", _jax(cc="4.9"), f"[[release]] version = '0.99.0' variant 'cuda12': field 'compute_capabilities': "
                                        f"compute capability 4.9 {NO_ARCH}"),
    "mxnet-cuda": ("mxnet", f'[[release]]\nversion = "9.9.9"\npython = ["3.8"]\n{SOURCE}\n\n[[release.variant]]\n'
                            'package = "mxnet-cu1277"\ncuda = "12.77"\n',
                   "[[release]] version = '9.9.9' variant 'mxnet-cu1277': field 'cuda': CUDA 12.77 is not a release in "
                   f"cuda.toml (known: {KNOWN_CUDA})"),
    "image-cuda": ("images", _image("12.99.1", "12.99.1"),
                   "[[image]] cuda = '12.99.1': field 'cuda': CUDA 12.99.1 is not a release in cuda.toml"),
    "image-tag": ("images", _image("12.6.1", "12.5.1"),
                  "[[image]] cuda = '12.6.1': field 'tag_version': '12.5.1' does not spell CUDA 12.6.1"),
}


@pytest.mark.parametrize("case", sorted(REFERENCES))
def test_each_cross_reference_is_refused_in_one_line_naming_its_file_row_and_field(tmp_path, case):
    name, text, expected = REFERENCES[case]
    assert refusal(tmp_path, **{name: text}) == f"{tmp_path / (name + '.toml')}: {expected}"


def test_a_superseded_image_row_is_history_and_never_a_base(tmp_path):
    """The '11.0' tags were rebuilt in place with CUDA 11.0.3 (images.toml's note): the 11.0.2 row
    is kept, marked superseded, and offered to no resolution; an overlay may mark a row so too."""
    shipped = {i.cuda: i for i in SHIPPED.images}
    assert shipped["11.0.2"].superseded and shipped["11.1.0"].superseded
    assert "11.0.2" not in [i.cuda for i in SHIPPED.images_for("11.0")]
    assert "11.0.3" in [i.cuda for i in SHIPPED.images_for("11.0")]
    row = ('[[image]]\ncuda = "12.4.1"\nrepository = "nvidia/cuda"\ntag_version = "12.4.1"\nos = ["ubuntu22.04"]\n'
           f'superseded = true\n{SOURCE}\n')
    (tmp_path / "images.toml").write_text(row, encoding="utf-8")
    assert "12.4.1" not in [i.cuda for i in load_matrix(overlays=[tmp_path]).images_for("12.4")]
    (tmp_path / "images.toml").write_text(row.replace("superseded = true", 'superseded = "yes"'), encoding="utf-8")
    with pytest.raises(MatrixError, match="superseded"):
        load_matrix(overlays=[tmp_path])
