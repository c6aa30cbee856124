"""Which docker CLI builds with BuildKit: probed on stand-in CLIs that answer like real ones."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cudaenv.engine import builders


def fake_docker(directory: Path, *, version: str, buildx: bool) -> Path:
    """A shell script answering `--version` and `buildx version` the way a docker CLI does."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "docker"
    buildx_branch = 'echo "github.com/docker/buildx v0.12.1"; exit 0' if buildx else \
        'echo "docker: unknown command: docker buildx" >&2; exit 1'
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "Docker version {version}, build abc1234"; exit 0; fi\n'
        f'if [ "$1" = "buildx" ]; then {buildx_branch}; fi\n'
        "exit 2\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.fixture(autouse=True)
def _fresh_cache():
    builders.find_cli_builder.cache_clear()
    yield
    builders.find_cli_builder.cache_clear()


def test_cli_with_buildx_plugin_uses_buildx(tmp_path):
    cli = fake_docker(tmp_path, version="27.3.1", buildx=True)
    assert builders.probe_cli_builder(str(cli)) == builders.CliBuilder(str(cli), "buildx")


def test_classic_client_before_23_uses_builtin_buildkit(tmp_path):
    cli = fake_docker(tmp_path, version="20.10.24+dfsg1", buildx=False)
    assert builders.probe_cli_builder(str(cli)) == builders.CliBuilder(str(cli), "buildkit")


def test_new_client_without_buildx_cannot_use_buildkit(tmp_path):
    cli = fake_docker(tmp_path, version="28.2.2", buildx=False)
    assert builders.probe_cli_builder(str(cli)) is None


def test_first_capable_cli_on_path_wins_over_an_incapable_one(tmp_path, monkeypatch):
    fake_docker(tmp_path / "local", version="28.2.2", buildx=False)
    classic = fake_docker(tmp_path / "usr", version="20.10.24", buildx=False)
    monkeypatch.delenv("CUDAENV_DOCKER_CLI", raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "local"), str(tmp_path / "usr")]))
    assert builders.find_cli_builder() == builders.CliBuilder(str(classic), "buildkit")


def test_no_capable_cli_means_sdk_fallback(tmp_path, monkeypatch):
    fake_docker(tmp_path, version="28.2.2", buildx=False)
    monkeypatch.delenv("CUDAENV_DOCKER_CLI", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert builders.find_cli_builder() is None


def test_explicit_cli_overrides_path(tmp_path, monkeypatch):
    fake_docker(tmp_path / "a", version="27.0.0", buildx=True)
    chosen = fake_docker(tmp_path / "b", version="20.10.5", buildx=False)
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    monkeypatch.setenv("CUDAENV_DOCKER_CLI", str(chosen))
    assert builders.find_cli_builder() == builders.CliBuilder(str(chosen), "buildkit")


def test_buildx_command_loads_image_and_passes_labels_and_secrets(tmp_path):
    request = builders.BuildRequest(
        context=tmp_path, tags=("a:1", "a:latest"), labels={"io.cudaenv.x": "y"},
        build_args={"PY": "3.11"}, secrets={"ca": tmp_path / "ca.pem"}, no_cache=True,
    )
    argv = builders._cli_command(builders.CliBuilder("docker", "buildx"), request, tmp_path / "Dockerfile", tmp_path / "iid")
    assert argv[:4] == ["docker", "buildx", "build", "--load"]
    assert ["-t", "a:1"] == argv[argv.index("-t"):argv.index("-t") + 2]
    assert "io.cudaenv.x=y" in argv and "PY=3.11" in argv
    assert f"id=ca,src={tmp_path / 'ca.pem'}" in argv
    assert "--no-cache" in argv and argv[-1] == str(tmp_path)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("ubuntu:22.04", ("ubuntu", "22.04")),
        ("localhost:5000/ns/img:tag", ("localhost:5000/ns/img", "tag")),
        ("localhost:5000/ns/img", ("localhost:5000/ns/img", None)),
        ("img", ("img", None)),
    ],
)
def test_split_reference_keeps_registry_port_out_of_the_tag(reference, expected):
    assert builders.split_reference(reference) == expected


def counting_docker(directory: Path, calls: Path, *, version: str = "20.10.24", buildx: bool = False) -> Path:
    """fake_docker that also appends a line to ``calls`` every time it runs."""
    script = fake_docker(directory, version=version, buildx=buildx)
    text = script.read_text().replace("#!/bin/sh\n", f"#!/bin/sh\necho run >> {calls}\n", 1)
    script.write_text(text)
    return script


@pytest.fixture
def probe_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDAENV_DOCKER_CLI", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path


def test_the_probe_answer_is_remembered_across_processes(probe_home):
    calls = probe_home / "calls"
    cli = counting_docker(probe_home / "bin", calls)
    assert builders.find_cli_builder() == builders.CliBuilder(str(cli), "buildkit")
    probed = calls.read_text().count("run")
    assert probed >= 1
    builders.find_cli_builder.cache_clear()  # as a new process would start
    assert builders.find_cli_builder() == builders.CliBuilder(str(cli), "buildkit")
    assert calls.read_text().count("run") == probed  # answered from the record, the CLI did not run


def test_a_changed_cli_is_probed_again(probe_home):
    calls = probe_home / "calls"
    counting_docker(probe_home / "bin", calls, version="20.10.24")
    assert builders.find_cli_builder().mode == "buildkit"
    builders.find_cli_builder.cache_clear()
    (probe_home / "bin" / "docker").unlink()
    counting_docker(probe_home / "bin", calls, version="28.2.2", buildx=True)  # upgraded, with buildx
    assert builders.find_cli_builder().mode == "buildx"


def test_a_buildx_plugin_installed_later_is_noticed(probe_home, monkeypatch):
    monkeypatch.setenv("DOCKER_CONFIG", str(probe_home / "docker-config"))
    cli = counting_docker(probe_home / "bin", probe_home / "calls", version="28.2.2", buildx=False)
    # like the real CLI: buildx works once the plugin file is in $DOCKER_CONFIG/cli-plugins
    cli.write_text(cli.read_text().replace('if [ "$1" = "buildx" ]; then',
                                           'if [ "$1" = "buildx" ] && [ -e "$DOCKER_CONFIG/cli-plugins/docker-buildx" ]; '
                                           'then echo "github.com/docker/buildx v0.12.1"; exit 0; fi\n'
                                           'if [ "$1" = "buildx" ]; then'))
    assert builders.find_cli_builder() is None
    builders.find_cli_builder.cache_clear()
    plugins = probe_home / "docker-config" / "cli-plugins"
    plugins.mkdir(parents=True)
    (plugins / "docker-buildx").write_text("")
    assert builders.find_cli_builder() == builders.CliBuilder(str(cli), "buildx")


def test_a_probe_record_others_can_write_is_ignored(probe_home):
    calls = probe_home / "calls"
    counting_docker(probe_home / "bin", calls)
    builders.find_cli_builder()
    probed = calls.read_text().count("run")
    (probe_home / "cache" / "buildkit-probe.json").chmod(0o666)
    builders.find_cli_builder.cache_clear()
    builders.find_cli_builder()
    assert calls.read_text().count("run") > probed
