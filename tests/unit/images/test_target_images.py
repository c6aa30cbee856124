"""Several targets reach the image: `dockerfile`/`build` serve the target this host runs (or
--target NAME), a CPU target's image has no CUDA in it, and each image is labelled and tagged with
its target. The host is declared through CUDAENV_DRIVER_VERSION / CUDAENV_GPUS (no GPU here)."""

from __future__ import annotations

import re

import pytest

from cudaenv.images.plan import plan_image
from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.unit.project.test_lock_targets import project_in, views, write
from tests.unit.resolver.helpers import matrix


def three_targets(tmp_path):
    project = project_in(tmp_path / "p")
    write(project, views(project))
    return project


def dockerfile(project, *args, **env):
    return run_cli("dockerfile", project.root, *args, env=isolated_env(**env))


def label(text: str, name: str) -> str | None:
    found = re.search(rf'{re.escape(name)}="([^"]*)"', text)
    return found.group(1) if found else None


def test_a_cpu_targets_image_asks_nothing_of_the_nvidia_runtime_and_installs_cpu_builds(tmp_path):
    project = three_targets(tmp_path)
    proc = dockerfile(project, "--target", "laptop")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "NVIDIA_" not in text and "cuda-compat" not in text  # no GPU asked for, no CUDA requirement
    assert label(text, "io.cudaenv.target") == "laptop" and label(text, "io.cudaenv.cuda") == "none"
    assert "# stack:  torch 2.9.1 | CPU only | Python" in text
    assert "torch==2.9.1+cpu" in text and "https://download.pytorch.org/whl/cpu" in text
    base = run_cli("dockerfile", project.root, "--target", "laptop", "--base", env=isolated_env()).stdout
    assert re.search(r"^FROM python:3\.\d+-slim AS base$", base, re.M) and "nvidia/cuda" not in base
    assert "NVIDIA_" not in base and "io.cudaenv.target" not in base  # a base is every target's


def test_a_gpu_targets_image_keeps_its_cuda_and_names_its_target(tmp_path):
    proc = dockerfile(three_targets(tmp_path), "--target", "a100")
    assert proc.returncode == 0, proc.stderr
    assert label(proc.stdout, "io.cudaenv.target") == "a100" and label(proc.stdout, "io.cudaenv.cuda") == "12.6"
    assert "NVIDIA_REQUIRE_CUDA=" in proc.stdout and "+cpu" not in proc.stdout


@pytest.mark.parametrize(("env", "chosen"), [
    ({}, "laptop"),  # no driver, no GPU: the CPU target
    ({"CUDAENV_DRIVER_VERSION": "535.104.05", "CUDAENV_GPUS": "A100"}, "a100"),
    ({"CUDAENV_DRIVER_VERSION": "580.65.06", "CUDAENV_GPUS": "H100"}, "h100"),
    # both GPU targets' stacks run on 580 with an A100: the one that declares an A100 is picked
    ({"CUDAENV_DRIVER_VERSION": "580.65.06", "CUDAENV_GPUS": "A100"}, "a100"),
], ids=["no-gpu", "a100-535", "h100-580", "a100-580"])
def test_without_target_the_host_picks_and_says_which(tmp_path, env, chosen):
    proc = dockerfile(three_targets(tmp_path), **env)
    assert proc.returncode == 0, proc.stderr
    assert label(proc.stdout, "io.cudaenv.target") == chosen
    assert f"target {chosen}: the one this host (" in proc.stderr


def test_a_host_no_target_fits_is_told_why_for_each_and_exits_1(tmp_path):
    project = three_targets(tmp_path)
    proc = dockerfile(project, CUDAENV_DRIVER_VERSION="470.57.02", CUDAENV_GPUS="A100")
    assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"cudaenv: error: {project.config_path}: no target fits this host (driver 470.57.02, A100")
    assert "laptop: a CPU target, and this host has a GPU" in line  # never a CPU build picked silently
    assert "a100: " in line and "h100: " in line and line.endswith("(targets: laptop, a100, h100)")


def test_an_unknown_target_is_bad_input_naming_the_targets(tmp_path):
    proc = dockerfile(three_targets(tmp_path), "--target", "nope")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--target: no target 'nope'" in proc.stderr and "(targets: laptop, a100, h100)" in proc.stderr


def test_each_targets_image_gets_its_own_latest_tag_and_a_single_target_keeps_latest(tmp_path):
    project = three_targets(tmp_path)
    whole_views = views(project)
    tags = {v.name: plan_image(project, matrix(), v, buildkit=True).latest_tag for v in whole_views}
    assert tags == {"laptop": "cudaenv/demo:latest-laptop", "a100": "cudaenv/demo:latest-a100",
                    "h100": "cudaenv/demo:latest-h100"}
    for name, table in (("one", "[target]"), ("named", "[targets.only]")):  # one target, named or not: :latest
        single = project_in(tmp_path / name, f'[project]\nname = "solo"\n{table}\ndriver = "550.54.15"\ngpus = ["A100"]\n')
        (view,) = views(single)
        assert plan_image(single, matrix(), view, buildkit=True).latest_tag == "cudaenv/solo:latest"


def test_a_host_with_a_driver_and_no_gpu_cudaenv_can_name_never_gets_the_cpu_target(tmp_path):
    """A driver declared without --gpu (or a board the matrix does not know): a GPU host all the
    same, so no target fits rather than the laptop's CPU build."""
    proc = dockerfile(three_targets(tmp_path), CUDAENV_DRIVER_VERSION="580.65.06")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "this host (driver 580.65.06, GPU not identified, x86_64)" in proc.stderr
    assert "laptop: a CPU target, and this host has a GPU (an NVIDIA driver, GPU not identified)" in proc.stderr


def test_the_configurations_order_decides_between_targets_that_fit_alike_whatever_the_locks_order(tmp_path):
    """An RTX 4090 on 580 runs the a100 and the h100 stacks and declares neither: the first in the
    configuration wins, also after the tables were reordered (the lock, written before, stays current)."""
    project = three_targets(tmp_path)
    host = {"CUDAENV_DRIVER_VERSION": "580.65.06", "CUDAENV_GPUS": "RTX 4090"}
    assert "target a100: the one" in dockerfile(project, **host).stderr
    text = project.config_path.read_text()
    laptop, a100, h100 = (text[text.index(f"[targets.{n}]"):] for n in ("laptop", "a100", "h100"))
    head = text[:text.index("[targets.laptop]")]
    project.config_path.write_text(head + h100 + laptop[:laptop.index("[targets.a100]")] + a100[:a100.index("[targets.h100]")])
    assert "target h100: the one" in dockerfile(project, **host).stderr
