"""`cudaenv matrix update` beyond torch/TensorFlow: CUDA toolkits, cuDNN builds, JAX, driver branches
and torchvision ranges — against PyPI JSON and METADATA recorded from the real index on 2026-11-24
(tests/fixtures/pypi, see matrix/SOURCES.md), never the live network."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomlkit

from cudaenv.matrix import pypi
from cudaenv.matrix.load import load_file
from cudaenv.matrix.update import torchvision_ranges, update_cudnn, update_cuda, update_drivers, update_jax, update_kind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pypi"
TODAY = "2026-11-24"


def recorded_pypi(url: str, byte_range):
    """PyPI as recorded: project JSON by name, METADATA by wheel file name."""
    if "/pypi/" in url and url.endswith("/json"):
        path = FIXTURES / f"{url.split('/pypi/')[1].split('/')[0]}-project.json"
    elif url.endswith(".metadata"):
        wheel = url.rsplit("/", 1)[1]
        name, version = wheel.split("-")[:2]
        path = FIXTURES / f"{name.replace('_', '-')}-{version}-METADATA"
    else:
        raise pypi.FetchError(f"{url}: not recorded")
    if not path.is_file():
        raise pypi.FetchError(f"{url}: HTTP 404 (no fixture {path.name})")
    return path.read_bytes()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


CUDA_TOML = """\
[[major]]
major = 13
minor_version_floor = "580"
source = "CUDA Compatibility guide ; read 2026-11-21"

[[release]]
version = "13.4.3"
released = "2026-10"
min_compute_capability = "7.5"
max_compute_capability = "12.1"
source = "cuda-toolkit 13.4.3 on PyPI ; read 2026-11-21"
"""


def test_new_cuda_toolkit_is_reported_with_what_only_nvidia_can_tell_and_never_written(tmp_path):
    path = write(tmp_path, "cuda.toml", CUDA_TOML)
    result = update_cuda(path, fetch=recorded_pypi, today=TODAY)
    assert result.diff == "" and result.new_text == CUDA_TOML
    assert result.skipped[0] == "13.5.0" and result.behind
    assert "cuda-toolkit 13.5.0 (2026-11-04; cudart 13.5.37)" in result.upstream
    need = next(n for n in result.needs_source if n.startswith("CUDA 13.5.0"))
    assert "min_driver" in need and "Table 3" in need and "nvidia-cuda-nvcc 13.5.37" in need


def test_prerelease_toolkits_and_known_runtimes_are_not_news(tmp_path):
    result = update_cuda(write(tmp_path, "cuda.toml", CUDA_TOML), fetch=recorded_pypi, today=TODAY)
    assert not any("13.4.0rc1" in item or "13.4" in item.split(" (")[0] for item in result.skipped)
    # nvidia-cuda-runtime-cu12 12.9.79 is CUDA 12.9, which this cuda.toml lacks: reported, not invented
    assert any(s.startswith("12.9 (only nvidia-cuda-runtime-cu12 12.9.79") for s in result.skipped)


def test_rows_without_a_minimum_driver_are_listed_as_needing_a_source(tmp_path):
    text = CUDA_TOML + CUDA_TOML.split("[[release]]")[1].replace("13.4.3", "13.5.0").join(["\n[[release]]", ""])
    result = update_cuda(write(tmp_path, "cuda.toml", text), fetch=recorded_pypi, today=TODAY)
    assert "13.5.0" not in result.skipped
    assert any(n.startswith("min_driver of 2 CUDA rows (13.4.3, 13.5.0)") for n in result.needs_source)


CUDNN_TOML = """\
# cudnn.toml — comment kept
[[release]]
version = "9.28.0"
cuda = ">=12.0,<13"
source = "https://pypi.org/project/nvidia-cudnn-cu12/9.28.0.42/ ; read 2026-11-21"

[[release]]
version = "9.28.0"
cuda = ">=13.0,<14"
source = "https://pypi.org/project/nvidia-cudnn-cu13/9.28.0.42/ ; read 2026-11-21"

[[release]]
version = "9.10.2"
cuda = ">=11.0,<12"
min_compute_capability = "5.0"
source = "support matrix ; read 2026-11-21"
"""


def test_cudnn_build_new_on_pypi_gets_a_row_for_its_cuda_major_only(tmp_path):
    path = write(tmp_path, "cudnn.toml", CUDNN_TOML)
    result = update_cudnn(path, fetch=recorded_pypi, today=TODAY)
    assert result.added == ("9.28.1 (CUDA 13.x)",)  # 9.28.1.4 exists only as nvidia-cudnn-cu13
    assert result.upstream == ("nvidia-cudnn-cu13 9.28.1.4 (2026-11-06)",)
    path.write_text(result.new_text)
    rows = [r for r in load_file(path)["cudnn"] if r.version == "9.28.1"]
    assert len(rows) == 1 and rows[0].cuda.contains("13.0") and not rows[0].cuda.contains("12.9")
    assert "nvidia-cudnn-cu13/9.28.1.4" in rows[0].source and "read 2026-11-24" in rows[0].source
    assert rows[0].min_compute_capability is None
    assert result.new_text.startswith("# cudnn.toml — comment kept")


def test_yanked_and_development_cudnn_builds_are_ignored(tmp_path):
    result = update_cudnn(write(tmp_path, "cudnn.toml", CUDNN_TOML), fetch=recorded_pypi, today=TODAY)
    assert not any("9.25.0" in a or "dev" in a for a in (*result.added, *result.upstream))  # 9.25.0.15 is yanked


def test_cudnn_compute_capabilities_are_listed_as_needing_the_support_matrix(tmp_path):
    result = update_cudnn(write(tmp_path, "cudnn.toml", CUDNN_TOML), fetch=recorded_pypi, today=TODAY)
    (need,) = result.needs_source
    assert need.startswith("compute capability range of 3 cuDNN rows") and "support matrix" in need
    assert "9.10.2" not in need


def test_cudnn_update_after_writing_is_a_no_op(tmp_path):
    path = write(tmp_path, "cudnn.toml", CUDNN_TOML)
    path.write_text(update_cudnn(path, fetch=recorded_pypi, today=TODAY).new_text)
    again = update_cudnn(path, fetch=recorded_pypi, today=TODAY)
    assert again.diff == "" and not again.behind


JAX_TOML = """\
[[release]]
version = "0.12.0"
jaxlib = "0.12.0"
python = ["3.11"]
source = "install docs ; read 2026-11-21"

[[release.variant]]
extra = "cuda12"
cuda = ">=12.1,<13"
packages = ["jax-cuda12-plugin[with-cuda]==0.12.0", "jax-cuda12-pjrt==0.12.0"]
"""


def test_jax_release_new_on_pypi_gets_a_row_with_jaxlib_pythons_and_no_invented_variants(tmp_path):
    path = write(tmp_path, "jax.toml", JAX_TOML)
    result = update_jax(path, fetch=recorded_pypi, today=TODAY)
    assert result.added == ("0.12.0.1",)
    path.write_text(result.new_text)
    row = next(r for r in load_file(path)["jax"] if r.version == "0.12.0.1")
    jaxlib = pypi.linux_wheels(json.loads((FIXTURES / "jaxlib-project.json").read_text()))["0.12.0.1"]
    assert row.python == tuple(pypi.python_versions(jaxlib)) and row.jaxlib == "0.12.0.1"
    assert row.variants == () and "need a maintainer" in row.note and "jax-cuda13-plugin" in row.note


def test_jax_python_list_is_refreshed_from_jaxlib_wheels(tmp_path):
    result = update_jax(write(tmp_path, "jax.toml", JAX_TOML), fetch=recorded_pypi, today=TODAY)
    assert "0.12.0 (python)" in result.changed
    assert '-python = ["3.11"]' in result.diff


def test_cuda_plugin_without_a_variant_is_reported_for_curation(tmp_path):
    result = update_jax(write(tmp_path, "jax.toml", JAX_TOML), fetch=recorded_pypi, today=TODAY)
    assert "0.12.0 (jax-cuda13-plugin 0.12.0 on PyPI, no variant uses it)" in result.skipped
    assert not any("jax-cuda12-plugin" in s for s in result.skipped)


DRIVERS_TOML = """\
[[branch]]
branch = 615
max_cuda = "13.4"
type = "NFB"
architectures = ["turing"]
source = "release notes ; read 2026-11-21"

[[branch]]
branch = 620
max_cuda = "13.4"
architectures = ["turing"]
source = "redist manifest ; read 2026-11-21"
"""


def test_driver_kind_says_what_pypi_cannot_tell(tmp_path):
    drivers = write(tmp_path, "drivers.toml", DRIVERS_TOML)
    cuda = write(tmp_path, "cuda.toml", CUDA_TOML)
    result = update_drivers(drivers, cuda, new_cuda=("13.5.0",))
    assert result.diff == "" and not result.behind
    assert any("CUDA 13.5: no branch" in n for n in result.needs_source)
    assert not any("CUDA 13.4" in n for n in result.needs_source)
    assert any(n.startswith("driver branches newer than R620") for n in result.needs_source)
    assert any("branch type of 1 branches (R620)" in n for n in result.needs_source)


TORCH_ROWS = """\
[[release]]
version = "2.14.0"
released = "2026-09-02"
python = ["3.12"]
source = "release matrix ; read 2026-11-21"

[[release]]
version = "2.14.1"
released = "2026-09-30"
python = ["3.12"]
source = "release matrix ; read 2026-11-21"

[[release]]
version = "2.15.0"
released = "2026-10-28"
python = ["3.12"]
torchvision = "0.29.2"
source = "release matrix ; read 2026-11-21"
"""


def ranges(text: str):
    doc = tomlkit.parse(text)
    changed = torchvision_ranges(doc["release"], recorded_pypi, "https://pypi.org", TODAY, [])
    return {str(r["version"]): r for r in doc["release"]}, changed


def test_exact_torch_pin_of_a_torchvision_release_is_recorded_as_its_torchvision():
    rows, _ = ranges(TORCH_ROWS)
    assert str(rows["2.14.0"]["torchvision"]) == "0.29.0"  # 0.29.0 requires torch==2.14.0
    assert "torchvision_range" not in rows["2.14.0"]


def test_torchvision_requiring_only_torch_at_least_gives_a_range():
    rows, changed = ranges(TORCH_ROWS)
    # 0.29.1 and 0.29.2 require torch>=2.14.0; 0.29.0 pins 2.14.0 and so is not in it
    assert str(rows["2.14.1"]["torchvision_range"]) == ">=0.29.1,<=0.29.2"
    assert "Requires-Dist of 0.29.1, 0.29.2" in str(rows["2.14.1"]["torchvision_source"])
    assert any(c.startswith("2.14.1 (torchvision_range") for c in changed)


def test_rows_with_a_curated_torchvision_are_left_alone():
    rows, changed = ranges(TORCH_ROWS)
    assert "torchvision_range" not in rows["2.15.0"] and not any(c.startswith("2.15.0") for c in changed)


def test_torchvision_uploaded_before_a_torch_release_is_not_paired_with_it():
    rows, _ = ranges(TORCH_ROWS.replace('torchvision = "0.29.2"\n', ""))
    assert str(rows["2.15.0"]["torchvision_range"]) == "==0.29.2"  # 0.29.1 (2026-09-30) predates torch 2.15.0


def test_loaded_range_is_a_companion_the_resolver_checks(tmp_path):
    rows_text = TORCH_ROWS.replace('torchvision = "0.29.2"\n', "")
    doc = tomlkit.parse(rows_text)
    torchvision_ranges(doc["release"], recorded_pypi, "https://pypi.org", TODAY, [])
    release = next(r for r in load_file(write(tmp_path, "torch.toml", tomlkit.dumps(doc)))["torch"] if r.version == "2.14.1")
    assert release.torchvision is None and release.torchvision_range == ">=0.29.1,<=0.29.2"


def test_update_kind_reads_recorded_pypi_for_every_kind(tmp_path):
    for name, text in (("cuda.toml", CUDA_TOML), ("cudnn.toml", CUDNN_TOML), ("jax.toml", JAX_TOML),
                       ("drivers.toml", DRIVERS_TOML)):
        write(tmp_path, name, text)
    kinds = {kind: update_kind(kind, tmp_path, fetch=recorded_pypi, today=TODAY) for kind in ("cuda", "cudnn", "jax")}
    kinds["driver"] = update_kind("driver", tmp_path, new_cuda=kinds["cuda"].skipped)
    assert {k for k, r in kinds.items() if r.behind} == {"cuda", "cudnn", "jax"}
    assert any("CUDA 13.5" in n for n in kinds["driver"].needs_source)


@pytest.fixture
def cli_matrix(tmp_path, monkeypatch):
    for name, text in (("cuda.toml", CUDA_TOML), ("cudnn.toml", CUDNN_TOML), ("drivers.toml", DRIVERS_TOML)):
        write(tmp_path, name, text)
    monkeypatch.setattr(pypi, "http_fetch", recorded_pypi)  # recorded PyPI instead of the network
    return tmp_path


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys):
    """`cudaenv matrix update …` through the real entry point (exit codes, JSON error objects)."""
    from cudaenv.cli import main

    def run(*args) -> Run:
        with pytest.raises(SystemExit) as done:
            main(["matrix", "update", *args])
        out = capsys.readouterr()
        return Run(done.value.code, out.out, out.err)

    return run


def test_check_exits_1_with_one_json_object_naming_new_data_and_missing_sources(cli_matrix, run_cli):
    result = run_cli("cuda", "cudnn", "driver", "--check", "--json", "--matrix-dir", str(cli_matrix))
    assert result.exit_code == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["behind"] is True and data["wrote"] == []
    kinds = {k["kind"]: k for k in data["kinds"]}
    assert list(kinds) == ["cuda", "cudnn", "driver"]
    assert kinds["cuda"]["not_added"][0] == "13.5.0" and kinds["cuda"]["diff"] == ""
    assert kinds["cudnn"]["added"] == ["9.28.1 (CUDA 13.x)"] and "+version = \"9.28.1\"" in kinds["cudnn"]["diff"]
    assert any("CUDA 13.5" in n for n in kinds["driver"]["needs_primary_source"])
    assert (cli_matrix / "cudnn.toml").read_text() == CUDNN_TOML  # --check alone writes nothing


def test_write_then_check_reports_only_what_needs_curation(cli_matrix, run_cli):
    assert run_cli("cudnn", "--write", "--matrix-dir", str(cli_matrix)).exit_code == 0
    assert 'version = "9.28.1"' in (cli_matrix / "cudnn.toml").read_text()
    again = run_cli("cudnn", "driver", "--check", "--matrix-dir", str(cli_matrix))
    assert again.exit_code == 0, again.stderr
    assert "needs a primary source" in again.stderr and again.stdout == ""


def test_plain_output_lists_per_kind_what_is_new_and_what_needs_a_source(cli_matrix, run_cli):
    result = run_cli("cuda", "--matrix-dir", str(cli_matrix))
    assert result.exit_code == 0  # without --check, news is not a failure
    assert "new on PyPI:" in result.stderr and "cuda-toolkit 13.5.0" in result.stderr
    assert "not added (needs curation):" in result.stderr and "needs a primary source:" in result.stderr


def test_an_unreadable_index_is_exit_2_not_a_stale_matrix(cli_matrix, run_cli, monkeypatch):
    def unreachable(url, byte_range):
        raise pypi.FetchError(f"{url}: <urlopen error [Errno 111] Connection refused>")

    monkeypatch.setattr(pypi, "http_fetch", unreachable)
    result = run_cli("cudnn", "--check", "--json", "--matrix-dir", str(cli_matrix))
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["ok"] is False and "cannot read what the index published" in data["error"]["message"]
