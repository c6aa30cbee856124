"""A mixed fleet (issue 35, item 6): a project with an x86_64 target and a Grace target is judged
node by node, and `check --nodes` names which target's image each node runs: the H100 node the
x86_64 one, the GH200 node (arm64) the Grace one, and never the other way round."""

from __future__ import annotations

import json

from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.support.targets import lock_offline
from tests.unit.cluster.helpers import as_list, node

FLEET = """[project]
name = "fleet"

[frameworks]
torch = ">=2.6"

[targets.hopper]
driver = "580.65.06"
gpus = ["H100"]

[targets.grace]
driver = "580.65.06"
gpus = ["NVIDIA GH200 480GB"]
"""


def relabelled(name: str, new_name: str, **labels: str) -> dict:
    obj = node(name)
    obj["metadata"]["name"] = new_name
    obj["metadata"]["labels"].update(labels)
    return obj


def test_each_node_of_a_mixed_fleet_runs_the_image_of_its_own_cpu(tmp_path):
    project = lock_offline(tmp_path / "fleet", FLEET)
    driver = {"nvidia.com/cuda.driver-version.full": "580.65.06", "nvidia.com/cuda.driver-version.major": "580",
              "nvidia.com/cuda.driver-version.minor": "65", "nvidia.com/cuda.driver-version.revision": "06"}
    nodes = as_list(
        relabelled("h100-r535", "h100-r580", **driver),
        relabelled("h100-r535", "gh200-r580", **driver, **{
            "kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GH200-480GB",
            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0"}),
    )
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    proc = run_cli("check", project.root, "--nodes", path, "--json", env=isolated_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    ran = {n["name"]: n["target"] for n in report["nodes"]}
    assert ran == {"h100-r580": "hopper", "gh200-r580": "grace"}
    why = {n["name"]: {t["target"]: t for t in n["targets"]} for n in report["nodes"]}
    assert not why["gh200-r580"]["hopper"]["fits"] and any("aarch64" in r for r in why["gh200-r580"]["hopper"]["reasons"])
    assert not why["h100-r580"]["grace"]["fits"] and any("x86_64" in r for r in why["h100-r580"]["grace"]["reasons"])
