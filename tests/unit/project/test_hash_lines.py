"""``--hash`` on a requirement line: pip checks each download against the listed hashes and refuses
a file whose hash is not there. cudaenv's lock and image do not check them yet (uv verifies each file
against the index's own hash only). The line keeps its hashes, and the lock says so, as a warning
naming the lines, never silently (an attack on the issue-34 surfaces found the silence)."""

from __future__ import annotations

import pytest

from cudaenv.project.inputs import read_project_requirements
from cudaenv.project.lock import with_hash_warnings
from cudaenv.resolver.model import Resolution

GOOD = "sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254"


def lines(tmp_path, text):
    (tmp_path / "requirements.txt").write_text(text)
    return read_project_requirements(tmp_path, ["requirements.txt"]).lines


def test_a_lines_hashes_are_kept_as_pip_reads_them(tmp_path):
    read = lines(tmp_path, f"six==1.16.0 \\\n    --hash={GOOD} \\\n    --hash=sha256:{'0' * 64}\nnumpy\n")
    assert read[0].hashes == (GOOD, f"sha256:{'0' * 64}") and read[1].hashes == ()


def test_the_lock_warns_naming_the_hashed_lines(tmp_path):
    read = lines(tmp_path, f"six==1.16.0 --hash={GOOD}\nnumpy\nidna==3.7 --hash={GOOD}\n")
    result = with_hash_warnings(Resolution(stack=None, valid_cuda=(), problems=()), read)
    (warning,) = result.problems
    assert warning.code == "hashes-unchecked"
    assert warning.message.startswith("requirements.txt:1, requirements.txt:3: --hash is not checked by cudaenv yet")


def test_no_hashes_no_warning(tmp_path):
    result = Resolution(stack=None, valid_cuda=(), problems=())
    assert with_hash_warnings(result, lines(tmp_path, "six==1.16.0\n")) is result


TAIL = (": --hash is not checked by cudaenv yet: the image installs the locked versions from the index, verified "
        "against the index's hashes only (pip would refuse a file whose hash the line does not list)")


@pytest.mark.parametrize(("hashed", "where"), [
    (3, "requirements.txt:1, requirements.txt:2, requirements.txt:3"),
    (4, "requirements.txt:1, requirements.txt:2, requirements.txt:3 and 1 more"),
    (6, "requirements.txt:1, requirements.txt:2, requirements.txt:3 and 3 more"),
], ids=["three", "four", "six"])
def test_the_warning_names_three_lines_and_counts_the_rest(tmp_path, hashed, where):
    from cudaenv.resolver.model import Problem

    text = "".join(f"pkg{i}==1.0 --hash={GOOD}\n" for i in range(hashed)) + "numpy\n"
    earlier = Problem("some-warning", "already there")
    result = with_hash_warnings(Resolution(stack=None, valid_cuda=("12.4",), problems=(earlier,)), lines(tmp_path, text))
    assert result.valid_cuda == ("12.4",)
    assert [(p.code, p.message, p.fix) for p in result.problems] == [
        ("some-warning", "already there", None), ("hashes-unchecked", where + TAIL, None)]
