"""Issue 23, class 3: a framework only the dependency graph brings (ChatGLM-6B names transformers,
icetk and cpm_kernels; icetk requires torch) is found by resolving the project's own requirements
with uv — here against a loopback index whose wheels declare exactly that graph."""

from __future__ import annotations

import pytest

from cudaenv.project.detect import detect_project
from cudaenv.project.graph import add_graph_frameworks, frameworks_in_graph


@pytest.fixture(autouse=True)
def graph_from_the_loopback_index(tmp_path, package_index, monkeypatch):
    """Every test resolves against the loopback index, with a uv cache of its own."""
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", package_index.url)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))


def publish_graph(index):
    index.add("torch", "2.9.1")
    index.add("tensorflow", "2.20.0")
    index.add("icetk", "0.0.7", requires=["torch>=1.10"])
    index.add("tf-helper", "1.0", requires=["tensorflow>=2.16"])
    index.add("transformers", "4.57.3")


def test_a_framework_required_by_a_dependency_is_found_with_what_brings_it(tmp_path, package_index):
    publish_graph(package_index)
    (tmp_path / "requirements.txt").write_text("transformers>=4.23.1\nicetk\n")
    assert frameworks_in_graph(tmp_path, [tmp_path / "requirements.txt"], []) == {"torch": "icetk"}


def test_init_detection_adds_it_only_when_the_files_name_no_framework(tmp_path, package_index):
    publish_graph(package_index)
    (tmp_path / "requirements.txt").write_text("icetk\n")
    detected = detect_project(tmp_path)
    assert detected.frameworks == {}
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"torch": ""}
    assert "torch through icetk (dependency graph)" in detected.found


def test_a_framework_asked_for_on_the_cpu_stays_there(tmp_path, package_index):
    """tensorflow-cpu named, a dependency brings tensorflow: not a GPU TensorFlow (the lock step then
    refuses the two distributions side by side)."""
    publish_graph(package_index)
    package_index.add("tensorflow-cpu", "2.20.0")
    (tmp_path / "requirements.txt").write_text("tensorflow-cpu\ntf-helper\n")
    detected = detect_project(tmp_path)
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {}


def test_a_graph_uv_cannot_resolve_adds_nothing(tmp_path, package_index):
    (tmp_path / "requirements.txt").write_text("not-published-anywhere==1.0\n")
    assert frameworks_in_graph(tmp_path, [tmp_path / "requirements.txt"], []) == {}


def test_a_library_pinning_its_framework_decides_the_frameworks_series(tmp_path, package_index):
    """xformers==0.0.28.post1 requires torch==2.4.1: the resolver must not pick the newest torch."""
    package_index.add("torch", "2.4.0")
    package_index.add("torch", "2.4.1")
    package_index.add("torch", "2.9.1")
    package_index.add("xformers", "0.0.28.post1", requires=["torch==2.4.1"])
    (tmp_path / "requirements.txt").write_text("xformers==0.0.28.post1\n")
    detected = detect_project(tmp_path)
    assert detected.frameworks == {"torch": ""}  # through the carrier, offline
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"torch": ">=2.4.0,<=2.4.1"}
    assert "torch >=2.4.0,<=2.4.1: what xformers==0.0.28.post1 allows (dependency graph)" in detected.found


def test_an_unpinned_library_leaves_the_framework_to_the_resolver(tmp_path, package_index):
    package_index.add("torch", "2.9.1")
    package_index.add("xformers", "0.0.30", requires=["torch>=2.4"])
    (tmp_path / "requirements.txt").write_text("xformers>=0.0.28\n")
    detected = detect_project(tmp_path)
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"torch": ""}


def test_the_graph_keeps_the_projects_own_framework_pin(tmp_path, package_index):
    """alphafold3's pyproject pins jax==0.10.2 beside a pinned chex: the graph is the project's
    whole reading, so it never narrows jax to a newer series than the project's own pin."""
    package_index.add("jax", "0.10.2")
    package_index.add("jax", "0.12.0.1")
    package_index.add("chex", "0.1.89", requires=["jax>=0.4.27"])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "af"\nversion = "1"\n'
                                             'dependencies = ["jax==0.10.2", "chex==0.1.89"]\n')
    detected = detect_project(tmp_path)
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"jax": "==0.10.2,>=0.10.0,<=0.10.2"}
