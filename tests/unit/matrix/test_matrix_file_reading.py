"""Reading one matrix file: the bytes a caller already read are the ones parsed (the loader hashes
them for the cache, so parsing a second read could load other rows than it hashed), a file that
cannot be read or is no matrix file is one line, and a row is named by its key in every error."""

from __future__ import annotations

import os

import pytest

from cudaenv.matrix import MatrixError
from cudaenv.matrix.load import load_file, read_toml

SRC = "https://example.invalid ; read 2026-11-26"


def refusal(call, *args) -> str:
    with pytest.raises(MatrixError) as caught:
        call(*args)
    return str(caught.value)


def test_the_bytes_given_are_parsed_not_the_file_read_again(tmp_path):
    path = tmp_path / "cuda.toml"
    path.write_text('[[major]]\nmajor = 11\nminor_version_floor = "450.80.02"\nsource = "%s"\n' % SRC)
    given = b'[[major]]\nmajor = 12\nminor_version_floor = "525.60.13"\nsource = "%s"\n' % SRC.encode()
    assert read_toml(path, given)["major"][0]["major"] == 12
    assert [row.major for row in load_file(path, given)["cuda_majors"]] == [12]


def test_without_bytes_the_file_is_read(tmp_path):
    path = tmp_path / "cuda.toml"
    path.write_text('[[major]]\nmajor = 11\nminor_version_floor = "450.80.02"\nsource = "%s"\n' % SRC)
    assert read_toml(path)["major"][0]["major"] == 11
    assert [row.major for row in load_file(path)["cuda_majors"]] == [11]


def test_a_file_that_cannot_be_read_says_why_in_the_system_s_words(tmp_path):
    missing = tmp_path / "cuda.toml"
    assert refusal(read_toml, missing) == f"{missing}: cannot read: {os.strerror(2)}"


def test_a_file_that_is_not_utf8_or_not_toml_is_one_line(tmp_path):
    path = tmp_path / "cuda.toml"
    assert refusal(read_toml, path, b"a = '\xff'\n") == f"{path}: not UTF-8 text (invalid start byte at byte 5)"
    message = refusal(read_toml, path, b"[[major]\n")
    assert message.startswith(f"{path}: invalid TOML: ") and "\n" not in message


def test_a_file_with_another_name_is_not_a_matrix_file(tmp_path):
    path = tmp_path / "cudnn-extra.toml"
    assert refusal(load_file, path, b"") == (
        f"{path}: not a matrix file (expected one of cuda.toml, cudnn.toml, drivers.toml, gpus.toml, images.toml, "
        "jax.toml, mxnet.toml, tensorflow.toml, torch.toml)")


def test_an_unknown_table_names_the_tables_the_file_may_hold(tmp_path):
    path = tmp_path / "gpus.toml"
    assert refusal(load_file, path, b"[[gpus]]\nname = 'x'\n") == (
        f"{path}: unknown table 'gpus' (did you mean 'gpu'?); expected [[architecture]], [[gpu]]")


def test_a_table_that_is_not_an_array_of_tables_is_refused(tmp_path):
    path = tmp_path / "cuda.toml"
    assert refusal(load_file, path, b"[major]\nmajor = 12\n") == (
        f"{path}: 'major' must be an array of tables ([[major]])")


@pytest.mark.parametrize("name, text, hint", [
    ("cuda.toml", "[[major]]\nmajor = 12\n", "(major = 12)"),
    ("images.toml", '[[image]]\ncuda = "12.4.1"\n', "(cuda = '12.4.1')"),
    ("drivers.toml", "[[branch]]\nbranch = 535\n", "(branch = 535)"),
    ("gpus.toml", '[[gpu]]\nname = "A100"\n', "(name = 'A100')"),
    ("torch.toml", '[[release]]\nversion = "2.6.0"\nname = "x"\n', "(version = '2.6.0')"),
], ids=["major", "cuda", "branch", "name", "version-first"])
def test_a_broken_row_is_named_by_its_key(tmp_path, name, text, hint):
    path = tmp_path / name
    table = text.split("]]")[0].lstrip("[")
    message = refusal(load_file, path, text.encode())
    assert message.startswith(f"{path}: [[{table}]] #1 {hint}: "), message


def test_a_row_without_any_key_field_is_named_by_its_number_alone(tmp_path):
    path = tmp_path / "cudnn.toml"
    assert refusal(load_file, path, b"[[release]]\nsurplus = 12\n") == (
        f"{path}: [[release]] #1: missing required field 'version'")
