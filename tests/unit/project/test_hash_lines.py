"""``--hash`` on a requirement line: pip checks each download against the listed hashes and refuses
a file whose hash is not there. cudaenv's lock and image do not check them yet (uv verifies each file
against the index's own hash only). The line keeps its hashes, and the lock says so, as a warning
naming the lines, never silently (an attack on the issue-34 surfaces found the silence)."""

from __future__ import annotations

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
