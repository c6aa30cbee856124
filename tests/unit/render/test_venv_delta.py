"""templates/venv-delta.py: what a cross build's install on the build machine hands to the image.

uv installs the target's wheels into a venv on the build machine that holds only the image's
*.dist-info (so uv sees what is installed); the helper says which files changed (they go into the
image), which of the image's distributions uv removed or wrote again (the image drops them first),
and refuses a wheel for the build machine's CPU. Run here on a venv in a temporary directory."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from cudaenv.core.resources import templates_dir

SITE = "lib/python3.12/site-packages"


@pytest.fixture
def delta(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("venv_delta", templates_dir() / "venv-delta.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    venv = tmp_path / "venv"
    (venv / SITE).mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to("/usr/bin/python3.12")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(module, "VENV", str(venv))
    monkeypatch.setattr(module, "STATE", str(tmp_path / "state.json"))
    monkeypatch.setattr(module, "OUT", str(tmp_path / "out"))
    monkeypatch.setattr(module, "site_packages", lambda: str(venv / SITE))
    return module


def dist(site: Path, name: str, version: str, *, tag: str = "py3-none-any", files: dict[str, str] | None = None) -> None:
    """What uv leaves for an installed wheel: its files and its dist-info."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA description\n")
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nTag: {tag}\n")
    (info / "RECORD").write_text("")
    for path, text in (files or {f"{name}/__init__.py": f"V = {version!r}\n"}).items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)


def image_venv(tmp_path: Path) -> Path:
    """The image's venv so far: pkga 1.0 (replaced below) and dep 1.0 (kept)."""
    target = tmp_path / "target"
    dist(target / SITE, "pkga", "1.0")
    dist(target / SITE, "dep", "1.0")
    return target


def test_an_install_into_an_empty_venv_hands_over_every_file_it_wrote(delta, tmp_path):
    delta.before(None)
    venv = Path(delta.VENV)
    dist(venv / SITE, "torch", "2.9.0", tag="cp312-cp312-manylinux_2_28_aarch64")
    (venv / "bin" / "torchrun").write_text("#!/opt/venv/bin/python\n")
    delta.after("aarch64")
    out = tmp_path / "out"
    handed = sorted(str(p.relative_to(out / "venv")) for p in (out / "venv").rglob("*") if p.is_file())
    assert handed == ["bin/torchrun", f"{SITE}/torch-2.9.0.dist-info/METADATA", f"{SITE}/torch-2.9.0.dist-info/RECORD",
                      f"{SITE}/torch-2.9.0.dist-info/WHEEL", f"{SITE}/torch/__init__.py"]
    assert (out / "uninstall").read_text() == ""


def test_the_venv_itself_is_not_handed_over(delta, tmp_path):
    """The image made its own venv (its python links to its own interpreter): only installs count."""
    delta.before(None)
    delta.after("aarch64")
    assert list((tmp_path / "out" / "venv").iterdir()) == []


def test_the_images_distributions_are_seen_by_their_dist_info_only(delta, tmp_path):
    delta.before(str(image_venv(tmp_path)))
    site = Path(delta.VENV) / SITE
    assert sorted(p.name for p in site.iterdir()) == ["dep-1.0.dist-info", "pkga-1.0.dist-info"]


def test_a_distribution_uv_replaced_is_dropped_by_the_image_first_and_one_it_kept_is_not_handed_back(delta, tmp_path):
    delta.before(str(image_venv(tmp_path)))
    site = Path(delta.VENV) / SITE
    for path in (site / "pkga-1.0.dist-info").iterdir():  # uv uninstalls pkga 1.0 and installs 2.0
        path.unlink()
    (site / "pkga-1.0.dist-info").rmdir()
    dist(site, "pkga", "2.0")
    delta.after("aarch64")
    out = tmp_path / "out"
    assert (out / "uninstall").read_text() == "pkga\n"
    handed = {str(p.relative_to(out / "venv" / SITE)) for p in (out / "venv").rglob("*") if p.is_file()}
    assert "pkga/__init__.py" in handed and not any(path.startswith("dep") for path in handed)


def test_a_distribution_written_again_at_the_same_version_is_dropped_first_too(delta, tmp_path):
    delta.before(str(image_venv(tmp_path)))
    record = Path(delta.VENV) / SITE / "dep-1.0.dist-info" / "RECORD"
    record.unlink()
    record.write_text("dep/__init__.py,,\n")  # a new file where the image's was
    delta.after("aarch64")
    assert (tmp_path / "out" / "uninstall").read_text() == "dep\n"


def test_handed_files_keep_their_times_which_their_bytecode_checks(delta, tmp_path):
    delta.before(None)
    site = Path(delta.VENV) / SITE
    dist(site, "pkgb", "1.0")
    os.utime(site / "pkgb" / "__init__.py", ns=(1_700_000_000_000_000_000, 1_700_000_000_123_456_789))
    delta.after("aarch64")
    assert (tmp_path / "out" / "venv" / SITE / "pkgb" / "__init__.py").stat().st_mtime_ns == 1_700_000_000_123_456_789


@pytest.mark.parametrize("tag", ["py3-none-any", "cp312-cp312-manylinux_2_28_aarch64",
                                 "cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64", "cp312-abi3-linux_aarch64"])
def test_wheels_for_the_target_or_any_platform_pass(delta, tag):
    delta.before(None)
    dist(Path(delta.VENV) / SITE, "fits", "1.0", tag=tag)
    delta.after("aarch64")


@pytest.mark.parametrize("tag", ["cp312-cp312-linux_x86_64", "cp312-cp312-manylinux_2_28_x86_64",
                                 "cp312-cp312-manylinux_2_17_aarch64.manylinux2014_x86_64"])
def test_a_wheel_for_another_cpu_fails_the_build_and_says_to_build_it_in_the_image(delta, tag):
    """A package the build machine compiled from source is for its own CPU: never into the image."""
    delta.before(None)
    dist(Path(delta.VENV) / SITE, "native", "1.0", tag=tag)
    with pytest.raises(SystemExit, match=r"native-1\.0\.dist-info built or chosen for .*not for aarch64.*"
                                         r"build_from_source"):
        delta.after("aarch64")


def test_the_helper_runs_on_the_oldest_python_a_stack_has():
    """It runs on the stack's own Python (3.6 on an ubuntu18.04 stack): nothing newer in its syntax."""
    import ast

    source = (templates_dir() / "venv-delta.py").read_text()
    ast.parse(source, feature_version=(3, 6))
    assert "removeprefix" not in source and "capture_output" not in source
