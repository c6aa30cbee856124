"""`cudaenv run` options and the [run] table share one parser (cudaenv.project.runopts); container names
given to exec/stop resolve exactly or by an unambiguous id prefix, never by a guess."""

from __future__ import annotations

import pytest

from cudaenv.run.containers import find_container
from cudaenv.engine import ContainerInfo
from cudaenv.errors import UserError
from cudaenv.project.runopts import parse_env, parse_gpus, parse_ports


@pytest.mark.parametrize("values, expected", [
    (("8888",), {"8888/tcp": None}),
    (("6006:6006",), {"6006/tcp": 6006}),
    (("9000:8888/udp",), {"8888/udp": 9000}),
    (("127.0.0.1:8888:8888",), {"8888/tcp": ("127.0.0.1", 8888)}),
])
def test_ports_become_the_sdks_port_mapping(values, expected):
    assert parse_ports(values) == expected


@pytest.mark.parametrize("bad", ["127.0.0.1:8888", "localhost:8888:8888", "88888888", "8888/sctp", "8888; rm -rf /"])
def test_malformed_ports_are_refused_with_an_example(bad):
    with pytest.raises(UserError, match=r"expected CONTAINER, HOST:CONTAINER or ADDRESS:HOST:CONTAINER"):
        parse_ports((bad,))


def test_env_names_are_checked_and_a_bare_name_passes_the_callers_value(monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "from-the-caller")
    assert parse_env(("A=1", "B=", "WANDB_API_KEY")) == {"A": "1", "B": "", "WANDB_API_KEY": "from-the-caller"}
    with pytest.raises(UserError, match="expected NAME=value"):
        parse_env(("1BAD=x",))


def test_gpus_zero_is_refused_because_docker_reads_it_as_a_count_of_none():
    with pytest.raises(UserError, match="--gpus none"):
        parse_gpus("0")
    assert parse_gpus("device=0") == ("ids", ("0",))


@pytest.mark.parametrize("spec, device", [("1,1", "1"), ("1,01", "01"), ("device=2, 3,2", "2"),
                                          ("GPU-abc,GPU-ABC", "GPU-ABC")], ids=["same", "leading-zero", "spaced", "uuid-case"])
def test_a_device_named_twice_is_refused(spec, device):
    """Exports count the listed devices (Slurm --gres, a pod's GPU limit): a repeated one would ask
    for a GPU the container never gets."""
    with pytest.raises(UserError) as caught:
        parse_gpus(spec)
    assert str(caught.value) == f"--gpus {spec!r}: device {device} is named twice"
    assert parse_gpus("0,1,GPU-abc") == ("ids", ("0", "1", "GPU-abc"))


def managed(name: str, cid: str) -> ContainerInfo:
    return ContainerInfo(id=cid, name=name, image="cudaenv/x:1", status="running", labels={}, started_at="")


CONTAINERS = [managed("detector-run-1", "abcd1234ef"), managed("detector-run-2", "abcd9999ef"),
              managed("other", "ffff0000aa")]


def test_a_container_is_found_by_exact_name_or_id():
    assert find_container(CONTAINERS, "detector-run-2").id == "abcd9999ef"
    assert find_container(CONTAINERS, "ffff0000aa").name == "other"


def test_a_unique_id_prefix_of_four_or_more_characters_finds_the_container():
    assert find_container(CONTAINERS, "abcd1").name == "detector-run-1"
    assert find_container(CONTAINERS, "ffff").name == "other"


def test_an_ambiguous_prefix_names_the_candidates_instead_of_guessing():
    with pytest.raises(UserError, match="several container ids.*detector-run-1, detector-run-2"):
        find_container(CONTAINERS, "abcd")


def test_short_prefixes_and_name_prefixes_do_not_match():
    with pytest.raises(UserError, match="no cudaenv container named 'fff'"):
        find_container(CONTAINERS, "fff")
    with pytest.raises(UserError, match="no cudaenv container named 'detector'"):
        find_container(CONTAINERS, "detector")
