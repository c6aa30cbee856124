"""Issue 23, class 7: every real release from a stated floor is in the matrix, and a release older
than that floor is answered with where the matrix stops — not as if the version did not exist.
(Since issue 34 the floors are torch 1.0.0, TensorFlow 1.0.0 and JAX 0.2.0; torch 0.4.1 was real,
published on PyTorch's own site before torch reached PyPI.)"""

from __future__ import annotations

import json
import urllib.request

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudaenv.matrix import load_matrix
from cudaenv.matrix.builds import framework_builds
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import UnknownVersion, below_floor, resolve


def floor(framework: str) -> str:
    return min((b.version for b in framework_builds(load_matrix(overlays=[]))[framework]), key=Version)


@pytest.mark.parametrize(("name", "pin"), [("torch", "==0.4.1"), ("torch", "~=0.4.0"), ("tensorflow", "==0.12.1"),
                                           ("jax", "==0.1.77")])
def test_a_release_older_than_the_matrix_says_where_the_matrix_stops(name, pin):
    matrix = load_matrix(overlays=[])
    with pytest.raises(UnknownVersion) as caught:
        resolve(matrix, Constraints(frameworks=((name, SpecifierSet(pin)),)), Host())
    message = str(caught.value)
    assert f"the matrix records every {name} release from {floor(name)} on, and none older" in message
    assert f"pin {name}>={floor(name)}" in message


def test_a_version_inside_the_covered_range_still_gets_its_neighbours():
    matrix = load_matrix(overlays=[])
    with pytest.raises(UnknownVersion) as caught:
        resolve(matrix, Constraints(frameworks=(("torch", SpecifierSet("==2.4.99")),)), Host())
    assert "nearest known: 2.4.0, 2.4.1" in str(caught.value) and "none older" not in str(caught.value)


@pytest.mark.parametrize(("spec", "expected"), [("==1.11.0", True), ("<1.12", False), ("<=1.11.9", True),
                                                ("~=1.7.1", True), ("==1.12.0", False), (">=1.0", False)])
def test_below_floor_compares_the_upper_bound_with_the_oldest_release(spec, expected):
    assert below_floor(SpecifierSet(spec), "1.12.0") is expected


@pytest.mark.network
@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax"])
def test_every_pypi_release_from_the_floor_is_in_the_matrix(framework):
    """The floor is only honest if nothing above it is missing: PyPI's final releases (not yanked)
    uploaded before the matrix was made (2026-11-21) must all be rows."""
    with urllib.request.urlopen(f"https://pypi.org/pypi/{framework}/json", timeout=60) as response:
        releases = json.load(response)["releases"]
    known = {b.version for b in framework_builds(load_matrix(overlays=[]))[framework]}
    lowest = Version(floor(framework))
    missing = sorted((v for v, files in releases.items()
                      if files and not Version(v).is_prerelease and Version(v) >= lowest
                      and not all(f.get("yanked") for f in files)
                      and min(f["upload_time_iso_8601"] for f in files) < "2026-11-21"
                      and v not in known), key=Version)
    assert missing == []


def _pypi_yanks(project: str) -> dict[str, str | bool]:
    """Version -> PyPI's yank (the reason, or True without one) for releases whose every file is yanked."""
    request = urllib.request.Request(f"https://pypi.org/simple/{project}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    from packaging.utils import InvalidWheelFilename, InvalidSdistFilename, parse_sdist_filename, parse_wheel_filename

    per_version: dict[str, list] = {}
    for f in files:
        try:
            version = (parse_wheel_filename(f["filename"])[1] if f["filename"].endswith(".whl")
                       else parse_sdist_filename(f["filename"])[1])
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        per_version.setdefault(str(version), []).append(f.get("yanked") or False)
    return {v: next(y for y in ys if y) for v, ys in per_version.items() if all(ys)}


@pytest.mark.network
@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax"])
def test_every_row_records_the_yank_pypi_shows(framework):
    """PEP 592 (issue 34): a row is yanked exactly when PyPI yanked every file of that release, with
    PyPI's reason (True where PyPI gives none, which the row spells `yanked = true`)."""
    yanks = _pypi_yanks(framework)
    rows = {b.version: b.yanked for b in framework_builds(load_matrix(overlays=[]))[framework]}
    recorded = {v: (y or True) for v, y in rows.items() if y is not None}
    assert recorded == {v: y for v, y in yanks.items() if v in rows}


@pytest.mark.network
@pytest.mark.parametrize("kind", ["torch", "tensorflow", "jax"])
def test_matrix_update_holds_every_row_from_the_floor_against_pypi(kind, tmp_path):
    """Issue 34, item 5: `cudaenv matrix update` reads PyPI from each framework's floor (torch 1.0.0,
    TensorFlow 1.0.0, JAX 0.2.0), so the old rows are refreshed like the new ones, and today PyPI's
    wheels and metadata give it nothing to change (Python versions from wheel tags, cp27mu included)."""
    import shutil
    from pathlib import Path

    from tests.support.cli import cudaenv as run_cli, isolated_env

    copy = tmp_path / "matrix"
    shutil.copytree(Path(__file__).resolve().parents[3] / "matrix", copy)
    proc = run_cli("matrix", "update", kind, "--matrix-dir", copy, "--json", env=isolated_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(proc.stdout)["kinds"]
    assert (result["added"], result["changed"]) == ([], []), result["diff"][:2000]


def test_init_on_compvis_stable_diffusion_names_the_editable_line_then_resolves_torch_1_11(tmp_path):
    """CompVis/stable-diffusion's environment.yaml (tests/fixtures/real-projects) pins pytorch=1.11.0."""
    import shutil
    from pathlib import Path

    from tests.support.cli import cudaenv as run_cli, isolated_env

    project = tmp_path / "sd"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "real-projects" / "compvis-stable-diffusion",
                    project)
    proc = run_cli("init", project, "--no-lock", "--driver", "550.54.15", "--gpu", "A100", env=isolated_env(),
                   timeout=120)
    assert proc.returncode == 2  # its pip list's `-e git+…` line is refused first, with the spelling uv can lock
    assert proc.stderr.strip().splitlines() == [
        "cudaenv: error: environment.yaml:34: -e 'git+https://github.com/openai/CLIP.git@main#egg=clip': an editable "
        "install from a repository or URL cannot be locked; write 'clip @ git+https://github.com/openai/CLIP.git@main' "
        "(a pinned reference uv can lock)"]
    import re

    text = re.sub(r"-e (git\+\S+?)#egg=(\S+)", r"\2 @ \1", (project / "environment.yaml").read_text())  # the fix
    (project / "environment.yaml").write_text(text)
    proc = run_cli("init", project, "--no-lock", "--driver", "550.54.15", "--gpu", "A100", env=isolated_env(),
                   timeout=120)
    # torch 1.11.0 is in the matrix since issue 34: PyPI's build is CUDA 10.2 (no sm_80), the file's
    # cudatoolkit=11.3 names PyTorch's cu113 build, which carries sm_80
    assert proc.returncode == 0, proc.stderr
    assert "✓ torch 1.11.0 (with torchvision 0.12.0)" in proc.stdout and "CUDA 11.3" in proc.stdout
    assert "--index-url https://download.pytorch.org/whl/cu113" in proc.stdout
    assert (project / "cudaenv.toml").exists()
