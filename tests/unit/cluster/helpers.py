"""Shared fixtures for the cluster tests: the recorded node files and the stacks judged on them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NODES = FIXTURES / "k8s-nodes" / "nodes.json"
SINGLE_NODE = FIXTURES / "k8s-nodes" / "node-t4-r470.json"
SLURM = FIXTURES / "k8s-nodes" / "slurm"
PROJECT = FIXTURES / "projects" / "configured-torch"  # torch >=2.4,<2.6 for A100 + 550.54.15


def node_list() -> dict:
    return json.loads(NODES.read_text())


def node(name: str) -> dict:
    return copy.deepcopy(next(n for n in node_list()["items"] if n["metadata"]["name"] == name))


def as_list(*nodes: dict) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": list(nodes), "metadata": {"resourceVersion": ""}}


def configured_torch_stack(matrix):
    """The stack `cudaenv lock` would pin for configured-torch: resolved for its [target]."""
    from cudaenv.project import load_project
    from cudaenv.project.config import resolve_project
    from cudaenv.hosts.target import project_target

    project = load_project(PROJECT)
    return resolve_project(matrix, project, project_target(matrix, project).host).stack
