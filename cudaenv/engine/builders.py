"""Image builds: BuildKit through the docker CLI where it is available, the SDK otherwise.

docker-py cannot drive BuildKit (cache mounts, secrets, parallel stages), so builds shell out to
the docker CLI when one that offers BuildKit is installed:

* ``docker buildx build`` when the buildx plugin answers;
* ``DOCKER_BUILDKIT=1 docker build`` on a client older than 23.0, whose classic ``build`` has
  BuildKit built in (newer clients hand ``build`` to buildx and fail without the plugin);
* the SDK's classic builder as the last resort.

Several docker CLIs can be installed at once (a distribution's ``/usr/bin/docker`` next to a newer
client without buildx in ``/usr/local/bin``), so every candidate is probed, in PATH order, and the
first one that offers BuildKit wins. ``CUDAENV_DOCKER_CLI`` names one explicitly.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cudaenv.engine import BuildRequest, BuildResult, OutputCallback
from cudaenv.errors import BuildError, EngineError

LOG_TAIL_LINES = 25


@dataclass(frozen=True)
class CliBuilder:
    """A docker CLI binary and how it reaches BuildKit: ``"buildx"`` or ``"buildkit"``."""

    cli: str
    mode: str


def _cli_candidates() -> list[str]:
    explicit = os.environ.get("CUDAENV_DOCKER_CLI")
    if explicit:
        return [explicit]
    seen: list[str] = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        path = shutil.which("docker", path=directory) if directory else None
        if path and os.path.realpath(path) not in {os.path.realpath(p) for p in seen}:
            seen.append(path)
    return seen


def _client_major(cli: str) -> int | None:
    try:
        out = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"version ([0-9]+)\.", out)
    return int(match.group(1)) if match else None


def _has_buildx(cli: str) -> bool:
    try:
        proc = subprocess.run([cli, "buildx", "version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def probe_cli_builder(cli: str) -> CliBuilder | None:
    """How this docker CLI can build with BuildKit, or None if it cannot."""
    if _has_buildx(cli):
        return CliBuilder(cli, "buildx")
    major = _client_major(cli)
    if major is not None and major < 23:
        return CliBuilder(cli, "buildkit")
    return None


@lru_cache(maxsize=1)
def find_cli_builder() -> CliBuilder | None:
    """The first installed docker CLI that offers BuildKit (cached for the process, and on disk
    while the CLIs, plugins and DOCKER_* environment stay as they are: ``buildkit_probe``)."""
    from cudaenv.engine import buildkit_probe

    key = buildkit_probe.probe_key()
    remembered = buildkit_probe.recall(key)
    if remembered is not buildkit_probe.MISS:
        return None if remembered is None else CliBuilder(*remembered)
    found = None
    for cli in _cli_candidates():
        found = probe_cli_builder(cli)
        if found is not None:
            break
    buildkit_probe.remember(key, (found.cli, found.mode) if found else None)
    return found


def request_flags(request: BuildRequest, *, pull: bool | None = None) -> list[str]:
    """The build flags a BuildRequest means, spelled alike by `docker build` and `podman build`:
    tags, build args, labels, secrets, --no-cache, --pull (``pull`` overrides the request's),
    --target, --network and --platform."""
    argv: list[str] = []
    for tag in request.tags:
        argv += ["-t", tag]
    for key, value in sorted(request.build_args.items()):
        argv += ["--build-arg", f"{key}={value}"]
    for key, value in sorted(request.labels.items()):
        argv += ["--label", f"{key}={value}"]
    for secret_id, path in sorted(request.secrets.items()):
        argv += ["--secret", f"id={secret_id},src={path}"]
    if request.no_cache:
        argv.append("--no-cache")
    if request.pull if pull is None else pull:
        argv.append("--pull")
    if request.target:
        argv += ["--target", request.target]
    if request.network:
        argv += ["--network", request.network]
    if request.platform:
        argv += ["--platform", request.platform]
    return argv


def _cli_command(builder: CliBuilder, request: BuildRequest, dockerfile: Path, iidfile: Path) -> list[str]:
    argv = [builder.cli]
    argv += ["buildx", "build", "--load"] if builder.mode == "buildx" else ["build"]
    argv += ["--progress=plain", "--iidfile", str(iidfile), "-f", str(dockerfile)]
    return [*argv, *request_flags(request), str(request.context)]


# "#7 [stage 3/5] RUN pip install ..." / "#7 ERROR: process ... exit code: 1"
STEP_HEADER = re.compile(r"^#([0-9]+) (\[.*)$")
_STEP_ERROR = re.compile(r"^#([0-9]+) ERROR[: ]")
_STEP_LINE = re.compile(r"^#([0-9]+) ")


def failing_step_from_buildkit_log(lines: Iterable[str]) -> tuple[str | None, str]:
    """From BuildKit plain-progress output, the failing step's header and its last output lines."""
    headers: dict[str, str] = {}
    per_step: dict[str, deque[str]] = {}
    failed: str | None = None
    for line in lines:
        if m := STEP_HEADER.match(line):
            headers.setdefault(m.group(1), m.group(2))
        if m := _STEP_ERROR.match(line):
            failed = m.group(1)
        if m := _STEP_LINE.match(line):
            per_step.setdefault(m.group(1), deque(maxlen=LOG_TAIL_LINES)).append(line)
    if failed is None:
        return None, ""
    return headers.get(failed), "\n".join(per_step.get(failed, ()))


def stream_lines(argv: list[str], env: Mapping[str, str] | None, on_output: OutputCallback | None, *,
                 program: str) -> tuple[int, list[str]]:
    """Run a build command, handing each output line to ``on_output`` as it comes; (exit code, lines).
    Ctrl-C stops the command too. ``program`` names it in the error when it cannot be started."""
    lines: list[str] = []
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, errors="replace", env=None if env is None else dict(env), bufsize=1,
        )
    except OSError as exc:
        raise EngineError(f"could not run {program}: {exc}") from exc
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            lines.append(line)
            if on_output is not None:
                on_output(line)
    except BaseException:  # Ctrl-C: stop the build, leave nothing running
        proc.terminate()
        proc.wait(timeout=30)
        raise
    return proc.wait(), lines


def ignore_rules(request: BuildRequest) -> str | None:
    """The build's ignore rules: the request's own, else the context's .dockerignore, else none."""
    if request.dockerignore_text is not None:
        return request.dockerignore_text
    ignore = request.context / ".dockerignore"
    return ignore.read_text(encoding="utf-8") if ignore.is_file() else None


class _DockerfileOnDisk:
    """A path for the request's Dockerfile, writing rendered text to a temporary directory."""

    def __init__(self, request: BuildRequest) -> None:
        self._request = request
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Path:
        if self._request.dockerfile_text is None:
            return self._request.dockerfile or self._request.context / "Dockerfile"
        self._tmp = tempfile.TemporaryDirectory(prefix="cudaenv-dockerfile-")
        path = Path(self._tmp.name) / "Dockerfile"
        path.write_text(self._request.dockerfile_text, encoding="utf-8")
        # BuildKit reads "<Dockerfile>.dockerignore" beside a Dockerfile before the context's own
        # .dockerignore: the build's rules (or the project's file) go there, so they apply to an
        # out-of-context Dockerfile and nothing is written into the project.
        rules = ignore_rules(self._request)
        if rules is not None:
            (Path(self._tmp.name) / "Dockerfile.dockerignore").write_text(rules, encoding="utf-8")
        return path

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def build_with_cli(builder: CliBuilder, request: BuildRequest, on_output: OutputCallback | None) -> BuildResult:
    started = time.monotonic()
    env = dict(os.environ)
    if builder.mode == "buildkit":
        env["DOCKER_BUILDKIT"] = "1"
    with tempfile.TemporaryDirectory(prefix="cudaenv-build-") as tmp, _DockerfileOnDisk(request) as dockerfile:
        iidfile = Path(tmp) / "iid"
        rc, lines = stream_lines(_cli_command(builder, request, dockerfile, iidfile), env, on_output,
                                 program=f"the docker CLI {builder.cli!r}")
        if rc != 0:
            step, tail = failing_step_from_buildkit_log(lines)
            if not tail:
                tail = "\n".join(lines[-LOG_TAIL_LINES:])
            where = f" at step {step}" if step else ""
            raise BuildError(f"image build failed{where} (docker exit {rc})", step=step, log_tail=tail)
        image_id = iidfile.read_text().strip() if iidfile.exists() else ""
    return BuildResult(
        image_id=image_id, tags=request.tags, builder=builder.mode,
        log="\n".join(lines), seconds=time.monotonic() - started,
    )


def split_reference(reference: str) -> tuple[str, str | None]:
    """``"localhost:5000/ns/img:tag"`` -> ``("localhost:5000/ns/img", "tag")``; a registry port is not a tag."""
    name, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag:
        return reference, None
    return name, tag


SDK_STEP = re.compile(r"^Step [0-9]+/[0-9]+ : ")
SDK_DOCKERFILE = ".cudaenv.Dockerfile"


class _sdk_context:
    """The build context as an uncompressed tar: ignore rules applied, the Dockerfile added."""

    def __init__(self, request: BuildRequest) -> None:
        from docker.utils.build import tar

        if request.dockerfile_text is not None:
            text = request.dockerfile_text
        else:
            text = (request.dockerfile or request.context / "Dockerfile").read_text(encoding="utf-8")
        exclude = [line.strip() for line in (ignore_rules(request) or "").splitlines()
                   if line.strip() and not line.startswith("#")]
        self.fileobj = tar(str(request.context), exclude=exclude, dockerfile=(SDK_DOCKERFILE, text), gzip=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.fileobj.close()


def build_with_sdk(api, request: BuildRequest, on_output: OutputCallback | None) -> BuildResult:
    """The classic builder through docker-py's low-level API (no BuildKit features)."""
    if request.secrets:
        raise BuildError(
            f"this build needs BuildKit secrets ({', '.join(sorted(request.secrets))}: build.ca_cert or index "
            "credentials), but no docker CLI with BuildKit was found; "
            "install the docker buildx plugin or a docker CLI with BuildKit"
        )
    started = time.monotonic()
    lines: list[str] = []
    step: str | None = None
    image_id = ""
    context = _sdk_context(request)
    with context:
        stream = api.build(
            fileobj=context.fileobj, custom_context=True, dockerfile=SDK_DOCKERFILE,
            tag=request.tags[0] if request.tags else None, buildargs=dict(request.build_args),
            labels=dict(request.labels), nocache=request.no_cache, pull=request.pull, rm=True, forcerm=True,
            decode=True, target=request.target, network_mode=request.network,
            **({"platform": request.platform} if request.platform else {}),
        )
        for chunk in stream:
            if "stream" in chunk:
                for line in chunk["stream"].splitlines():
                    lines.append(line)
                    if SDK_STEP.match(line):
                        step = line
                    if on_output is not None:
                        on_output(line)
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = chunk["aux"]["ID"]
            if "error" in chunk:
                lines.append(chunk["error"])
                tail = "\n".join(lines[-LOG_TAIL_LINES:])
                where = f" at {step}" if step else ""
                raise BuildError(f"image build failed{where}: {chunk['error'].strip()}", step=step, log_tail=tail)
    for extra_tag in request.tags[1:]:
        repository, tag = split_reference(extra_tag)
        api.tag(image_id, repository, tag)
    return BuildResult(
        image_id=image_id, tags=request.tags, builder="sdk", log="\n".join(lines),
        seconds=time.monotonic() - started,
    )


_STEP_DONE = re.compile(r"^#([0-9]+) (DONE ([0-9]+(?:\.[0-9]+)?)s|CACHED)")


@dataclass(frozen=True)
class StepTiming:
    step: str
    seconds: float
    cached: bool


def step_timings(lines: Iterable[str]) -> list[StepTiming]:
    """Where a BuildKit build spent its time: each Dockerfile step with its duration or CACHED."""
    headers: dict[str, str] = {}
    out: dict[str, StepTiming] = {}
    for line in lines:
        if m := STEP_HEADER.match(line):
            headers.setdefault(m.group(1), m.group(2))
        elif (m := _STEP_DONE.match(line)) and m.group(1) in headers and headers[m.group(1)].startswith("["):
            header = headers[m.group(1)]
            if "internal]" in header:
                continue
            cached = m.group(2) == "CACHED"
            out[m.group(1)] = StepTiming(header, 0.0 if cached else float(m.group(3)), cached)
    return list(out.values())
