"""`cudaenv matrix update` against a hostile index: what an index answers is written into the matrix
that decides every stack, so it is read only over https from the index's own hosts, its versions
and dates are checked and normalized, and the new matrix must load before any file is written —
all of it, or none.

The fake index is PyPI's recorded JSON and METADATA (tests/fixtures/pypi) with one hostile edit
per test, served through the same ``pypi.http_fetch`` seam the command uses."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from cudaenv.errors import MatrixError
from cudaenv.matrix import pypi
from cudaenv.matrix.update import check_updated, update_kind
from tests.unit.matrix.test_matrix_update import STALE
from tests.unit.matrix.test_matrix_update_kinds import CUDNN_TOML, Run, recorded_pypi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pypi"
TORCH = json.loads((FIXTURES / "torch-project.json").read_text())
FILE_260 = TORCH["releases"]["2.6.0"][0]


class FakeIndex:
    """Recorded PyPI with the torch project replaced by ``torch``; remembers every URL asked for."""

    def __init__(self, torch: dict):
        self.torch = torch
        self.asked: list[str] = []

    def __call__(self, url: str, byte_range=None) -> bytes:
        self.asked.append(url)
        if url.endswith("/pypi/torch/json"):
            return json.dumps(self.torch).encode()
        if url.endswith(".metadata") and "/torch-" in url:
            return (FIXTURES / "torch-2.6.0-METADATA").read_bytes()
        if url.endswith("/pypi/torchvision/json"):
            return json.dumps({"releases": {}}).encode()
        return recorded_pypi(url, byte_range)


def torch_with(version: str, **changes) -> dict:
    """torch's JSON with one release ``version`` (one Linux wheel), its file changed by ``changes``."""
    document = copy.deepcopy(TORCH)
    document["releases"] = {version: [{**FILE_260, "filename": FILE_260["filename"].replace("2.6.0", "2.99.0"),
                                       **changes}]}
    return document


@pytest.fixture
def matrix_dir(tmp_path):
    (tmp_path / "torch.toml").write_text(STALE)
    (tmp_path / "cudnn.toml").write_text(CUDNN_TOML)
    return tmp_path


@pytest.fixture
def run_update(capsys, monkeypatch):
    from cudaenv.cli import main

    def run(index: FakeIndex, *args) -> Run:
        monkeypatch.setattr(pypi, "http_fetch", index)
        with pytest.raises(SystemExit) as done:
            main(["matrix", "update", *args])
        out = capsys.readouterr()
        return Run(done.value.code, out.out, out.err)

    return run


def texts(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.glob("*.toml"))}


@pytest.mark.parametrize("url", [
    "file:///etc/passwd",
    "https://metadata.internal.example/torch-2.99.0-cp310-cp310-manylinux1_x86_64.whl",
    "http://files.pythonhosted.org/packages/torch-2.99.0-cp310-cp310-manylinux1_x86_64.whl",
    "https://user:secret@files.pythonhosted.org/torch-2.99.0-cp310-cp310-manylinux1_x86_64.whl",
    "//169.254.169.254/latest/meta-data/torch-2.99.0-cp310-cp310-manylinux1_x86_64.whl",
], ids=["file", "other-host", "plain-http", "credentials", "scheme-relative"])
def test_a_file_url_off_the_index_hosts_is_never_fetched_and_nothing_is_written(matrix_dir, run_update, url):
    index = FakeIndex(torch_with("2.99.0", url=url))
    before = texts(matrix_dir)
    result = run_update(index, "cudnn", "torch", "--write", "--json", "--matrix-dir", str(matrix_dir))
    assert result.exit_code == 2, result.stderr
    error = json.loads(result.stdout)["error"]
    assert "not https on its own hosts (pypi.org, files.pythonhosted.org)" in error["message"]
    assert not any(u.startswith(("file:", "http:")) or "internal" in u or "169.254" in u or "secret" in u
                   for u in index.asked)
    assert texts(matrix_dir) == before  # cudnn's new rows were not written either: all or nothing


def test_files_on_pypis_own_files_host_are_read():
    index = FakeIndex(torch_with("2.99.0"))
    assert pypi.check_index_url(FILE_260["url"], "https://pypi.org") == FILE_260["url"]
    assert pypi.check_index_url("https://files.pythonhosted.org/packages/x.whl", "https://pypi.org")
    with pytest.raises(pypi.FetchError):  # another index does not inherit PyPI's files host
        pypi.check_index_url("https://files.pythonhosted.org/packages/x.whl", "https://mirror.example/pypi")
    assert index.torch["releases"]["2.99.0"][0]["url"].startswith("https://pypi.org/")


def test_a_version_with_whitespace_is_written_in_its_normal_form(matrix_dir, run_update):
    index = FakeIndex(torch_with("2.99.0 "))
    result = run_update(index, "torch", "--write", "--json", "--matrix-dir", str(matrix_dir))
    assert result.exit_code == 0, result.stdout + result.stderr
    written = (matrix_dir / "torch.toml").read_text()
    assert 'version = "2.99.0"\n' in written and '"2.99.0 "' not in written
    assert "https://pypi.org/project/torch/2.99.0/#files" in written


def test_a_local_version_is_not_a_published_release(matrix_dir):
    index = FakeIndex(torch_with("2.99.0+evil"))
    result = update_kind("torch", matrix_dir, fetch=index, today="2026-11-26")
    assert result.added == () and "2.99.0+evil" not in result.new_text


@pytest.mark.parametrize("when", ["2026-13-45T00:00:00Z", "yesterday", "2026-02-30", "2026-11-01\nsource = 'x'", 7])
def test_an_upload_time_that_is_no_date_is_bad_input_and_nothing_is_written(matrix_dir, run_update, when):
    index = FakeIndex(torch_with("2.99.0", upload_time_iso_8601=when))
    before = texts(matrix_dir)
    result = run_update(index, "cudnn", "torch", "--write", "--json", "--matrix-dir", str(matrix_dir))
    assert result.exit_code == 2
    assert "is not an ISO 8601 date or time" in json.loads(result.stdout)["error"]["message"]
    assert texts(matrix_dir) == before


def test_the_upload_date_written_is_the_checked_one(matrix_dir):
    index = FakeIndex(torch_with("2.99.0", upload_time_iso_8601="2026-11-02T10:00:00.5+01:00"))
    result = update_kind("torch", matrix_dir, fetch=index, today="2026-11-26")
    assert result.added == ("2.99.0",) and 'released = "2026-11-02"' in result.new_text


@pytest.mark.parametrize("body", [b"not json", b'{"releases": []}', b'{"releases": {"2.99.0": [{"url": 1}]}}',
                                  b'{"releases": {"2.99.0": [{"filename": "x"}]}}', b"[1]", b"9" * 5000])
def test_a_project_answer_that_is_not_pypis_json_is_bad_input(matrix_dir, run_update, body):
    index = FakeIndex({})
    index.torch = None

    def answer(url, byte_range=None):
        if url.endswith("/pypi/torch/json"):
            return body
        return FakeIndex.__call__(index, url, byte_range)

    before = texts(matrix_dir)
    result = run_update(answer, "torch", "--write", "--json", "--matrix-dir", str(matrix_dir))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "cannot read what the index published" in json.loads(result.stdout)["error"]["message"]
    assert texts(matrix_dir) == before


def test_a_new_matrix_that_would_not_load_is_refused_before_anything_is_written(matrix_dir):
    result = update_kind("cudnn", matrix_dir, fetch=recorded_pypi, today="2026-11-26")
    assert result.added, "the recorded index has cuDNN builds the fixture lacks"
    check_updated(matrix_dir, [result])  # as the index gave it: loads
    from dataclasses import replace

    broken = replace(result, new_text=result.new_text.replace('cuda = ">=12.0,<13"', 'cuda = "twelve"', 1))
    with pytest.raises(MatrixError, match=r"cudnn.toml.*'cuda'"):
        check_updated(matrix_dir, [broken])


def test_the_index_itself_must_be_https(matrix_dir, run_update):
    result = run_update(FakeIndex(TORCH), "torch", "--index", "http://pypi.org", "--json",
                        "--matrix-dir", str(matrix_dir))
    assert result.exit_code == 2 and "expected an https:// URL" in json.loads(result.stdout)["error"]["message"]
