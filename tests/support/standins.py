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
        from uv import find_uv_bin

        binary = Path(find_uv_bin())
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            for name in ("uv", "uvx"):
                tar.add(str(binary.with_name(name)), arcname=name)
        subprocess.run(["docker", "import", "-", target], input=archive.getvalue(), check=True, capture_output=True)
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


class Arm64Standins(StandinRegistry):
    """The arm64 stand-ins (a debootstrapped arm64 bookworm + python3, uv's aarch64 binary) under
    upstream names in a registry of their own: an aarch64 stack's build asks for linux/arm64, and
    BuildKit takes a single-platform arm64 image for it."""

    def __init__(self, engine, registry, standin_image: str, uv_wheel: Path, scratch: Path) -> None:
        super().__init__(engine, registry, standin_image)
        self.uv_wheel, self.scratch = uv_wheel, scratch

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
        return target
