"""Suite-wide policy and the fixtures that give tests real parts.

* ``@pytest.mark.docker`` tests need a reachable Docker engine. Without one they are skipped on a
  developer's machine, but with ``CI=true`` the whole run stops with a failure: a green CI must
  never hide tests that did not run.
* ``@pytest.mark.podman`` tests need Podman (root's, and a rootless user's driven through runuser:
  ``tests/support/podman_env.py``); like Docker, a missing Podman is a failure with ``CI=true``.
* ``@pytest.mark.docker_rootless`` tests need the rootless test user's own dockerd (rootlesskit),
  which scripts/test.sh starts (``tests/support/docker_rootless.py``); like Docker, missing it is
  a failure with ``CI=true``.
* ``@pytest.mark.e2e`` tests download real frameworks; they run only when asked (``-m e2e``).
* ``@pytest.mark.slurm`` tests submit jobs to a real one-node Slurm cluster (Debian's slurm-wlm and
  munge, tests/support/slurm_cluster.py) that the ``slurm_cluster`` fixture starts detached and
  stops when the session ends; like Docker, a missing Slurm is a failure with ``CI=true``.
* The local registry (Debian's ``docker-registry``) is started on a loopback port by the
  ``registry`` fixture and stopped when the session ends.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.docker_env import docker_unreachable_reason
from tests.support.registry import LocalRegistry

REPO_ROOT = Path(__file__).resolve().parents[1]
STANDIN_IMAGE = os.environ.get("CUDAENV_STANDIN_IMAGE", "cudaenv-standin/bookworm-python:1")
STANDIN_BIONIC = os.environ.get("CUDAENV_STANDIN_BIONIC", "cudaenv-standin/bionic:1")
STANDIN_ARM64 = os.environ.get("CUDAENV_STANDIN_ARM64", "cudaenv-standin/bookworm-python-arm64:1")


def pytest_configure(config: pytest.Config) -> None:
    # The matrix cache lives in the user's cache directory; tests get their own, throw-away one.
    import tempfile

    os.environ["CUDAENV_CACHE_DIR"] = tempfile.mkdtemp(prefix="cudaenv-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    if "cudaenv-test-cache-" in os.environ.get("CUDAENV_CACHE_DIR", ""):
        shutil.rmtree(os.environ["CUDAENV_CACHE_DIR"], ignore_errors=True)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = config.getoption("markexpr") or ""
    if "e2e" not in markexpr:
        selected = [item for item in items if "e2e" not in item.keywords]
        deselected = [item for item in items if "e2e" in item.keywords]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = selected

    _require_slurm(items)
    _require_podman(items)
    _require_rootless_docker(items)
    if not any("docker" in item.keywords for item in items):
        return
    reason = docker_unreachable_reason()
    if reason is None:
        return
    if in_ci():
        pytest.exit(
            f"CI=true and {sum('docker' in i.keywords for i in items)} selected tests need Docker, "
            f"but the engine is unreachable: {reason}. Run scripts/test.sh, which installs and "
            "starts dockerd, instead of skipping them.",
            returncode=3,
        )
    skip = pytest.mark.skip(reason=f"Docker engine unreachable: {reason}")
    for item in items:
        if "docker" in item.keywords:
            item.add_marker(skip)


def slurm_unavailable_reason() -> str | None:
    from tests.support.slurm_cluster import missing_tools

    missing = missing_tools()
    if missing:
        return f"not installed: {', '.join(missing)} (scripts/test.sh installs slurm-wlm and munge)"
    if os.geteuid() != 0:
        return "the one-node cluster runs slurmd as root (stand-in GPU devices are made with mknod)"
    return None


def _require(items: list[pytest.Item], marker: str, what: str, unavailable_reason) -> None:
    """Tests marked ``marker`` need ``what``: with CI=true its absence stops the run, elsewhere they skip.
    ``unavailable_reason`` is asked only when such a test is selected."""
    wanted = [item for item in items if marker in item.keywords]
    reason = unavailable_reason() if wanted else None
    if reason is None:
        return
    if in_ci():
        pytest.exit(f"CI=true and {len(wanted)} selected tests need {what}, but {reason}. Run scripts/test.sh.",
                    returncode=3)
    for item in wanted:
        item.add_marker(pytest.mark.skip(reason=f"{what} unavailable: {reason}"))


def _require_slurm(items: list[pytest.Item]) -> None:
    _require(items, "slurm", "Slurm", slurm_unavailable_reason)


def _require_podman(items: list[pytest.Item]) -> None:
    """A podman test's ``engine_kind`` parameter says which Podman it needs (rootful or rootless)."""
    from tests.support.podman_env import podman_unusable_reason

    for item in items:
        if "podman" not in item.keywords:
            continue
        kind = getattr(item, "callspec", None) and item.callspec.params.get("engine_kind")
        reason = podman_unusable_reason(kind == "podman-rootless") or (
            podman_unusable_reason(True) if kind is None else None)
        if reason is None:
            continue
        if in_ci():
            pytest.exit(f"CI=true and {item.nodeid} needs Podman, but {reason}. Run scripts/test.sh.", returncode=3)
        item.add_marker(pytest.mark.skip(reason=f"Podman unavailable: {reason}"))


def _require_rootless_docker(items: list[pytest.Item]) -> None:
    def reason() -> str | None:
        from tests.support.docker_rootless import unusable_reason

        return unusable_reason()

    _require(items, "docker_rootless", "rootless Docker", reason)


ENGINE_KINDS = [pytest.param("docker", marks=pytest.mark.docker),
                pytest.param("podman", marks=pytest.mark.podman),
                pytest.param("podman-rootless", marks=pytest.mark.podman)]


@pytest.fixture(scope="session")
def podman_standin(tmp_path_factory):
    """``(engine kind) -> (engine, stand-in tag)``: each Podman store gets the stand-in once."""
    from tests.support import podman_env

    made: dict[str, tuple] = {}

    def provide(kind: str):
        if kind not in made:
            rootless = kind == "podman-rootless"
            if rootless:
                podman_env.prepare_user()
            if not podman_env.has_image(rootless, STANDIN_IMAGE):
                podman_env.import_standin(rootless, STANDIN_IMAGE)
            made[kind] = (podman_env.engine_for(rootless), STANDIN_IMAGE)
        return made[kind]

    return provide


@pytest.fixture(params=ENGINE_KINDS)
def engine_kind(request) -> str:
    """Each engine the contract holds for: Docker, Podman rootful, Podman rootless."""
    return request.param


@pytest.fixture
def any_engine(engine_kind, request):
    """(engine, stand-in image in that engine's store) for ``engine_kind``."""
    if engine_kind == "docker":
        return request.getfixturevalue("engine"), request.getfixturevalue("standin_image")
    return request.getfixturevalue("podman_standin")(engine_kind)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node Slurm cluster (two stand-in GPUs as GRES), stopped when the session ends."""
    from tests.support.slurm_cluster import SlurmCluster

    logs = Path(os.environ.get("CUDAENV_TEST_LOGS", REPO_ROOT / ".test-logs")) / "slurm"
    cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm"), logs, gpus=2)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def engine():
    from cudaenv.engine import get_engine

    return get_engine()


def _standin(engine, image: str) -> str:
    """A stand-in base image scripts/test.sh imports: missing fails under CI, skips elsewhere."""
    if engine.image_labels(image) is None:
        message = f"stand-in base image {image} is missing; scripts/test.sh creates it"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return image


@pytest.fixture(scope="session")
def standin_image(engine) -> str:
    """The debootstrapped Debian + python3 image that scripts/test.sh imports."""
    return _standin(engine, STANDIN_IMAGE)


@pytest.fixture(scope="session")
def bionic_standin(engine) -> str:
    """The debootstrapped Ubuntu 18.04 (no Python, no init) that stands in for nvidia/cuda's 18.04 tags."""
    return _standin(engine, STANDIN_BIONIC)


@pytest.fixture(scope="session")
def arm64_standins(engine, tmp_path_factory):
    """A registry of its own serving the arm64 stand-ins under upstream names (python:3.11-slim, the
    uv image), for builds of aarch64 stacks here: scripts/test.sh makes the stand-in, fetches uv's
    aarch64 wheel and registers qemu-aarch64 with binfmt_misc; anything missing fails under CI. Each
    name is multi-platform, as upstream's are: its amd64 half (the x86_64 stand-in, this machine's
    uv) is what a cross build's stages for the build machine ($BUILDPLATFORM) start from."""
    from cudaenv.run.doctor import emulation_check
    from tests.support.standins import Arm64Standins

    _standin(engine, STANDIN_ARM64)
    _standin(engine, STANDIN_IMAGE)  # the same names' amd64 half: upstream's images are multi-platform
    wheel = os.environ.get("CUDAENV_TEST_UV_AARCH64", "")
    problems = [] if wheel and Path(wheel).is_file() else ["uv's aarch64 wheel (CUDAENV_TEST_UV_AARCH64)"]
    if "F flag)" not in emulation_check().detail and "native" not in emulation_check().detail:
        problems.append(f"aarch64 emulation ({emulation_check().detail})")
    if problems:
        message = f"missing for arm64 builds: {'; '.join(problems)}; scripts/test.sh sets them up"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    with LocalRegistry.start(tmp_path_factory.mktemp("arm64-registry")) as reg:
        served = Arm64Standins(engine, reg, STANDIN_ARM64, Path(wheel), tmp_path_factory.mktemp("arm64-uv"),
                               native_image=STANDIN_IMAGE)
        served.provide("python:3.11-slim")
        served.provide_uv()
        yield served
        served.cleanup()


@pytest.fixture(scope="session")
def registry(tmp_path_factory):
    """A real distribution registry on a loopback port, for push and pull tests."""
    with LocalRegistry.start(tmp_path_factory.mktemp("registry")) as reg:
        yield reg


@pytest.fixture(scope="session")
def standins(engine, registry, standin_image):
    """The local registry serving stand-ins under upstream names (see tests/support/standins.py)."""
    from tests.support.standins import StandinRegistry

    # nvidia/cuda's 18.04 tags are served by the bionic stand-in where scripts/test.sh made it
    bionic = STANDIN_BIONIC if engine.image_labels(STANDIN_BIONIC) is not None else None
    served = StandinRegistry(engine, registry, standin_image, by_os={"ubuntu18.04": bionic} if bionic else {})
    served.provide_uv()
    bases_before = {info.id for info in engine.images("io.cudaenv.project=cudaenv-base")}
    yield served
    served.cleanup()
    remove_new_unused_stack_bases(engine, bases_before)


def remove_new_unused_stack_bases(engine, before: set[str]) -> None:
    """The stack bases this session's builds made (absent when it started) that no project image
    sits on any more: gone with the session, like the images the tests built on them."""
    from cudaenv.errors import EngineError
    from cudaenv.images.accounting import inventory

    for stack in inventory(engine).unused:
        if stack.base.info.id in before:
            continue
        for name in stack.base.info.tags or (stack.base.info.id,):
            try:
                engine.remove_image(name)
            except EngineError:  # a container still uses it: the daemon keeps it
                pass


@pytest.fixture(scope="session")
def host_ca_bundle() -> str | None:
    """The host's CA bundle, for builds that reach PyPI through a TLS-intercepting proxy (as here)."""
    for candidate in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"):
        if Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture
def package_index(tmp_path_factory):
    """A PEP 503 index on loopback serving wheels the test builds (tests/support/package_index.py)."""
    from tests.support.package_index import serve_index

    index, stop = serve_index(tmp_path_factory.mktemp("index"))
    yield index
    stop()
