"""`.devcontainer/devcontainer.json` holds what `cudaenv run` gives the container, in the Dev
Containers specification's fields (containers.dev/implementors/json_reference): the same GPUs,
shared memory, IPC, ulimits, environment and user, built in-process from a plain project."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudaenv.errors import UserError
from cudaenv.export.devcontainer import ImageChoice, devcontainer_document, gpu_run_args, render, target_path


def project(*, env=(), ipc=None, shm_size="8g", ulimits=(), ports=(), config_path=None, name="detector"):
    run = SimpleNamespace(env=env, ipc=ipc, shm_size=shm_size, ulimits=ulimits, ports=ports)
    return SimpleNamespace(name=name, root=Path("/work/detector"), config_path=config_path, run=run)


@pytest.mark.parametrize("kind, value, expected", [
    ("none", None, []),
    ("all", None, ["--gpus", "all"]),
    ("count", 2, ["--gpus", "2"]),
    ("count", "3", ["--gpus", "3"]),
    ("ids", ("0", "1"), ["--gpus", '"device=0,1"']),
    ("ids", ("GPU-1a2b",), ["--gpus", '"device=GPU-1a2b"']),
    ("auto", None, ["--gpus", "all"]),
    ("auto", 2, ["--gpus", "2"]),
], ids=["none", "all", "count", "count-text", "ids", "uuid", "auto", "auto-n"])
def test_gpus_are_the_docker_run_flag_cudaenv_run_passes(kind, value, expected):
    """The spec has no field for which GPUs, so `runArgs` carries Docker's own --gpus value; an
    editor session on `auto` has the host to itself (all); `auto:2` asked for two GPUs, and gets
    two (Docker's count), not every GPU."""
    assert gpu_run_args(kind, value) == expected


def test_no_gpu_hides_the_devices_and_asks_no_gpu_host():
    """`--gpus none` under `cudaenv run` sets NVIDIA_VISIBLE_DEVICES=void (CUDA images say "all")."""
    document = devcontainer_document(project(), "img", ("none", None), "1000:1000")
    assert document["containerEnv"] == {"HOME": "/tmp", "NVIDIA_VISIBLE_DEVICES": "void"}
    assert "hostRequirements" not in document
    assert "--gpus" not in document["runArgs"]


@pytest.mark.parametrize("gpus", [("all", None), ("count", 1), ("ids", ("0",)), ("auto", None)],
                         ids=["all", "count", "ids", "auto"])
def test_a_gpu_request_asks_for_a_gpu_host_and_leaves_the_devices_visible(gpus):
    document = devcontainer_document(project(), "img", gpus, "1000:1000")
    assert document["hostRequirements"] == {"gpu": True}
    assert "NVIDIA_VISIBLE_DEVICES" not in document["containerEnv"]
    assert document["runArgs"][:2] == gpu_run_args(*gpus)


def test_the_document_opens_the_project_in_the_locked_image_as_the_build_user():
    """The workspace is the project mounted at /workspace, as under `cudaenv run`; the image's user
    already has your UID, so the tools must not rewrite it."""
    document = devcontainer_document(project(), "ghcr.io/team/detector@sha256:" + "0" * 64, ("none", None), "4242:4343")
    assert document["name"] == "detector"
    assert document["image"] == "ghcr.io/team/detector@sha256:" + "0" * 64
    assert document["workspaceMount"] == "source=${localWorkspaceFolder},target=/workspace,type=bind"
    assert document["workspaceFolder"] == "/workspace"
    assert document["containerUser"] == "4242:4343"
    assert document["updateRemoteUserUID"] is False
    assert document["customizations"] == {"vscode": {
        "settings": {"python.defaultInterpreterPath": "/opt/venv/bin/python"},
        "extensions": ["ms-python.python"]}}
    assert "forwardPorts" not in document


@pytest.mark.parametrize("ipc, expected", [
    ("host", ["--ipc", "host"]),
    (None, ["--shm-size", "2g"]),
    ("private", ["--shm-size", "2g", "--ipc", "private"]),
    ("", ["--shm-size", "2g"]),
], ids=["host", "default", "private", "empty"])
def test_shared_memory_follows_the_ipc_mode(ipc, expected):
    """With the host's IPC namespace Docker refuses --shm-size; otherwise the size is the project's."""
    document = devcontainer_document(project(ipc=ipc, shm_size="2g"), "img", ("none", None), "1:1")
    assert document["runArgs"] == expected


def test_host_ipc_keeps_the_gpu_flags():
    document = devcontainer_document(project(ipc="host"), "img", ("count", 2), "1:1")
    assert document["runArgs"] == ["--gpus", "2", "--ipc", "host"]


def test_a_project_object_without_a_config_path_is_named_by_its_root():
    """Refusals name the file when there is one, else the project directory."""
    bare = SimpleNamespace(name="p", root=Path("/work/p"), run=project(env=(("X", "${env:A}"),)).run)
    with pytest.raises(UserError, match=r"^/work/p: run\.env\.X: "):
        devcontainer_document(bare, "img", ("none", None), "1:1")


def test_ulimits_are_docker_ulimit_flags_in_order():
    document = devcontainer_document(project(ulimits=(("memlock", -1, -1), ("stack", 67108864, 134217728))),
                                     "img", ("all", None), "1:1")
    assert document["runArgs"] == ["--gpus", "all", "--shm-size", "8g", "--ulimit", "memlock=-1:-1",
                                   "--ulimit", "stack=67108864:134217728"]


def test_project_env_is_kept_and_home_is_tmp():
    """The container user may have no home in the image: HOME=/tmp as `cudaenv run` sets it, over
    a HOME of the project's."""
    document = devcontainer_document(project(env=(("A", "1"), ("HOME", "/root"), ("B", "$X"))), "img",
                                     ("all", None), "1:1")
    assert document["containerEnv"] == {"A": "1", "HOME": "/tmp", "B": "$X"}


def test_forwarded_ports_are_the_container_ports_sorted_once():
    document = devcontainer_document(project(ports=("8888", "127.0.0.1:7006:6006", "9000:8888/udp")), "img",
                                     ("none", None), "1:1")
    assert document["forwardPorts"] == [6006, 8888]


@pytest.mark.parametrize("config_path, where", [
    (Path("/work/detector/cudaenv.toml"), "/work/detector/cudaenv.toml"),
    (None, "/work/detector"),
], ids=["config", "root"])
def test_a_substituted_value_is_refused_naming_the_file_and_variable(config_path, where):
    """One line: the file, run.env.NAME, the text that would be replaced, and why there is no way out."""
    with pytest.raises(UserError) as caught:
        devcontainer_document(project(env=(("TOKEN", "a${localEnv:HOME}"),), config_path=config_path), "img",
                              ("none", None), "1:1")
    assert str(caught.value) == (
        f"{where}: run.env.TOKEN: '${{localEnv:HOME}}' would be substituted by the Dev Containers tool "
        "(devcontainer.json has no escape for it), while `cudaenv run` passes it as written")


@pytest.mark.parametrize("value", ["${env}", "${localWorkspaceFolderBasename}", "${containerWorkspaceFolder}",
                                   "${containerWorkspaceFolderBasename}", "${localEnv:A:default}"])
def test_every_variable_the_tools_substitute_is_refused(value):
    with pytest.raises(UserError, match="would be substituted"):
        devcontainer_document(project(env=(("X", value),)), "img", ("none", None), "1:1")


@pytest.mark.parametrize("value", ["${localEnv\n:HOME}", "${localEnv\r}", "${env\u2028}", "${ env}", "${Env:X}"],
                         ids=["newline", "return", "line-separator", "space", "case"])
def test_what_the_tools_leave_alone_is_written_as_is(value):
    """The tools' pattern does not cross a line end and compares the name exactly."""
    document = devcontainer_document(project(env=(("X", value),)), "img", ("none", None), "1:1")
    assert document["containerEnv"]["X"] == value


def test_the_file_is_indented_json_ending_in_a_newline(tmp_path):
    document = devcontainer_document(project(), "img", ("none", None), "1:1")
    text = render(document)
    assert json.loads(text) == document
    assert text == json.dumps(document, indent=2) + "\n"
    assert target_path(tmp_path) == tmp_path / ".devcontainer" / "devcontainer.json"


@pytest.mark.parametrize("gpus, expected", [
    (("all", None), ["--device", "nvidia.com/gpu=all"]),
    (("count", 2), ["--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"]),
    (("ids", ("1",)), ["--device", "nvidia.com/gpu=1"]),
    (("auto", None), ["--device", "nvidia.com/gpu=all"]),
    (("auto", 1), ["--device", "nvidia.com/gpu=0"]),
], ids=["all", "count", "ids", "auto", "auto-n"])
def test_on_a_cdi_host_the_gpus_are_cdi_devices_checked_against_its_specs(tmp_path, gpus, expected):
    from cudaenv.hosts import cdi

    (tmp_path / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n"
                                          "- name: '0'\n  containerEdits: {env: [A=1]}\n- name: '1'\n  containerEdits: {env: [A=1]}\n- name: all\n  containerEdits: {env: [A=1]}\n")
    document = devcontainer_document(project(), "img", gpus, "1:1", cdi.read_specs([tmp_path]).of_kind())
    assert document["runArgs"][:len(expected)] == expected
    assert "--gpus" not in document["runArgs"]
    assert document["hostRequirements"] == {"gpu": True}


def test_no_gpu_on_a_cdi_host_is_no_device():
    document = devcontainer_document(project(), "img", ("none", None), "1:1", {})
    assert "--device" not in document["runArgs"]


# --- GPU-optional: a project with a CPU-only target and a GPU target ------------------------------------


@pytest.mark.parametrize("gpus", [("all", None), ("count", 2), ("ids", ("0", "1")), ("auto", None), ("auto", 1)],
                         ids=["all", "count", "ids", "auto", "auto-n"])
def test_a_gpu_optional_file_carries_no_gpu_flag_and_says_optional(gpus):
    """`--gpus` in runArgs fails where no NVIDIA runtime is (devcontainers/spec#469): the file leaves
    the GPUs to the Dev Containers tool, which adds them where it finds the runtime."""
    document = devcontainer_document(project(ulimits=(("memlock", -1, -1),)), "img", gpus, "1:1", gpu_optional=True)
    assert document["hostRequirements"] == {"gpu": "optional"}
    assert document["runArgs"] == ["--shm-size", "8g", "--ulimit", "memlock=-1:-1"]
    assert "NVIDIA_VISIBLE_DEVICES" not in document["containerEnv"]


def test_no_gpus_asked_is_no_gpu_even_where_the_project_could_have_one():
    document = devcontainer_document(project(), "img", ("none", None), "1:1", gpu_optional=True)
    assert document == devcontainer_document(project(), "img", ("none", None), "1:1")
    assert "hostRequirements" not in document and document["containerEnv"]["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_cdi_names_cannot_be_optional():
    with pytest.raises(UserError, match=r"^--gpu-access cdi: a GPU-optional dev container gets its GPUs from the Dev "):
        devcontainer_document(project(), "img", ("all", None), "1:1", {}, gpu_optional=True)


@pytest.mark.parametrize("gpus, noted", [
    (("all", None), False), (("auto", None), False), (("count", 2), True), (("ids", ("0", "3")), True),
    (("auto", 2), True), (("none", None), False),
], ids=["all", "auto", "count", "ids", "auto-n", "none"])
def test_a_gpu_choice_the_optional_file_cannot_carry_is_noted(gpus, noted):
    from cudaenv.export.devcontainer import optional_gpu_notes

    notes = optional_gpu_notes(*gpus)
    assert bool(notes) is noted
    if gpus[0] == "ids":
        assert notes[0].startswith("GPUs 0,3: a GPU-optional dev container gets the GPUs from the Dev Containers tool")


LAPTOP, A100, H100 = ("laptop", True, "x86_64"), ("a100", False, "x86_64"), ("h100", False, "x86_64")


def choose(targets, chosen=None):
    from cudaenv.export.devcontainer import choose_image_target

    return choose_image_target(targets, chosen, "/p/cudaenv.toml")


def test_the_image_is_the_only_gpu_targets_and_the_cpu_targets_open_it_without_a_gpu():
    choice = choose((LAPTOP, A100))
    assert (choice.target, choice.cpu_targets, choice.notes) == ("a100", ("laptop",), ())


def test_several_gpu_targets_need_target_and_get_their_names_listed():
    with pytest.raises(UserError) as caught:
        choose((LAPTOP, A100, H100))
    assert str(caught.value) == ("/p/cudaenv.toml: names several GPU targets (a100, h100); pass --target NAME for "
                                 "the image the dev container opens")
    assert choose((LAPTOP, A100, H100), "h100").target == "h100"


def test_gpu_targets_alone_leave_no_cpu_target_to_open_it_without_a_gpu():
    assert choose((A100, H100), "a100").cpu_targets == ()


def test_a_cpu_target_named_or_the_only_kind_there_is_opens_its_own_image_without_a_gpu():
    """CPU images build: a CPU target chosen, or the one target of CPU-only targets, opens its own
    image, and nothing GPU-optional is said about it (no other target to share it with)."""
    assert choose((LAPTOP, A100), "laptop") == ImageChoice("laptop", (), ())
    assert choose((LAPTOP, ("desk", True, "x86_64")), "desk") == ImageChoice("desk", (), ())
    assert choose((("desk", True, "x86_64"), ), None) == ImageChoice("desk", (), ())


def test_several_cpu_targets_and_none_chosen_is_refused():
    with pytest.raises(UserError) as caught:
        choose((LAPTOP, ("desk", True, "x86_64")), None)
    assert str(caught.value).startswith("/p/cudaenv.toml: names several targets, none with a GPU (laptop, desk); "
                                        "pass --target NAME")


def test_a_cpu_target_of_another_architecture_is_told_it_runs_the_image_emulated():
    choice = choose((("mac", True, "aarch64"), LAPTOP, A100))
    assert choice.cpu_targets == ("mac", "laptop")
    assert choice.notes == ("target mac is aarch64 and target a100's image is x86_64: there the dev container runs "
                            "emulated, if at all",)


def test_what_the_export_says_names_who_opens_the_image_without_a_gpu():
    choice = choose((("mac", True, "aarch64"), LAPTOP, A100))
    said = choice.said(("count", 2))
    assert said[0] == "the dev container opens target a100's image; GPU optional, so targets mac, laptop open it without a GPU"
    assert said[1] == choice.notes[0] and said[2].startswith("GPUs 2: ")
    assert choice.said(("none", None)) == ("the dev container opens target a100's image", choice.notes[0])
    assert choose((LAPTOP, A100)).said(("all", None)) == (
        "the dev container opens target a100's image; GPU optional, so target laptop opens it without a GPU",)
