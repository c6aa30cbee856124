"""Which uv the image installs: the installed uv's version, read from the name of the one
``uv-X.Y.Z.dist-info`` directory beside the ``uv`` package (importlib.metadata costs a tenth of
`cudaenv dockerfile`), and asked of importlib.metadata in every unusual case.

A stand-in site directory whose dist-info has no METADATA tells the two ways apart: the name says
9.9.9, while importlib.metadata finds no version there."""

from __future__ import annotations

import sys
from importlib.metadata import version

import pytest

from cudaenv.images import render


def site(root, *dist_infos: str, package: str | None = "uv"):
    root.mkdir(parents=True, exist_ok=True)
    if package:
        (root / package).mkdir()
    for name in dist_infos:
        (root / name).mkdir()
    return str(root)


def test_the_version_is_read_from_the_one_uv_dist_info_beside_the_package(tmp_path, monkeypatch):
    """Other packages' dist-info directories, and ones merely starting with "uv", are not uv's."""
    entry = site(tmp_path / "site", "uv-9.9.9.dist-info", "uvloop-0.21.0.dist-info", "numpy-2.1.3.dist-info",
                 "uv-9.9.9.data")
    monkeypatch.setattr(sys, "path", [entry, *sys.path])
    assert render.uv_version() == "9.9.9"


def test_entries_without_a_uv_package_are_passed_over(tmp_path, monkeypatch):
    """The empty entry (the working directory) and directories without uv/ are skipped, not read."""
    other = site(tmp_path / "other", "uv-1.0.0.dist-info", package=None)
    entry = site(tmp_path / "site", "uv-9.9.9.dist-info")
    monkeypatch.setattr(sys, "path", ["", other, entry, *sys.path])
    assert render.uv_version() == "9.9.9"


def test_several_uv_dist_infos_ask_importlib_metadata(tmp_path, monkeypatch):
    """Two candidates is not a guess to make: importlib.metadata decides (from their METADATA)."""
    entry = site(tmp_path / "site", "uv-9.9.9.dist-info", "uv-9.9.8.dist-info")
    for name in ("uv-9.9.9.dist-info", "uv-9.9.8.dist-info"):
        (tmp_path / "site" / name / "METADATA").write_text("Metadata-Version: 2.1\nName: uv\nVersion: 9.9.7\n")
    monkeypatch.setattr(sys, "path", [entry, *sys.path])
    assert render.uv_version() == "9.9.7"


def test_a_uv_package_whose_directory_cannot_be_listed_asks_importlib_metadata(tmp_path, monkeypatch):
    """An unreadable site directory is no error: the slower, general lookup answers."""
    entry = site(tmp_path / "site")  # uv/ alone: importlib.metadata finds the installed uv's record
    monkeypatch.setattr(sys, "path", [entry, *sys.path])
    expected = version("uv")
    assert expected

    def unreadable(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(render.os, "listdir", unreadable)
    assert render.uv_version() == expected
