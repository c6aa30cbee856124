"""The rules `cudaenv export compose` writes by, checked in-process on plain projects: service
names, GPU device reservations and `auto` assignment, Compose interpolation (`$$`), and the
one-line refusals (a Compose project name, two projects on one service, GPUs that cannot be known)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from cudaenv.errors import UserError
from cudaenv.export.compose import (ServiceInput, assign_auto, compose_document, gpu_reservation, literal,
                                    named_indices, render, service_name)


def project(name="p", *, env=(), command=(), ipc=None, shm_size="8g", ulimits=(), ports=(), root="/srv/p"):
    run = SimpleNamespace(env=env, command=command, ipc=ipc, shm_size=shm_size, ulimits=ulimits, ports=ports)
    return SimpleNamespace(name=name, root=Path(root), run=run)


def service(gpus=("none", None), **kwargs) -> dict:
    document = compose_document([ServiceInput(project(**kwargs), "img:1", gpus)], name="stack", user="7:8",
                                user_env={"HOME": "/tmp"})
    return document["services"][service_name(kwargs.get("name", "p"))]


@pytest.mark.parametrize("name, expected", [
    ("Detector", "detector"),
    ("My Project!", "my-project"),
    ("a__b--c", "a__b--c"),
    ("-_x_-", "x"),
    ("!!!", "project"),
    ("x" * 70, "x" * 63),
], ids=["lower", "other-chars", "kept", "stripped", "empty", "long"])
def test_service_names_follow_composes_name_grammar(name, expected):
    """Compose names are lower-case letters, digits, - and _; a name with none is still a service."""
    assert service_name(name) == expected


def test_an_unknown_gpu_kind_is_refused_in_one_line():
    with pytest.raises(UserError) as caught:
        gpu_reservation("auto", None)
    assert str(caught.value) == "--gpus auto: not something a Compose file can express"


def test_device_ids_are_strings_and_a_count_an_integer():
    (device,) = gpu_reservation("ids", (0, 2))["resources"]["reservations"]["devices"]
    assert device == {"driver": "nvidia", "capabilities": ["gpu"], "device_ids": ["0", "2"]}
    (device,) = gpu_reservation("count", "3")["resources"]["reservations"]["devices"]
    assert device == {"driver": "nvidia", "capabilities": ["gpu"], "count": 3}


@pytest.mark.parametrize("kind, value, expected", [
    ("all", None, None),
    ("count", 2, {0, 1}),
    ("count", "1", {0}),
    ("ids", ("3", "0"), {0, 3}),
    ("none", None, set()),
], ids=["all", "count", "count-text", "ids", "none"])
def test_a_named_request_takes_the_gpus_docker_hands_out(kind, value, expected):
    """A count takes the first N, as Docker's NVIDIA device driver does; ids are indices."""
    assert named_indices(kind, value) == expected


def test_uuid_device_ids_cannot_be_placed_around():
    with pytest.raises(UserError) as caught:
        named_indices("ids", ("0", "GPU-1a2b"))
    assert str(caught.value) == ("--gpus auto cannot tell which GPUs another project's device ids 0,GPU-1a2b are: "
                                 "give that project indices (0,1) or every project explicit ids")


def test_without_auto_the_requests_are_returned_as_given():
    requests = [("all", None), ("ids", ("GPU-x",))]
    assert assign_auto(requests, None) == requests


@pytest.mark.parametrize("requests, count, message", [
    ([("auto", None)], None, "--gpus auto needs the host's GPUs: give --gpu-count N (or declare them: CUDAENV_GPUS / "
                             "--gpu), or use a count or device ids instead"),
    ([("all", None), ("auto", None)], 4, "--gpus auto: another project in this file asks for all GPUs, so none is "
                                         "left for an auto project; give that project a count or device ids"),
    ([("count", 2), ("auto", 2)], 3, "--gpus auto: 3 GPU(s), 2 named by other projects in this file: not enough for "
                                     "every project to get its own"),
    ([("auto", 3)], 2, "--gpus auto: 2 GPU(s), 0 named by other projects in this file: not enough for every "
                       "project to get its own"),
], ids=["no-inventory", "all-taken", "too-few", "too-few-alone"])
def test_auto_refusals_say_what_is_missing(requests, count, message):
    with pytest.raises(UserError) as caught:
        assign_auto(requests, count)
    assert str(caught.value) == message


def test_auto_takes_exactly_what_is_left():
    """auto:N takes N of the free GPUs, in index order; a GPU left over is fine, one short is not."""
    assert assign_auto([("auto", 2), ("count", 1)], 3) == [("ids", ("1", "2")), ("count", 1)]
    assert assign_auto([("none", None), ("auto", None)], 1) == [("none", None), ("ids", ("0",))]


def test_every_dollar_is_doubled():
    """Compose interpolates $VAR and ${VAR}; $$ is its literal $."""
    assert literal("a$b$$c${D}") == "a$$b$$$$c$${D}"


def test_a_bad_project_name_is_refused_in_one_line():
    with pytest.raises(UserError) as caught:
        compose_document([], name="Bad Name", user="1:1", user_env={})
    assert str(caught.value) == ("--name 'Bad Name': expected a Compose project name (lower-case letters, digits, "
                                 "- and _)")


@pytest.mark.parametrize("name", ["a", "0-x_y", "a" * 63])
def test_compose_project_names_that_are_accepted(name):
    assert compose_document([], name=name, user="1:1", user_env={}) == {"name": name, "services": {}}


@pytest.mark.parametrize("name", ["", "-a", "_a", "a" * 64, "A", "a.b"])
def test_compose_project_names_that_are_refused(name):
    with pytest.raises(UserError, match="expected a Compose project name"):
        compose_document([], name=name, user="1:1", user_env={})


def test_two_projects_on_one_service_name_are_refused():
    inputs = [ServiceInput(project("Det"), "a", ("none", None)), ServiceInput(project("det"), "b", ("none", None))]
    with pytest.raises(UserError) as caught:
        compose_document(inputs, name="n", user="1:1", user_env={})
    assert str(caught.value) == "two projects would both be service 'det': give one a different [project] name"


def test_flags_win_over_the_users_env_which_wins_over_the_projects():
    """`cudaenv run -e` order: [run] env, then the user's HOME, then the -e flags; a passed name is null."""
    document = compose_document([ServiceInput(project(env=(("A", "p"), ("HOME", "/h"), ("B", "p"))), "img",
                                              ("all", None))],
                                name="n", user="1:1", user_env={"HOME": "/tmp"}, env={"B": "$f"}, passed=("A", "C"))
    assert document["services"]["p"]["environment"] == {"A": None, "B": "$$f", "C": None, "HOME": "/tmp"}


def test_a_service_runs_the_locked_image_in_the_project_directory():
    document = compose_document([ServiceInput(project(root="/srv/$p"), "img:1", ("count", 1))], name="n",
                                user="7:8", user_env={})
    svc = document["services"]["p"]
    assert svc["image"] == "img:1" and svc["working_dir"] == "/workspace" and svc["user"] == "7:8"
    assert svc["volumes"] == [{"type": "bind", "source": "/srv/$$p", "target": "/workspace"}]
    assert svc["labels"] == {"io.cudaenv.project": "p"}
    assert svc["environment"] == {}
    assert svc["deploy"] == gpu_reservation("count", 1)
    assert "command" not in svc and "ports" not in svc and "ipc" not in svc


def test_no_gpu_is_no_reservation_and_void_devices():
    svc = service(("none", None))
    assert "deploy" not in svc and svc["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert "NVIDIA_VISIBLE_DEVICES" not in service(("all", None))["environment"]


def test_command_words_are_literal_and_ulimits_soft_and_hard():
    svc = service(command=("echo", "$HOME"), ulimits=(("memlock", -1, -1), ("stack", 1, 2)))
    assert svc["command"] == ["echo", "$$HOME"]
    assert svc["ulimits"] == {"memlock": {"soft": -1, "hard": -1}, "stack": {"soft": 1, "hard": 2}}


@pytest.mark.parametrize("ipc, expected", [
    ("host", {"ipc": "host"}),
    (None, {"shm_size": "3g"}),
    ("private", {"shm_size": "3g", "ipc": "private"}),
], ids=["host", "default", "private"])
def test_shared_memory_follows_the_ipc_mode(ipc, expected):
    svc = service(ipc=ipc, shm_size="3g")
    assert {k: svc[k] for k in ("ipc", "shm_size") if k in svc} == expected


def test_ports_publish_on_the_same_number_unless_mapped():
    assert service(ports=("8888", "127.0.0.1:7006:6006", "9000"))["ports"] == ["8888:8888", "127.0.0.1:7006:6006",
                                                                           "9000:9000"]


def test_a_protocol_is_written_after_the_container_port_only():
    """Compose's short syntax is HOST:CONTAINER/PROTOCOL; "9000/udp:9000/udp" is refused by Compose
    ("invalid hostPort") though `cudaenv run` publishes "9000/udp"."""
    assert service(ports=("9000/udp", "8888/tcp", "1:2/udp"))["ports"] == ["9000:9000/udp", "8888:8888/tcp", "1:2/udp"]


def test_a_port_cudaenv_run_refuses_is_refused():
    with pytest.raises(UserError, match="port 'x'"):
        service(ports=("x",))


def test_the_file_starts_with_its_header_and_keeps_the_written_order():
    text = render({"name": "n", "services": {"b": {"image": "1e3"}, "a": {"image": "x", "n": "0o17"}}})
    assert text.startswith("# compose.yaml written by `cudaenv export compose`: one service per project, each on the "
                           "image\n# cudaenv built for its locked stack. Regenerate after `cudaenv build`; "
                           "`docker compose up` runs them.\nname: n\nservices:\n  b:\n")
    assert "image: '1e3'" in text and "n: '0o17'" in text and "image: x\n" in text
    assert yaml.safe_load(text)["services"]["a"]["n"] == "0o17"


def test_the_file_is_ascii_in_block_style():
    """One list item and one key a line, so a committed file diffs line by line; non-ASCII text is
    escaped, so the file reads the same in any editor encoding."""
    text = render({"services": {"p": {"command": ["echo", "é"], "labels": {"a": "b"}}}})
    assert text.isascii()
    assert text.endswith("services:\n  p:\n    command:\n    - echo\n    - \"\\xE9\"\n    labels:\n      a: b\n")
    assert yaml.safe_load(text)["services"]["p"]["command"] == ["echo", "é"]
