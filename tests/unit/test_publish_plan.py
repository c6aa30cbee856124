"""`cudaenv publish` planning: the tag scheme, the content hash, retries, and the registry check.

The tag scheme is the one cudaenv/images/publish.py's docstring documents (readable tags, then
``hash-<content hash>``). Stacks come from ``select_stacks`` (what the CLI's flags select) or
from the resolver for a declared host (what a project's lock holds). The registry-check tests
talk HTTP to a small server on loopback that plays a registry answering 503 / 401 / 500: a
real registry cannot be made to fail on cue. No Docker is needed here.
"""

from __future__ import annotations

import http.server
import io
import threading
from dataclasses import replace

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.errors import BuildError
from cudaenv.matrix import load_matrix
from cudaenv.images.publish import (
    BASE_REPOSITORY,
    PublishItem,
    content_hash,
    is_transient,
    plan_items,
    publish_items,
    readable_tags,
    select_stacks,
    with_retries,
)
from cudaenv.engine.registry import RegistryAuthError, RegistryClient, RegistryError
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import gpu_by_name

REGISTRY = "registry.example.com/ml"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def one_stack(matrix, *, cuda=None, python="3.11", flavor="runtime", frameworks=(), cudnn=None, os_name=None):
    stacks, notes = select_stacks(matrix, cuda=cuda, python=python, os_name=os_name, flavor=flavor,
                                  frameworks=frameworks, cudnn=cudnn)
    assert len(stacks) == 1, (stacks, notes)
    return stacks[0]


def only_item(matrix, stack, **settings) -> PublishItem:
    items = plan_items(matrix, [stack], REGISTRY, **settings)
    assert len(items) == 1
    return items[0]


# --- the tag scheme --------------------------------------------------------------------------


def test_runtime_base_is_tagged_by_full_and_short_cuda_version(matrix):
    stack = one_stack(matrix, cuda="12.4")
    assert readable_tags(stack) == ("cuda12.4.1-runtime-py3.11-ubuntu22.04", "cuda12.4-runtime-py3.11-ubuntu22.04")


def test_cudnn_base_tag_names_the_cudnn_major(matrix):
    stack = one_stack(matrix, cuda="12.4", cudnn="9")
    assert readable_tags(stack) == ("cuda12.4.1-cudnn9-runtime-py3.11-ubuntu22.04",
                                    "cuda12.4-cudnn9-runtime-py3.11-ubuntu22.04")


def test_devel_base_tag_names_the_devel_flavor(matrix):
    stack = one_stack(matrix, cuda="12.4", flavor="devel")
    assert readable_tags(stack)[0] == "cuda12.4.1-devel-py3.11-ubuntu22.04"


def test_framework_base_tag_ends_with_the_framework_but_not_its_companions(matrix):
    constraints = Constraints(python=SpecifierSet("==3.11"), cuda=SpecifierSet("==12.4"), flavor="runtime",
                              frameworks=(("torch", SpecifierSet("==2.6.0")), ("torchvision", SpecifierSet())))
    stack = resolve(matrix, constraints, Host(), explain=False).stack
    assert stack.framework("torchvision"), "the torch stack should carry torchvision as a companion"
    assert readable_tags(stack) == ("cuda12.4.1-runtime-py3.11-ubuntu22.04-torch2.6.0",
                                    "cuda12.4-runtime-py3.11-ubuntu22.04-torch2.6.0")


def test_wheels_base_tag_is_slim_python_with_framework_and_cuda_build(matrix):
    stack = one_stack(matrix, cuda="12.4", flavor="wheels", frameworks=("torch==2.6.0",))
    assert stack.base_image.startswith("python:3.11")
    assert readable_tags(stack) == ("py3.11-slim-torch2.6.0-cu124",)


def test_plan_tags_are_readable_tags_then_the_hash_tag(matrix):
    stack = one_stack(matrix, cuda="12.4")
    item = only_item(matrix, stack)
    assert item.tags[:-1] == readable_tags(stack)
    assert item.hash_tag == f"hash-{item.content_hash[:16]}"
    assert item.content_hash == content_hash(matrix, stack)


def test_plan_repository_is_the_registry_namespace_plus_cudaenv_base(matrix):
    item = only_item(matrix, one_stack(matrix, cuda="12.4"))
    assert item.repository == f"{REGISTRY}/{BASE_REPOSITORY}"
    assert item.name == f"{REGISTRY}/cudaenv-base:cuda12.4.1-runtime-py3.11-ubuntu22.04"


def test_plan_ignores_a_trailing_slash_on_the_registry(matrix):
    stack = one_stack(matrix, cuda="12.4")
    assert plan_items(matrix, [stack], REGISTRY + "/")[0].repository == f"{REGISTRY}/cudaenv-base"


def test_selection_over_cuda_and_python_plans_one_image_per_combination(matrix):
    stacks, _notes = select_stacks(matrix, cuda=">=12.3,<12.5", python="3.11,3.12", os_name=None,
                                   flavor="runtime", frameworks=(), cudnn=None)
    names = sorted(i.tags[0] for i in plan_items(matrix, stacks, REGISTRY))
    assert names == ["cuda12.3.2-runtime-py3.11-ubuntu22.04", "cuda12.3.2-runtime-py3.12-ubuntu22.04",
                     "cuda12.4.1-runtime-py3.11-ubuntu22.04", "cuda12.4.1-runtime-py3.12-ubuntu22.04"]


# --- the content hash ------------------------------------------------------------------------


def test_content_hash_ignores_the_base_registry_mirror(matrix):
    stack = one_stack(matrix, cuda="12.4")
    plain, mirrored = only_item(matrix, stack), only_item(matrix, stack, base_registry="mirror.example.com:5000")
    assert "FROM mirror.example.com:5000/nvidia/cuda:12.4.1-runtime-ubuntu22.04" in mirrored.dockerfile
    assert mirrored.dockerfile != plain.dockerfile
    assert mirrored.content_hash == plain.content_hash
    assert mirrored.tags == plain.tags


def test_content_hash_ignores_the_ca_certificate(matrix):
    stack = one_stack(matrix, cuda="12.4")
    plain, with_ca = only_item(matrix, stack), only_item(matrix, stack, ca_cert=True)
    assert "--mount=type=secret,id=cudaenv_ca" in with_ca.dockerfile
    assert "cudaenv_ca" not in plain.dockerfile
    assert with_ca.content_hash == plain.content_hash


def test_content_hash_ignores_the_builder(matrix):
    stack = one_stack(matrix, cuda="12.4")
    buildkit, classic = only_item(matrix, stack, buildkit=True), only_item(matrix, stack, buildkit=False)
    assert "--mount=type=cache" in buildkit.dockerfile
    assert "--mount" not in classic.dockerfile
    assert classic.content_hash == buildkit.content_hash


@pytest.mark.parametrize("other", [
    {"cuda": "12.3"},
    {"cuda": "12.4", "python": "3.12"},
    {"cuda": "12.4", "cudnn": "9"},
    {"cuda": "12.4", "flavor": "devel"},
    {"cuda": "12.4", "frameworks": ("torch==2.6.0",)},
], ids=["cuda", "python", "cudnn", "flavor", "framework"])
def test_content_hash_changes_with_the_stack(matrix, other):
    assert content_hash(matrix, one_stack(matrix, **other)) != content_hash(matrix, one_stack(matrix, cuda="12.4"))


@pytest.mark.parametrize("driver, gpus", [
    ("550.54.15", ("A100",)),  # runs CUDA 12.4 natively
    ("535.104.05", ("T4",)),  # through minor-version compatibility
    (None, ("RTX 3090",)),  # driver unknown
])
def test_content_hash_ignores_the_host_a_lock_was_resolved_for(matrix, driver, gpus):
    constraints = Constraints(python=SpecifierSet("==3.11"), frameworks=(("torch", SpecifierSet("==2.6.0")),),
                              cuda=SpecifierSet("==12.4"), flavor="runtime")
    host = Host(driver=driver, gpus=tuple(gpu_by_name(matrix, g) for g in gpus))
    locked = resolve(matrix, constraints, host, explain=False).stack
    selected = one_stack(matrix, cuda="12.4", frameworks=("torch==2.6.0",))
    assert content_hash(matrix, locked) == content_hash(matrix, selected)


def test_forward_compatibility_is_part_of_the_content(matrix):
    stack = one_stack(matrix, cuda="12.4")
    forward = replace(stack, driver_compatibility="forward")
    assert "cuda-compat-12-4" in only_item(matrix, forward).dockerfile
    assert content_hash(matrix, forward) != content_hash(matrix, stack)


def test_plan_publishes_one_image_for_locks_that_differ_only_in_their_host(matrix):
    constraints = Constraints(python=SpecifierSet("==3.11"), cuda=SpecifierSet("==12.4"), flavor="runtime")
    native = resolve(matrix, constraints, Host(driver="550.54.15"), explain=False).stack
    minor = resolve(matrix, constraints, Host(driver="535.104.05"), explain=False).stack
    assert native.driver_compatibility != minor.driver_compatibility
    assert len(plan_items(matrix, [native, minor], REGISTRY)) == 1


def test_base_dockerfile_holds_no_project_layers(matrix):
    dockerfile = only_item(matrix, one_stack(matrix, cuda="12.4")).dockerfile
    assert "uv venv" in dockerfile
    assert "useradd" not in dockerfile
    assert "COPY . " not in dockerfile


# --- retries ---------------------------------------------------------------------------------


class Flaky:
    """An action that raises the given errors in turn, then returns ``result``."""

    def __init__(self, *errors: Exception, result="done"):
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


def test_transient_failures_are_retried_with_exponential_backoff():
    sleeps, notes = [], []
    action = Flaky(RegistryError("registry: HTTP 503", transient=True), OSError("connection reset by peer"))
    assert with_retries(action, attempts=3, delay=1.0, sleep=sleeps.append, on_retry=notes.append) == "done"
    assert action.calls == 3
    assert sleeps == [1.0, 2.0]
    assert len(notes) == 2 and "retrying in 1s" in notes[0] and "retrying in 2s" in notes[1]


def test_retries_give_up_after_the_last_attempt_with_its_error():
    sleeps = []
    last = RegistryError("registry: timed out (third)", transient=True)
    action = Flaky(RegistryError("timed out", transient=True), RegistryError("timed out", transient=True), last)
    with pytest.raises(RegistryError) as raised:
        with_retries(action, attempts=3, sleep=sleeps.append)
    assert raised.value is last
    assert action.calls == 3
    assert sleeps == [1.0, 2.0]


def test_auth_errors_are_not_retried_even_when_they_look_transient():
    sleeps = []
    action = Flaky(RegistryAuthError("registry: HTTP 401 behind a 503 proxy, timed out"))
    with pytest.raises(RegistryAuthError):
        with_retries(action, attempts=3, sleep=sleeps.append)
    assert action.calls == 1
    assert sleeps == []


def test_permanent_registry_errors_are_not_retried():
    sleeps = []
    action = Flaky(RegistryError("registry.example.com: manifest invalid (HTTP 400)"))
    with pytest.raises(RegistryError):
        with_retries(action, attempts=3, sleep=sleeps.append)
    assert action.calls == 1
    assert sleeps == []


def test_build_errors_are_not_retried():
    sleeps = []
    action = Flaky(BuildError("image build failed at step RUN apt-get update"))
    with pytest.raises(BuildError):
        with_retries(action, attempts=3, sleep=sleeps.append)
    assert action.calls == 1


def test_a_permanent_error_stays_permanent_when_the_registry_port_contains_503():
    assert not is_transient(RegistryError("127.0.0.1:35030: asking for team/cudaenv-base:hash-00 failed (HTTP 500)"))


# --- the registry check before building (HTTP on loopback) -----------------------------------


class FakeRegistry:
    """A loopback HTTP server answering ``HEAD /v2/<repo>/manifests/<tag>`` from ``answers``:
    a list of (status, headers) per path, consumed in order (the last one repeats)."""

    def __init__(self):
        self.answers: dict[str, list[tuple[int, dict]]] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):  # noqa: N802 (http.server's naming)
                outer.requests.append(("HEAD", self.path, self.headers.get("Authorization")))
                queue = outer.answers.get(self.path, [(404, {})])
                status, headers = queue.pop(0) if len(queue) > 1 else queue[0]
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_registry(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDAENV_REGISTRY_USER", raising=False)
    monkeypatch.delenv("CUDAENV_REGISTRY_PASSWORD", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))  # no `docker login` credentials from this machine
    server = FakeRegistry()
    yield server
    server.close()


class NoBuildEngine:
    """Publishing must not build what the registry already has (or what it could not check)."""

    def build(self, *args, **kwargs):
        raise AssertionError("publish_items built an image it should have skipped")


def item_in(matrix, registry_host: str, *, cuda: str, hash_tag: str) -> PublishItem:
    planned = plan_items(matrix, [one_stack(matrix, cuda=cuda)], f"{registry_host}/team")[0]
    return replace(planned, tags=planned.tags[:-1] + (hash_tag,))


def manifest_path(tag: str) -> str:
    return f"/v2/team/cudaenv-base/manifests/{tag}"


def test_registry_check_is_retried_through_a_transient_503(matrix, fake_registry):
    item = item_in(matrix, fake_registry.host, cuda="12.4", hash_tag="hash-aaaaaaaaaaaaaaaa")
    digest = "sha256:" + "b" * 64
    fake_registry.answers[manifest_path(item.hash_tag)] = [(503, {}), (200, {"Docker-Content-Digest": digest})]
    sleeps = []
    [outcome] = publish_items(NoBuildEngine(), [item], sleep=sleeps.append)
    assert (outcome.status, outcome.digest) == ("skipped", digest)
    assert sleeps == [1.0]
    assert len(fake_registry.requests) == 2


def test_registry_that_has_the_hash_tag_is_skipped_without_building(matrix, fake_registry):
    item = item_in(matrix, fake_registry.host, cuda="12.4", hash_tag="hash-aaaaaaaaaaaaaaaa")
    fake_registry.answers[manifest_path(item.hash_tag)] = [(200, {"Docker-Content-Digest": "sha256:" + "c" * 64})]
    [outcome] = publish_items(NoBuildEngine(), [item], sleep=lambda _s: None)
    assert outcome.status == "skipped"
    assert [r[1] for r in fake_registry.requests] == [manifest_path("hash-aaaaaaaaaaaaaaaa")]


def test_rejected_credentials_fail_at_once_without_retry_or_password(matrix, fake_registry, monkeypatch):
    password = "pw-never-printed-7f3a"
    monkeypatch.setenv("CUDAENV_REGISTRY_USER", "ci-bot")
    monkeypatch.setenv("CUDAENV_REGISTRY_PASSWORD", password)
    item = item_in(matrix, fake_registry.host, cuda="12.4", hash_tag="hash-aaaaaaaaaaaaaaaa")
    fake_registry.answers[manifest_path(item.hash_tag)] = [(401, {"WWW-Authenticate": 'Basic realm="test"'})]
    sleeps = []
    [outcome] = publish_items(NoBuildEngine(), [item], sleep=sleeps.append)
    assert outcome.status == "failed"
    assert "credentials were rejected" in outcome.detail
    assert password not in outcome.detail
    assert sleeps == [] and len(fake_registry.requests) == 1
    assert fake_registry.requests[0][2].startswith("Basic ")  # the credentials were sent, in a header


def test_one_failed_check_does_not_stop_the_next_image(matrix, fake_registry):
    broken = item_in(matrix, fake_registry.host, cuda="12.3", hash_tag="hash-aaaaaaaaaaaaaaaa")
    present = item_in(matrix, fake_registry.host, cuda="12.4", hash_tag="hash-dddddddddddddddd")
    fake_registry.answers[manifest_path(broken.hash_tag)] = [(500, {})]
    fake_registry.answers[manifest_path(present.hash_tag)] = [(200, {"Docker-Content-Digest": "sha256:" + "e" * 64})]
    outcomes = publish_items(NoBuildEngine(), [broken, present], sleep=lambda _s: None)
    assert [(o.item.tags[0], o.status) for o in outcomes] == [(broken.tags[0], "failed"), (present.tags[0], "skipped")]
    assert "HTTP 500" in outcomes[0].detail


def test_engine_push_errors_are_judged_by_the_engines_own_words():
    from cudaenv.engine.registry import engine_error_is_transient

    assert engine_error_is_transient("received unexpected HTTP status: 503 Service Unavailable")
    assert engine_error_is_transient("net/http: TLS handshake timeout")
    assert not engine_error_is_transient("denied: requested access to the resource is denied")
    assert not engine_error_is_transient("manifest invalid: layer hash-5030aa unknown")


class TokenServiceSeen(RegistryClient):
    """Records the token request instead of sending it: which realm got the Basic credentials."""

    def __init__(self, registry: str):
        super().__init__(registry, auth=("ci-bot", "pw-7f3a"))
        self.sent: list[tuple[str, str | None]] = []

    def _open(self, request):
        self.sent.append((request.full_url, request.get_header("Authorization")))
        return io.BytesIO(b'{"token": "t0k"}')


@pytest.mark.parametrize("realm, gets_credentials", [
    ("https://auth.example.com/token", True),
    ("http://registry.example.com:5000/token", True),  # the registry itself
    ("http://auth.example.com/token", False),  # plain HTTP to another host: never the password
])
def test_basic_credentials_reach_a_token_service_only_over_https_or_on_the_registry(realm, gets_credentials):
    client = TokenServiceSeen("registry.example.com:5000")
    assert client._token(f'Bearer realm="{realm}",service="registry",scope="repository:ml/base:pull"') == "t0k"
    [(url, authorization)] = client.sent
    assert url.startswith(realm + "?")
    assert (authorization is not None and authorization.startswith("Basic ")) is gets_credentials


# --- an aarch64 stack (issue 35) -------------------------------------------------------------


def aarch64_stack(matrix):
    constraints = Constraints(python=SpecifierSet("==3.11"), cuda=SpecifierSet("==12.4"), flavor="runtime")
    stack = resolve(matrix, constraints, Host(arch="aarch64"), explain=False).stack
    assert stack.arch == "aarch64"
    return stack


def test_an_aarch64_base_has_tags_of_its_own(matrix):
    # the same stack for x86_64 is another image: one registry tag cannot name both
    x86, arm = one_stack(matrix, cuda="12.4"), aarch64_stack(matrix)
    assert readable_tags(arm) == tuple(f"{t}-arm64" for t in readable_tags(x86))
    assert not set(readable_tags(arm)) & set(readable_tags(x86))


class RecordingEngine:
    def __init__(self):
        self.requests = []

    def build(self, request, *args, **kwargs):
        self.requests.append(request)
        raise BuildError("recorded, not built")


def test_an_aarch64_base_is_built_for_linux_arm64_on_an_x86_64_machine(matrix, fake_registry, monkeypatch):
    import cudaenv.hosts.target

    monkeypatch.setattr(cudaenv.hosts.target, "machine_arch", lambda: "x86_64")
    arm = plan_items(matrix, [aarch64_stack(matrix)], f"{fake_registry.host}/team")[0]
    x86 = plan_items(matrix, [one_stack(matrix, cuda="12.4")], f"{fake_registry.host}/team")[0]
    engine = RecordingEngine()
    outcomes = publish_items(engine, [arm, x86], sleep=lambda _s: None)
    assert [o.status for o in outcomes] == ["failed", "failed"]  # the registry has neither: both were built
    assert [r.platform for r in engine.requests] == ["linux/arm64", None]
