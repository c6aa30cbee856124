"""The Engine contract, held by every engine: Docker, Podman rootful and Podman rootless (real
engines, real containers; the rootless Podman is a test user's, driven through runuser).

Everything above ``cudaenv.engine`` (build, run, ps, stop, images, publish, push) relies on
exactly these behaviours, whichever engine ``get_engine()`` returns.
"""

from __future__ import annotations

import os
import pwd
import uuid

import pytest

from cudaenv.engine import BuildRequest, ContainerSpec, Mount
from cudaenv.errors import BuildError, EngineError

pytestmark = pytest.mark.registry


def owner_ids(kind: str) -> tuple[int, int]:
    """The UID:GID cudaenv runs as with this engine (the rootless tests' caller is the test user)."""
    if kind == "podman-rootless":
        from tests.support.podman_env import ROOTLESS_USER

        entry = pwd.getpwnam(ROOTLESS_USER)
        return entry.pw_uid, entry.pw_gid
    return os.getuid(), os.getgid()


@pytest.fixture
def tag(any_engine):
    engine, _ = any_engine
    name = f"cudaenv-test/contract:{uuid.uuid4().hex[:10]}"
    yield name
    engine.remove_image(name, force=True)


@pytest.fixture
def label():
    return f"io.cudaenv.test-contract={uuid.uuid4().hex[:12]}"


@pytest.fixture
def work_dir(engine_kind):
    """A directory of the engine's caller (the rootless user, for rootless Podman, which cannot
    enter root's pytest directories)."""
    import shutil
    import tempfile
    from pathlib import Path

    directory = Path(tempfile.mkdtemp(prefix="cudaenv-contract-"))
    directory.chmod(0o755)
    os.chown(directory, *owner_ids(engine_kind))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def shared_dir(work_dir, engine_kind):
    """A directory the engine's caller owns, mounted into containers."""
    directory = work_dir / "shared"
    directory.mkdir()
    os.chown(directory, *owner_ids(engine_kind))
    return directory


def write_context(directory, dockerfile: str, files: dict[str, str] | None = None, owner=None):
    directory.mkdir(exist_ok=True)
    (directory / "Dockerfile").write_text(dockerfile)
    for name, text in (files or {}).items():
        (directory / name).write_text(text)
    if owner:
        for path in (directory, *directory.iterdir()):
            os.chown(path, *owner)
    directory.chmod(0o755)
    return directory


def test_a_build_keeps_cache_mounts_and_secrets_out_of_the_image_and_runs(any_engine, engine_kind, tag, work_dir):
    engine, standin = any_engine
    secret = work_dir / "token"
    secret.write_text("s3cr3t-value\n")
    secret.chmod(0o644)
    context = write_context(work_dir / "ctx", (
        f"FROM {standin}\nCOPY greeting.txt /opt/greeting.txt\n"
        "RUN --mount=type=cache,target=/root/.cache echo cached > /root/.cache/x && echo cache-ok\n"
        "RUN --mount=type=secret,id=token test \"$(cat /run/secrets/token)\" = s3cr3t-value && echo secret-ok\n"),
        {"greeting.txt": "hello from the build context\n"}, owner=owner_ids(engine_kind))
    seen: list[str] = []
    result = engine.build(BuildRequest(context=context, tags=(tag,), labels={"io.cudaenv.test": "yes"},
                                       secrets={"token": secret}), seen.append)
    assert result.image_id.startswith("sha256:")
    assert any("secret-ok" in line for line in seen)
    assert engine.image_labels(tag)["io.cudaenv.test"] == "yes"
    run = engine.run(ContainerSpec(image=tag, command=("sh", "-c", "cat /opt/greeting.txt; ls /root/.cache 2>&1; "
                                                       "ls /run/secrets 2>&1; python3 --version; exit 3")))
    assert run.exit_code == 3
    assert "hello from the build context" in run.output
    assert "Python 3." in run.output
    assert "s3cr3t" not in run.output and "token" not in run.output.replace("No such file", "")


def test_a_failed_build_names_the_failing_step_and_its_output(any_engine, engine_kind, tag, work_dir):
    engine, standin = any_engine
    context = write_context(work_dir / "ctx", f"FROM {standin}\nRUN echo step-one\nRUN echo about-to-fail && exit 7\n",
                            owner=owner_ids(engine_kind))
    with pytest.raises(BuildError) as info:
        engine.build(BuildRequest(context=context, tags=(tag,)))
    assert "about-to-fail" in (info.value.step or "") + str(info.value)
    assert "about-to-fail" in info.value.log_tail


def test_the_requests_ignore_rules_keep_files_out_of_the_context(any_engine, engine_kind, tag, work_dir):
    engine, standin = any_engine
    context = write_context(work_dir / "ctx", "unused", {"kept.txt": "k\n", "secret.env": "TOKEN=abc\n"},
                            owner=owner_ids(engine_kind))
    engine.build(BuildRequest(context=context, tags=(tag,), dockerfile_text=f"FROM {standin}\nCOPY . /ctx/\n",
                              dockerignore_text="secret.env\n"))
    listing = engine.run(ContainerSpec(image=tag, command=("ls", "/ctx"))).output
    assert "kept.txt" in listing and "secret.env" not in listing


def test_run_passes_environment_and_user(any_engine):
    engine, standin = any_engine
    run = engine.run(ContainerSpec(image=standin, command=("sh", "-c", 'echo "$GREETING"; id -u'),
                                   env={"GREETING": "hi; $(not run)"}, user="1234:1234"))
    assert run.output.splitlines() == ["hi; $(not run)", "1234"]


def test_files_written_in_a_mount_belong_to_the_caller_on_the_host(any_engine, engine_kind, shared_dir):
    engine, standin = any_engine
    uid, gid = owner_ids(engine_kind)
    run = engine.run(ContainerSpec(image=standin, command=("sh", "-c", "echo made > /workspace/made.txt"),
                                   mounts=(Mount(shared_dir, "/workspace"),), user=f"{uid}:{gid}"))
    assert run.exit_code == 0, run.output
    made = (shared_dir / "made.txt").stat()
    assert (made.st_uid, made.st_gid) == (uid, gid)


def test_a_container_is_listed_by_label_through_its_life(any_engine, label):
    engine, standin = any_engine
    key = label.split("=")[0]
    container_id = engine.create(ContainerSpec(image=standin, command=("sh", "-c", "echo out; echo err >&2; exit 5"),
                                               labels={key: label.split("=")[1]}, name=f"cudaenv-test-{uuid.uuid4().hex[:8]}"))
    try:
        listed = engine.containers(label)
        assert [(c.id, c.status) for c in listed] == [(container_id, "created")]
        assert engine.containers(label, running_only=True) == []
        chunks: list[bytes] = []
        engine.start(container_id)
        engine.stream_output(container_id, chunks.append)
        assert engine.wait(container_id, timeout=60) == 5
        assert sorted(b"".join(chunks).decode().split()) == ["err", "out"]
        exited = engine.containers(label)[0]
        assert (exited.status, exited.exit_code, exited.labels[key]) == ("exited", 5, label.split("=")[1])
        assert exited.started_at.startswith("2")
        assert engine.inspect(container_id)["Id"] == container_id
    finally:
        engine.remove(container_id)
    assert engine.containers(label) == []
    engine.remove(container_id)  # a missing container is not an error


def test_exec_stop_and_remove_a_running_container(any_engine, label):
    engine, standin = any_engine
    key, value = label.split("=")
    container_id = engine.create(ContainerSpec(image=standin, command=("sleep", "300"), labels={key: value}))
    try:
        engine.start(container_id)
        assert [c.status for c in engine.containers(label, running_only=True)] == ["running"]
        result = engine.exec(container_id, ("sh", "-c", 'echo "$X"; id -u; exit 4'), user="1000", env={"X": "in-exec"})
        assert (result.exit_code, result.output.split()) == (4, ["in-exec", "1000"])
        with pytest.raises(TimeoutError):
            engine.wait(container_id, timeout=0.5)
        engine.stop(container_id, timeout=1)
        assert engine.containers(label, running_only=True) == []
        with pytest.raises(EngineError, match="not running"):
            engine.exec(container_id, ("true",))
    finally:
        engine.remove(container_id)


@pytest.mark.parametrize("auto_remove", [False, True], ids=["removed-after", "auto-remove"])
def test_the_foreground_run_streams_both_outputs_and_leaves_nothing(any_engine, label, capfdbinary, auto_remove):
    """`cudaenv run` in the foreground asks for auto_remove on a named container (Podman: one
    `podman run --rm`, no separate create, start or rm); with or without it, the output, the exit
    code and an empty listing after are the same."""
    from cudaenv.run.session import foreground

    engine, standin = any_engine
    key, value = label.split("=")
    container_id = engine.create(ContainerSpec(image=standin, labels={key: value}, auto_remove=auto_remove,
                                               name=f"cudaenv-contract-{uuid.uuid4().hex[:8]}",
                                               command=("sh", "-c", "echo out; echo err >&2; printf last; exit 6")))
    assert foreground(engine, container_id) == 6
    out = capfdbinary.readouterr().out  # stdout and stderr may interleave differently on each engine
    assert sorted(out.replace(b"lasterr", b"last\nerr").split()) == [b"err", b"last", b"out"]
    assert len(out) == len(b"out\nerr\nlast")
    assert engine.containers(label) == []


def test_a_foreground_run_of_an_image_that_is_not_here_is_an_engine_error_and_leaves_nothing(any_engine, label):
    """Never a pull, never the engine's text as if it were the container's output: cudaenv's error."""
    from cudaenv.errors import EngineError
    from cudaenv.run.session import foreground

    engine, _ = any_engine
    key, value = label.split("=")
    missing = f"cudaenv-missing-{uuid.uuid4().hex[:8]}:none"
    with pytest.raises(EngineError, match="not found locally"):
        container_id = engine.create(ContainerSpec(image=missing, labels={key: value}, auto_remove=True,
                                                   name=f"cudaenv-contract-{uuid.uuid4().hex[:8]}", command=("true",)))
        foreground(engine, container_id)
    assert engine.containers(label) == []


def test_images_are_tagged_described_listed_by_label_and_removed(any_engine, engine_kind, tag, work_dir):
    engine, standin = any_engine
    marker = uuid.uuid4().hex[:12]
    context = write_context(work_dir / "ctx", f"FROM {standin}\nRUN echo layer > /opt/layer\n",
                            owner=owner_ids(engine_kind))
    built = engine.build(BuildRequest(context=context, tags=(tag,), labels={"io.cudaenv.test-image": marker}))
    other = tag + "-other"
    engine.tag(tag, other)
    info = engine.image_info(tag)
    assert info.id == built.image_id
    assert set(info.tags) >= {tag, other}
    assert info.labels["io.cudaenv.test-image"] == marker
    base = engine.image_info(standin)
    assert info.diff_ids[:len(base.diff_ids)] == base.diff_ids and len(info.diff_ids) > len(base.diff_ids)
    assert sum(size for _step, size in info.history) == info.size
    assert [i.id for i in engine.images(f"io.cudaenv.test-image={marker}")] == [built.image_id]
    engine.remove_image(other)
    assert engine.image_labels(other) is None
    engine.remove_image(other)  # a missing image is not an error
    assert engine.image_info(f"cudaenv-test/none:{marker}") is None


def test_push_then_pull_through_a_registry(any_engine, tag, registry):
    engine, standin = any_engine
    reference = f"{registry.host}/contract/{uuid.uuid4().hex[:8]}:v1"
    engine.tag(standin, reference)
    engine.push(reference)
    assert registry.manifest_digest(reference.split("/", 1)[1].rsplit(":", 1)[0], "v1")
    engine.remove_image(reference)
    assert engine.image_labels(reference) is None
    pulled = engine.pull(reference)
    try:
        assert pulled.startswith("sha256:")
        assert engine.image_labels(reference) is not None
    finally:
        engine.remove_image(reference)


def test_defaults_the_engine_cannot_grant_are_reported_and_the_rest_run(any_engine):
    engine, standin = any_engine
    wanted = {"memlock": (-1, -1), "stack": (67108864, 67108864)}
    refused = engine.refused_ulimits(standin, wanted)
    granted = {name: value for name, value in wanted.items() if name not in refused}
    run = engine.run(ContainerSpec(image=standin, command=("sh", "-c", "ulimit -s; ulimit -n"), ulimits=granted))
    assert run.exit_code == 0, run.output
    if "stack" in granted:
        assert run.output.split()[0] == "65536"
