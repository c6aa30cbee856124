"""The Docker implementation of ``Engine``: SDK for containers and images, CLI for BuildKit builds.

The SDK (with requests and urllib3) is imported on first use, not with this module: listing
containers and inspecting an image go through ``cudaenv.engine.api`` (plain GETs on the engine's
socket) where it can, so `cudaenv ps` and an up-to-date `cudaenv run` never load it for those.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property

from cudaenv.engine import ContainerInfo, Engine, OutputCallback

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from cudaenv.engine.values import BuildRequest, BuildResult, ContainerSpec, ImageInfo, RunResult
from cudaenv.errors import EngineError, UlimitRefused

def find_cli_builder():
    """The docker CLI builder to use, or None (``cudaenv.engine.builders``, loaded when building)."""
    from cudaenv.engine.builders import find_cli_builder as find

    return find()


class _OnFirstUse:
    """A module imported when one of its attributes is first read (``except docker.errors.X``
    clauses read theirs only when an exception is being matched)."""

    def __init__(self, *names: str) -> None:
        self._names = names

    def __getattr__(self, attribute: str):
        for name in self._names:  # the package and the submodules the code below uses
            importlib.import_module(name)
        return getattr(importlib.import_module(self._names[0]), attribute)


docker = _OnFirstUse("docker", "docker.errors", "docker.types")
requests = _OnFirstUse("requests", "requests.exceptions")


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
    if spec.gpus.cdi_devices:  # a daemon with CDI: the device names, as `docker run --device` sends them
        return [docker.types.DeviceRequest(driver="cdi", device_ids=list(spec.gpus.cdi_devices))]
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


def raise_for_rlimit_error(exc: docker.errors.APIError, ulimits: Mapping[str, tuple[int, int]]) -> None:
    """runc could not apply a ulimit because the daemon's own hard limit is lower: say which and how."""
    import re

    match = re.search(r"error setting rlimit type ([0-9]+)", str(exc))
    if not match:
        return
    names = {"1": "fsize", "3": "stack", "4": "core", "7": "nofile", "8": "memlock", "6": "nproc"}
    name = names.get(match.group(1), f"type {match.group(1)}")
    wanted = ulimits.get(name)
    shown = "unlimited" if wanted and wanted[1] == -1 else (f"{wanted[1]}" if wanted else "?")
    raise UlimitRefused(
        f"Docker cannot give the container ulimit {name}={shown}: the Docker daemon's own hard limit is lower. "
        f"Raise it (e.g. LimitMEMLOCK=infinity / LimitSTACK in docker.service, then restart Docker) or set "
        f"[run] ulimits.{name} in cudaenv.toml (or --ulimit {name}=N) to a value within it", name=name
    ) from exc


def raise_for_gpu_error(exc: docker.errors.APIError) -> None:
    """Docker's 'could not select device driver' means the NVIDIA runtime is missing: say so."""
    text = str(exc)
    if "could not select device driver" in text or "unknown or invalid runtime name: nvidia" in text:
        raise EngineError(NO_NVIDIA_RUNTIME_HELP.format(detail=getattr(exc, "explanation", None) or text)) from exc


def start_container(container, ulimits: Mapping[str, tuple[int, int]], what: str) -> None:
    """Start a created container; the daemon's refusals (no NVIDIA runtime, a ulimit above its
    own) become errors that say what to do."""
    try:
        container.start()
    except docker.errors.APIError as exc:
        raise_for_gpu_error(exc)
        raise_for_rlimit_error(exc, ulimits)
        raise EngineError(f"could not start {what}: {exc.explanation or exc}") from exc


def container_info(attrs: dict) -> ContainerInfo:
    """A container as the engine describes it (``inspect``), in cudaenv's terms; the same fields the
    SDK's Container object reads (``name``, ``status``, ``labels``)."""
    state = attrs.get("State")
    status = state.get("Status") if isinstance(state, dict) else state
    state = state if isinstance(state, dict) else {}
    started = state.get("StartedAt", "") or ""
    return ContainerInfo(
        id=attrs.get("Id", ""), name=(attrs.get("Name") or "").lstrip("/"),
        image=(attrs.get("Config") or {}).get("Image", ""), status=status,
        labels=dict((attrs.get("Config") or {}).get("Labels") or {}),
        started_at=started if started.startswith(("1", "2")) else "",
        exit_code=state.get("ExitCode") if status == "exited" else None,
    )


def daemon_is_rootless(info: Mapping) -> bool:
    """Whether a Docker daemon's ``/info`` says it runs rootless (``name=rootless`` among its
    security options): its containers' root is the daemon's user on the host."""
    options = info.get("SecurityOptions") or []
    return any(isinstance(o, str) and "name=rootless" in o.split(",") for o in options)


class DockerEngine(Engine):
    name = "docker"

    @cached_property
    def client(self) -> docker.DockerClient:
        return connect()

    def build(self, request: BuildRequest, on_output: OutputCallback | None = None, *,
              classic: bool = False) -> BuildResult:
        from cudaenv.engine.builders import build_with_cli, build_with_sdk

        _ = self.client  # fail early, with the engine's own message, if the daemon is unreachable
        if request.network is None and not self._has_bridge():
            from dataclasses import replace

            request = replace(request, network="host")  # RUN steps would fail: "network bridge not found"
        builder = None if classic else find_cli_builder()
        if builder is not None:
            return build_with_cli(builder, request, on_output)
        return build_with_sdk(self.client.api, request, on_output)

    def _create(self, spec: ContainerSpec):
        spec = self._with_rootless_user(self._with_gpu_route(spec))
        try:
            return self.client.containers.create(**create_kwargs(spec))
        except docker.errors.ImageNotFound as exc:
            raise EngineError(f"image {spec.image!r} not found locally; build it first") from exc
        except docker.errors.APIError as exc:
            raise_for_gpu_error(exc)
            raise EngineError(f"could not create a container from {spec.image!r}: {exc.explanation or exc}") from exc

    def run(self, spec: ContainerSpec, *, remove: bool = True, timeout: float | None = None) -> RunResult:
        from cudaenv.engine.values import RunResult

        container = self._create(spec)
        try:
            start_container(container, spec.ulimits, f"a container from {spec.image!r}")
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

    def refused_ulimits(self, image: str, ulimits: Mapping[str, tuple[int, int]]) -> tuple[str, ...]:
        """Which of ``ulimits`` this daemon cannot grant (rootless Docker, a daemon started with a
        low hard limit), found once by starting ``true`` in ``image`` and remembered per daemon."""
        from cudaenv.engine import limits_memory
        from cudaenv.engine.values import ContainerSpec

        key = f"{os.environ.get('DOCKER_HOST', 'default')}|{self._daemon_id()}"
        wanted = {name: value for name, value in ulimits.items()}
        remembered = limits_memory.recall(key, wanted)
        if remembered is not None:
            return remembered
        refused: list[str] = []
        while wanted:
            try:
                result = self.run(ContainerSpec(image=image, command=("true",), ulimits=wanted,
                                                env={"NVIDIA_VISIBLE_DEVICES": "void"}), timeout=60)
            except UlimitRefused as exc:
                if exc.name not in wanted:
                    break
                refused.append(exc.name)
                wanted.pop(exc.name)
                continue
            except EngineError:
                return tuple(refused)  # the probe itself failed: decide nothing, let the real run say why
            if result.exit_code == 0:
                break
            return tuple(refused)
        limits_memory.remember(key, dict(ulimits), tuple(refused))
        return tuple(refused)

    def image_labels(self, image: str) -> dict[str, str] | None:
        from cudaenv.engine import api

        try:
            found = api.image_inspect(image)
            return None if found is None else dict((found.get("Config") or {}).get("Labels") or {})
        except api.Unavailable:
            pass  # the SDK below asks again and words any error
        try:
            attrs = self.client.images.get(image).attrs
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            if exc.status_code == 400:
                from cudaenv.errors import UserError

                raise UserError(f"{image!r} is not a valid image reference ({exc.explanation or exc})") from exc
            raise EngineError(f"could not inspect image {image!r}: {exc.explanation or exc}") from exc
        return dict((attrs.get("Config") or {}).get("Labels") or {})

    def image_info(self, image: str) -> ImageInfo | None:
        try:
            attrs = self.client.api.inspect_image(image)
            history = self.client.api.history(attrs["Id"])
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            if exc.status_code == 404:
                return None
            raise EngineError(f"could not inspect image {image!r}: {exc.explanation or exc}") from exc
        from cudaenv.engine.values import ImageInfo

        return ImageInfo(
            id=attrs["Id"], tags=tuple(t for t in attrs.get("RepoTags") or () if t != "<none>:<none>"),
            labels=dict((attrs.get("Config") or {}).get("Labels") or {}),
            diff_ids=tuple((attrs.get("RootFS") or {}).get("Layers") or ()), size=int(attrs.get("Size") or 0),
            history=tuple((entry.get("CreatedBy") or "", int(entry.get("Size") or 0)) for entry in reversed(history)),
        )

    def images(self, label: str) -> list[ImageInfo]:
        found = []
        for summary in self.client.api.images(filters={"label": label}):
            info = self.image_info(summary["Id"])
            if info is not None:  # removed between the listing and the inspection
                found.append(info)
        return found

    def pull(self, reference: str, on_output: OutputCallback | None = None) -> str:
        from cudaenv.engine.builders import split_reference
        from cudaenv.engine.registry import Reference, push_auth_config

        repository, tag = split_reference(reference)
        registry = Reference.parse(reference).registry
        try:
            for line in self.client.api.pull(repository, tag=tag, stream=True, decode=True,
                                             auth_config=push_auth_config(registry)):
                if "error" in line:
                    raise EngineError(f"could not pull {reference}: {line['error']}")
                if on_output is not None and line.get("status") in ("Pull complete", "Already exists"):
                    on_output(f"  {line.get('id', '')}: {line['status'].lower()}")
        except docker.errors.APIError as exc:
            raise EngineError(f"could not pull {reference}: {exc.explanation or exc}") from exc
        info = self.image_info(reference)
        if info is None:
            raise EngineError(f"pulled {reference}, but the engine does not list it")
        return info.id

    def push(self, reference: str, on_output: OutputCallback | None = None) -> None:
        """Push through the SDK with Docker's credentials (``registry.push_auth_config``)."""
        from cudaenv.engine.registry import (Reference, RegistryAuthError, RegistryError, engine_error_is_transient,
                                             push_auth_config)

        ref = Reference.parse(reference)
        repository = f"{ref.registry}/{ref.repository}"
        stream = self.client.images.push(repository, tag=ref.tag, stream=True, decode=True,
                                         auth_config=push_auth_config(ref.registry))
        for line in stream:
            if "error" in line or "errorDetail" in line:
                message = line.get("error") or line.get("errorDetail", {}).get("message", "push failed")
                if any(w in message.lower() for w in ("unauthorized", "authentication required", "denied")):
                    raise RegistryAuthError(f"{ref.registry} refused the push of {ref.repository}:{ref.tag}: {message}; "
                                            f"run `docker login {ref.registry}` or set CUDAENV_REGISTRY_USER/PASSWORD")
                raise RegistryError(f"pushing {reference}: {message}", transient=engine_error_is_transient(message))
            status = line.get("status")
            if on_output is not None and status in ("Pushed", "Layer already exists", "Mounted from"):
                on_output(f"  {ref.tag}: layer {line.get('id', '')} {status.lower()}")

    def describe(self) -> str:
        version = self.client.version()
        return f"Docker {version.get('Version')} (API {version.get('ApiVersion')})"

    def tag(self, image: str, reference: str) -> None:
        from cudaenv.engine.builders import split_reference

        repository, tag = split_reference(reference)
        try:
            self.client.api.tag(image, repository, tag)
        except docker.errors.APIError as exc:
            raise EngineError(f"could not tag {image[:19]} as {reference}: {exc.explanation or exc}") from exc

    def remove_image(self, image: str, *, force: bool = False) -> None:
        try:
            self.client.images.remove(image, force=force)
        except docker.errors.ImageNotFound:
            pass
        except docker.errors.APIError as exc:  # in use by a container, or a conflict between names
            raise EngineError(f"could not remove image {image}: {exc.explanation or exc}") from exc

    # --- container lifecycle -------------------------------------------------------------------

    def _container(self, container_id: str):
        try:
            return self.client.containers.get(container_id)
        except docker.errors.NotFound as exc:
            raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)") from exc

    # The lifecycle of a `cudaenv run` goes through ``cudaenv.engine.api`` (plain requests on the
    # engine's socket) where it can, so that running a container does not load the docker SDK; the
    # SDK path below each one is the fallback (TLS, ssh://, anything the socket reader declines),
    # and both word their errors the same way.

    def warm_up(self) -> None:
        """Ask the daemon for its ID (``/info``, which takes it several milliseconds to answer, and
        which ``refused_ulimits`` keys its memory by) on a background thread, while the caller reads
        the project and checks the image; ``_daemon_id`` takes the answer. Only a head start: the
        same read-only request, and if it fails ``_daemon_id`` asks again as it always did."""
        import threading

        from cudaenv.engine import api

        if api.endpoint() is None or "_info_ahead" in self.__dict__:
            return
        answer: dict = {}

        def ask() -> None:
            try:
                answer["info"] = api.checked("GET", "/info")
            except Exception:  # noqa: BLE001 - _daemon_id asks again and reports it
                pass

        thread = threading.Thread(target=ask, name="cudaenv-daemon-info", daemon=True)
        thread.start()
        self._info_ahead = (thread, answer)

    def _daemon_info(self) -> dict:
        """The daemon's ``/info``: the warm-up's answer once when it has one, else asked anew (a
        long-lived process may outlive the daemon it first asked)."""
        from cudaenv.engine import api

        info = None
        ahead = self.__dict__.pop("_info_ahead", None)
        if ahead is not None:
            thread, answer = ahead
            thread.join()
            info = answer.get("info")
        if not isinstance(info, dict):
            try:
                info = api.checked("GET", "/info")
            except (api.Unavailable, api.ApiError):
                info = self.client.info()
        self._last_info = info if isinstance(info, dict) else {}
        return self._last_info

    def _daemon_facts(self) -> dict:
        """The daemon's configuration (rootless, CDI), which does not change while a command runs:
        the last ``/info`` this engine saw, asked for when it has seen none."""
        return self.__dict__.get("_last_info") or self._daemon_info()

    def _daemon_id(self) -> str:
        return str(self._daemon_info().get("ID", ""))

    def gpu_access(self) -> str:
        """``cdi`` when this daemon injects CDI devices and its spec directories offer NVIDIA GPUs."""
        from cudaenv.hosts import cdi

        dirs = cdi.daemon_cdi_dirs(self._daemon_facts())
        return "cdi" if dirs and cdi.read_specs(dirs).of_kind() else "legacy"

    def _has_bridge(self) -> bool:
        """Whether the daemon has its default bridge network. A daemon started with ``--bridge=none``
        (rootless Docker where user-mode networking is denied) has none, and a build's RUN steps then
        fail unless they use the host's network."""
        from cudaenv.engine import api

        try:
            status, _answer = api.get("/networks/bridge")
        except (api.Unavailable, OSError):
            return True  # cannot tell (TLS, ssh://): the default, as before
        return status != 404

    def _rootless(self) -> bool:
        """Whether this daemon runs rootless (``name=rootless`` among its security options)."""
        return daemon_is_rootless(self._daemon_facts())

    def _with_rootless_user(self, spec: ContainerSpec) -> ContainerSpec:
        """Under rootless Docker the container's root is the daemon's user on the host and every
        other UID is a subordinate one: a container running as the caller's UID writes files that
        belong to a subordinate UID on the host. The caller's own UID:GID (what `cudaenv run` asks
        for, so files in /workspace stay theirs) therefore becomes 0:0 there, which is the caller."""
        if spec.user is None or spec.user != f"{os.getuid()}:{os.getgid()}" or spec.user == "0:0":
            return spec
        if not self._rootless():
            return spec
        from dataclasses import replace

        return replace(spec, user="0:0")

    def _with_gpu_route(self, spec: ContainerSpec) -> ContainerSpec:
        """The spec with its GPUs as CDI device names when this daemon injects CDI devices
        (``CDISpecDirs`` in its info, Docker 25+ with the ``cdi`` feature) and its spec directories
        offer NVIDIA GPUs; else unchanged, for the legacy NVIDIA runtime hook. CDI keeps the GPUs
        across ``systemctl daemon-reload``, which the legacy hook loses."""
        if spec.gpus is None or spec.gpus.cdi_devices:
            return spec
        from dataclasses import replace

        from cudaenv.hosts import cdi

        dirs = cdi.daemon_cdi_dirs(self._daemon_facts())
        devices = cdi.read_specs(dirs).of_kind() if dirs else {}
        if not devices:
            return spec
        names = cdi.device_names(devices, count=spec.gpus.count, device_ids=spec.gpus.device_ids)
        return replace(spec, gpus=replace(spec.gpus, cdi_devices=names))

    def create(self, spec: ContainerSpec) -> str:
        from cudaenv.engine import api

        spec = self._with_rootless_user(self._with_gpu_route(spec))
        try:
            query = f"?name={api.quote(spec.name)}" if spec.name else ""
            answer = api.checked("POST", f"/containers/create{query}", api.container_body(spec), ok=(201,))
            if isinstance(answer, dict) and isinstance(answer.get("Id"), str):
                return answer["Id"]
            raise api.Unavailable("create answered without an id")
        except api.ApiError as exc:
            if exc.status_code == 404:
                raise EngineError(f"image {spec.image!r} not found locally; build it first") from exc
            raise_for_gpu_error(exc)
            raise EngineError(f"could not create a container from {spec.image!r}: {exc.explanation or exc}") from exc
        except api.Unavailable:
            pass
        return self._create(spec).id

    def _inspected(self, container_id: str) -> dict | None:
        """The container's description through the socket; None when only the SDK can ask."""
        from cudaenv.engine import api

        try:
            return api.checked("GET", f"/containers/{api.quote(container_id)}/json")
        except api.ApiError as exc:
            if exc.status_code == 404:
                raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)") from exc
            return None
        except api.Unavailable:
            return None

    def start(self, container_id: str) -> None:
        from cudaenv.engine import api

        try:
            api.checked("POST", f"/containers/{api.quote(container_id)}/start", ok=(204, 304))
            return
        except api.ApiError as exc:
            attrs = self._inspected(container_id)  # 404: "no container", as the SDK path says
            ulimits = {u["Name"]: (u["Soft"], u["Hard"])
                       for u in ((attrs or {}).get("HostConfig") or {}).get("Ulimits") or []}
            raise_for_gpu_error(exc)
            raise_for_rlimit_error(exc, ulimits)
            raise EngineError(f"could not start container {container_id[:12]}: {exc.explanation or exc}") from exc
        except api.Unavailable:
            pass
        container = self._container(container_id)
        ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in (container.attrs.get("HostConfig") or {}).get("Ulimits") or []}
        start_container(container, ulimits, f"container {container_id[:12]}")

    def stream_output(self, container_id: str, on_output: Callable[[bytes], None]) -> None:
        from cudaenv.engine import api

        attrs = self._inspected(container_id)
        if attrs is not None:
            delivered = []

            def deliver(chunk: bytes) -> None:
                delivered.append(True)
                on_output(chunk)

            try:
                api.stream_logs(attrs["Id"], deliver, tty=bool((attrs.get("Config") or {}).get("Tty")))
                return
            except api.Unavailable:
                if delivered:
                    raise  # part of the output is out: asking again would repeat it
        for chunk in self._container(container_id).logs(stream=True, follow=True, stdout=True, stderr=True):
            on_output(chunk)

    def wait(self, container_id: str, timeout: float | None = None) -> int:
        """The exit code; TimeoutError when ``timeout`` passes first (the container keeps running)."""
        from cudaenv.engine import api

        try:
            answer = api.checked("POST", f"/containers/{api.quote(container_id)}/wait", ok=(200,), timeout=timeout)
            if isinstance(answer, dict) and isinstance(answer.get("StatusCode"), int):
                return int(answer["StatusCode"])
        except api.ApiError as exc:
            if exc.status_code == 404:
                raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)") from exc
        except TimeoutError:
            if timeout is None:
                raise
            raise TimeoutError(container_id) from None
        except api.Unavailable:
            pass
        try:
            return int(self._container(container_id).wait(timeout=timeout).get("StatusCode", 1))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as exc:
            if timeout is None:
                raise EngineError(f"lost the connection to the engine while waiting for {container_id[:12]}: {exc}") from exc
            raise TimeoutError(container_id) from exc

    def kill(self, container_id: str, signal: str = "SIGTERM") -> None:
        from cudaenv.engine import api

        try:
            api.checked("POST", f"/containers/{api.quote(container_id)}/kill?signal={api.quote(signal)}")
            return
        except api.ApiError:
            return  # already gone: nothing left to signal
        except api.Unavailable:
            pass
        try:
            self._container(container_id).kill(signal=signal)
        except docker.errors.APIError:
            pass  # already gone: nothing left to signal

    def stop(self, container_id: str, timeout: int = 10) -> None:
        try:
            self._container(container_id).stop(timeout=timeout)
        except docker.errors.NotFound:
            pass

    def remove(self, container_id: str) -> None:
        from cudaenv.engine import api

        try:
            api.checked("DELETE", f"/containers/{api.quote(container_id)}?v=False&link=False&force=True")
            return
        except api.ApiError as exc:
            if exc.status_code == 404:
                return
            if "already in progress" not in str(exc):
                raise EngineError(f"could not remove container {container_id[:12]}: {exc.explanation or exc}") from exc
            return
        except api.Unavailable:
            pass
        try:
            self.client.containers.get(container_id).remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise EngineError(f"could not remove container {container_id[:12]}: {exc.explanation or exc}") from exc

    def containers(self, label: str, *, running_only: bool = False) -> list[ContainerInfo]:
        from cudaenv.engine import api

        try:
            return [container_info(attrs) for attrs in api.container_list(label, running_only=running_only)]
        except api.Unavailable:
            pass  # the SDK below asks again and words any error
        found = self.client.containers.list(all=not running_only, filters={"label": label})
        return [container_info(c.attrs) for c in found]

    def inspect(self, container_id: str) -> dict:
        return self._container(container_id).attrs

    def exec(self, container_id: str, command: Sequence[str], *, user: str | None = None,
             env: Mapping[str, str] | None = None) -> RunResult:
        container = self._container(container_id)
        if container.status != "running":
            raise EngineError(f"container {container.name} is {container.status}, not running")
        result = container.exec_run(list(command), user=user or "", environment=dict(env or {}), demux=False)
        output = (result.output or b"").decode("utf-8", errors="replace")
        from cudaenv.engine.values import RunResult

        return RunResult(exit_code=int(result.exit_code or 0), output=output, container_id=container.id)

    def interactive_argv(self, container_id: str, *, exec_command: Sequence[str] | None = None) -> list[str]:
        import shutil

        cli = shutil.which("docker")
        if cli is None:
            raise EngineError("an interactive terminal needs the docker CLI on PATH (the SDK cannot attach a TTY)")
        if exec_command is not None:
            return [cli, "exec", "-it", container_id, *exec_command]
        return [cli, "start", "--attach", "--interactive", container_id]
