"""Every field of every matrix row kind, as matrix/README.md documents it: which fields a row must
have, what an absent optional field means, and the one-line error a wrong value gets.

Why a table and not a few examples: each builder passes its own arguments to the typed reader
(``required=False``, ``default=""``, ``parts=3``, the words of the error), and a mutation run showed
that a dropped or changed argument in any one field went unnoticed. This is the file format's
specification, field by field; a new field is added here with its rule.
"""

from __future__ import annotations

from typing import Any

import pytest

from cudaenv.matrix import MatrixError
from cudaenv.matrix import load
from cudaenv.matrix.load import RowReader
from cudaenv.versions import parse_specifier

WHERE = "x.toml: [[row]] #1"
SRC = "https://example.invalid/notes ; read 2026-11-26"
SOURCE_WANTED = 'a source with the date it was read ("<URL or document> ; read YYYY-MM-DD")'
STRING = "a non-empty string"
CC = 'a compute capability "X.Y"'
CC_LIST = 'a list of compute capabilities like ["8.0", "9.0"]'
CUDA_XY = 'a CUDA version "X.Y"'
CUDA_XYZ = 'a CUDA release "X.Y.Z"'
PEP440 = "a PEP 440 version string"
SPECIFIER = 'a PEP 440 specifier such as ">=12.0,<13"'
PYTHONS = 'a list of Python versions like ["3.11"]'
BOOL = "true or false"
TAG = "a tag piece of letters, digits, _ . - (Docker's tag grammar)"
TAGS = "tag pieces of letters, digits, _ . - (Docker's tag grammar)"
REQUIRES = "a table of package = specifier"
YANKED = "true or PyPI's reason for the yank (a non-empty string)"
YANKED_WRONG = [(False, YANKED), ("", YANKED), (" ", YANKED), (1, YANKED)]

# a complete valid row per kind (every optional field present, each with a value unlike its default)
TORCH_VARIANT = {"cuda": "12.4", "index_url": "https://download.pytorch.org/whl/cu124", "cudnn": "9.1.0.70",
                 "compute_capabilities": ["8.0", "9.0"], "ptx": ["9.0"], "established": True, "note": "n"}
JAX_VARIANT = {"extra": "cuda12", "cuda": ">=12.1,<13", "cudnn": ">=9.1,<10", "packages": ["jax-cuda12-plugin==0.4.30"],
               "index_url": "https://example.invalid/jax", "compute_capabilities": ["8.0"], "ptx": ["9.0"],
               "requires": {"nvidia-cudnn-cu12": ">=9.1,<10.0"}, "no_extra": True, "note": "n"}
MXNET_VARIANT = {"package": "mxnet-cu112", "cuda": "11.2", "cudnn": "8.1", "python": ["3.8"], "note": "n"}
YANKED_COMPANION = {"package": "torchvision", "version": "0.15.0", "reason": "incorrect torch dependency",
                    "variant": "cu117", "source": SRC}
IMAGE_CUDNN = {"tag": "cudnn8", "version": "8.1.0.77", "os": ["ubuntu20.04"]}

ROWS: dict[str, tuple[Any, dict]] = {
    "cuda_major": (load.cuda_major, {"major": 12, "minor_version_floor": "525.60.13", "source": SRC, "note": "n"}),
    "cuda_release": (load.cuda_release, {
        "version": "12.4.1", "released": "2024-04", "min_driver": "550.54.15", "min_compute_capability": "5.0",
        "max_compute_capability": "9.0", "forward_compat_branches": [535, 550], "source": SRC, "note": "n"}),
    "driver_branch": (load.driver_branch, {
        "branch": 535, "type": "LTSB", "max_cuda": "12.2", "architectures": ["ampere", "hopper"], "eol": "2028-06",
        "source": SRC, "note": "n"}),
    "architecture": (load.architecture, {"name": "ampere", "compute_capabilities": ["8.0", "8.6"], "source": SRC,
                                         "note": "n"}),
    "gpu": (load.gpu, {"name": "A100", "aliases": ["NVIDIA A100-SXM4-80GB"], "compute_capability": "8.0",
                       "architecture": "ampere", "datacenter": True, "host_arch": "aarch64", "source": SRC, "note": "n"}),
    "cudnn_release": (load.cudnn_release, {"version": "9.1.0", "cuda": ">=12.0,<13", "min_compute_capability": "5.0",
                                           "max_compute_capability": "9.0", "source": SRC, "note": "n"}),
    "torch_variant": (load.torch_variant, TORCH_VARIANT),
    "torch_release": (load.torch_release, {
        "version": "2.6.0", "released": "2025-01-29", "python": ["3.11", "3.12"], "torchvision": "0.21.0",
        "torchaudio": "2.6.0", "torchvision_range": ">=0.21,<0.22", "torchvision_source": SRC, "pypi_cuda": "12.4",
        "pypi_requires": {"nvidia-cudnn-cu12": "==9.1.0.70"}, "variant": [TORCH_VARIANT], "source": SRC,
        "pypi_source": SRC, "yanked": "Contains an incorrect torch dependency", "yanked_companion": [YANKED_COMPANION],
        "note": "n"}),
    "tensorflow_release": (load.tensorflow_release, {
        "version": "2.15.1", "python": ["3.11"], "cuda": "12.2", "cudnn": "8.9", "keras": ">=2.15.0,<2.16",
        "compute_capabilities": ["8.0"], "ptx": ["9.0"], "and_cuda": {"nvidia-cudnn-cu12": "==8.9.4.25"},
        "and_cuda_uninstallable": "why", "ptx_unusable_on": ["12.0"], "ptx_unusable_source": SRC, "source": SRC,
        "pypi_source": SRC, "yanked": "reason", "gpu_package": "tensorflow-gpu", "gpu_route": "nvidia-tensorflow",
        "gpu_route_source": SRC, "note": "n"}),
    "jax_variant": (load.jax_variant, JAX_VARIANT),
    "jax_release": (load.jax_release, {"version": "0.4.30", "jaxlib": "0.4.30", "python": ["3.11"],
                                       "released": "2024-06-18", "variant": [JAX_VARIANT], "source": SRC,
                                       "pypi_source": SRC, "yanked": "Bad jaxlib GPU release",
                                       "uninstallable": "pins a jaxlib never published", "note": "n"}),
    "mxnet_variant": (load.mxnet_variant, MXNET_VARIANT),
    "mxnet_release": (load.mxnet_release, {"version": "1.9.1", "python": ["3.8"], "variant": [MXNET_VARIANT],
                                           "source": SRC, "note": "n"}),
    "image_cudnn": (load.image_cudnn, IMAGE_CUDNN),
    "yanked_companion": (load.yanked_companion, YANKED_COMPANION),
    "base_image": (load.base_image, {
        "cuda": "11.2.2", "repository": "nvidia/cuda", "tag_version": "11.2.2", "os": ["ubuntu20.04"],
        "cudnn": [IMAGE_CUDNN], "removed": True, "source": SRC, "note": "n", "superseded": True}),
    "os_release": (load.os_release, {"name": "ubuntu18.04", "init": "dumb-init", "python": ["3.6", "3.7"],
                                     "packages": ["python3-distutils"], "source": SRC, "note": "n"}),
}

ATTRIBUTE = {"variant": "variants", "yanked_companion": "yanked_companions"}  # a field whose row attribute has another name


def attribute(kind: str, field: str) -> str:
    """The row attribute a field is held in (a yanked companion's own `variant` is a plain value)."""
    return field if kind == "yanked_companion" else ATTRIBUTE.get(field, field)

REQUIRED = object()  # the field has no default: a row without it is refused

# kind -> field -> (default when absent, or REQUIRED;
#                   [(a wrong value, what the error says was expected[, the part of the value it shows])])
FIELDS: dict[str, dict[str, tuple[Any, list[tuple[Any, str]]]]] = {
    "cuda_major": {
        "major": (REQUIRED, [("12", "an integer"), (True, "an integer")]),
        "minor_version_floor": (REQUIRED, [("x", "a driver version")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [(" ", STRING)]),
    },
    "cuda_release": {
        "version": (REQUIRED, [("12.4", CUDA_XYZ), ("12.4.1.1", CUDA_XYZ)]),
        "released": (None, [(2024, STRING)]),
        "min_driver": (None, [("535", "a driver version like 535.104.05")]),
        "min_compute_capability": (REQUIRED, [("9", CC)]),
        "max_compute_capability": (REQUIRED, [("9.0.0", CC)]),
        "forward_compat_branches": ((), [([True], "a list of driver branches like [535, 550]"),
                                         (["535"], "a list of driver branches like [535, 550]")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
    "driver_branch": {
        "branch": (REQUIRED, [(True, "an integer"), (0, "a driver branch number like 535"),
                              (-550, "a driver branch number like 535"), (10_000, "a driver branch number like 535")]),
        "type": (None, [(1, STRING)]),
        "max_cuda": (REQUIRED, [("12", CUDA_XY)]),
        "architectures": (REQUIRED, [([""], "a list of strings")]),
        "eol": (None, [("", STRING)]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [(3, STRING)]),
    },
    "architecture": {
        "name": (REQUIRED, [(3, STRING)]),
        "compute_capabilities": (REQUIRED, [(["8"], CC_LIST)]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
    "gpu": {
        "name": (REQUIRED, [("", STRING)]),
        "aliases": ((), [(["", "x"], "a list of strings")]),
        "compute_capability": (REQUIRED, [("8", CC)]),
        "architecture": (REQUIRED, [(8, STRING)]),
        "datacenter": (REQUIRED, [("yes", BOOL), (1, BOOL)]),
        "host_arch": ("x86_64", [("arm64", "'x86_64' or 'aarch64'")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
    "cudnn_release": {
        "version": (REQUIRED, [(v, 'a cuDNN release "X.Y.Z" like "9.1.0"') for v in ("9", "9.1", "9.1.0.70")]),
        "cuda": (REQUIRED, [("twelve", SPECIFIER), ("", SPECIFIER), (" ", SPECIFIER)]),
        "min_compute_capability": (None, [("5", CC)]),
        "max_compute_capability": (None, [("9", CC)]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
    "torch_variant": {
        "cuda": (REQUIRED, [("12.4.1", CUDA_XY)]),
        "index_url": (REQUIRED, [("", STRING)]),
        "cudnn": (None, [("9", 'a cuDNN version like "9.1.0.70"')]),
        "compute_capabilities": ((), [(["sm_80"], CC_LIST)]),
        "ptx": ((), [(["9"], CC_LIST)]),
        "established": (True, [("no", BOOL)]),
        "note": ("", [("", STRING)]),
    },
    "torch_release": {
        "version": (REQUIRED, [("two", PEP440), ("2.6.0+cu124", PEP440)]),
        "released": (None, [("", STRING)]),
        "python": (REQUIRED, [(["3"], PYTHONS), ("3.11", PYTHONS), ([], 'at least one Python version like ["3.11"]')]),
        "torchvision": (None, [("zero", PEP440)]),
        "torchaudio": (None, [("zero", PEP440)]),
        "torchvision_range": (None, [("zero", SPECIFIER)]),
        "torchvision_source": (None, [("PyPI", SOURCE_WANTED)]),
        "pypi_cuda": (None, [("12", CUDA_XY)]),
        "pypi_requires": ((), [("nvidia", REQUIRES)]),
        "variant": ((), [("cu124", "an array of tables ([[...variant]])")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "pypi_source": (None, [("PyPI", SOURCE_WANTED)]),
        "yanked": (None, YANKED_WRONG),
        "yanked_companion": ((), [({"package": "x"}, "an array of tables ([[...yanked_companion]])")]),
        "note": ("", [("", STRING)]),
    },
    "yanked_companion": {
        "package": (REQUIRED, [("torch", "'torchvision' or 'torchaudio'"), ("", STRING)]),
        "version": (REQUIRED, [("0.15.0+cu117", PEP440)]),
        "reason": (REQUIRED, [(False, YANKED.replace("PyPI's reason for the yank", "PyPI's reason for the yank")), ("", YANKED)]),
        "variant": (None, [("117", 'a CUDA build tag like "cu117"'), ("cu", 'a CUDA build tag like "cu117"')]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
    },
    "tensorflow_release": {
        "version": (REQUIRED, [("two", PEP440)]),
        "python": (REQUIRED, [(["3.11.4"], PYTHONS)]),
        "cuda": (REQUIRED, [("12", CUDA_XY)]),
        "cudnn": (REQUIRED, [("8", 'a cuDNN version like "8.9"')]),
        "keras": (None, [("", STRING)]),
        "compute_capabilities": ((), [(["8"], CC_LIST)]),
        "ptx": ((), [(["9"], CC_LIST)]),
        "and_cuda": ((), [(["x"], REQUIRES)]),
        "and_cuda_uninstallable": (None, [("", STRING)]),
        "ptx_unusable_on": ((), [(["12"], CC_LIST)]),
        "ptx_unusable_source": (None, [("reports", SOURCE_WANTED)]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "pypi_source": (None, [("PyPI", SOURCE_WANTED)]),
        "yanked": (None, YANKED_WRONG),
        "gpu_package": (None, [("tensorflow-cpu", "'tensorflow-gpu'"), ("", STRING)]),
        "gpu_route": (None, [("", STRING)]),
        "gpu_route_source": (None, [("NVIDIA", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
    "jax_variant": {
        "extra": (REQUIRED, [("", STRING)]),
        "cuda": (REQUIRED, [("twelve", SPECIFIER)]),
        "cudnn": (None, [("nine", SPECIFIER)]),
        "packages": ((), [([1], "a list of strings")]),
        "index_url": (None, [("", STRING)]),
        "compute_capabilities": ((), [(["8"], CC_LIST)]),
        "ptx": ((), [(["9"], CC_LIST)]),
        "requires": ((), [("nvidia", REQUIRES)]),
        "no_extra": (False, [("yes", BOOL)]),
        "note": ("", [("", STRING)]),
    },
    "jax_release": {
        "version": (REQUIRED, [("zero", PEP440)]),
        "jaxlib": (REQUIRED, [("zero", PEP440)]),
        "python": (REQUIRED, [(["3"], PYTHONS)]),
        "released": (None, [("", STRING)]),
        "variant": ((), [({"extra": "x"}, "an array of tables ([[...variant]])")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "pypi_source": (None, [("PyPI", SOURCE_WANTED)]),
        "yanked": (None, YANKED_WRONG),
        "uninstallable": (None, [("", STRING)]),
        "note": ("", [("", STRING)]),
    },
    "mxnet_variant": {
        "package": (REQUIRED, [("", STRING)]),
        "cuda": (REQUIRED, [("11", CUDA_XY)]),
        "cudnn": (None, [("8", 'a cuDNN version like "8.1"')]),
        "python": ((), [(["3"], PYTHONS), ([], 'at least one Python version like ["3.11"]')]),
        "note": ("", [("", STRING)]),
    },
    "mxnet_release": {
        "version": (REQUIRED, [("one", PEP440)]),
        "python": (REQUIRED, [(["3"], PYTHONS)]),
        "variant": ((), [("mxnet-cu112", "an array of tables ([[...variant]])")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
    "image_cudnn": {
        "tag": (REQUIRED, [("cudnn 8", TAG), ("c" * 65, TAG), ("", STRING)]),
        "version": (REQUIRED, [(v, 'a cuDNN build "X.Y.Z.B" like "9.1.0.70" (or "X.Y.Z" for cuDNN 5 and 6, like '
                                   '"5.1.10")') for v in ("8", "8.1", "8.1.0", "7.6.5", "8.1.0.77.1", "x.1.0")]),
        "os": (REQUIRED, [(["ubuntu 20.04"], TAGS, "ubuntu 20.04"), (["u" * 65], TAGS, "u" * 65)]),
    },
    "base_image": {
        "cuda": (REQUIRED, [("11.2", CUDA_XYZ)]),
        "repository": (REQUIRED, [("Nvidia/cuda", "an image repository like nvidia/cuda (Docker's reference grammar)")]),
        "tag_version": (REQUIRED, [("11.2.2\nRUN id", TAG)]),
        "os": (REQUIRED, [(["ubuntu20.04", "x y"], TAGS, "x y")]),  # the piece that is wrong
        "cudnn": ((), [("cudnn8", "an array of tables ([[...cudnn]])")]),
        "removed": (False, [("yes", BOOL)]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
        "superseded": (False, [(0, BOOL)]),
    },
    "os_release": {
        "name": (REQUIRED, [("ubuntu 18.04", TAG), ("", STRING)]),
        "init": (None, [("systemd", "'tini' or 'dumb-init'"), ("/usr/bin/tini", "'tini' or 'dumb-init'"), ("", STRING)]),
        "python": ((), [(["3"], PYTHONS), ([], 'at least one Python version like ["3.11"]')]),
        "packages": ((), [(["Python3"], "Debian package names (lower-case letters, digits, + - .)"),
                          (["a;b"], "Debian package names (lower-case letters, digits, + - .)"),
                          (["x"], "Debian package names (lower-case letters, digits, + - .)")]),
        "source": (REQUIRED, [("no date", SOURCE_WANTED)]),
        "note": ("", [("", STRING)]),
    },
}

CASES = [(kind, field) for kind, fields in FIELDS.items() for field in fields]
WRONG = [(kind, field, i) for kind, fields in FIELDS.items() for field, (_, bad) in fields.items()
         for i in range(len(bad))]


def build(kind: str, table: dict):
    builder, _ = ROWS[kind]
    return builder(RowReader(table, WHERE))


def refusal(kind: str, table: dict) -> str:
    with pytest.raises(MatrixError) as caught:
        build(kind, table)
    return str(caught.value)


def loaded(value: Any) -> Any:
    """A TOML value as the row holds it: lists as tuples, tables as sorted pairs, text as text."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    return value


def test_the_table_covers_every_field_of_every_row_kind():
    """A field the loader reads that this table does not list (or the other way round) fails here:
    the complete rows above must use every field, and every field must have its rule."""
    assert set(FIELDS) == set(ROWS)
    for kind, (_, table) in ROWS.items():
        assert set(FIELDS[kind]) == set(table), kind


@pytest.mark.parametrize("kind", list(ROWS))
def test_a_complete_row_keeps_every_value_it_was_given(kind):
    _, table = ROWS[kind]
    row = build(kind, dict(table))
    for field, value in table.items():
        held = getattr(row, attribute(kind, field))
        if field in ("variant", "cudnn", "yanked_companion") and isinstance(value, list):  # rows of rows: one built row per table
            assert len(held) == len(value) and all(not isinstance(item, dict) for item in held), field
        elif kind in ("cudnn_release", "jax_variant") and field in ("cuda", "cudnn"):  # a parsed specifier
            assert str(held) == str(parse_specifier(value)), field
        else:
            assert held == loaded(value), (kind, field, held)


@pytest.mark.parametrize("kind, field", CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_a_row_without_the_field_is_refused_or_takes_its_default(kind, field):
    default, _ = FIELDS[kind][field]
    table = {k: v for k, v in ROWS[kind][1].items() if k != field}
    if default is REQUIRED:
        message = refusal(kind, table)
        # a missing field is named; when a left-over field looks like it, that one is named as the typo
        assert message in (f"{WHERE}: missing required field {field!r}",) or (
            message.startswith(f"{WHERE}: unknown field ") and message.endswith(f"(did you mean {field!r}?)")), message
    else:
        row = build(kind, table)
        assert getattr(row, attribute(kind, field)) == default


@pytest.mark.parametrize("kind, field, index", WRONG, ids=[f"{k}-{f}-{i}" for k, f, i in WRONG])
def test_a_wrong_value_is_one_line_naming_the_field_and_what_was_expected(kind, field, index):
    from cudaenv.errors import shown

    bad, expected, *piece = FIELDS[kind][field][1][index]
    message = refusal(kind, {**ROWS[kind][1], field: bad})
    assert message == f"{WHERE}: field {field!r}: expected {expected}, got {shown(piece[0] if piece else bad)}"


@pytest.mark.parametrize("kind, field", [("torch_release", "variant"), ("jax_release", "variant"),
                                         ("mxnet_release", "variant"), ("base_image", "cudnn")],
                         ids=["torch", "jax", "mxnet", "image"])
def test_a_bad_nested_row_is_named_by_its_place_in_the_parent(kind, field):
    """``[[release.variant]]`` #2 of a release row reads ``<release> variant[1]: ...``."""
    good = ROWS[kind][1][field][0]
    broken = {**good, "surplus": 1}
    message = refusal(kind, {**ROWS[kind][1], field: [good, broken]})
    assert message == f"{WHERE} {field}[1]: unknown field 'surplus'"


def test_a_doubtful_torch_build_must_say_what_is_missing():
    """``established = false`` (no primary source shows the build was published) needs a note."""
    doubtful = {**TORCH_VARIANT, "established": False}
    assert build("torch_variant", {**doubtful, "note": "no wheel index record"}).established is False
    without_note = {k: v for k, v in doubtful.items() if k != "note"}
    assert refusal("torch_variant", without_note) == (
        f"{WHERE}: field 'note': expected a note naming what is missing when established = false, got ''")
    assert build("torch_variant", {k: v for k, v in TORCH_VARIANT.items() if k != "note"}).note == ""


@pytest.mark.parametrize("kind, field, value", [
    ("image_cudnn", "tag", "c" * 64), ("image_cudnn", "os", ["u" * 64]), ("base_image", "tag_version", "1" * 64),
], ids=["tag", "os", "tag-version"])
def test_a_tag_piece_may_have_64_characters(kind, field, value):
    """Docker allows 128 characters in a whole tag; each matrix piece may use up to 64."""
    assert getattr(build(kind, {**ROWS[kind][1], field: value}), field) == loaded(value)


def test_a_requirement_without_a_version_is_any_version_and_a_bad_one_is_refused():
    """``"nvidia-cublas-cu11" = ""``: the extra requires the package at any version (jax 0.4.7's
    cuda11 extra does), which is a fact to keep; a specifier that does not parse is refused."""
    table = {**ROWS["torch_release"][1], "pypi_requires": {"nvidia-cublas-cu11": ""}}
    assert build("torch_release", table).pypi_requires == (("nvidia-cublas-cu11", ""),)
    table = {**ROWS["torch_release"][1], "pypi_requires": {"nvidia-cudnn-cu12": "nine"}}
    assert refusal("torch_release", table) == (
        f"{WHERE}: field pypi_requires.'nvidia-cudnn-cu12': expected a PEP 440 specifier, got 'nine'")


@pytest.mark.parametrize("branch", [1, 535, 9999], ids=["one", "r535", "four-digits"])
def test_a_driver_branch_from_1_to_9999_loads(branch):
    assert build("driver_branch", {**ROWS["driver_branch"][1], "branch": branch}).branch == branch
