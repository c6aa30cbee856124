"""Field rules of the matrix loader that a mutation run left unpinned (issue 25 §3): a misspelt
optional field, duplicate list items and booleans where integers belong are refused, each as one
line naming the file, the row and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.matrix import MatrixError, load_matrix

GPU = """[[gpu]]
name = "Z100"
compute_capability = "9.0"
architecture = "hopper"
datacenter = true
source = "test fixture ; read 2026-11-26"
"""

CUDA = """[[release]]
version = "12.4.2"
min_compute_capability = "5.0"
max_compute_capability = "9.0"
source = "test fixture ; read 2026-11-26"
"""

DRIVER = """[[branch]]
branch = 999
max_cuda = "12.4"
architectures = ["hopper"]
source = "test fixture ; read 2026-11-26"
"""


def overlay(tmp_path: Path, name: str, text: str) -> Path:
    directory = tmp_path / "overlay"
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(text)
    return directory


def refused(tmp_path: Path, name: str, text: str) -> str:
    with pytest.raises(MatrixError) as caught:
        load_matrix(overlays=[overlay(tmp_path, name, text)], use_cache=False)
    message = str(caught.value)
    assert "\n" not in message and name in message
    return message


@pytest.mark.parametrize("name, text", [("gpus.toml", GPU), ("cuda.toml", CUDA), ("drivers.toml", DRIVER)])
def test_the_rows_as_written_here_load(tmp_path, name, text):
    load_matrix(overlays=[overlay(tmp_path, name, text)], use_cache=False)


def test_a_misspelt_optional_field_is_refused_with_the_field_it_meant(tmp_path):
    message = refused(tmp_path, "gpus.toml", GPU + 'aliasses = ["Z100 PCIe"]\n')
    assert "unknown field 'aliasses'" in message and "did you mean 'aliases'" in message


def test_a_misspelt_note_is_refused(tmp_path):
    message = refused(tmp_path, "drivers.toml", DRIVER + 'notes = "x"\n')
    assert "branch = 999" in message and "unknown field 'notes'" in message


def test_duplicate_items_in_a_list_are_refused(tmp_path):
    message = refused(tmp_path, "drivers.toml", DRIVER.replace('["hopper"]', '["hopper", "hopper"]'))
    assert "field 'architectures'" in message and "without duplicates" in message


def test_duplicate_forward_compatibility_branches_are_refused(tmp_path):
    message = refused(tmp_path, "cuda.toml", CUDA + "forward_compat_branches = [535, 535]\n")
    assert "field 'forward_compat_branches'" in message and "without duplicates" in message


@pytest.mark.parametrize("name, text, field", [
    ("drivers.toml", DRIVER.replace("branch = 999", "branch = true"), "branch"),
    ("cuda.toml", CUDA + "forward_compat_branches = [true]\n", "forward_compat_branches"),
    ("cuda.toml", CUDA + 'forward_compat_branches = ["535"]\n', "forward_compat_branches"),
])
def test_a_boolean_or_text_where_an_integer_belongs_is_refused(tmp_path, name, text, field):
    message = refused(tmp_path, name, text)
    assert f"field {field!r}" in message and ("an integer" in message or "driver branches" in message)


def test_a_boolean_where_true_or_false_belongs_is_fine_but_text_is_not(tmp_path):
    message = refused(tmp_path, "gpus.toml", GPU.replace("datacenter = true", 'datacenter = "yes"'))
    assert "field 'datacenter'" in message and "true or false" in message
