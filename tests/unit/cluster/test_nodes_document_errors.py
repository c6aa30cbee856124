"""Reading a nodes file: which document is Kubernetes and which Slurm, the exact message for each
document that is neither, and a bounded read (a nodes "file" may be a pipe that never ends)."""

from __future__ import annotations

import io
import json

import pytest

from cudaenv.cluster import read as read_module
from cudaenv.cluster.facts import NodesInputError
from cudaenv.cluster.read import parse_document, read_nodes, read_text
from tests.unit.cluster.helpers import SLURM

EXPECTED_OUTPUT = ("expected the output of `kubectl get nodes -o json`, `scontrol show node [--json]` or "
                   "`sinfo --json`")


def error_of(text: str) -> NodesInputError:
    with pytest.raises(NodesInputError) as caught:
        parse_document("in.json", text)
    return caught.value


def test_text_that_is_no_json_names_where_the_parser_stopped_and_what_was_expected():
    """`kubectl get nodes` without -o json prints a table: the message says which output is wanted."""
    error = error_of("NAME      STATUS   ROLES    AGE   VERSION\ngpu-01    Ready    <none>   3d    v1.29.2\n")
    assert str(error) == f"in.json: not JSON (line 1, column 1: Expecting value); {EXPECTED_OUTPUT}"
    assert error.field is None


def test_json_nested_too_deeply_is_named():
    error = error_of("[" * 100000 + "]" * 100000)
    assert (str(error), error.field) == ("in.json: JSON nested too deeply to read", None)


def test_a_document_that_is_one_huge_number_is_named():
    error = error_of("9" * 5000)
    assert str(error) == "in.json: a number of more digits than can be read; expected a JSON object"
    assert error.field is None


@pytest.mark.parametrize("kind", ["List", "NodeList", "Node"])
def test_the_three_kubernetes_kinds_are_node_documents(kind):
    """kubectl prints a List; the API server a NodeList; `kubectl get node NAME` one Node."""
    assert parse_document("in.json", json.dumps({"kind": kind, "items": []}))[0] == "kubernetes"


def test_scontrol_text_after_blank_lines_is_still_slurm():
    """A capture that starts with an empty line (a shell here-document, a log) is the same output."""
    text = "\n  \n" + (SLURM / "scontrol-show-node-22.05.8.txt").read_text()
    kind, document = parse_document("n.txt", text)
    assert kind == "slurm" and document == text


# (document, what the message says the object was)
NEITHER = [
    ({"kind": "Pod", "apiVersion": "v1"}, "kind 'Pod'"),
    ({"kind": "NodeMetricsList" + "x" * 80}, "kind 'NodeMetricsList" + "x" * 59),  # cut at 80 characters
    ({"apiVersion": "v1", "items": []}, "keys apiVersion, items"),
    # `scontrol show job --json` (Slurm 23.11): six keys, the first five (sorted) named
    ({"meta": {}, "errors": [], "warnings": [], "jobs": [], "last_backfill": {}, "last_update": {}},
     "keys errors, jobs, last_backfill, last_update, meta"),
]


@pytest.mark.parametrize("document,what", NEITHER, ids=["pod", "long-kind", "no-kind", "slurm-jobs"])
def test_a_json_object_that_is_no_nodes_document_is_named_by_its_kind_or_keys(document, what):
    """The message says what the file looked like, so a wrong `kubectl get` or `scontrol show` is seen."""
    error = error_of(json.dumps(document))
    assert str(error) == ("in.json: expected `kubectl get nodes -o json` (kind List of Node) or Slurm's "
                          f"`scontrol show node --json` / `sinfo --json` (nodes), got a JSON object with {what}")
    assert error.field == "kind"


def test_errors_from_a_file_name_the_file(tmp_path):
    """Whichever reader finds the error, the message starts with the path the user gave."""
    path = tmp_path / "nodes.txt"
    path.write_text("NodeName=g1 Arch=x86_64 Gres=gpu:a100:lots\n")
    with pytest.raises(NodesInputError, match=rf"^{path}: node g1: gres: "):
        read_nodes(str(path))
    path.write_text("{nodes")
    with pytest.raises(NodesInputError, match=rf"^{path}: not JSON"):
        read_nodes(str(path))


class EndlessStream:
    """A pipe that never ends (`yes |`, /dev/zero): only a bounded read returns."""

    def read(self, size=-1):
        if size is None or size < 0:
            raise AssertionError("an unbounded read of an endless stream never returns")
        return b"x" * size

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_an_endless_input_is_refused_after_the_limit_not_read_forever(monkeypatch):
    """At most the limit and one byte are read, from a file or from standard input."""
    monkeypatch.setattr(read_module, "MAX_BYTES", 2 * 1024 * 1024)
    monkeypatch.setattr(read_module, "open", lambda path, mode: EndlessStream(), raising=False)
    with pytest.raises(NodesInputError) as caught:
        read_text("/dev/zero")
    assert str(caught.value) == "/dev/zero: larger than 2 MiB: not a nodes listing"
    monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": EndlessStream()})())
    with pytest.raises(NodesInputError) as caught:
        read_text("-")
    assert str(caught.value) == "<stdin>: larger than 2 MiB: not a nodes listing"


def test_input_one_byte_over_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(read_module, "MAX_BYTES", 8)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"a": 12}')))  # 9 bytes
    with pytest.raises(NodesInputError, match="^<stdin>: larger than 0 MiB"):
        read_text("-")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"a": 1}')))  # 8 bytes: read
    assert read_text("-") == ('{"a": 1}', "<stdin>")


def test_a_huge_number_as_the_kind_is_quoted_by_its_digits():
    """A number too long to convert is kept as its text, so the message still shows what was there."""
    error = error_of('{"kind": ' + "7" * 5000 + "}")
    assert str(error).endswith("got a JSON object with kind '" + "7" * 74)  # cut at 80 characters
