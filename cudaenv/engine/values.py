"""The plain values the engine boundary speaks in: what to build, what to run, what came back.

Frozen dataclasses, re-exported by ``cudaenv.engine`` (``from cudaenv.engine import
ContainerSpec`` keeps working); they live in their own module so that listing containers
(``cudaenv ps``) never pays for importing ``dataclasses``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path


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
    # the OCI platform to build for ("linux/arm64") when it is not the build machine's own: an
    # aarch64 stack built on an x86_64 machine (emulated through binfmt_misc); None: the machine's
    platform: str | None = None


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
    # The same GPUs as CDI device names (``nvidia.com/gpu=0``), set by the engine when the host
    # serves GPUs through CDI (cudaenv.hosts.cdi); empty means the legacy NVIDIA runtime hook.
    cdi_devices: tuple[str, ...] = ()


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
    # a foreground run's container, removed when it exits: an engine that can do that as part of the
    # run (Podman's `create --rm`, then `start --attach`) spares the separate removal; the caller
    # still calls ``remove``, which then has nothing left to do
    auto_remove: bool = False


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str
    container_id: str
