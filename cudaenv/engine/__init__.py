"""The container-engine boundary: the only package that talks to Docker or Podman.

Everything above this layer speaks in plain values (``BuildRequest``, ``ContainerSpec``,
``RunResult`` in ``cudaenv.engine.values``, importable from here; ``ContainerInfo`` here). ``Engine`` is
the interface each engine implements (``docker_engine.DockerEngine``, ``podman_engine.PodmanEngine``);
``get_engine()`` returns the one chosen (``choose_engine``: ``--engine``, ``CUDAENV_ENGINE``, else Docker
when it answers and Podman when it does not). The docker SDK is imported only inside
``cudaenv.engine.docker_engine``, so importing this package stays cheap.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers read it the same)
if TYPE_CHECKING:
    from cudaenv.engine.values import BuildRequest, BuildResult, ContainerSpec, ImageInfo, RunResult

_VALUES = ("BuildRequest", "BuildResult", "ContainerSpec", "GpuRequest", "ImageInfo", "Mount", "RunResult")


def __getattr__(name: str):
    """The value types of ``cudaenv.engine.values``, imported on first use."""
    if name in _VALUES:
        from cudaenv.engine import values

        return getattr(values, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

OutputCallback = Callable[[str], None]


class ContainerInfo:
    """A container as listings see it. A small frozen class rather than a dataclass: `cudaenv ps`
    builds these and nothing else, and importing ``dataclasses`` would be a third of its time."""

    __slots__ = ("id", "name", "image", "status", "labels", "started_at", "exit_code")

    def __init__(self, id: str, name: str, image: str, status: str, labels: Mapping[str, str],  # noqa: A002
                 started_at: str, exit_code: int | None = None) -> None:
        set_field = object.__setattr__
        set_field(self, "id", id)
        set_field(self, "name", name)
        set_field(self, "image", image)
        set_field(self, "status", status)  # created, running, exited, ...
        set_field(self, "labels", labels)
        set_field(self, "started_at", started_at)  # ISO timestamp from the engine, "" when never started
        set_field(self, "exit_code", exit_code)

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"cannot assign to field {name!r} (ContainerInfo is frozen)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} (ContainerInfo is frozen)")

    def __eq__(self, other) -> bool:
        return self._fields() == other._fields() if type(other) is type(self) else NotImplemented

    def __repr__(self) -> str:
        return "ContainerInfo(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"


class Engine(abc.ABC):
    """What cudaenv needs from a container engine."""

    name: str = "engine"
    choice = None  # the Choice that picked this engine (get_engine sets it): `doctor` reports it

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

    attaches = False  # whether ``attach`` is offered

    def attach(self, container_id: str, on_output: Callable[[bytes], None]) -> int:
        """Start a created container, hand its output to ``on_output`` until it exits, and return
        its exit code, in one step; offered where that is cheaper than start, stream and wait
        (``attaches``). A failure to start raises as ``start`` does."""
        raise NotImplementedError(f"the {self.name} engine cannot attach")

    def warm_up(self) -> None:
        """A hint that a container is about to be created: the engine may start asking, in the
        background, what it will need to know then. Never required; the default does nothing."""

    def gpu_access(self) -> str:
        """How this engine gives containers GPUs: ``"cdi"`` (device names from the host's CDI
        specs) or ``"legacy"`` (the NVIDIA runtime hook, Docker's ``--gpus``)."""
        return "legacy"

    def refused_ulimits(self, image: str, ulimits: Mapping[str, tuple[int, int]]) -> tuple[str, ...]:
        """Which of ``ulimits`` the engine cannot grant to a container of ``image``; an engine that
        cannot tell answers none (the run then reports the refusal itself)."""
        return ()

    def push(self, reference: str, on_output: OutputCallback | None = None) -> None:
        """Push a local image to its registry (``registry/repository:tag``); RegistryError (and
        RegistryAuthError for refused credentials) when the registry refuses."""
        raise NotImplementedError(f"the {self.name} engine cannot push images")

    def describe(self) -> str:
        """One line naming the engine and its version, for `doctor`; EngineError when it does not answer."""
        return self.name


ENGINES = ("docker", "podman")


class Choice:
    """Which engine, and why (``doctor`` says both)."""

    __slots__ = ("name", "reason")

    def __init__(self, name: str, reason: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "reason", reason)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("Choice is frozen")

    def __repr__(self) -> str:
        return f"Choice({self.name!r}, {self.reason!r})"


def docker_answers(timeout: float = 2.0) -> bool | None:
    """Whether a Docker engine answers ``/_ping`` at DOCKER_HOST (or the default socket); None
    where only the SDK can reach it (TLS, ssh://): someone configured Docker on purpose."""
    from cudaenv.engine import api

    if api.endpoint() is None:
        return None
    try:
        status, answer = api.request("GET", "/version", timeout=timeout)  # /_ping answers "OK", not JSON
    except (api.Unavailable, TimeoutError, OSError):
        return False
    return status == 200 and isinstance(answer, dict) and "podman" not in str(answer.get("Components", "")).lower()


def choose_engine(environ: Mapping[str, str] | None = None) -> Choice:
    """``CUDAENV_ENGINE`` (which the global ``--engine`` option sets) when given; Docker when
    DOCKER_HOST is set; otherwise Docker when its daemon answers at the default socket, Podman when it does not and a ``podman`` binary is on PATH, and Docker
    again when neither is there (its error then says how to start it). A bad value is a UserError."""
    import os
    import shutil

    env = os.environ if environ is None else environ
    wanted = (env.get("CUDAENV_ENGINE") or "").strip()
    if wanted:
        if wanted.lower() not in ENGINES:
            from cudaenv.errors import UserError, shown

            raise UserError(f"CUDAENV_ENGINE={shown(wanted)}: expected one of {', '.join(ENGINES)} "
                            "(or unset it to choose automatically)")
        return Choice(wanted.lower(), f"CUDAENV_ENGINE={wanted.lower()} (or --engine) asks for it")
    if env.get("DOCKER_HOST"):  # configured on purpose: its own error says when it does not answer
        return Choice("docker", f"automatic: DOCKER_HOST={env['DOCKER_HOST']} names a Docker engine")
    where = "unix:///var/run/docker.sock"
    answers = docker_answers()
    if answers is None:
        return Choice("docker", f"automatic: {where} names a Docker engine")
    if answers:
        return Choice("docker", f"automatic: Docker answers at {where}")
    if shutil.which("podman"):
        return Choice("podman", f"automatic: no Docker engine answers at {where}, and podman is installed")
    return Choice("docker", f"automatic: neither a Docker engine at {where} nor a podman binary; Docker is the default")


def engine_named(name: str) -> Engine:
    if name == "podman":
        from cudaenv.engine.podman_engine import PodmanEngine

        return PodmanEngine()
    from cudaenv.engine.docker_engine import DockerEngine

    return DockerEngine()


def get_engine() -> Engine:
    """The engine cudaenv uses (``choose_engine``): Docker (its SDK, its socket, and its CLI for
    BuildKit builds) or Podman (its CLI). The choice travels with the engine as ``engine.choice``."""
    choice = choose_engine()
    engine = engine_named(choice.name)
    engine.choice = choice
    return engine


__all__ = [
    "BuildRequest",
    "BuildResult",
    "Choice",
    "ContainerInfo",
    "ContainerSpec",
    "Engine",
    "GpuRequest",
    "ImageInfo",
    "Mount",
    "OutputCallback",
    "RunResult",
    "choose_engine",
    "get_engine",
]
