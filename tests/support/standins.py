"""Stand-in base images served from the suite's local registry under the names templates ask for.

No image can come from Docker Hub or ghcr.io here, so the debootstrapped Debian + python3 image
that scripts/test.sh imports stands in for ``nvidia/cuda:<tag>`` and ``python:<ver>-slim`` (an
``-ubuntu18.04`` tag gets the debootstrapped bionic, whose archive is what such images install from), and
the virtualenv's own uv binary becomes ``astral-sh/uv:<version>``. A project whose
``base_registry`` points at this registry then builds exactly as it would against a mirror.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from cudaenv.core.references import with_registry
from cudaenv.images.render import UV_IMAGE, uv_version


def _uv_tar() -> bytes:
    """The virtualenv's own uv and uvx (this machine's platform) as a tar of an image's root."""
    from uv import find_uv_bin

    binary = Path(find_uv_bin())
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name in ("uv", "uvx"):
            tar.add(str(binary.with_name(name)), arcname=name)
    return archive.getvalue()


class StandinRegistry:
    def __init__(self, engine, registry, standin_image: str, by_os: dict[str, str] | None = None) -> None:
        self.engine = engine
        self.registry = registry
        self.standin_image = standin_image
        self.by_os = by_os or {}  # tag OS suffix ("ubuntu18.04") -> a stand-in of that OS
        self._pushed: set[str] = set()

    @property
    def host(self) -> str:
        return self.registry.host

    def _push(self, reference: str) -> None:
        repository, _, tag = reference.rpartition(":")
        for line in self.engine.client.images.push(repository, tag=tag, stream=True, decode=True):
            if "error" in line:
                raise RuntimeError(f"push {reference}: {line['error']}")
        self._pushed.add(reference)

    def provide(self, reference: str) -> str:
        """Serve the stand-in as ``reference`` (registry-less, e.g. nvidia/cuda:12.4.1-runtime-ubuntu22.04)."""
        target = with_registry(reference, self.host)
        if target not in self._pushed:
            repository, _, tag = target.rpartition(":")
            image = next((i for os_name, i in self.by_os.items() if tag.endswith(f"-{os_name}")), self.standin_image)
            self.engine.client.images.get(image).tag(repository, tag)
            self._push(target)
        return target

    def provide_uv(self) -> str:
        target = with_registry(f"{UV_IMAGE}:{uv_version()}", self.host)
        if target in self._pushed:
            return target
        subprocess.run(["docker", "import", "-", target], input=_uv_tar(), check=True, capture_output=True)
        self._push(target)
        return target

    def cleanup(self) -> None:
        """Untag every local image this session tagged under the registry's host."""
        prefix = f"{self.host}/"
        for image in self.engine.client.images.list():
            for tag in image.tags:
                if tag.startswith(prefix):
                    try:
                        self.engine.client.images.remove(tag, noprune=False)
                    except Exception:  # shared with a running test's container: the daemon keeps it
                        pass


MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"


def put_index(registry_url: str, repository: str, tag: str, platforms: dict[str, str]) -> None:
    """Write ``repository:tag`` as a multi-platform image (a Docker manifest list, as upstream's
    python, nvidia/cuda and uv images are) over single-platform manifests already pushed to the same
    repository: ``platforms`` maps an OCI architecture ("amd64") to the tag that holds it."""
    import hashlib
    import json
    import urllib.request

    entries = []
    for arch, source in platforms.items():
        request = urllib.request.Request(f"{registry_url}/v2/{repository}/manifests/{source}", headers={"Accept": MANIFEST})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            media_type = response.headers.get("Content-Type", MANIFEST)
        platform = {"architecture": arch, "os": "linux", **({"variant": "v8"} if arch == "arm64" else {})}
        entries.append({"mediaType": media_type, "size": len(body),
                        "digest": f"sha256:{hashlib.sha256(body).hexdigest()}", "platform": platform})
    body = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_LIST, "manifests": entries}).encode()
    request = urllib.request.Request(f"{registry_url}/v2/{repository}/manifests/{tag}", data=body, method="PUT",
                                     headers={"Content-Type": MANIFEST_LIST})
    urllib.request.urlopen(request, timeout=30).close()


class Arm64Standins(StandinRegistry):
    """The arm64 stand-ins (a debootstrapped arm64 bookworm + python3, uv's aarch64 binary) under
    upstream names in a registry of their own: an aarch64 stack's build asks for linux/arm64, and
    BuildKit takes the arm64 image for it. With ``native_image`` (the x86_64 stand-in) each name is
    a multi-platform image, amd64 and arm64, as upstream's are: a cross build's stages that run on
    the build machine (``FROM --platform=$BUILDPLATFORM``) take its amd64 half."""

    def __init__(self, engine, registry, standin_image: str, uv_wheel: Path, scratch: Path,
                 native_image: str | None = None) -> None:
        super().__init__(engine, registry, standin_image)
        self.uv_wheel, self.scratch, self.native_image = uv_wheel, scratch, native_image

    def _as_index(self, target: str, native: str) -> None:
        """``target`` (pushed: the arm64 image) becomes an index of it and the local image ``native``."""
        repository, _, tag = target.rpartition(":")
        arm64, amd64 = f"{repository}:{tag}--arm64", f"{repository}:{tag}--amd64"
        self.engine.client.images.get(target).tag(*arm64.rsplit(":", 1))
        self.engine.client.images.get(native).tag(*amd64.rsplit(":", 1))
        self._push(arm64), self._push(amd64)
        put_index(self.registry.url, repository.split("/", 1)[1], tag, {"arm64": f"{tag}--arm64", "amd64": f"{tag}--amd64"})

    def provide(self, reference: str) -> str:
        target = with_registry(reference, self.host)
        if target in self._pushed:
            return target
        super().provide(reference)
        if self.native_image:
            self._as_index(target, self.native_image)
        return target

    def provide_uv(self) -> str:
        import os
        import zipfile

        from cudaenv.engine.builders import find_cli_builder

        target = with_registry(f"{UV_IMAGE}:{uv_version()}", self.host)
        if target in self._pushed:
            return target
        with zipfile.ZipFile(self.uv_wheel) as wheel:
            for name in ("uv", "uvx"):
                member = next(n for n in wheel.namelist() if n.endswith(f".data/scripts/{name}"))
                (self.scratch / name).write_bytes(wheel.read(member))
                (self.scratch / name).chmod(0o755)
        (self.scratch / "Dockerfile").write_text("FROM scratch\nCOPY uv uvx /\n")
        builder = find_cli_builder()
        if builder is None:
            raise RuntimeError("no docker CLI with BuildKit: the arm64 uv image needs --platform")
        argv = [builder.cli, *(["buildx", "build", "--load"] if builder.mode == "buildx" else ["build"]),
                "--platform", "linux/arm64", "-t", target, str(self.scratch)]
        subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "DOCKER_BUILDKIT": "1"})
        self._push(target)
        if self.native_image:
            native = f"{target}--native"
            subprocess.run(["docker", "import", "-", native], input=_uv_tar(), check=True, capture_output=True)
            self._as_index(target, native)
        return target
