"""`cudaenv matrix update` refreshes PyPI-derived fields in place and shows a diff (stored
fixtures stand in for PyPI)."""

from __future__ import annotations

from pathlib import Path

from cudaenv.matrix.load import load_file
from cudaenv.matrix.update import update_framework

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pypi"

STALE = """\
# torch.toml — a maintainer comment that must survive the update
[[release]]
version = "2.5.1"
released = "2024-10-29"
python = ["3.9", "3.10"]
pypi_cuda = "12.4"
source = "curated table ; read 2026-01-01"
pypi_source = "https://pypi.org/project/torch/2.5.1/#files (hand-checked wheel) ; read 2026-01-01"

[release.pypi_requires]
"nvidia-cudnn-cu12" = "==9.1.0.70"

[[release.variant]]
cuda = "12.4"
index_url = "https://download.pytorch.org/whl/cu124"
"""


def fixture_fetch(url: str, byte_range):
    if url.endswith("/pypi/torch/json"):
        return (FIXTURES / "torch-project.json").read_bytes()
    if url.endswith("/pypi/torchvision/json"):
        return (FIXTURES / "torchvision-project.json").read_bytes()
    if url.endswith(".metadata") and "/torchvision-" in url:
        version = url.split("/torchvision-")[1].split("-")[0]
        return (FIXTURES / f"torchvision-{version}-METADATA").read_bytes()
    if url.endswith(".metadata"):
        version = "2.6.0" if "torch-2.6.0-" in url else "2.5.1"
        return (FIXTURES / f"torch-{version}-METADATA").read_bytes()
    raise AssertionError(f"unexpected fetch {url}")


def run_update(tmp_path: Path):
    path = tmp_path / "torch.toml"
    path.write_text(STALE)
    return path, update_framework("torch", path, fetch=fixture_fetch, today="2026-11-21")


def test_stale_python_list_and_pins_are_refreshed(tmp_path):
    _path, result = run_update(tmp_path)
    assert any(c.startswith("2.5.1 (") and "python" in c and "pypi_requires" in c for c in result.changed)
    assert '+python = ["3.9", "3.10", "3.11", "3.12", "3.13"]' in result.diff
    assert "nvidia-cuda-runtime-cu12" in result.new_text


def test_curated_source_text_is_kept_and_its_read_date_moves(tmp_path):
    _path, result = run_update(tmp_path)
    assert "(hand-checked wheel) ; read 2026-11-21" in result.new_text
    assert "curated table ; read 2026-01-01" in result.new_text  # the curated source is not PyPI's to change


def test_new_release_is_added_with_pypi_facts_and_a_curation_note(tmp_path):
    _path, result = run_update(tmp_path)
    assert result.added == ("2.6.0",)
    row = next(r for r in load_file(_path_with(result, tmp_path))["torch"] if r.version == "2.6.0")
    assert row.pypi_cuda == "12.4" and row.python[-1] == "3.13"
    assert dict(row.pypi_requires)["nvidia-cudnn-cu12"] == "==9.1.0.70"
    assert "need a maintainer" in row.note and not row.variants


def test_comments_and_curated_fields_survive(tmp_path):
    _path, result = run_update(tmp_path)
    assert result.new_text.startswith("# torch.toml — a maintainer comment that must survive the update")
    assert 'index_url = "https://download.pytorch.org/whl/cu124"' in result.new_text


def test_update_does_not_write_unless_asked(tmp_path):
    path, result = run_update(tmp_path)
    assert path.read_text() == STALE and result.diff


def test_second_update_after_writing_is_a_no_op(tmp_path):
    path, result = run_update(tmp_path)
    path.write_text(result.new_text)
    again = update_framework("torch", path, fetch=fixture_fetch, today="2026-11-21")
    assert again.diff == "" and again.added == () and again.changed == ()


def _path_with(result, tmp_path: Path) -> Path:
    out = tmp_path / "updated" / "torch.toml"
    out.parent.mkdir(exist_ok=True)
    out.write_text(result.new_text)
    return out
