"""User overlays add or replace rows without a new cudaenv release, through the same validation."""

from __future__ import annotations

import json
import os

import pytest

from cudaenv.matrix import load_matrix, overlay_dirs

from tests.support.cli import cudaenv as run_cli

NEW_TORCH = """
[[release]]
version = "2.99.0"
python = ["3.12", "3.13"]
source = "overlay test ; read 2026-11-21"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
"""

REPLACED_GPU = """
[[gpu]]
name = "T4"
aliases = ["Tesla T4", "NVIDIA T4 (site label)"]
compute_capability = "7.5"
architecture = "turing"
datacenter = true
source = "site inventory ; read 2026-11-21"
"""


def test_overlay_adds_a_release_the_shipped_matrix_lacks(tmp_path):
    (tmp_path / "torch.toml").write_text(NEW_TORCH)
    matrix = load_matrix(overlays=[tmp_path])
    added = [r for r in matrix.torch if r.version == "2.99.0"]
    assert len(added) == 1
    assert added[0].variants[0].cuda == "12.8"
    assert matrix.torch[-1].version == "2.99.0"  # kept in version order
    assert str(tmp_path / "torch.toml") in matrix.files


def test_overlay_row_with_same_key_replaces_the_shipped_row(tmp_path):
    (tmp_path / "gpus.toml").write_text(REPLACED_GPU)
    matrix = load_matrix(overlays=[tmp_path])
    t4 = [g for g in matrix.gpus if g.name == "T4"]
    assert len(t4) == 1 and t4[0].source == "site inventory ; read 2026-11-21"
    assert matrix.find_gpu("NVIDIA T4 (site label)") is t4[0]


def test_overlay_changes_the_matrix_revision(tmp_path):
    base = load_matrix(overlays=[])
    (tmp_path / "torch.toml").write_text(NEW_TORCH)
    assert load_matrix(overlays=[tmp_path]).revision != base.revision


def test_later_overlay_wins(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    (first / "torch.toml").write_text(NEW_TORCH)
    (second / "torch.toml").write_text(NEW_TORCH.replace('["3.12", "3.13"]', '["3.13"]'))
    row = next(r for r in load_matrix(overlays=[first, second]).torch if r.version == "2.99.0")
    assert row.python == ("3.13",)


def test_environment_variable_lists_overlay_directories(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_MATRIX_PATH", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert overlay_dirs() == [tmp_path / "a", tmp_path / "b"]


def test_default_overlay_is_the_user_config_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDAENV_MATRIX_PATH", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert overlay_dirs() == []
    (tmp_path / "cudaenv" / "matrix").mkdir(parents=True)
    assert overlay_dirs() == [tmp_path / "cudaenv" / "matrix"]


def test_cli_lists_overlay_rows(tmp_path):
    (tmp_path / "torch.toml").write_text(NEW_TORCH)
    proc = run_cli("matrix", "list", "torch", "--json", env={**os.environ, "CUDAENV_MATRIX_PATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "2.99.0" in [row["version"] for row in json.loads(proc.stdout)]


def test_overlay_breaking_a_cross_reference_is_rejected(tmp_path):
    (tmp_path / "torch.toml").write_text(NEW_TORCH.replace('cuda = "12.8"', 'cuda = "12.77"'))
    with pytest.raises(Exception, match="CUDA 12.77 is not a release in cuda.toml"):
        load_matrix(overlays=[tmp_path])
