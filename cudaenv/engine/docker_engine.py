"""The Docker implementation of ``Engine``: SDK for containers and images, CLI for BuildKit builds."""

from __future__ import annotations

from functools import cached_property

import docker
import docker.errors
import docker.types
import requests.exceptions

from cudaenv.engine import BuildRequest, BuildResult, ContainerSpec, Engine, OutputCallback, RunResult
from cudaenv.engine.builders import build_with_cli, build_with_sdk, find_cli_builder
from cudaenv.errors import EngineError

NO_NVIDIA_RUNTIME_HELP = (
    "Docker could not give this container a GPU: no NVIDIA container runtime is configured on this "
    "host ({detail}). Install the NVIDIA Container Toolkit "
    "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html), "
    "run `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker; "
    "or pass --gpus none to run without a GPU on purpose."
)


def unreachable_message(exc: Exception) -> str:
    """Turn the SDK's connection failure into what the user should do about it."""
    text = str(exc)
    if "Permission denied" in text or isinstance(getattr(exc, "__cause__", None), PermissionError):
        return (
            "permission denied on the Docker socket: add your user to the docker group "
            "(`sudo usermod -aG docker $USER`, then log out and in) or run as root"
        )
    return (
        "cannot reach the Docker engine (is the daemon running? start it with "
        "`sudo systemctl start docker`, or set DOCKER_HOST to a reachable engine): " + text
    )


def connect() -> docker.DockerClient:
    """A client that has answered a ping, or an EngineError that says how to fix it."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineError(unreachable_message(exc)) from exc
    return client


def device_requests(spec: ContainerSpec) -> list[docker.types.DeviceRequest]:
    if spec.gpus is None:
        return []
    kwargs: dict = {"driver": "nvidia", "capabilities": [list(spec.gpus.capabilities)]}
    if spec.gpus.device_ids:
        kwargs["device_ids"] = list(spec.gpus.device_ids)
    else:
        kwargs["count"] = spec.gpus.count if spec.gpus.count is not None else -1
    return [docker.types.DeviceRequest(**kwargs)]


def create_kwargs(spec: ContainerSpec) -> dict:
    """The docker SDK ``containers.create`` arguments for a ContainerSpec (inspectable in tests)."""
    kwargs: dict = {
        "image": spec.image,
        "command": list(spec.command) or None,
        "environment": dict(spec.env),
        "labels": dict(spec.labels),
        "detach": True,
        "tty": spec.tty,
        "stdin_open": spec.stdin_open,
        "init": spec.init,
    }
    if spec.name:
        kwargs["name"] = spec.name
    if spec.mounts:
        kwargs["mounts"] = [
            docker.types.Mount(target=m.target, source=str(m.source), type="bind", read_only=m.read_only)
            for m in spec.mounts
        ]
    if spec.working_dir:
        kwargs["working_dir"] = spec.working_dir
    if spec.user:
        kwargs["user"] = spec.user
    if spec.gpus is not None:
        kwargs["device_requests"] = device_requests(spec)
    if spec.shm_size:
        kwargs["shm_size"] = spec.shm_size
    if spec.ipc_mode:
        kwargs["ipc_mode"] = spec.ipc_mode
    if spec.ulimits:
        kwargs["ulimits"] = [
            docker.types.Ulimit(name=name, soft=soft, hard=hard) for name, (soft, hard) in sorted(spec.ulimits.items())
        ]
    if spec.ports:
        kwargs["ports"] = dict(spec.ports)
    return kwargs


def raise_for_gpu_error(exc: docker.errors.APIError) -> None:
    """Docker's 'could not select device driver' means the NVIDIA runtime is missing: say so."""
    text = str(exc)
    if "could not select device driver" in text or "unknown or invalid runtime name: nvidia" in text:
        raise EngineError(NO_NVIDIA_RUNTIME_HELP.format(detail=getattr(exc, "explanation", None) or text)) from exc


class DockerEngine(Engine):
    name = "docker"

    @cached_property
    def client(self) -> docker.DockerClient:
        return connect()

    def build(self, request: BuildRequest, on_output: OutputCallback | None = None) -> BuildResult:
        self.client  # fail early, with the engine's own message, if the daemon is unreachable
        builder = find_cli_builder()
        if builder is not None:
            return build_with_cli(builder, request, on_output)
        return build_with_sdk(self.client.api, request, on_output)

    def create(self, spec: ContainerSpec):
        try:
            return self.client.containers.create(**create_kwargs(spec))
        except docker.errors.ImageNotFound as exc:
            raise EngineError(f"image {spec.image!r} not found locally; build it first") from exc
        except docker.errors.APIError as exc:
            raise_for_gpu_error(exc)
            raise EngineError(f"could not create a container from {spec.image!r}: {exc.explanation or exc}") from exc

    def run(self, spec: ContainerSpec, *, remove: bool = True, timeout: float | None = None) -> RunResult:
        container = self.create(spec)
        try:
            try:
                container.start()
            except docker.errors.APIError as exc:
                raise_for_gpu_error(exc)
                raise EngineError(f"could not start a container from {spec.image!r}: {exc.explanation or exc}") from exc
            try:
                status = container.wait(timeout=timeout)
            except requests.exceptions.ReadTimeout as exc:
                container.kill()
                raise EngineError(f"container from {spec.image!r} did not finish within {timeout} s") from exc
            output = container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")
            return RunResult(exit_code=int(status.get("StatusCode", 1)), output=output, container_id=container.id)
        finally:
            if remove:
                try:
                    container.remove(force=True)
                except docker.errors.NotFound:
                    pass

    def image_labels(self, image: str) -> dict[str, str] | None:
        try:
            attrs = self.client.images.get(image).attrs
        except docker.errors.ImageNotFound:
            return None
        return dict((attrs.get("Config") or {}).get("Labels") or {})

    def remove_image(self, image: str, *, force: bool = False) -> None:
        try:
            self.client.images.remove(image, force=force)
        except docker.errors.ImageNotFound:
            pass
