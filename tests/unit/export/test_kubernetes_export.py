"""`cudaenv export kubernetes`: every manifest variant validates against the Kubernetes OpenAPI
schemas of a pinned Kubernetes release (kubernetes-validate, offline, strict: no unknown field),
plus the API server's own rules the schemas leave out (RFC 1123 names, label values, Gt/Lt
integers); the affinity in the manifest is the one that agrees with `check_stack`; hostile or
malformed values are refused with one line and exit 2.

Projects lock offline (plain CUDA, no requirements) through the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from functools import partial
from pathlib import Path

import pytest
import yaml

from cudaenv.export.kubernetes import (DNS_LABEL, LABEL_VALUE, node_affinity, shm_quantity)
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project.lock import current_lock
from tests.support.cli import cudaenv as run_cli
from tests.support.k8s_affinity import affinity_selects
from tests.unit.host import cli_env, hide_nvml

kubernetes_validate = pytest.importorskip("kubernetes_validate")

KUBERNETES_VERSION = "1.33.0"  # the API the manifests are checked against (bundled by kubernetes-validate)
IMAGE = "registry.example.com:5000/ml/detector@sha256:" + "0123456789abcdef" * 4

CONFIG = """\
[project]
name = "detector"
python = "3.11"

[cuda]
version = "12.4"

[target]
driver = "550.54.15"
gpus = ["A100"]

[build]
flavor = "runtime"

[run]
command = ["python", "train.py", "--epochs", "3"]
gpus = "2"
shm_size = "16g"
env = { WANDB_MODE = "offline", VERBOSE = "y" }
"""


cudaenv = partial(run_cli, timeout=120)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return cli_env(hide_nvml(tmp_path_factory.mktemp("no-nvml")), CUDAENV_UID="4242", CUDAENV_GID="4343")


@pytest.fixture(scope="module")
def project(tmp_path_factory, env) -> Path:
    directory = tmp_path_factory.mktemp("k8s-export") / "detector"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(CONFIG)
    proc = cudaenv("lock", directory, env=env)
    assert proc.returncode == 0, proc.stderr
    return directory


def export(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return cudaenv("export", "kubernetes", project, *args, env=env)


def manifest(project: Path, env: dict, *args: str) -> dict:
    proc = export(project, env, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    documents = list(yaml.safe_load_all(proc.stdout))
    assert len(documents) == 1
    return documents[0]


def validate(document: dict) -> None:
    """The pinned release's OpenAPI schema, strict (unknown fields fail), then what the API server
    checks beyond the schema for the fields cudaenv writes."""
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    metadata, pod = document["metadata"], document["spec"]["template"]["spec"]
    assert DNS_LABEL.fullmatch(metadata["name"])
    for labels in (metadata["labels"], document["spec"]["template"]["metadata"]["labels"]):
        for value in labels.values():
            assert LABEL_VALUE.fullmatch(value)
    for container in pod["containers"]:
        assert DNS_LABEL.fullmatch(container["name"])
    affinity = pod.get("affinity", {}).get("nodeAffinity")
    if affinity:
        terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms
        for term in terms:
            assert term["matchExpressions"]
            for requirement in term["matchExpressions"]:
                if requirement["operator"] in ("Gt", "Lt"):
                    assert len(requirement["values"]) == 1 and re.fullmatch(r"-?[0-9]+", requirement["values"][0])
                elif requirement["operator"] in ("In", "NotIn"):
                    assert requirement["values"]
                else:
                    assert "values" not in requirement


# --- every variant validates ---------------------------------------------------------------------------

VARIANTS = {
    "job": ("--image", IMAGE),
    "deployment": ("--image", IMAGE, "--kind", "deployment", "--replicas", "3"),
    "job-runtime-class": ("--image", IMAGE, "--runtime-class", "nvidia", "--namespace", "ml-team"),
    "deployment-runtime-class": ("--image", IMAGE, "--kind", "deployment", "--runtime-class", "nvidia-cdi.example.com"),
    "job-no-gpu": ("--image", IMAGE, "--gpus", "0"),
    "deployment-no-gpu": ("--image", IMAGE, "--kind", "deployment", "--gpus", "0"),
    "job-one-gpu": ("--image", IMAGE, "--gpus", "1", "--backoff-limit", "2"),
    "job-eight-gpus-small-shm": ("--image", IMAGE, "--gpus", "8", "--shm-size", "1.5g"),
    "job-shm-bytes": ("--image", IMAGE, "--shm-size", "1000000"),
    "job-user-command-env": ("--image", IMAGE, "--user", "1234:5678", "--name", "detector-train", "-e", "SEED=7",
                             "-e", "FLAG=on", "--", "python", "-m", "train", "--lr", "3e-4", "--dry", "no"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_variant_validates_against_the_kubernetes_schemas(project, env, name):
    validate(manifest(project, env, *VARIANTS[name]))


def test_the_validator_rejects_a_broken_manifest(project, env):
    """The same check fails on what the API server would refuse: it is not a validator that passes anything."""
    document = manifest(project, env, *VARIANTS["job"])
    broken = json.loads(json.dumps(document))
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = ["nvidia.com/gpu", 2]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)
    typo = json.loads(json.dumps(document))
    typo["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]["sizelimit"] = "8Gi"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, KUBERNETES_VERSION, strict=True)
    no_image = json.loads(json.dumps(document))
    del no_image["spec"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(no_image, KUBERNETES_VERSION, strict=True)


# --- what the manifest says ---------------------------------------------------------------------------


def test_job_asks_for_the_gpus_and_places_by_the_resolver(project, env):
    document = manifest(project, env, *VARIANTS["job"])
    assert (document["apiVersion"], document["kind"]) == ("batch/v1", "Job")
    pod = document["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 2}  # [run] gpus = "2"
    assert pod["restartPolicy"] == "Never"
    matrix = load_matrix()
    lock, _ = current_lock(load_project(project), matrix)
    assert pod["affinity"]["nodeAffinity"] == node_affinity(matrix, lock.resolved_stack())
    a100_r535 = {"nvidia.com/cuda.driver-version.major": "535", "nvidia.com/cuda.driver-version.minor": "104",
                 "nvidia.com/cuda.driver-version.revision": "05",
                 "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0", "kubernetes.io/arch": "amd64"}
    t4_r470 = {"nvidia.com/cuda.driver.major": "470", "nvidia.com/cuda.driver.minor": "82",
               "nvidia.com/cuda.driver.rev": "01", "nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "5"}
    assert affinity_selects(pod["affinity"]["nodeAffinity"], a100_r535)
    assert not affinity_selects(pod["affinity"]["nodeAffinity"], t4_r470)
    # the same GPU and driver behind an arm64 CPU (a Grace node): the x86_64 image cannot start there
    assert not affinity_selects(pod["affinity"]["nodeAffinity"], {**a100_r535, "kubernetes.io/arch": "arm64"})


def test_shared_memory_is_a_memory_backed_empty_dir_of_the_run_size(project, env):
    pod = manifest(project, env, *VARIANTS["job"])["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_pod_runs_as_the_images_numeric_non_root_user(project, env):
    """CUDAENV_UID/GID are what `cudaenv build` bakes into the image's USER; the manifest says the same."""
    pod = manifest(project, env, *VARIANTS["job"])["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (4242, 4343)
    assert pod["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": False,
                                                       "capabilities": {"drop": ["ALL"]}}
    override = manifest(project, env, *VARIANTS["job-user-command-env"])["spec"]["template"]["spec"]
    assert (override["securityContext"]["runAsUser"], override["securityContext"]["runAsGroup"]) == (1234, 5678)


def test_runtime_class_only_when_asked(project, env):
    assert "runtimeClassName" not in manifest(project, env, *VARIANTS["job"])["spec"]["template"]["spec"]
    pod = manifest(project, env, *VARIANTS["job-runtime-class"])["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"


def test_no_gpu_means_no_limit_no_affinity_and_the_gpus_hidden(project, env):
    pod = manifest(project, env, *VARIANTS["job-no-gpu"])["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "resources" not in container and "affinity" not in pod and "tolerations" not in pod
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in container["env"]


def test_deployment_keeps_replicas_and_selects_its_own_pods(project, env):
    document = manifest(project, env, *VARIANTS["deployment"])
    assert (document["apiVersion"], document["kind"]) == ("apps/v1", "Deployment")
    spec = document["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert "restartPolicy" not in spec["template"]["spec"]


def test_command_and_values_keep_their_type_as_strings(project, env):
    """`3e-4`, `no`, `on`, `y` are strings to cudaenv; a YAML reader must not turn them into numbers or booleans."""
    container = manifest(project, env, *VARIANTS["job-user-command-env"])["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["python", "-m", "train", "--lr", "3e-4", "--dry", "no"]
    assert {"name": "FLAG", "value": "on"} in container["env"]
    assert {"name": "VERBOSE", "value": "y"} in container["env"]  # from [run] env
    assert container["name"] == "detector-train"


def test_header_says_what_labels_cannot_express(project, env):
    text = export(project, env, *VARIANTS["job"]).stdout
    head = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert "nvidia.com/cuda.driver-version.*" in head and "nvidia.com/cuda.driver.*" in head
    assert "Labels cannot say" in head and "forward compatibility" in head


def test_pushed_digest_is_the_default_image(project, env, tmp_path):
    pushed = project / "cudaenv.pushed.json"
    pushed.write_text(json.dumps({"reference": "registry.example.com/ml/detector:abc", "digest": "sha256:" + "ab" * 32}))
    try:
        proc = export(project, env)
        assert proc.returncode == 0, proc.stderr
        image = yaml.safe_load(proc.stdout)["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "registry.example.com/ml/detector@sha256:" + "ab" * 32
    finally:
        pushed.unlink()


def test_output_directory_gets_the_file_and_is_not_overwritten(project, env, tmp_path):
    out = tmp_path / "manifests"
    proc = export(project, env, "--image", IMAGE, "-o", out)
    assert proc.returncode == 0, proc.stderr
    written = out / "detector-job.yaml"
    assert proc.stdout == "" and str(written) in proc.stderr
    validate(yaml.safe_load(written.read_text()))
    again = export(project, env, "--image", IMAGE, "-o", out)
    assert again.returncode == 2 and "--force" in again.stderr
    assert export(project, env, "--image", IMAGE, "-o", out, "--force").returncode == 0


def test_cudaenv_help_lists_the_kubernetes_export(env):
    top = cudaenv("--help", env=env).stdout
    assert re.search(r"export\s+Take the stack elsewhere:[^\n]*(?:\n\s+[^\n]*)?kubernetes", top)
    assert "kubernetes" in cudaenv("export", "--help", env=env).stdout


# --- bad input: one line, exit 2 --------------------------------------------------------------------------

BAD = {
    "name-upper-case": (("--name", "Detector"), "--name"),
    "name-too-long": (("--name", "a" * 64), "--name"),
    "namespace-dot": (("--namespace", "ml.team"), "--namespace"),
    "runtime-class-space": (("--runtime-class", "nvidia runc"), "--runtime-class"),
    "image-grammar": (("--image", "Registry/Detector:latest\nx"), "--image"),
    "shm-words": (("--shm-size", "lots"), "--shm-size"),
    "shm-zero": (("--shm-size", "0"), "--shm-size"),
    "gpus-negative": (("--gpus", "-1"), "--gpus"),
    "gpus-full-width-digit": (("--gpus", "２"), "--gpus"),
    "gpus-huge": (("--gpus", "99999999999999999999"), "--gpus"),
    "replicas-full-width-digit": (("--kind", "deployment", "--replicas", "３"), "--replicas"),
    "replicas-huge": (("--kind", "deployment", "--replicas", "9" * 30), "--replicas"),
    "backoff-limit-arabic-digit": (("--backoff-limit", "٣"), "--backoff-limit"),
    "user-root": (("--user", "0"), "--user"),
    "user-name": (("--user", "app"), "--user"),
    "user-huge": (("--user", "99999999999"), "--user"),
    "replicas-on-job": (("--replicas", "2"), "--replicas"),
    "backoff-on-deployment": (("--kind", "deployment", "--backoff-limit", "1"), "--backoff-limit"),
    "env-name": (("-e", "BAD-NAME=1"), "BAD-NAME"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_are_refused_in_one_line(project, env, case):
    args, where = BAD[case]
    full = args if "--image" in args else ("--image", IMAGE, *args)
    proc = export(project, env, *full)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and where in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_without_a_directory_the_command_after_dashes_is_the_command(project, env):
    """`cudaenv export kubernetes -- python eval.py` in the project: the project is `.`, and
    `python` is the first word of the command, never taken for the directory."""
    proc = cudaenv("export", "kubernetes", "--image", IMAGE, "--", "python", "eval.py", env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    [container] = yaml.safe_load(proc.stdout)["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["python", "eval.py"]


def test_a_mistyped_option_where_the_directory_goes_is_named_as_such(project, env):
    proc = cudaenv("export", "kubernetes", "--jsn", "--", "true", env=env, cwd=project)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "No such option '--jsn'" in proc.stderr, proc.stderr


def test_without_an_image_or_a_push_the_export_says_how_to_get_one(project, env):
    proc = export(project, env)
    assert proc.returncode == 2
    assert "--image" in proc.stderr and "cudaenv push" in proc.stderr


def test_bad_run_shm_size_in_the_project_names_the_file_and_field(tmp_path, env):
    directory = tmp_path / "zero-shm"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(CONFIG.replace('shm_size = "16g"', 'shm_size = "0"'))
    assert cudaenv("lock", directory, env=env).returncode == 0
    proc = export(directory, env, "--image", IMAGE)
    assert proc.returncode == 2
    assert "cudaenv.toml: run.shm_size" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text, quantity", [
    ("8g", "8Gi"), ("512m", "512Mi"), ("1.5g", "1536Mi"), ("64k", "64Ki"), ("100", "100"), ("2G", "2Gi"),
    ("1000000b", "1000000"), ("0.5k", "512"),
])
def test_docker_sizes_become_the_same_bytes_as_kubernetes_quantities(text, quantity):
    assert shm_quantity(text, "run.shm_size") == quantity


# --- the docs' manifest is what the code writes ----------------------------------------------------------

README_PROJECT = """\
[project]
name = "detector"
python = "3.11"

[cuda]
version = "12.4"

[target]
driver = "550.54.15"
gpus = ["A100"]

[build]
flavor = "runtime"

[run]
command = ["python", "train.py", "--epochs", "3"]
gpus = "2"
env = { WANDB_MODE = "offline" }
"""


def test_docs_manifest_is_what_the_export_prints(tmp_path):
    """The manifest after `<!-- kubernetes-manifest -->` (in README.md or a docs/ page) is what the
    `cudaenv export kubernetes ... > train.yaml` command shown in the docs prints."""
    from tests.support.docs import find_one, name

    where, match = find_one(r"<!-- kubernetes-manifest -->\n<details[^>]*>.*?\n\n```yaml\n(.*?)```\n",
                            "```yaml block after <!-- kubernetes-manifest -->")
    _, shown = find_one(r"```sh\n(cudaenv export kubernetes .*?> train\.yaml)\n", "`cudaenv export kubernetes ... > train.yaml`")
    args = [word for word in shown.group(1).replace("\\\n", " ").split()][3:-2]  # after `cudaenv export kubernetes`, before `>`
    directory = tmp_path / "detector"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(README_PROJECT)
    readme_env = cli_env(hide_nvml(tmp_path / "no-nvml"), CUDAENV_UID="1000", CUDAENV_GID="1000")
    assert cudaenv("lock", directory, env=readme_env).returncode == 0
    proc = cudaenv("export", "kubernetes", *args, env=readme_env, cwd=directory)
    assert proc.returncode == 0, proc.stderr
    if os.environ.get("CUDAENV_UPDATE_GOLDEN", "").strip().lower() in {"1", "true", "yes"}:
        text = where.read_text(encoding="utf-8")
        where.write_text(text[:match.start(1)] + proc.stdout + text[match.end(1):], encoding="utf-8")
        return
    assert proc.stdout == match.group(1), (f"{name(where)}'s Kubernetes manifest is stale (a matrix or code change?): "
                                           "review, then rewrite it with CUDAENV_UPDATE_GOLDEN=1")
    validate(yaml.safe_load(proc.stdout))
