"""`cudaenv export kubernetes`, whole manifests in-process: the header's explanations, the pod spec
and the node affinity the resolver rules give, for real stacks (a torch wheel build with its SM
lists, TensorFlow through forward compatibility, the bare CUDA runtime without GPUs).

Golden files live in tests/fixtures/golden/kubernetes/; they change with the manifest's text or the
matrix rows a stack resolves against. After reviewing such a change, rewrite them with::

    CUDAENV_UPDATE_GOLDEN=1 python -m pytest tests/unit/export/test_kubernetes_golden.py

The cudaenv version in the header is written as VERSION so a release does not touch them.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from cudaenv import __version__
from cudaenv.export.kubernetes import build_workload, header, manifest, render
from cudaenv.resolver import driver as drv
from tests.unit.export.test_kubernetes_affinity import MATRIX, _stack
from tests.unit.export.test_kubernetes_workload_rules import IMAGE, fake_project

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "kubernetes"
UPDATE = os.environ.get("CUDAENV_UPDATE_GOLDEN", "").strip().lower() in {"1", "true", "yes"}


def torch_job():
    project = fake_project(gpus="2", command=("python", "train.py", "--out", "/out/$(RUN)"),
                           env=(("WANDB_MODE", "offline"), ("NCCL_IB_HCA", "=mlx5_0:1")))
    return build_workload(project, MATRIX, _stack(frameworks={"torch": "==2.6.0"}), image=IMAGE, user="1000",
                          namespace="ml", runtime_class="nvidia", passthrough=("HF_TOKEN", "WANDB_API_KEY"),
                          env={"SEED": "$$"})


def tensorflow_forward_deployment():
    stack = dataclasses.replace(_stack(frameworks={"tensorflow": "==2.15.1"}), driver_compatibility=drv.FORWARD)
    project = fake_project(gpus="0,1", shm_size="2g", ipc="host", command=("python", "serve.py"))
    return build_workload(project, MATRIX, stack, kind="deployment", image=IMAGE, user="4242:4343", replicas=3,
                          name="tf-serve")


def runtime_cpu_job():
    return build_workload(fake_project(), MATRIX, _stack(cuda="==12.4", flavor="runtime"), image=IMAGE,
                          user="1000:1000", backoff_limit=2, shm_size="512m")


CASES = {"torch-job": torch_job, "tensorflow-forward-deployment": tensorflow_forward_deployment,
         "runtime-cpu-job": runtime_cpu_job}


@pytest.mark.parametrize("name", sorted(CASES))
def test_manifest_matches_its_golden_file(name):
    workload = CASES[name]()
    text = render(manifest(workload), header(workload)).replace(f"cudaenv {__version__} ", "cudaenv VERSION ")
    golden = GOLDEN / f"{name}.yaml"
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing: run with CUDAENV_UPDATE_GOLDEN=1 to write it, then review it"
    assert text == golden.read_text(encoding="utf-8"), f"{name}: regenerate with CUDAENV_UPDATE_GOLDEN=1 and review the diff"
    assert yaml.safe_load(text)["kind"] in {"Job", "Deployment"}
