"""Reading what PyPI published: wheel tags, METADATA (PEP 658 or out of the wheel by byte
ranges), nvidia-* pins — on stored fixtures, never the live network."""

from __future__ import annotations

import io
import json
import random
import zipfile
from pathlib import Path

import pytest

from cudaenv.matrix import pypi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pypi"


def project(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}-project.json").read_text())


def test_linux_wheels_keeps_final_releases_and_linux_x86_64_cpython_builds():
    wheels = pypi.linux_wheels(project("torch"))
    assert list(wheels) == ["2.5.1", "2.6.0"]  # 2.7.0rc1 is a pre-release
    assert all("x86_64" in w.filename and "linux" in w.filename for ws in wheels.values() for w in ws)


def test_python_versions_come_from_wheel_tags_without_free_threaded_builds():
    wheels = pypi.linux_wheels(project("torch"))
    assert pypi.python_versions(wheels["2.5.1"]) == ["3.9", "3.10", "3.11", "3.12", "3.13"]
    assert pypi.python_versions(wheels["2.6.0"]) == ["3.9", "3.10", "3.11", "3.12", "3.13"]


@pytest.mark.parametrize(("filename", "python"), [
    ("tensorflow-2.4.0-cp36-cp36m-manylinux2010_x86_64.whl", "3.6"),
    ("torch-2.6.0-cp313-cp313t-manylinux_2_28_x86_64.whl", None),
    ("torch-2.6.0-cp311-cp311-manylinux1_x86_64.whl", "3.11"),
    ("jax-0.4.30-py3-none-any.whl", None),
    # Linux's Python 2.7 is the wide-unicode build (tensorflow_gpu 1.x, torch 1.0-1.4 published for it)
    ("tensorflow_gpu-1.15.0-cp27-cp27mu-manylinux2010_x86_64.whl", "2.7"),
    ("torch-1.0.0-cp27-cp27m-manylinux1_x86_64.whl", "2.7"),
    ("torch-2.6.0-cp311-cp311d-manylinux_2_28_x86_64.whl", None),
], ids=["cp36m", "free-threaded", "cp311", "pure", "cp27mu", "cp27m", "debug"])
def test_python_of_a_wheel_filename(filename, python):
    assert pypi._python_of(filename) == python


def test_minimum_version_filters_older_releases():
    assert list(pypi.linux_wheels(project("torch"), minimum="2.6.0")) == ["2.6.0"]


def test_relative_file_urls_from_a_mirror_are_made_absolute():
    raw = {"releases": {"1.0.0": [{"filename": "x-1.0.0-cp311-cp311-manylinux1_x86_64.whl",
                                   "url": "../../packages/ab/x-1.0.0-cp311-cp311-manylinux1_x86_64.whl"}]}}
    data = pypi.project_json("x", fetch=lambda url, rng: json.dumps(raw).encode(), index="https://mirror.example")
    assert data["releases"]["1.0.0"][0]["url"] == "https://mirror.example/packages/ab/x-1.0.0-cp311-cp311-manylinux1_x86_64.whl"


def test_torch_pins_and_cuda_from_real_metadata():
    metadata = (FIXTURES / "torch-2.6.0-METADATA").read_text()
    pins = pypi.nvidia_pins(pypi.requirements(metadata))
    assert pins["nvidia-cudnn-cu12"] == "==9.1.0.70"
    assert pins["nvidia-cuda-runtime-cu12"] == "==12.4.127"
    assert pypi.cuda_of_pins(pins) == "12.4"
    assert "triton" not in pins


def test_tensorflow_and_cuda_extra_pins_only_with_the_extra():
    metadata = (FIXTURES / "tensorflow-2.15.0-METADATA").read_text()
    assert pypi.nvidia_pins(pypi.requirements(metadata)) == {}
    pins = pypi.nvidia_pins(pypi.requirements(metadata, extra="and-cuda"))
    assert pins["nvidia-cudnn-cu12"] == "==8.9.4.25"
    assert pypi.cuda_of_pins(pins) == "12.2"
    keras = [str(r.specifier) for r in pypi.requirements(metadata) if r.name == "keras"]
    assert keras and set(keras[0].split(",")) == {">=2.15.0", "<2.16"}


def test_cuda_toolkit_metapackage_pin_gives_the_cuda():
    assert pypi.cuda_of_pins({"cuda-toolkit": "==13.0.2", "nvidia-cudnn-cu13": "==9.19.0.56"}) == "13.0"


def serve(blob: bytes, *, metadata: bytes | None = None):
    """A Fetch over one in-memory wheel, honouring byte ranges like an HTTP server, and
    serving (or not) a PEP 658 .metadata file."""
    calls = []

    def fetch(url, byte_range):
        calls.append((url, byte_range))
        if url.endswith(".metadata"):
            if metadata is None:
                raise pypi.FetchError(f"{url}: HTTP 404")
            return metadata
        if byte_range is None:
            raise AssertionError("the whole wheel must never be downloaded")
        start, end = byte_range
        if start < 0:
            return blob[start:]
        return blob[start: end + 1]

    return fetch, calls


def make_wheel(metadata: str, *, padding: int = 300_000) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr("pkg/big.bin", random.Random(0).randbytes(padding))  # incompressible
        wheel.writestr("pkg-1.0.dist-info/METADATA", metadata)
        wheel.writestr("pkg-1.0.dist-info/RECORD", "")
    return buffer.getvalue()


def test_metadata_read_from_the_wheel_by_byte_ranges_when_no_pep658_file():
    text = "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70\n"
    fetch, calls = serve(make_wheel(text))
    assert pypi.wheel_metadata("https://files.example/pkg-1.0-py3-none-any.whl", fetch) == text
    fetched = 0
    for _url, byte_range in calls:
        if byte_range is not None:
            start, end = byte_range
            fetched += -start if start < 0 else end - start + 1
    assert fetched < 150_000  # a tail, the directory and one member — not the 300 kB of padding


def test_pep658_metadata_is_preferred_when_served():
    fetch, calls = serve(make_wheel("unused"), metadata=b"Metadata-Version: 2.1\nName: pkg\n")
    assert pypi.wheel_metadata("https://files.example/pkg.whl", fetch).startswith("Metadata-Version")
    assert calls == [("https://files.example/pkg.whl.metadata", None)]
