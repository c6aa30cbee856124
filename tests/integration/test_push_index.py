"""Issue 35, item 6: one image for a mixed fleet. A project whose targets span both CPU
architectures (an H100 x86_64 node and a GH200 Grace node) builds each target's image, and `push
--target … --target …` writes one OCI image index to a real registry: read back through the
registry's own API, it names each image by digest with its platform, and each image's config says
that CPU. The exports then name the index by digest for either target, and the Kubernetes
affinity admits that target's architecture. Two targets of one architecture cannot share an index.

The arm64 image is a cross build here (qemu-user-static, as tests/integration/test_arm64_image.py).
"""

from __future__ import annotations

import json
import urllib.request
from functools import partial

import pytest
import yaml

from tests.integration.test_arm64_image import OVERLAY, index_env  # torch 2.96.0 for x86_64 and aarch64
from tests.support.cli import cudaenv as run_cli
from tests.support.package_index import serve_index

pytestmark = [pytest.mark.docker, pytest.mark.registry]

cudaenv = partial(run_cli, timeout=1800)
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
MANIFESTS = ", ".join([OCI_INDEX, "application/vnd.oci.image.manifest.v1+json",
                       "application/vnd.docker.distribution.manifest.v2+json"])


@pytest.fixture(scope="module")
def project(tmp_path_factory, arm64_standins):
    index, stop = serve_index(tmp_path_factory.mktemp("fleet-index"))
    index.add("torch", "2.96.0")
    overlay = tmp_path_factory.mktemp("fleet-overlay")
    (overlay / "torch.toml").write_text(OVERLAY)
    directory = tmp_path_factory.mktemp("fleet") / "project"
    directory.mkdir()
    (directory / "cudaenv.toml").write_text("\n".join([
        "[project]", 'name = "grace-fleet"', 'python = "3.11"', "",
        "[frameworks]", 'torch = "==2.96.0"', "",
        "[targets.hopper]", 'driver = "580.65.06"', 'gpus = ["H100"]', "",
        "[targets.grace]", 'driver = "580.65.06"', 'gpus = ["NVIDIA GH200 480GB"]', "",
        "[targets.older]", 'driver = "550.54.15"', 'gpus = ["H100"]', "",
        "[build]", 'flavor = "wheels"', f'base_registry = "{arm64_standins.host}"', "",
        "[run]", 'command = ["python", "-c", "import platform; print(platform.machine())"]', ""]))
    env = index_env(index, overlay)
    locked = cudaenv("lock", directory, env=env)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    yield directory, env
    stop()


def registry_get(registry, path: str, accept: str | None = None) -> tuple[bytes, str]:
    request = urllib.request.Request(f"{registry.url}/v2/{path}", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read(), response.headers.get("Content-Type", "")


def test_two_architectures_push_as_one_index_the_registry_serves_and_the_exports_name(project, engine, registry):
    directory, env = project
    proc = cudaenv("push", directory, "--registry", f"{registry.host}/team", "--target", "hopper", "--target", "grace",
                   "--network", "host", "--json", env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    pushed = json.loads(proc.stdout)
    assert pushed["targets"] == ["hopper", "grace"] and pushed["image"] == f"{registry.host}/team/grace-fleet@{pushed['digest']}"
    assert json.loads((directory / "cudaenv.pushed.json").read_text())["targets"] == ["hopper", "grace"]

    body, media_type = registry_get(registry, f"team/grace-fleet/manifests/{pushed['digest']}", OCI_INDEX)
    index = json.loads(body)
    assert media_type.startswith(OCI_INDEX) and index["mediaType"] == OCI_INDEX
    platforms = {entry["platform"]["architecture"]: entry for entry in index["manifests"]}
    assert set(platforms) == {"amd64", "arm64"} and all(e["platform"]["os"] == "linux" for e in index["manifests"])
    for arch, entry in platforms.items():  # each entry is the image of that CPU, byte for byte
        manifest_body, _ = registry_get(registry, f"team/grace-fleet/manifests/{entry['digest']}", MANIFESTS)
        assert len(manifest_body) == entry["size"]
        config_digest = json.loads(manifest_body)["config"]["digest"]
        config, _ = registry_get(registry, f"team/grace-fleet/blobs/{config_digest}")
        config = json.loads(config)
        assert config["architecture"] == arch
        target = "grace" if arch == "arm64" else "hopper"
        assert config["config"]["Labels"]["io.cudaenv.target"] == target

    for target, arch in (("grace", "arm64"), ("hopper", "amd64")):
        exported = cudaenv("export", "kubernetes", directory, "--target", target, env=env)
        assert exported.returncode == 0, exported.stderr
        [workload] = list(yaml.safe_load_all(exported.stdout))
        spec = workload["spec"]["template"]["spec"]
        assert spec["containers"][0]["image"] == pushed["image"]  # the index: each node pulls its own CPU's
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        arch_values = {v for term in terms for expr in term["matchExpressions"] if expr["key"] == "kubernetes.io/arch"
                       for v in expr["values"]}
        assert arch_values == {arch}
    job = cudaenv("export", "slurm", directory, "--target", "grace", env=env)
    from cudaenv.export.slurm import enroot_image

    assert job.returncode == 0 and enroot_image(pushed["image"]) in job.stdout, job.stderr  # enroot's spelling of it
    other = cudaenv("export", "kubernetes", directory, "--target", "older", env=env)
    assert other.returncode == 2 and "records no image for it" in other.stderr  # not in the index: no default


def test_two_targets_of_one_architecture_cannot_share_an_index_and_nothing_is_built(project, registry):
    directory, env = project
    proc = cudaenv("push", directory, "--registry", f"{registry.host}/team", "--target", "hopper", "--target", "older",
                   "--json", env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["message"].startswith("--target: hopper, older are all amd64: one image index holds one image per CPU")
    assert "building" not in proc.stderr and "locking" not in proc.stderr
