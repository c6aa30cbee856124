"""The exports of a project with several targets (issue #37): each serves the target named with
``--target`` (never one it picks), from that target's locked stack; a CPU-only target's Slurm job
and Kubernetes workload ask for no GPU but keep what places them by CPU; Kubernetes writes one
workload per target with ``--target`` repeated or ``--all-targets``.

The project is the issue's three targets (a CPU laptop, an A100 on 535.104.05, an H100 on 580.65.06)
with a lock written by cudaenv's own lock writer (pins in place of uv's), run through the real CLI.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import partial
from pathlib import Path

import pytest
import yaml

from cudaenv.export.kubernetes import node_affinity
from cudaenv.matrix import load_matrix
from cudaenv.project.lock import read_lock
from tests.support.cli import cudaenv as run_cli
from tests.support.k8s_affinity import affinity_selects
from tests.support.targets import THREE_TARGETS, lock_offline
from tests.unit.host import cli_env, hide_nvml

kubernetes_validate = pytest.importorskip("kubernetes_validate")

KUBERNETES_VERSION = "1.33.0"
IMAGE = "registry.example.com:5000/ml/demo@sha256:" + "0123456789abcdef" * 4
CPU_IMAGE = "registry.example.com:5000/ml/demo-cpu@sha256:" + "fedcba9876543210" * 4
RUN = '\n[run]\ncommand = ["python", "train.py"]\ngpus = "2"\n'
TARGETS = ("laptop", "a100", "h100")
SEVERAL = "names several targets (laptop, a100, h100)"

cudaenv = partial(run_cli, timeout=120)

AMD64 = {"kubernetes.io/arch": "amd64"}
A100_R535 = {"nvidia.com/cuda.driver-version.major": "535", "nvidia.com/cuda.driver-version.minor": "104",
             "nvidia.com/cuda.driver-version.revision": "05", "nvidia.com/gpu.compute.major": "8",
             "nvidia.com/gpu.compute.minor": "0", **AMD64}
H100_R580 = {"nvidia.com/cuda.driver-version.major": "580", "nvidia.com/cuda.driver-version.minor": "65",
             "nvidia.com/cuda.driver-version.revision": "06", "nvidia.com/gpu.compute.major": "9",
             "nvidia.com/gpu.compute.minor": "0", **AMD64}


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return cli_env(hide_nvml(tmp_path_factory.mktemp("no-nvml")), CUDAENV_UID="4242", CUDAENV_GID="4343")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return lock_offline(tmp_path_factory.mktemp("targets") / "demo", THREE_TARGETS + RUN).root


def export(kind: str, project: Path, env: dict, *args) -> subprocess.CompletedProcess:
    return cudaenv("export", kind, project, *args, env=env)


def ok(kind: str, project: Path, env: dict, *args) -> str:
    proc = export(kind, project, env, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def refused(proc: subprocess.CompletedProcess) -> str:
    """Exit 2, nothing on stdout, one line on stderr and no traceback: that line."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def stack_of(project: Path, target: str):
    return read_lock(project / "cudaenv.lock", target).resolved_stack()


def pod_of(document: dict) -> dict:
    return document["spec"]["template"]["spec"]


# --- a target must be named ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind, args", [
    ("slurm", ("--image", IMAGE)),
    ("compose", ()),
])
def test_an_export_of_a_several_target_project_without_target_names_the_targets(project, env, kind, args):
    line = refused(export(kind, project, env, *args))
    assert SEVERAL in line and "--target NAME" in line


def test_kubernetes_without_a_target_names_the_targets_and_both_ways_out(project, env):
    line = refused(export("kubernetes", project, env, "--image", IMAGE))
    assert SEVERAL in line and "--target NAME" in line and "--all-targets" in line


@pytest.mark.parametrize("kind", ["slurm", "kubernetes", "compose", "devcontainer"])
def test_a_target_the_project_does_not_name_is_refused_naming_those_it_does(project, env, kind):
    line = refused(export(kind, project, env, "--target", "h200", "--image", IMAGE)
                   if kind in ("slurm", "kubernetes") else export(kind, project, env, "--target", "h200"))
    assert line.endswith("--target: no target 'h200' in " f"{project / 'cudaenv.toml'} (targets: laptop, a100, h100)")


def test_target_is_an_option_of_the_export_not_a_word_of_the_jobs_command(project, env):
    """slurm and kubernetes pass unknown options on to the container's command: --target must not be one."""
    text = ok("slurm", project, env, "--target", "a100", "--image", IMAGE)
    assert "--target" not in text.splitlines()[-1] and text.splitlines()[-1].strip() == "python train.py"


# --- Slurm ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target, cuda", [("a100", "12.6"), ("h100", "13.0")])
def test_a_slurm_job_runs_its_targets_locked_stack(project, env, target, cuda):
    assert stack_of(project, target).cuda == cuda
    text = ok("slurm", project, env, "--target", target, "--image", IMAGE)
    assert f"# demo (target {target}): torch {stack_of(project, target).framework('torch')} | CUDA {cuda} |" in text
    assert f"--target {target}`" in text
    assert "#SBATCH --gres=gpu:2\n" in text


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer", "docker"])
def test_a_cpu_targets_slurm_job_asks_for_no_gpu(project, env, runtime):
    text = ok("slurm", project, env, "--target", "laptop", "--runtime", runtime, "--image", CPU_IMAGE)
    assert "--gres" not in text and "--constraint" not in text
    assert "# demo (target laptop): torch 2.9.1 | CPU only | Python" in text
    assert "# A CPU-only target: no GPU and no NVIDIA driver needed. The image is built for x86_64 CPUs only;" in text
    assert "# GPUs: 0 (target laptop is CPU-only)" in text and "needs a driver" not in text
    assert "exec --nv" not in text
    if runtime == "docker":
        assert 'gpu_args=(--env NVIDIA_VISIBLE_DEVICES=void)' in text and "SLURM_JOB_GPUS" not in text
    if runtime == "apptainer":
        assert "apptainer exec \\\n" in text


def test_a_gpu_targets_apptainer_job_keeps_nv(project, env):
    assert "apptainer exec --nv \\\n" in ok("slurm", project, env, "--target", "a100", "--runtime", "apptainer",
                                            "--image", IMAGE)


def test_a_cpu_targets_job_asks_for_no_node_feature_even_where_the_site_has_them(tmp_path, env):
    features = '\n[cluster.slurm.features]\na100 = { gpu = "A100", driver = "550.54.15" }\n'
    root = lock_offline(tmp_path / "demo", THREE_TARGETS + RUN + features).root
    assert "#SBATCH --constraint=a100\n" in ok("slurm", root, env, "--target", "a100", "--image", IMAGE)
    text = ok("slurm", root, env, "--target", "laptop", "--image", CPU_IMAGE)
    assert "--constraint" not in text and "node features: none asked for" in text


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (scripts/test.sh installs it)")
@pytest.mark.parametrize("runtime", ["pyxis", "apptainer", "docker"])
def test_a_cpu_targets_script_passes_shellcheck(project, env, tmp_path, runtime):
    path = tmp_path / f"{runtime}.sbatch"
    path.write_text(ok("slurm", project, env, "--target", "laptop", "--runtime", runtime, "--image", CPU_IMAGE,
                       "-e", "SEED=7"))
    proc = subprocess.run(["shellcheck", "--shell=bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_gpus_for_a_cpu_target_is_refused(project, env):
    line = refused(export("slurm", project, env, "--target", "laptop", "--image", CPU_IMAGE, "--gpus", "2"))
    assert line == 'cudaenv: error: --gpus 2: target laptop is CPU-only (gpus = "none"): its stack uses no GPU'
    assert "--gres" not in ok("slurm", project, env, "--target", "laptop", "--image", CPU_IMAGE, "--gpus", "0")


def test_a_cpu_targets_docker_job_runs_the_image_build_makes_for_it(project, env):
    text = ok("slurm", project, env, "--target", "laptop", "--runtime", "docker")
    assert "gpu_args=(--env NVIDIA_VISIBLE_DEVICES=void)" in text and "--gpus" not in text.replace("# GPUs", "")
    tag = re.search(r"cudaenv/demo:[0-9a-f]{12}", text)
    assert tag is not None  # the local tag `cudaenv build --target laptop` gives its image
    a100 = ok("slurm", project, env, "--target", "a100", "--runtime", "docker")
    assert tag.group(0) not in a100  # another target, another image


# --- Kubernetes -----------------------------------------------------------------------------------------


def manifests(text: str) -> list[dict]:
    documents = list(yaml.safe_load_all(text))
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    return documents


def test_a_cpu_targets_workload_asks_for_no_gpu_and_is_placed_by_cpu_alone(project, env):
    (document,) = manifests(ok("kubernetes", project, env, "--target", "laptop", "--image", CPU_IMAGE))
    pod = pod_of(document)
    (container,) = pod["containers"]
    assert "resources" not in container and "tolerations" not in pod and "runtimeClassName" not in pod
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in container["env"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]
    assert affinity_selects(pod["affinity"]["nodeAffinity"], AMD64)  # any x86_64 node, GPU or not
    assert not affinity_selects(pod["affinity"]["nodeAffinity"], {"kubernetes.io/arch": "arm64"})
    assert document["metadata"]["annotations"]["cudaenv.io/target"] == "laptop"
    assert document["metadata"]["annotations"]["cudaenv.io/stack"].endswith("| CPU only | Python 3.14")


def test_an_aarch64_cpu_target_is_placed_on_arm64_nodes(project):
    """The matrix records no aarch64 CPU build of a framework yet (an overlay may): the stack as it would lock."""
    from dataclasses import replace

    from cudaenv.export.kubernetes import build_workload, manifest, render
    from cudaenv.project import load_project

    stack = replace(stack_of(project, "laptop"), arch="aarch64")
    made = build_workload(load_project(project), load_matrix(overlays=[]), stack, image=CPU_IMAGE, user="1000",
                          target="laptop")
    (document,) = manifests(render(manifest(made)))
    affinity = pod_of(document)["affinity"]["nodeAffinity"]
    assert affinity_selects(affinity, {"kubernetes.io/arch": "arm64"})
    assert not affinity_selects(affinity, AMD64)


@pytest.mark.parametrize("target, node, other", [("a100", A100_R535, H100_R580), ("h100", H100_R580, A100_R535)])
def test_a_gpu_targets_workload_is_placed_by_its_own_stack(project, env, target, node, other):
    (document,) = manifests(ok("kubernetes", project, env, "--target", target, "--image", IMAGE))
    pod = pod_of(document)
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert pod["affinity"]["nodeAffinity"] == node_affinity(load_matrix(overlays=[]), stack_of(project, target))
    assert affinity_selects(pod["affinity"]["nodeAffinity"], node)
    if target == "h100":  # CUDA 13.0 needs the R580 driver: the A100 node on 535 cannot run it
        assert not affinity_selects(pod["affinity"]["nodeAffinity"], other)


@pytest.mark.parametrize("args, said", [
    (("--runtime-class", "nvidia"), "--runtime-class nvidia: target laptop is CPU-only"),
    (("--gpus", "1"), "--gpus 1: target laptop is CPU-only"),
])
def test_gpu_flags_for_a_cpu_targets_workload_are_refused(project, env, args, said):
    line = refused(export("kubernetes", project, env, "--target", "laptop", "--image", CPU_IMAGE, *args))
    assert said in line


def test_all_targets_writes_one_workload_each_with_its_own_placement(project, env):
    documents = manifests(ok("kubernetes", project, env, "--all-targets", "--image", f"laptop={CPU_IMAGE}",
                             "--image", f"a100={IMAGE}", "--image", f"h100={IMAGE}", "--runtime-class", "nvidia"))
    assert [d["metadata"]["name"] for d in documents] == ["demo-laptop", "demo-a100", "demo-h100"]
    assert [d["metadata"]["annotations"]["cudaenv.io/target"] for d in documents] == list(TARGETS)
    laptop, a100, h100 = (pod_of(d) for d in documents)
    assert laptop["containers"][0]["image"] == CPU_IMAGE and a100["containers"][0]["image"] == IMAGE
    assert "resources" not in laptop["containers"][0] and "runtimeClassName" not in laptop
    assert a100["runtimeClassName"] == h100["runtimeClassName"] == "nvidia"
    assert affinity_selects(a100["affinity"]["nodeAffinity"], A100_R535)
    assert not affinity_selects(h100["affinity"]["nodeAffinity"], A100_R535)
    assert affinity_selects(laptop["affinity"]["nodeAffinity"], AMD64)


def test_target_repeated_exports_those_targets_in_the_order_given(project, env):
    documents = manifests(ok("kubernetes", project, env, "--target", "h100", "--target", "laptop",
                             "--image", f"h100={IMAGE}", "--image", f"laptop={CPU_IMAGE}", "--name", "train"))
    assert [d["metadata"]["name"] for d in documents] == ["train-h100", "train-laptop"]


def test_several_workloads_read_passed_through_values_from_one_secret(project, env):
    documents = manifests(ok("kubernetes", project, env, "--all-targets", "-e", "HF_TOKEN",
                             *(f"--image={t}={IMAGE}" for t in TARGETS)))
    refs = {next(e for e in pod_of(d)["containers"][0]["env"] if e["name"] == "HF_TOKEN")["valueFrom"]["secretKeyRef"]["name"]
            for d in documents}
    assert refs == {"demo-env"}


@pytest.mark.parametrize("args, said", [
    (("--all-targets", "--image", IMAGE), f"--image {IMAGE}: exporting targets laptop, a100, h100 takes one image each"),
    (("--all-targets", "--image", f"a100={IMAGE}"), "--image: no image for targets laptop, h100"),
    (("--target", "a100", "--target", "h100", "--image", f"laptop={IMAGE}"),
     "--image laptop=" + IMAGE + ": 'laptop' is not a target exported here (a100, h100)"),
    (("--all-targets", "--target", "a100", "--image", IMAGE), "--all-targets and --target: give one or the other"),
    (("--target", "a100", "--target", "a100", "--image", IMAGE), "--target a100: given twice"),
])
def test_images_and_targets_that_do_not_pair_up_are_refused(project, env, args, said):
    assert said in refused(export("kubernetes", project, env, *args))


def test_a_recorded_push_is_no_default_image_for_a_target(tmp_path, env):
    """cudaenv.pushed.json records one image and not whose stack it carries."""
    root = lock_offline(tmp_path / "demo", THREE_TARGETS + RUN).root
    (root / "cudaenv.pushed.json").write_text(json.dumps({"reference": "registry.example.com/ml/demo:1",
                                                          "digest": "sha256:" + "ab" * 32}))
    line = refused(export("kubernetes", root, env, "--target", "a100"))
    assert "pass --image" in line and "target a100's image" in line
    assert "pass --image" in refused(export("slurm", root, env, "--target", "a100"))


def test_targets_exported_one_at_a_time_get_a_workload_each(project, env, tmp_path):
    """A project of several targets names each workload NAME-TARGET even when one is exported:
    applying the laptop's never replaces the a100's Job."""
    out = tmp_path / "one-by-one"
    for target in ("a100", "laptop"):
        proc = export("kubernetes", project, env, "--target", target, "--image", IMAGE, "-o", out)
        assert proc.returncode == 0, proc.stderr
    names = sorted(manifests(p.read_text())[0]["metadata"]["name"] for p in out.iterdir())
    assert sorted(p.name for p in out.iterdir()) == ["demo-a100-job.yaml", "demo-laptop-job.yaml"]
    assert names == ["demo-a100", "demo-laptop"]
    named = manifests(ok("kubernetes", project, env, "--target", "a100", "--image", IMAGE, "--name", "mine"))
    assert named[0]["metadata"]["name"] == "mine"  # a name given for one workload is taken as it is


def test_output_writes_one_file_per_target_and_none_over_an_existing_one(project, env, tmp_path):
    out = tmp_path / "k8s"
    args = ("--all-targets", *(f"--image={t}={IMAGE}" for t in TARGETS), "-o", out)
    proc = export("kubernetes", project, env, *args)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["demo-a100-job.yaml", "demo-h100-job.yaml", "demo-laptop-job.yaml"]
    (out / "demo-laptop-job.yaml").unlink()
    (out / "demo-h100-job.yaml").write_text("mine\n")
    line = refused(export("kubernetes", project, env, *args))
    assert "demo-h100-job.yaml" in line and line.endswith(" exist; pass --force to overwrite them")
    assert not (out / "demo-laptop-job.yaml").exists() and (out / "demo-h100-job.yaml").read_text() == "mine\n"
    assert export("kubernetes", project, env, *args, "--force").returncode == 0
    assert yaml.safe_load((out / "demo-h100-job.yaml").read_text())["metadata"]["name"] == "demo-h100"


# --- Compose --------------------------------------------------------------------------------------------


def image_tag(project: Path, target: str) -> str:
    """The tag `cudaenv build` gives ``target``'s image (the plan every export reads it from)."""
    from cudaenv.images.build import buildkit_available
    from cudaenv.images.plan import plan_image
    from cudaenv.project import load_project

    return plan_image(load_project(project), load_matrix(overlays=[]), read_lock(project / "cudaenv.lock", target),
                      buildkit=buildkit_available(False)).default_tag


def test_compose_runs_the_named_targets_image(project, env):
    service = yaml.safe_load(ok("compose", project, env, "--target", "h100"))["services"]["demo"]
    assert service["image"] == image_tag(project, "h100") != image_tag(project, "a100")


@pytest.mark.parametrize("asked", [("all", None), ("count", 2), ("ids", ("0",)), ("auto", None)])
def test_a_cpu_targets_service_reserves_no_gpu_whatever_is_asked(project, asked):
    from cudaenv.export.compose import service_gpus

    assert service_gpus(stack_of(project, "laptop"), asked) == ("none", None)
    assert service_gpus(stack_of(project, "a100"), asked) == asked


def test_compose_of_a_cpu_target_opens_its_image_without_a_gpu(project, env):
    service = yaml.safe_load(ok("compose", project, env, "--target", "laptop", "--gpus", "all"))["services"]["demo"]
    assert service["image"] == image_tag(project, "laptop")
    assert "deploy" not in service and "gpus" not in service  # no GPU reserved, however asked
    gpu_service = yaml.safe_load(ok("compose", project, env, "--target", "a100", "--gpus", "all"))["services"]["demo"]
    assert gpu_service["deploy"]["resources"]["reservations"]["devices"]  # the a100's does ask


def test_compose_of_a_project_of_one_target_beside_one_of_several_takes_target_for_the_latter(project, env, tmp_path):
    single = lock_offline(tmp_path / "solo", '[project]\nname = "solo"\n[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n'
                          + RUN).root
    services = yaml.safe_load(ok("compose", project, env, single, "--target", "a100"))["services"]
    assert services["demo"]["image"] == image_tag(project, "a100") and set(services) == {"demo", "solo"}


# --- Dev container ------------------------------------------------------------------------------------

LAPTOP_AND_A100 = THREE_TARGETS.split("[targets.h100]")[0]


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> Path:
    """A CPU laptop and an A100: the one devcontainer.json both open."""
    return lock_offline(tmp_path_factory.mktemp("two") / "demo", LAPTOP_AND_A100 + RUN).root


def devcontainer(root: Path, env: dict, *args) -> tuple[dict, str]:
    proc = export("devcontainer", root, env, "--stdout", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_a_cpu_and_a_gpu_target_open_one_gpu_optional_dev_container(two, env):
    config, err = devcontainer(two, env, "--gpus", "all")
    assert config["hostRequirements"] == {"gpu": "optional"}
    assert "--gpus" not in config["runArgs"] and "--device" not in config["runArgs"]
    assert "NVIDIA_VISIBLE_DEVICES" not in config["containerEnv"]
    assert config["image"] == image_tag(two, "a100")
    assert err == ("cudaenv: note: the dev container opens target a100's image; GPU optional, so target laptop opens "
                   "it without a GPU\n")


def test_a_gpu_count_the_optional_file_cannot_carry_is_said(two, env):
    config, err = devcontainer(two, env)  # [run] gpus = "2"
    assert config["hostRequirements"] == {"gpu": "optional"} and "--gpus" not in config["runArgs"]
    assert "cudaenv: note: GPUs 2: a GPU-optional dev container gets the GPUs from the Dev Containers tool" in err


def test_gpus_none_is_todays_no_gpu_file(two, env):
    config, _ = devcontainer(two, env, "--gpus", "none")
    assert "hostRequirements" not in config and config["containerEnv"]["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_cdi_access_is_refused_for_a_gpu_optional_file(two, env):
    assert "--gpu-access cdi: a GPU-optional dev container" in refused(
        export("devcontainer", two, env, "--stdout", "--gpu-access", "cdi"))


def test_several_gpu_targets_need_target_for_the_dev_containers_image(project, env):
    assert "names several GPU targets (a100, h100); pass --target NAME" in refused(
        export("devcontainer", project, env, "--stdout"))
    config, err = devcontainer(project, env, "--target", "h100", "--gpus", "all")
    assert config["image"] == image_tag(project, "h100") and config["hostRequirements"] == {"gpu": "optional"}
    assert "opens target h100's image" in err


def test_a_cpu_target_named_opens_its_own_image_without_a_gpu(project, env):
    config, said = devcontainer(project, env, "--target", "laptop", "--gpus", "all")
    assert "target laptop is CPU-only: its dev container asks for no GPU (--gpus / [run] gpus all left out)" in said
    assert "hostRequirements" not in config or config["hostRequirements"].get("gpu") in (None, False)
    assert not any("gpu" in str(arg).lower() for arg in config.get("runArgs", []))


def test_gpu_targets_without_a_cpu_target_keep_a_required_gpu(tmp_path, env):
    root = lock_offline(tmp_path / "gpus", THREE_TARGETS.replace('[targets.laptop]\ngpus = "none"\n', "") + RUN).root
    config, _ = devcontainer(root, env, "--target", "a100", "--gpus", "all")
    assert config["hostRequirements"] == {"gpu": True} and config["runArgs"][:2] == ["--gpus", "all"]
