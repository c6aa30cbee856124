"""The Podman implementation of ``Engine``, through the ``podman`` CLI.

Why the CLI and not Podman's Docker-compatible API (``podman system service``): Podman has no
daemon. The API is a service someone must keep running, per user when rootless (systemd socket
activation, which CI containers and many HPC login nodes do not have); cudaenv would have to start
and own a background server. The CLI is Podman's primary interface and the one that has every
feature cudaenv needs: ``--userns=keep-id`` (rootless), CDI device names (``--device
nvidia.com/gpu=0``), buildah's BuildKit-style builds (``RUN --mount=type=cache``, ``--secret``)
and each user's own storage. A call costs one short-lived process (20-40 ms here, the same order
as the API's round trips once the service's own start-up is counted); a foreground run is one
``podman create`` and one ``podman start --attach`` (which starts, streams and waits in one
process), so `cudaenv run` stays close to a bare ``podman run``.

Values differ from Docker's in small ways that are hidden here: image IDs get Docker's ``sha256:``
prefix; tags Podman stores as ``localhost/NAME`` or ``docker.io/library/NAME`` read back as the
short name they were given (as Docker shows them).

Two facts of real hosts are handled here rather than left to fail:

* **Limits.** Rootful Podman gives every container ``nofile`` and ``nproc`` of 1048576 unless told
  otherwise, which a host whose own hard limits are lower refuses (EPERM from the OCI runtime,
  even for a bare ``podman run``). cudaenv asks once what the engine holds (``ceilings``: one
  container reads the limits of its ``conmon``, which is what the runtime can hand on), remembers
  the answer, passes ``nofile``/``nproc`` explicitly within them, and reports the defaults it
  cannot grant (``refused_ulimits``) so `run` leaves them out with a warning.
* **Rootless.** Files the container writes in ``/workspace`` must belong to the caller:
  ``--userns=keep-id`` maps the caller's UID to the same UID inside. Rootless Podman's own network
  (slirp4netns or pasta) needs ``/dev/net/tun``, which sandboxes, CI containers and many HPC nodes
  deny, so rootless containers use the host's network (``--network host``): it works everywhere,
  and a published port is then the container's own port on the host (no ``-p`` mapping).
  ``CUDAENV_PODMAN_NETWORK`` names another network where the host has one that works.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property

from cudaenv.engine import ContainerInfo, Engine, OutputCallback

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaenv.engine.values import BuildRequest, BuildResult, ContainerSpec, GpuRequest, ImageInfo, RunResult
from cudaenv.errors import BuildError, EngineError, ImageNotHere, UlimitRefused, UserError

LOG_TAIL_LINES = 25
NOT_FOUND = ("no such container", "no container with name or id", "no such object", "image not known",
             "no such image", "failed to find image")

NO_CDI_HELP = (
    "Podman could not give this container a GPU: {detail}. Podman finds GPUs through CDI specs: "
    "install the NVIDIA Container Toolkit "
    "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html) and run "
    "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`; or pass --gpus none to run without a GPU on purpose."
)

# the limits Podman sets on its own unless told (rootful: 1048576 each), which cudaenv always names
PINNED_LIMITS = ("nofile", "nproc")
# /proc/PID/limits rows -> ulimit names
_LIMIT_ROWS = {"Max open files": "nofile", "Max processes": "nproc", "Max locked memory": "memlock",
               "Max stack size": "stack", "Max core file size": "core", "Max file size": "fsize"}
_RLIMIT_NAMES = {"1": "fsize", "3": "stack", "4": "core", "6": "nproc", "7": "nofile", "8": "memlock",
                 "NOFILE": "nofile", "NPROC": "nproc", "MEMLOCK": "memlock", "STACK": "stack", "CORE": "core",
                 "FSIZE": "fsize"}
UNLIMITED = -1


def rlimit_refused(text: str) -> str | None:
    """The ulimit an OCI runtime refused, from its error (runc: ``error setting rlimit type 7``,
    crun: ``setrlimit `RLIMIT_NOFILE```); None when the error is about something else."""
    match = re.search(r"error setting rlimit type ([0-9]+)", text) or re.search(r"setrlimit `RLIMIT_([A-Z]+)`", text)
    if not match:
        return None
    return _RLIMIT_NAMES.get(match.group(1), f"type {match.group(1)}")


def parse_limits(text: str) -> dict[str, int]:
    """``/proc/PID/limits`` -> {ulimit name: hard limit}, ``-1`` for unlimited."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        for row, name in _LIMIT_ROWS.items():
            if line.startswith(row):
                fields = line[len(row):].split()
                if len(fields) >= 2:
                    found[name] = UNLIMITED if fields[1] == "unlimited" else int(fields[1])
    return found


def within(value: int, ceiling: int | None) -> bool:
    return ceiling is None or ceiling == UNLIMITED or (value != UNLIMITED and value <= ceiling)


def short_name(reference: str) -> str:
    """A tag as Docker shows it: Podman's ``localhost/`` and ``docker.io/library/`` prefixes off."""
    for prefix in ("localhost/", "docker.io/library/", "docker.io/"):
        if reference.startswith(prefix):
            return reference[len(prefix):]
    return reference


def image_id(raw: str) -> str:
    raw = raw.strip()
    return raw if not raw or raw.startswith("sha256:") else f"sha256:{raw}"


def is_loopback_reference(reference: str) -> bool:
    """Whether the reference names a registry on this machine, which Docker (and so cudaenv) speaks
    plain HTTP to; Podman is told the same (``--tls-verify=false``) for those alone."""
    from cudaenv.core.references import names_registry
    from cudaenv.engine.registry import is_loopback

    first, _, rest = reference.partition("/")
    return bool(rest) and names_registry(first) and is_loopback(first)


def cdi_device_names(request: GpuRequest) -> list[str]:
    """The CDI device names for a GPU request: those the engine chose from this host's specs
    (``cdi_devices``, see ``PodmanEngine._with_cdi_devices``); for a request built without them,
    the names ``nvidia-ctk cdi generate`` writes (ids one to one, a count the first N indices,
    all ``nvidia.com/gpu=all``)."""
    if request.cdi_devices:
        return list(request.cdi_devices)
    from cudaenv.hosts.cdi import request_names

    if request.device_ids:
        return list(request_names("ids", request.device_ids))
    if request.count is None or request.count < 0:
        return list(request_names("all", None))
    return list(request_names("count", request.count))


def network_for(rootless: bool, environ: Mapping[str, str] | None = None) -> str | None:
    """The network a container joins: ``CUDAENV_PODMAN_NETWORK`` when set; for rootless Podman the
    host's (its own user-mode networks need /dev/net/tun, often denied); rootful Podman's default."""
    env = os.environ if environ is None else environ
    chosen = (env.get("CUDAENV_PODMAN_NETWORK") or "").strip()
    if chosen:
        return chosen
    return "host" if rootless else None


def mount_argv(mount) -> list[str]:
    """A bind mount as Podman's CLI takes it. ``--mount`` splits its value at every comma and
    ``--volume`` at every colon, with no quoting in either: a path with a comma goes through
    ``--volume``, one with a colon through ``--mount``, and one with both cannot be passed at all
    (an error, never a mount with options the path smuggled in)."""
    source, target = str(mount.source), mount.target
    if "," not in source + target:
        return ["--mount", f"type=bind,source={source},target={target}" + (",ro=true" if mount.read_only else "")]
    if ":" not in source + target:
        return ["--volume", f"{source}:{target}" + (":ro" if mount.read_only else ":rw")]
    raise EngineError(f"cannot mount {source!r} with Podman: its path holds both ',' and ':', which Podman's "
                      "--mount and --volume both read as separators; move or rename the directory")


def relay_output(proc: subprocess.Popen, on_output: Callable[[bytes], None],
                 refusal: bytes) -> tuple[int, bytes, bytes]:
    """Pass a podman process's output on until it ends: (its exit code, the first 4 KiB, and the
    first chunk held back because the output began with ``refusal``, Podman's own error, which
    the caller reports as cudaenv's or passes on after all)."""
    assert proc.stdout is not None
    head, held = b"", b""
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        if len(head) < 4096:
            head += chunk[:4096]
        if not held and head.startswith(refusal):
            held = chunk  # podman's own refusal, reported by the caller as cudaenv's error
            continue
        on_output(held + chunk)
        held = b""
    return proc.wait(), head, held


def ulimit_refused(name: str, hard) -> UlimitRefused:
    """Podman could not give the container ulimit ``name`` (``hard``: what was asked; None: unknown)."""
    wanted = "unlimited" if hard in (-1, 2 ** 64 - 1) else (str(hard) if hard is not None else "?")
    return UlimitRefused(
        f"Podman cannot give the container ulimit {name}={wanted}: the engine's own hard limit is lower. Raise it "
        f"for the user running podman (limits.conf, or the service that starts it) or set [run] ulimits.{name} in "
        f"cudaenv.toml (or --ulimit {name}=N) to a value within it", name=name)


def image_missing(text: str) -> bool:
    """Podman's ways of saying an image is not in its store (a short name it would otherwise have
    to look up in registries.conf, which cudaenv never asks it to)."""
    return ("image not known" in text or "no such image" in text.lower() or "repository name must" in text
            or "did not resolve to an alias" in text)


def create_argv(spec: ContainerSpec, *, rootless: bool, pinned: Mapping[str, tuple[int, int]] | None = None,
                network: str | None = None, remove: bool = False) -> list[str]:
    """The ``podman create`` arguments (after ``podman``) for a ContainerSpec (inspectable in tests).

    ``pinned``: limits named for the container when the spec leaves them out (Podman's own defaults
    can exceed what the host grants)."""
    argv = ["create"]
    if remove:
        argv.append("--rm")
    if spec.name:
        argv += ["--name", spec.name]
    for key, value in dict(spec.env).items():
        argv += ["--env", f"{key}={value}"]
    for key, value in dict(spec.labels).items():
        argv += ["--label", f"{key}={value}"]
    for mount in spec.mounts:
        argv += mount_argv(mount)
    if spec.working_dir:
        argv += ["--workdir", spec.working_dir]
    if spec.user:
        argv += ["--user", spec.user]
    if rootless:
        argv.append("--userns=keep-id")  # the caller's UID is the same inside: /workspace stays theirs
    if network:
        argv += ["--network", network]
    if spec.gpus is not None:
        for device in cdi_device_names(spec.gpus):
            argv += ["--device", device]
    if spec.shm_size:
        argv += ["--shm-size", spec.shm_size]
    if spec.ipc_mode:
        argv += ["--ipc", spec.ipc_mode]
    limits = dict(pinned or {})
    limits.update(spec.ulimits)
    for name, (soft, hard) in sorted(limits.items()):
        argv += ["--ulimit", f"{name}={soft}:{hard}"]
    if spec.ports and network != "host":
        for port, value in spec.ports.items():
            key = str(port) if "/" in str(port) else f"{port}/tcp"
            number, _, protocol = key.partition("/")
            if value is None:
                published = f"{number}/{protocol}"
            elif isinstance(value, tuple):
                published = f"{value[0]}:{value[1]}:{number}/{protocol}"
            else:
                published = f"{value}:{number}/{protocol}"
            argv += ["--publish", published]
    if spec.tty:
        argv.append("--tty")
    if spec.stdin_open:
        argv.append("--interactive")
    if spec.init:
        argv.append("--init")
    argv += ["--", spec.image, *spec.command]
    return argv


def build_argv(request: BuildRequest, dockerfile: str, iidfile: str, ignorefile: str | None,
               pinned: Mapping[str, tuple[int, int]] | None = None, *, pull: bool | None = None) -> list[str]:
    """The ``podman build`` arguments (buildah: cache mounts and ``--secret`` as BuildKit has them)."""
    # --format docker: the OCI format drops SHELL (the templates' bash -o pipefail) and HEALTHCHECK
    from cudaenv.engine.builders import request_flags

    argv = ["build", "--format", "docker", "--layers", "--iidfile", iidfile, "-f", dockerfile,
            *request_flags(request, pull=pull)]
    if ignorefile:
        argv += ["--ignorefile", ignorefile]
    for name, (soft, hard) in sorted((pinned or {}).items()):
        argv += ["--ulimit", f"{name}={soft}:{hard}"]
    argv.append(str(request.context))
    return argv


_STEP = re.compile(r"^STEP [0-9]+(/[0-9]+)?: ")
_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE | re.MULTILINE)
_COPY_FROM = re.compile(r"--from=(\S+)", re.IGNORECASE)


def failing_step(lines: Sequence[str]) -> tuple[str | None, str]:
    """The step buildah was at when it failed (``STEP 3/5: RUN ...``) and that step's last lines."""
    step, start = None, 0
    for index, line in enumerate(lines):
        if _STEP.match(line):
            step, start = line, index
    tail = list(lines[start:])[-LOG_TAIL_LINES:]
    return step, "\n".join(tail)


def loopback_images(dockerfile_text: str) -> list[str]:
    """Images a Dockerfile takes from a registry on this machine (FROM lines, ``--from=`` images)."""
    found = []
    stages = set()
    for match in _FROM.finditer(dockerfile_text):
        line_end = dockerfile_text.find("\n", match.end())
        rest = dockerfile_text[match.end(): line_end if line_end >= 0 else None].split()
        if len(rest) >= 2 and rest[0].lower() == "as":
            stages.add(rest[1].lower())
        found.append(match.group(1))
    found += _COPY_FROM.findall(dockerfile_text)
    return [image for image in dict.fromkeys(found)
            if image.lower() not in stages and not image.isdigit() and is_loopback_reference(image)]


def _container_info(entry: dict) -> ContainerInfo:
    """A ``podman ps --format json`` row as cudaenv's ContainerInfo (Docker's statuses and times)."""
    import datetime

    names = entry.get("Names") or []
    state = (entry.get("State") or "").lower()
    status = {"configured": "created", "stopped": "exited"}.get(state, state)
    started = entry.get("StartedAt") or 0
    started_at = ""
    if isinstance(started, (int, float)) and started > 0:
        started_at = datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    return ContainerInfo(
        id=entry.get("Id", ""), name=names[0] if names else "", image=short_name(entry.get("Image", "")), status=status,
        labels=dict(entry.get("Labels") or {}), started_at=started_at,
        exit_code=int(entry.get("ExitCode", 0)) if status == "exited" else None,
    )


class PodmanEngine(Engine):
    name = "podman"
    attaches = True
    # `cudaenv run` may start a recorded image without asking the engine first (an inspect is a
    # process of its own here): a run of an image that is gone fails as ImageNotHere before the
    # container exists, and run then checks and builds as it would have
    trusts_recorded_images = True

    def __init__(self, cli: str | None = None, *, prefix: Sequence[str] = (), rootless: bool | None = None) -> None:
        """``prefix`` runs podman through another command (``runuser -u USER --``: the suite drives
        a rootless user's Podman this way), ``rootless`` then says whose Podman it is."""
        self._cli = cli
        self._prefix = tuple(prefix)
        if rootless is not None:
            self.rootless = rootless
        self._waiters: dict[str, subprocess.Popen] = {}
        self._attached: dict[str, subprocess.Popen] = {}
        self._auto_removed: set[str] = set()  # created with --rm: gone once an attach to them has ended
        # foreground runs started as one `podman run --rm` (``_launch``): name -> (spec, cidfile, its folder)
        self._launched: dict[str, tuple[ContainerSpec, str, str]] = {}
        self._gone: set[str] = set()

    # --- the CLI --------------------------------------------------------------------------------

    @cached_property
    def cli(self) -> str:
        found = self._cli or os.environ.get("CUDAENV_PODMAN_CLI") or shutil.which("podman")
        if not found:
            raise EngineError("cannot find podman on PATH: install it (Debian/Ubuntu: `sudo apt-get install podman`; "
                              "RHEL/Fedora: `sudo dnf install podman`) or choose Docker (--engine docker)")
        return found

    @property
    def argv0(self) -> list[str]:
        """The command line that runs podman (its binary, after any ``prefix``)."""
        return [*self._prefix, self.cli]

    @cached_property
    def rootless(self) -> bool:
        """Podman runs rootless exactly when its caller is not root (no remote connection is used)."""
        return os.geteuid() != 0

    def _podman(self, *args: str, input: bytes | None = None, timeout: float | None = 600,
                check: bool = True, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
        try:
            proc = subprocess.run([*self.argv0, *args], input=input, capture_output=True, timeout=timeout,
                                  env=None if env is None else dict(env))
        except OSError as exc:
            raise EngineError(f"could not run podman ({self.cli}): {exc}") from exc
        except subprocess.TimeoutExpired as exc:
            raise EngineError(f"podman {args[0]} did not answer within {timeout} s") from exc
        if check and proc.returncode != 0:
            raise EngineError(f"podman {args[0]} failed: {self._error_text(proc)}")
        return proc

    @staticmethod
    def _error_text(proc: subprocess.CompletedProcess) -> str:
        text = (proc.stderr or b"").decode("utf-8", "replace").strip() or (proc.stdout or b"").decode("utf-8", "replace").strip()
        lines = [line for line in text.splitlines() if not line.startswith("time=")] or text.splitlines() or [""]
        return " ".join(line.removeprefix("Error: ") for line in lines[-3:])[:800] or f"exit {proc.returncode}"

    @staticmethod
    def _not_found(text: str) -> bool:
        lowered = text.lower()
        return any(words in lowered for words in NOT_FOUND)

    def describe(self) -> str:
        proc = self._podman("version", "--format", "{{.Client.Version}}", timeout=30)
        mode = "rootless" if self.rootless else "rootful"
        return f"Podman {proc.stdout.decode().strip()} ({mode}, through its CLI {self.cli})"

    # --- limits ---------------------------------------------------------------------------------

    def _memory_key(self) -> str:
        try:
            stat = os.stat(self.cli)
            where = f"{self.cli}:{stat.st_mtime_ns}"
        except OSError:
            where = self.cli
        return f"podman|{where}|{' '.join(self._prefix)}|uid={os.geteuid()}|rootless={self.rootless}"

    def ceilings(self, image: str) -> dict[str, int] | None:
        """The hard limits this engine can hand to a container (what its ``conmon`` holds, read from
        inside one container that shares the host's PID namespace), remembered per engine and user;
        None when the probe itself cannot run (an image without ``cat``)."""
        from cudaenv.engine import limits_memory

        key = self._memory_key()
        remembered = limits_memory.recall(key, {"ceilings": (0, 0)})
        if remembered is not None and remembered:
            try:
                return {name: int(value) for name, value in (item.split("=", 1) for item in remembered)}
            except ValueError:
                pass
        import resource

        # low enough for any host to grant, so the probe itself runs
        start = {name: min(resource.getrlimit(which)[0], 1024) for name, which in
                 (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC))}
        argv = ["run", "--rm", "--pid=host", "--network=none", "--log-driver=none"]
        argv += [item for name, value in start.items() for item in ("--ulimit", f"{name}={value}:{value}")]
        argv += ["--user", "0:0", "--entrypoint", "/bin/sh", "--", image, "-c", "cat /proc/$PPID/limits"]
        proc = self._podman(*argv, check=False, timeout=120)
        found = parse_limits(proc.stdout.decode("utf-8", "replace")) if proc.returncode == 0 else {}
        if "nofile" not in found or "nproc" not in found:
            return None
        limits_memory.remember(key, {"ceilings": (0, 0)}, tuple(f"{name}={value}" for name, value in sorted(found.items())))
        return found

    def _pinned(self, image: str, spec_limits: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        """``nofile`` and ``nproc`` at what the engine can grant, where the spec does not name them
        (Podman's own rootful default, 1048576, fails on hosts whose limits are lower)."""
        missing = [name for name in PINNED_LIMITS if name not in spec_limits]
        if not missing or self.rootless:  # rootless Podman already defaults to the caller's own limits
            return {}
        found = self.ceilings(image) or {}
        return {name: (found[name], found[name]) for name in missing if name in found and found[name] != UNLIMITED}

    def refused_ulimits(self, image: str, ulimits: Mapping[str, tuple[int, int]]) -> tuple[str, ...]:
        """Which of ``ulimits`` this engine cannot grant: those above its ceilings (``ceilings``)."""
        found = self.ceilings(image)
        if found is None:
            return ()
        return tuple(name for name, (soft, hard) in ulimits.items()
                     if not (within(hard, found.get(name)) and within(soft, found.get(name))))

    # --- builds ---------------------------------------------------------------------------------

    def build(self, request: BuildRequest, on_output: OutputCallback | None = None, *,
              classic: bool = False) -> BuildResult:
        """``podman build`` (buildah). Images on a loopback registry are pulled first over plain HTTP,
        as Docker would (``--tls-verify=false`` for those alone); the build then finds them here."""
        import tempfile
        from pathlib import Path

        from cudaenv.engine.builders import ignore_rules
        from cudaenv.engine.values import BuildResult

        started = time.monotonic()
        text = request.dockerfile_text
        if text is None:
            text = (request.dockerfile or request.context / "Dockerfile").read_text(encoding="utf-8")
        local = loopback_images(text)
        for reference in local:
            if request.pull or self.image_labels(reference) is None:
                self.pull(reference, on_output)
        with tempfile.TemporaryDirectory(prefix="cudaenv-podman-build-") as tmp:
            if self._prefix:  # podman runs as another user (``prefix``): it reads and writes here too
                os.chmod(tmp, 0o777)
            dockerfile = Path(tmp) / "Dockerfile"
            dockerfile.write_text(text, encoding="utf-8")
            rules = ignore_rules(request)
            ignorefile = None
            if rules is not None:
                ignorefile = str(Path(tmp) / "ignore")
                Path(ignorefile).write_text(rules, encoding="utf-8")
                os.chmod(ignorefile, 0o644)
            os.chmod(dockerfile, 0o644)
            iidfile = str(Path(tmp) / "iid")
            pinned = {} if self.rootless else self._build_limits(local or _FROM.findall(text))
            if request.network is None and network_for(self.rootless) is not None:
                # RUN steps need the network (pip, apt) and rootless Podman's own needs /dev/net/tun
                from dataclasses import replace

                request = replace(request, network=network_for(self.rootless))
            argv = build_argv(request, str(dockerfile), iidfile, ignorefile, pinned,
                              pull=request.pull and not local)
            from cudaenv.engine.builders import stream_lines

            rc, lines = stream_lines([*self.argv0, *argv], self._build_env(), on_output,
                                     program=f"podman ({self.argv0[0]})")
            if rc != 0:
                step, tail = failing_step(lines)
                error = next((line for line in reversed(lines) if line.startswith("Error:")), f"podman exit {rc}")
                where = f" at {step}" if step else ""
                raise BuildError(f"image build failed{where} ({error.removeprefix('Error: ')})", step=step, log_tail=tail)
            built = Path(iidfile).read_text().strip() if Path(iidfile).exists() else ""
        return BuildResult(image_id=image_id(built), tags=request.tags, builder="buildah", log="\n".join(lines),
                           seconds=time.monotonic() - started)

    def _build_limits(self, bases: Sequence[str]) -> dict[str, tuple[int, int]]:
        """The limits RUN steps get: within the engine's ceilings, found with any local base."""
        for base in bases:
            if self.image_labels(base) is not None:
                return self._pinned(base, {})
        import resource

        return {name: resource.getrlimit(which) for name, which in
                (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC))
                if resource.getrlimit(which)[1] != resource.RLIM_INFINITY}

    def _build_env(self) -> dict[str, str] | None:
        """Buildah keeps ``RUN --mount=type=cache`` directories under ``$TMPDIR/buildah-cache``
        (``/var/tmp`` by default), one directory for every user of the machine in buildah 1.28: the
        first user's lock files shut every other user out ("unable to acquire lock ... permission
        denied"). Rootless builds get a TMPDIR of their own (in the user's cache directory, so the
        cache persists) unless the caller chose one."""
        if not self.rootless or os.environ.get("TMPDIR"):
            return None
        from cudaenv.core.cache import root

        directory = os.path.join(root(), "podman-tmp")
        os.makedirs(directory, mode=0o700, exist_ok=True)
        return {**os.environ, "TMPDIR": directory}

    # --- images ---------------------------------------------------------------------------------

    def _inspect_images(self, *references: str) -> list[dict]:
        proc = self._podman("image", "inspect", "--format", "json", *references, check=False, timeout=120)
        if proc.returncode != 0:
            text = self._error_text(proc)
            if self._not_found(text):
                return []
            if "invalid reference format" in text or "repository name must" in text:
                raise UserError(f"{references[0]!r} is not a valid image reference ({text})")
            raise EngineError(f"could not inspect image {references[0]!r}: {text}")
        found = json.loads(proc.stdout or b"[]")
        return found if isinstance(found, list) else []

    def image_labels(self, image: str) -> dict[str, str] | None:
        found = self._inspect_images(image)
        if not found:
            return None
        return dict(found[0].get("Labels") or (found[0].get("Config") or {}).get("Labels") or {})

    def _image_info(self, attrs: dict) -> ImageInfo:
        from cudaenv.engine.values import ImageInfo

        proc = self._podman("image", "history", "--no-trunc", "--format", "json", attrs["Id"], check=False)
        history = json.loads(proc.stdout or b"[]") if proc.returncode == 0 else []
        entries = tuple((entry.get("createdBy") or entry.get("CreatedBy") or "", int(entry.get("size") or 0))
                        for entry in reversed(history))
        # Podman's Size counts storage overhead too; the layers' own bytes (Docker's Size) are the
        # history's sizes, which is what disk accounting adds up layer by layer
        size = sum(bytes_ for _step, bytes_ in entries) if entries else int(attrs.get("Size") or 0)
        return ImageInfo(
            id=image_id(attrs["Id"]),
            tags=tuple(dict.fromkeys(short_name(t) for t in attrs.get("RepoTags") or () if t != "<none>:<none>")),
            labels=dict(attrs.get("Labels") or (attrs.get("Config") or {}).get("Labels") or {}),
            diff_ids=tuple((attrs.get("RootFS") or {}).get("Layers") or ()), size=size, history=entries,
        )

    def image_info(self, image: str) -> ImageInfo | None:
        found = self._inspect_images(image)
        return self._image_info(found[0]) if found else None

    def images(self, label: str) -> list[ImageInfo]:
        # not --all: buildah's intermediate layer images carry the labels too (Docker lists none of those)
        proc = self._podman("images", "--no-trunc", "--filter", f"label={label}", "--format", "{{.ID}}")
        ids = list(dict.fromkeys(line.strip() for line in proc.stdout.decode().splitlines() if line.strip()))
        found = []
        for raw in ids:
            attrs = self._inspect_images(raw.removeprefix("sha256:"))
            if attrs:  # removed between the listing and the inspection
                found.append(self._image_info(attrs[0]))
        return found

    def _registry_args(self, reference: str) -> tuple[list[str], str | None]:
        """``--tls-verify=false`` for a loopback registry (Docker's rule) and an ``--authfile`` when
        cudaenv has credentials (``CUDAENV_REGISTRY_USER``/``PASSWORD`` or Docker's config): written
        to a private temporary file, never put on the command line."""
        import base64
        import tempfile

        from cudaenv.engine.registry import Reference, RegistryError, credentials

        args = ["--tls-verify=false"] if is_loopback_reference(reference) else []
        try:
            registry = Reference.parse(reference).registry
        except RegistryError:
            return args, None
        found = credentials(registry)
        if not found:
            return args, None
        handle, path = tempfile.mkstemp(prefix="cudaenv-auth-", suffix=".json")
        with os.fdopen(handle, "w") as out:
            token = base64.b64encode(f"{found[0]}:{found[1]}".encode()).decode()
            json.dump({"auths": {registry: {"auth": token}}}, out)
        return args + ["--authfile", path], path

    def pull(self, reference: str, on_output: OutputCallback | None = None) -> str:
        args, authfile = self._registry_args(reference)
        try:
            proc = self._podman("pull", "--quiet", *args, reference, check=False)
        finally:
            if authfile:
                os.unlink(authfile)
        if proc.returncode != 0:
            raise EngineError(f"could not pull {reference}: {self._error_text(proc)}")
        if on_output is not None:
            on_output(f"  pulled {reference}")
        return image_id(proc.stdout.decode().strip().splitlines()[-1])

    def push(self, reference: str, on_output: OutputCallback | None = None) -> None:
        from cudaenv.engine.registry import Reference, RegistryAuthError, RegistryError, engine_error_is_transient

        ref = Reference.parse(reference)
        args, authfile = self._registry_args(reference)
        try:
            proc = self._podman("push", "--quiet", *args, reference, check=False, timeout=3600)
        finally:
            if authfile:
                os.unlink(authfile)
        if proc.returncode == 0:
            if on_output is not None:
                on_output(f"  {ref.tag}: pushed")
            return
        message = self._error_text(proc)
        if any(w in message.lower() for w in ("unauthorized", "authentication required", "denied")):
            raise RegistryAuthError(f"{ref.registry} refused the push of {ref.repository}:{ref.tag}: {message}; "
                                    f"run `podman login {ref.registry}` or set CUDAENV_REGISTRY_USER/PASSWORD")
        raise RegistryError(f"pushing {reference}: {message}", transient=engine_error_is_transient(message))

    def tag(self, image: str, reference: str) -> None:
        proc = self._podman("tag", image, reference, check=False)
        if proc.returncode != 0:
            raise EngineError(f"could not tag {image[:19]} as {reference}: {self._error_text(proc)}")

    def remove_image(self, image: str, *, force: bool = False) -> None:
        proc = self._podman("rmi", *(["--force"] if force else []), image, check=False)
        if proc.returncode != 0:
            text = self._error_text(proc)
            if not self._not_found(text):
                raise EngineError(f"could not remove image {image}: {text}")

    # --- containers -----------------------------------------------------------------------------

    def gpu_access(self) -> str:
        """Podman gives containers GPUs through CDI only (it has no NVIDIA runtime hook)."""
        return "cdi"

    @staticmethod
    def _with_cdi_devices(spec: ContainerSpec) -> ContainerSpec:
        """The spec's GPUs as the CDI device names this host's specs (/etc/cdi, /var/run/cdi) offer;
        a request they cannot serve is a CdiError naming what they offer and how to generate them."""
        if spec.gpus is None or spec.gpus.cdi_devices:
            return spec
        from dataclasses import replace

        from cudaenv.hosts import cdi

        names = cdi.device_names(cdi.read_specs().of_kind(), count=spec.gpus.count, device_ids=spec.gpus.device_ids)
        return replace(spec, gpus=replace(spec.gpus, cdi_devices=names))

    def _create(self, spec: ContainerSpec, *, remove: bool = False) -> str:
        spec = self._with_cdi_devices(spec)
        network = network_for(self.rootless)
        argv = create_argv(spec, rootless=self.rootless, pinned=self._pinned(spec.image, spec.ulimits),
                           network=network, remove=remove)
        proc = self._podman(*argv, check=False, timeout=300)
        if proc.returncode != 0:
            text = self._error_text(proc)
            if image_missing(text):
                raise ImageNotHere(f"image {spec.image!r} not found locally; build it first")
            self._raise_for_gpu_error(text)
            raise EngineError(f"could not create a container from {spec.image!r}: {text}")
        return proc.stdout.decode().strip().splitlines()[-1]

    def create(self, spec: ContainerSpec) -> str:
        if spec.auto_remove and spec.name and not spec.tty and not self._prefix:
            return self._launch(spec)  # (through a prefix, podman runs as another user: no cidfile of ours)
        container_id = self._create(spec, remove=spec.auto_remove)
        if spec.auto_remove:
            self._auto_removed.add(container_id)
        return container_id

    def _launch(self, spec: ContainerSpec) -> str:
        """A foreground container (``auto_remove``: `cudaenv run` without a terminal) as one ``podman
        run --rm``, whose output ``attach`` then follows: one Podman process instead of ``create``
        and ``start --attach`` (each start of podman costs tens of milliseconds). The container is
        known by its name. With GPUs asked for, this returns only once Podman has created it (its
        --cidfile is written), so the caller's GPU allocation lock covers it, as it covers a
        ``create``. The run is in a session of its own: cudaenv forwards signals."""
        import tempfile

        spec = self._with_cdi_devices(spec)
        argv = create_argv(spec, rootless=self.rootless, pinned=self._pinned(spec.image, spec.ulimits),
                           network=network_for(self.rootless), remove=True)
        directory = tempfile.mkdtemp(prefix="cudaenv-run-")
        cidfile = os.path.join(directory, "cid")
        argv = ["run", "--pull=never", "--cidfile", cidfile, *argv[1:]]
        try:
            proc = subprocess.Popen([*self.argv0, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise EngineError(f"could not run podman ({self.cli}): {exc}") from exc
        self._attached[spec.name] = proc
        self._launched[spec.name] = (spec, cidfile, directory)
        if spec.gpus is not None:  # the GPUs count as held once the container exists
            while proc.poll() is None and not (os.path.exists(cidfile) and os.path.getsize(cidfile)):
                time.sleep(0.005)
        return spec.name

    @staticmethod
    def _raise_for_gpu_error(text: str) -> None:
        if "cdi" in text.lower() or "nvidia.com/gpu" in text:
            raise EngineError(NO_CDI_HELP.format(detail=text))

    def _raise_for_start_error(self, container_id: str, text: str) -> None:
        self._raise_for_gpu_error(text)
        name = rlimit_refused(text)
        if name is not None:
            hard = None
            try:
                for item in ((self.inspect(container_id).get("HostConfig") or {}).get("Ulimits") or []):
                    if item.get("Name", "").lower().removeprefix("rlimit_") == name:
                        hard = item.get("Hard")
            except EngineError:
                pass
            raise ulimit_refused(name, hard)
        if self._not_found(text):
            raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)")

    def run(self, spec: ContainerSpec, *, remove: bool = True, timeout: float | None = None) -> RunResult:
        from cudaenv.engine.values import RunResult

        container_id = self._create(spec)
        try:
            self.start(container_id)
            try:
                code = self.wait(container_id, timeout=timeout)
            except TimeoutError as exc:
                self.kill(container_id, "SIGKILL")
                raise EngineError(f"container from {spec.image!r} did not finish within {timeout} s") from exc
            logs = self._podman("logs", container_id, check=False)
            output = (logs.stdout + logs.stderr).decode("utf-8", errors="replace")
            return RunResult(exit_code=code, output=output, container_id=container_id)
        finally:
            if remove:
                self.remove(container_id)

    def start(self, container_id: str) -> None:
        proc = self._podman("start", container_id, check=False, timeout=300)
        if proc.returncode != 0:
            text = self._error_text(proc)
            self._raise_for_start_error(container_id, text)
            raise EngineError(f"could not start container {container_id[:12]}: {text}")

    def attach(self, container_id: str, on_output: Callable[[bytes], None]) -> int:
        """Start the container and follow its output until it exits, in one ``podman start
        --attach``; its exit code. What `cudaenv run` uses in the foreground (one process instead of
        start, logs and wait). The attach runs in a session of its own: cudaenv forwards signals."""
        launched = self._launched.pop(container_id, None)
        if launched is not None:
            return self._follow_run(container_id, *launched, on_output)
        proc = subprocess.Popen([*self.argv0, "start", "--attach", "--sig-proxy=false", container_id],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        self._attached[container_id] = proc
        try:
            code, head, held = relay_output(proc, on_output, b"Error: unable to start container")
        finally:
            self._attached.pop(container_id, None)
        if container_id in self._auto_removed:  # `start --attach` removed it as it ended (create --rm)
            self._gone.add(container_id)
        if code in (125, 126, 127) and b"Error: " in head:  # podman's own failure, not the container's code
            state = self._podman("inspect", "--format", "{{.State.Status}}", container_id, check=False)
            if state.returncode != 0 or state.stdout.decode().strip() in ("created", "configured"):
                text = head.decode("utf-8", "replace")
                text = text[text.find("Error: ") + len("Error: "):].strip()
                self._raise_for_start_error(container_id, text)
                raise EngineError(f"could not start container {container_id[:12]}: {text}")
        if held:
            on_output(held)
        return code

    def _follow_run(self, name: str, spec: ContainerSpec, cidfile: str, directory: str,
                    on_output: Callable[[bytes], None]) -> int:
        """The output and exit code of a ``_launch``ed run. Podman's own failure (exit 125-127 and
        "Error: ..." before the container was created, or as it failed to start) is cudaenv's error,
        as ``start --attach``'s is; the container's own output and code pass through."""
        proc = self._attached[name]
        try:
            code, _, held = relay_output(proc, on_output, b"Error: ")
            created = os.path.exists(cidfile) and os.path.getsize(cidfile) > 0
        finally:
            self._attached.pop(name, None)
            shutil.rmtree(directory, ignore_errors=True)
        self._gone.add(name)  # --rm: Podman removed it as it ended
        if held and code in (125, 126, 127):
            text = held.decode("utf-8", "replace")[len("Error: "):].strip()
            if image_missing(text):
                raise ImageNotHere(f"image {spec.image!r} not found locally; build it first")
            self._raise_for_gpu_error(text)
            limit = rlimit_refused(text)
            if limit is not None:
                raise ulimit_refused(limit, dict(spec.ulimits).get(limit, (None, None))[1])
            what = "start" if created else "create"
            raise EngineError(f"could not {what} a container from {spec.image!r}: {text}")
        if held:
            on_output(held)
        return code

    def stream_output(self, container_id: str, on_output: Callable[[bytes], None]) -> None:
        proc = subprocess.Popen([*self.argv0, "logs", "--follow", container_id], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        while True:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            on_output(chunk)
        proc.wait()

    def wait(self, container_id: str, timeout: float | None = None) -> int:
        """The exit code; TimeoutError when ``timeout`` passes first (the container keeps running,
        and the same ``podman wait`` is asked again on the next call)."""
        waiter = self._waiters.get(container_id)
        if waiter is None:
            waiter = subprocess.Popen([*self.argv0, "wait", container_id], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            self._waiters[container_id] = waiter
        try:
            out, err = waiter.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(container_id) from None
        self._waiters.pop(container_id, None)
        if waiter.returncode != 0:
            text = err.decode("utf-8", "replace").strip()
            if self._not_found(text):
                raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)")
            raise EngineError(f"could not wait for container {container_id[:12]}: {text}")
        return int(out.decode().strip().splitlines()[-1])

    def kill(self, container_id: str, signal: str = "SIGTERM") -> None:
        self._podman("kill", "--signal", signal, container_id, check=False, timeout=60)

    def stop(self, container_id: str, timeout: int = 10) -> None:
        proc = self._podman("stop", "--time", str(timeout), container_id, check=False, timeout=timeout + 60)
        if proc.returncode != 0 and not self._not_found(self._error_text(proc)):
            raise EngineError(f"could not stop container {container_id[:12]}: {self._error_text(proc)}")

    def remove(self, container_id: str) -> None:
        if container_id in self._gone:  # removed by the run itself: nothing to ask Podman
            self._gone.discard(container_id)
            self._auto_removed.discard(container_id)
            return
        proc = self._podman("rm", "--force", "--time", "0", container_id, check=False, timeout=120)
        if proc.returncode != 0:
            text = self._error_text(proc)
            if not self._not_found(text) and "already being removed" not in text and "in progress" not in text:
                raise EngineError(f"could not remove container {container_id[:12]}: {text}")
        for table in (self._waiters, self._attached):
            leftover = table.pop(container_id, None)
            if leftover is not None and leftover.poll() is None:
                leftover.kill()
                leftover.wait()

    def containers(self, label: str, *, running_only: bool = False) -> list[ContainerInfo]:
        argv = ["ps", "--no-trunc", "--filter", f"label={label}", "--format", "json"]
        if not running_only:
            argv.insert(1, "--all")
        proc = self._podman(*argv, timeout=120)
        rows = json.loads(proc.stdout or b"[]") or []
        return [_container_info(row) for row in rows]

    def inspect(self, container_id: str) -> dict:
        proc = self._podman("container", "inspect", "--format", "json", container_id, check=False)
        if proc.returncode != 0:
            text = self._error_text(proc)
            if self._not_found(text):
                raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)")
            raise EngineError(f"could not inspect container {container_id[:12]}: {text}")
        found = json.loads(proc.stdout or b"[]")
        if not found:
            raise EngineError(f"no container {container_id!r} (see `cudaenv ps`)")
        return found[0]

    def exec(self, container_id: str, command: Sequence[str], *, user: str | None = None,
             env: Mapping[str, str] | None = None) -> RunResult:
        from cudaenv.engine.values import RunResult

        attrs = self.inspect(container_id)
        status = (attrs.get("State") or {}).get("Status")
        if status != "running":
            raise EngineError(f"container {attrs.get('Name', container_id)} is {status}, not running")
        argv = ["exec"]
        if user:
            argv += ["--user", user]
        for key, value in dict(env or {}).items():
            argv += ["--env", f"{key}={value}"]
        proc = subprocess.run([*self.argv0, *argv, container_id, *command], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return RunResult(exit_code=proc.returncode, output=proc.stdout.decode("utf-8", errors="replace"),
                         container_id=attrs.get("Id", container_id))

    def interactive_argv(self, container_id: str, *, exec_command: Sequence[str] | None = None) -> list[str]:
        if exec_command is not None:
            return [*self.argv0, "exec", "-it", container_id, *exec_command]
        return [*self.argv0, "start", "--attach", "--interactive", container_id]
