"""The lock's helpers that run before uv does, in process: requirements files checked line by line,
uv's network errors turned into one sentence, and the lock written whole or not at all."""

from __future__ import annotations

import os
import stat

import pytest

from cudaenv.errors import UserError
from cudaenv.project.lock import check_requirements_file, unreachable_index, write_atomically


@pytest.mark.parametrize("text", [
    "numpy==2.1.3\n", "# a comment\n\nnumpy>=2 # trailing\n", "-r other.txt\n--index-url https://x/simple\n",
    "./local/pkg\n.\n-e .\n", "https://example.com/pkg-1.0-py3-none-any.whl\n", "numpy==2.1.3 \\\n    --hash=sha256:abc\n",
    "torch==2.6.0 --hash=sha256:00\n", "requests[socks] ; python_version >= '3.8'\n",
], ids=["pin", "comments", "options", "paths", "url", "continued-hash", "inline-hash", "extra-and-marker"])
def test_a_readable_requirements_file_passes(tmp_path, text):
    (tmp_path / "other.txt").write_text("six\n")
    (tmp_path / "local" / "pkg").mkdir(parents=True)
    path = tmp_path / "r.txt"
    path.write_text(text)
    check_requirements_file(path, "r.txt")


@pytest.mark.parametrize("text, line, shown", [
    ("numpy==2.1.3\nnot a requirement!\n", 2, "'not a requirement!'"),
    ("six\nnumpy ==\\\n  2.x\n", 2, "'numpy ==  2.x'"),  # pip joins the lines as written
    ("# c\n\nfoo>=1,,2\n", 3, "'foo>=1,,2'"),
], ids=["not-a-requirement", "continued-line", "double-comma"])
def test_a_line_pip_cannot_read_is_bad_input_naming_its_line(tmp_path, text, line, shown):
    path = tmp_path / "r.txt"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        check_requirements_file(path, "r.txt")
    assert str(caught.value).startswith(f"r.txt:{line}: {shown} is not a requirement pip can read (")


def test_a_requirements_file_that_cannot_be_read_is_bad_input(tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"numpy\xff\n")
    with pytest.raises(UserError, match=r"^r.txt: not UTF-8 text "):
        check_requirements_file(path, "r.txt")
    with pytest.raises(UserError, match=r"^gone.txt: cannot read: No such file or directory"):
        check_requirements_file(tmp_path / "gone.txt", "gone.txt")


@pytest.mark.parametrize("cause, said", [
    ("dns error: failed to lookup address information", "DNS: the host name does not resolve"),
    ("tcp connect error: Connection refused (os error 111)", "connection refused"),
    ("operation timed out", "timed out"),
    ("invalid peer certificate: UnknownIssuer", "TLS certificate not trusted; see [build] ca_cert"),
    ("tcp connect error: Network unreachable", "cannot connect"),
])
def test_an_unreachable_index_is_one_sentence_without_credentials(cause, said):
    stderr = (f"error: Failed to fetch: `https://user:pw@mirror.example/simple/numpy/`\n  Caused by: {cause}\n")
    message = unreachable_index(stderr.replace("`", ""))
    assert message == (f"cannot reach https://mirror.example/simple/ ({said}); nothing was locked. Use a mirror you "
                       "can reach: [build] python_index / framework_index or CUDAENV_PYTHON_INDEX / "
                       "CUDAENV_FRAMEWORK_INDEX, then run `cudaenv lock`")


def test_an_index_that_answered_is_not_unreachable():
    assert unreachable_index("error: Failed to fetch: https://pypi.org/simple/x/\n  Caused by: HTTP 404") is None
    assert unreachable_index("error: no solution found: numpy>=99") is None


def test_a_package_page_at_the_root_of_a_host_names_the_host():
    """uv fetches ``<index>/<package>/``: for an index at the host's root that is two path slashes."""
    message = unreachable_index("Failed to fetch: https://mirror.example/numpy/\nCaused by: dns error")
    assert message.startswith("cannot reach https://mirror.example/ (DNS")


def test_a_short_url_is_named_as_it_is():
    message = unreachable_index("Failed to fetch: https://h/\nCaused by: dns error")
    assert message.startswith("cannot reach https://h/ (DNS")


def test_the_lock_is_replaced_whole_and_keeps_its_mode(tmp_path):
    path = tmp_path / "cudaenv.lock"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["cudaenv.lock"]  # no temporary file left behind


@pytest.mark.parametrize("umask, mode", [(0o027, 0o640), (0o022, 0o644), (0o002, 0o664)], ids=["027", "022", "002"])
def test_a_new_lock_gets_the_umasks_mode(tmp_path, umask, mode):
    """rw for whom the umask allows, never executable (a lock is not a program)."""
    old = os.umask(umask)
    try:
        write_atomically(tmp_path / "fresh.lock", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.lock").stat().st_mode) == mode
    assert os.umask(old) == old  # the process's umask is left as it was


def test_a_failed_write_leaves_the_old_lock_and_no_temporary_file(tmp_path):
    path = tmp_path / "cudaenv.lock"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(path, "bad \udc80 surrogate")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["cudaenv.lock"]


@pytest.mark.parametrize("variable", ["CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_EXCLUDE_NEWER"])
def test_every_override_a_lock_reads_is_checked_before_anything_runs(monkeypatch, variable):
    from cudaenv.project.lock import check_environment

    for name in ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_EXCLUDE_NEWER"):
        monkeypatch.delenv(name, raising=False)
    check_environment()  # nothing set: nothing to refuse
    monkeypatch.setenv(variable, "file:///etc/passwd")
    with pytest.raises(UserError) as caught:
        check_environment()
    assert str(caught.value).startswith(f"{variable}: expected ")
