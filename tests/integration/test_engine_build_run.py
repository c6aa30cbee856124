"""The engine against a real Docker daemon: build an image, run containers from it."""

from __future__ import annotations

import uuid

import pytest

from cudaenv.engine import BuildRequest, ContainerSpec
from cudaenv.engine import builders
from cudaenv.engine.docker_engine import DockerEngine
from cudaenv.errors import BuildError

pytestmark = pytest.mark.docker


@pytest.fixture
def tag(engine):
    name = f"cudaenv-test/engine:{uuid.uuid4().hex[:10]}"
    yield name
    engine.remove_image(name, force=True)


def write_context(tmp_path, dockerfile: str, files: dict[str, str] | None = None):
    (tmp_path / "Dockerfile").write_text(dockerfile)
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_build_then_run_returns_exit_code_and_output(engine, standin_image, tag, tmp_path):
    context = write_context(
        tmp_path,
        f"FROM {standin_image}\nCOPY greeting.txt /opt/greeting.txt\n",
        {"greeting.txt": "hello from the build context\n"},
    )
    result = engine.build(BuildRequest(context=context, tags=(tag,), labels={"io.cudaenv.test": "yes"}))
    print(f"built {tag} with builder={result.builder} in {result.seconds:.1f}s")
    assert result.image_id.startswith("sha256:")
    assert engine.image_labels(tag)["io.cudaenv.test"] == "yes"

    run = engine.run(ContainerSpec(image=tag, command=("sh", "-c", "cat /opt/greeting.txt; python3 --version; exit 3")))
    assert run.exit_code == 3
    assert "hello from the build context" in run.output
    assert "Python 3." in run.output


def test_builds_go_through_buildkit_when_a_capable_cli_exists(engine, standin_image, tag, tmp_path):
    if builders.find_cli_builder() is None:
        pytest.skip("no docker CLI with BuildKit on this machine; the SDK fallback is tested separately")
    context = write_context(tmp_path, f"# syntax-free BuildKit-only feature: heredoc-less cache mount\nFROM {standin_image}\n"
                                      "RUN --mount=type=cache,target=/root/.cache echo cached > /root/.cache/x && echo ok\n")
    result = engine.build(BuildRequest(context=context, tags=(tag,)))
    assert result.builder in {"buildx", "buildkit"}


@pytest.mark.parametrize("builder", ["cli", "sdk"])
@pytest.mark.parametrize("rules_from", ["context", "request"])
def test_rendered_dockerfile_text_builds_and_honours_dockerignore(engine, standin_image, tag, tmp_path, monkeypatch,
                                                                 builder, rules_from):
    """The request's ignore rules, else the context's .dockerignore, keep files out with either builder."""
    if builder == "sdk":
        monkeypatch.setattr("cudaenv.engine.docker_engine.find_cli_builder", lambda: None)
    files = {"kept.txt": "kept\n", "secret.env": "TOKEN=abc\n", "other.key": "k\n"}
    if rules_from == "context":
        files[".dockerignore"] = "secret.env\n"
    context = write_context(tmp_path, "unused", files)
    text = f"FROM {standin_image}\nCOPY . /ctx/\n"
    rules = "# generated\nsecret.env\n*.key\n" if rules_from == "request" else None
    result = engine.build(BuildRequest(context=context, tags=(tag,), dockerfile_text=text, dockerignore_text=rules))
    assert (result.builder == "sdk") is (builder == "sdk")
    run = engine.run(ContainerSpec(image=tag, command=("ls", "/ctx")))
    assert run.exit_code == 0
    assert "kept.txt" in run.output
    assert "secret.env" not in run.output
    assert ("other.key" in run.output) is (rules_from == "context")


def test_failed_build_names_the_failing_step_and_its_output(engine, standin_image, tag, tmp_path):
    context = write_context(tmp_path, f"FROM {standin_image}\nRUN echo step-one\nRUN echo about-to-fail && exit 7\n")
    with pytest.raises(BuildError) as info:
        engine.build(BuildRequest(context=context, tags=(tag,)))
    assert "exit 7" in info.value.step or "exit 7" in str(info.value)
    assert "about-to-fail" in info.value.log_tail


def test_sdk_fallback_builds_when_no_buildkit_cli(engine, standin_image, tag, tmp_path, monkeypatch):
    monkeypatch.setattr("cudaenv.engine.docker_engine.find_cli_builder", lambda: None)
    context = write_context(tmp_path, f"FROM {standin_image}\nRUN echo built-by-sdk > /opt/who\n")
    result = engine.build(BuildRequest(context=context, tags=(tag, tag + "-alias")))
    try:
        assert result.builder == "sdk"
        run = engine.run(ContainerSpec(image=tag + "-alias", command=("cat", "/opt/who")))
        assert run.output.strip() == "built-by-sdk"
    finally:
        engine.remove_image(tag + "-alias", force=True)


def test_sdk_fallback_reports_failing_step(engine, standin_image, tag, tmp_path, monkeypatch):
    monkeypatch.setattr("cudaenv.engine.docker_engine.find_cli_builder", lambda: None)
    context = write_context(tmp_path, f"FROM {standin_image}\nRUN echo sdk-fail && exit 5\n")
    with pytest.raises(BuildError) as info:
        engine.build(BuildRequest(context=context, tags=(tag,)))
    assert "RUN echo sdk-fail" in (info.value.step or "")
    assert "sdk-fail" in info.value.log_tail


def test_run_passes_environment_and_user(engine, standin_image):
    run = engine.run(ContainerSpec(image=standin_image, command=("sh", "-c", 'echo "$GREETING"; id -u'),
                                   env={"GREETING": "hi; $(not run)"}, user="1234:1234"))
    assert run.output.splitlines() == ["hi; $(not run)", "1234"]


def test_unreachable_engine_is_a_clear_error(monkeypatch):
    from cudaenv.errors import EngineError

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(EngineError, match="cannot reach the Docker engine"):
        DockerEngine().client
