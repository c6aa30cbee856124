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

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers read it the same)
if TYPE_CHECKING:
    from pathlib import Path

OutputCallback = Callable[[str], None]


@dataclass(frozen=True)
class BuildRequest:
    """An image build: a context directory and a Dockerfile (inside the context or given as text)."""

    context: Path
    tags: tuple[str, ...]
    dockerfile: Path | None = None  # default: <context>/Dockerfile
    dockerfile_text: str | None = None  # rendered in memory; written into a temporary file
    dockerignore_text: str | None = None  # ignore rules for this build (default: the context's .dockerignore)
    build_args: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    no_cache: bool = False
    pull: bool = False
    # BuildKit secrets: id -> path of a file on the build host. Never stored in a layer.
    secrets: Mapping[str, Path] = field(default_factory=dict)
    target: str | None = None
    network: str | None = None  # e.g. "host", for builds that reach a mirror on the build host's loopback


@dataclass(frozen=True)
class BuildResult:
    image_id: str
    tags: tuple[str, ...]
    builder: str  # "buildx", "buildkit" (DOCKER_BUILDKIT=1 on a classic client) or "sdk"
    log: str
    seconds: float


@dataclass(frozen=True)
class ImageInfo:
    """A local image as disk accounting sees it: its layers (diff IDs, oldest first) and history.

    ``history`` is ``(created_by, size)`` per history entry, oldest first, as the engine reports
    it; ``size`` is the image's total bytes (every layer counted once)."""

    id: str
    tags: tuple[str, ...]
    labels: Mapping[str, str]
    diff_ids: tuple[str, ...]
    size: int
    history: tuple[tuple[str, int], ...] = ()


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
    ports: Mapping[str, int | tuple[str, int] | None] = field(default_factory=dict)  # "8888/tcp" -> port or (address, port)
    tty: bool = False
    stdin_open: bool = False
    init: bool = True


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str
    container_id: str


@dataclass(frozen=True)
class ContainerInfo:
    id: str
    name: str
    image: str
    status: str  # created, running, exited, ...
    labels: Mapping[str, str]
    started_at: str  # ISO timestamp from the engine, "" when never started
    exit_code: int | None = None


class Engine(abc.ABC):
    """What cudaenv needs from a container engine."""

    name: str = "engine"

    @abc.abstractmethod
    def build(self, request: BuildRequest, on_output: OutputCallback | None = None, *,
              classic: bool = False) -> BuildResult:
        """Build an image; stream progress lines to ``on_output``; raise BuildError on failure.
        ``classic`` asks for the engine's builder without BuildKit even when BuildKit is there."""

    @abc.abstractmethod
    def run(self, spec: ContainerSpec, *, remove: bool = True, timeout: float | None = None) -> RunResult:
        """Run a container to completion and return its exit code and combined output."""

    @abc.abstractmethod
    def image_labels(self, image: str) -> dict[str, str] | None:
        """The labels of a local image, or None when the image does not exist locally."""

    @abc.abstractmethod
    def remove_image(self, image: str, *, force: bool = False) -> None:
        """Remove a local image (missing images are not an error)."""

    # --- containers: what `cudaenv run/shell/exec/ps/stop` need --------------------------------

    @abc.abstractmethod
    def create(self, spec: ContainerSpec) -> str:
        """Create (not start) a container; its id. GPU requests fail here or at start when the
        engine has no NVIDIA runtime: that is an EngineError saying how to install one."""

    @abc.abstractmethod
    def start(self, container_id: str) -> None: ...

    @abc.abstractmethod
    def stream_output(self, container_id: str, on_output: Callable[[bytes], None]) -> None:
        """Follow the container's stdout/stderr until it exits."""

    @abc.abstractmethod
    def wait(self, container_id: str, timeout: float | None = None) -> int:
        """Wait for the container to exit; its exit code."""

    @abc.abstractmethod
    def kill(self, container_id: str, signal: str = "SIGTERM") -> None: ...

    @abc.abstractmethod
    def stop(self, container_id: str, timeout: int = 10) -> None: ...

    @abc.abstractmethod
    def remove(self, container_id: str) -> None:
        """Remove a container, running or not (missing containers are not an error)."""

    @abc.abstractmethod
    def containers(self, label: str, *, running_only: bool = False) -> list[ContainerInfo]:
        """Containers carrying ``label`` (a key, or key=value)."""

    @abc.abstractmethod
    def inspect(self, container_id: str) -> dict:
        """The engine's full description of a container (HostConfig and all)."""

    @abc.abstractmethod
    def exec(self, container_id: str, command: Sequence[str], *, user: str | None = None,
             env: Mapping[str, str] | None = None) -> RunResult:
        """Run a command in a running container, to completion."""

    @abc.abstractmethod
    def interactive_argv(self, container_id: str, *, exec_command: Sequence[str] | None = None) -> list[str]:
        """A command line that attaches this terminal to the container (start -ai / exec -it)."""

    # --- images: what stack bases and `cudaenv images` need -------------------------------------
    # Not abstract, so an engine written before them keeps working for everything else.

    def image_info(self, image: str) -> ImageInfo | None:
        """One local image's layers and history, or None when it is not here."""
        raise NotImplementedError(f"the {self.name} engine cannot inspect image layers")

    def images(self, label: str) -> list[ImageInfo]:
        """Every local image carrying ``label`` (a key, or key=value), dangling ones included."""
        raise NotImplementedError(f"the {self.name} engine cannot list images")

    def pull(self, reference: str, on_output: OutputCallback | None = None) -> str:
        """Pull an image; its local image ID."""
        raise NotImplementedError(f"the {self.name} engine cannot pull images")

    def tag(self, image: str, reference: str) -> None:
        """Give a local image another name."""
        raise NotImplementedError(f"the {self.name} engine cannot tag images")

    def warm_up(self) -> None:
        """A hint that a container is about to be created: the engine may start asking, in the
        background, what it will need to know then. Never required; the default does nothing."""

    def refused_ulimits(self, image: str, ulimits: Mapping[str, tuple[int, int]]) -> tuple[str, ...]:
        """Which of ``ulimits`` the engine cannot grant to a container of ``image``; an engine that
        cannot tell answers none (the run then reports the refusal itself)."""
        return ()


def get_engine() -> Engine:
    """The engine cudaenv uses: Docker, through its SDK and (for builds) its CLI."""
    from cudaenv.engine.docker_engine import DockerEngine

    return DockerEngine()


__all__ = [
    "BuildRequest",
    "BuildResult",
    "ContainerInfo",
    "ContainerSpec",
    "Engine",
    "GpuRequest",
    "ImageInfo",
    "Mount",
    "OutputCallback",
    "RunResult",
    "get_engine",
]
