"""The container-engine boundary: the only package that talks to Docker.

Everything above this layer speaks in the plain values defined here (``BuildRequest``,
``ContainerSpec``, ``RunResult``). ``Engine`` is the interface another engine (podman, say) would
implement; ``get_engine()`` returns the Docker one. The docker SDK is imported only inside
``cudaenv.engine.docker_engine``, so importing this package stays cheap.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

OutputCallback = Callable[[str], None]


@dataclass(frozen=True)
class BuildRequest:
    """An image build: a context directory and a Dockerfile (inside the context or given as text)."""

    context: Path
    tags: tuple[str, ...]
    dockerfile: Path | None = None  # default: <context>/Dockerfile
    dockerfile_text: str | None = None  # rendered in memory; written into a temporary file
    build_args: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    no_cache: bool = False
    pull: bool = False
    # BuildKit secrets: id -> path of a file on the build host. Never stored in a layer.
    secrets: Mapping[str, Path] = field(default_factory=dict)
    target: str | None = None


@dataclass(frozen=True)
class BuildResult:
    image_id: str
    tags: tuple[str, ...]
    builder: str  # "buildx", "buildkit" (DOCKER_BUILDKIT=1 on a classic client) or "sdk"
    log: str
    seconds: float


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class GpuRequest:
    """Which GPUs a container gets, in the Docker ``DeviceRequest`` vocabulary.

    ``count=-1`` means all GPUs; ``device_ids`` selects by index or UUID. ``None`` for the
    whole request means no GPU.
    """

    count: int | None = None
    device_ids: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ("gpu", "compute", "utility")


@dataclass(frozen=True)
class ContainerSpec:
    """Everything needed to create a container, independent of the engine's API."""

    image: str
    command: tuple[str, ...] = ()
    name: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    working_dir: str | None = None
    user: str | None = None
    gpus: GpuRequest | None = None
    shm_size: str | None = None
    ipc_mode: str | None = None
    ulimits: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # name -> (soft, hard)
    ports: Mapping[str, int | None] = field(default_factory=dict)  # "8888/tcp" -> host port
    tty: bool = False
    stdin_open: bool = False
    init: bool = True


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str
    container_id: str


class Engine(abc.ABC):
    """What cudaenv needs from a container engine."""

    name: str = "engine"

    @abc.abstractmethod
    def build(self, request: BuildRequest, on_output: OutputCallback | None = None) -> BuildResult:
        """Build an image; stream progress lines to ``on_output``; raise BuildError on failure."""

    @abc.abstractmethod
    def run(self, spec: ContainerSpec, *, remove: bool = True, timeout: float | None = None) -> RunResult:
        """Run a container to completion and return its exit code and combined output."""

    @abc.abstractmethod
    def image_labels(self, image: str) -> dict[str, str] | None:
        """The labels of a local image, or None when the image does not exist locally."""

    @abc.abstractmethod
    def remove_image(self, image: str, *, force: bool = False) -> None:
        """Remove a local image (missing images are not an error)."""


def get_engine() -> Engine:
    """The engine cudaenv uses: Docker, through its SDK and (for builds) its CLI."""
    from cudaenv.engine.docker_engine import DockerEngine

    return DockerEngine()


__all__ = [
    "BuildRequest",
    "BuildResult",
    "ContainerSpec",
    "Engine",
    "GpuRequest",
    "Mount",
    "OutputCallback",
    "RunResult",
    "get_engine",
]
