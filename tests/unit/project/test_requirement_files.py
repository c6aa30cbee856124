"""Requirement files as pip reads them (``cudaenv.project.reqfile``): the one reader behind init,
the lock, the inputs hash and the image key."""

from __future__ import annotations

import pytest

from cudaenv.errors import UserError
from cudaenv.project.reqfile import read_requirement_files


def read(tmp_path, text, name="requirements.txt", **files):
    (tmp_path / name).write_bytes(text.encode() if isinstance(text, str) else text)
    for other, content in files.items():
        path = tmp_path / other.replace("__", "/").replace("_txt", ".txt")  # reqs__base_txt: reqs/base.txt
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return read_requirement_files(tmp_path, [name])


def texts(found, python=None):
    return [(line.where, str(line.requirement)) for line in found.requirements(python)]


def test_a_hash_pinned_line_continued_with_backslashes_is_one_requirement_on_its_first_line(tmp_path):
    found = read(tmp_path, "torch==2.4.1 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\nsix==1.16.0 \\\n"
                           "    --hash=sha256:cc\n")
    assert texts(found) == [("requirements.txt:1", "torch==2.4.1"), ("requirements.txt:4", "six==1.16.0")]


def test_a_bom_and_crlf_line_ends_read_the_first_line(tmp_path):
    found = read(tmp_path, b"\xef\xbb\xbftorch==2.4.1\r\nnumpy<2\r\n")
    assert texts(found) == [("requirements.txt:1", "torch==2.4.1"), ("requirements.txt:2", "numpy<2")]


def test_a_utf16_file_with_its_bom_is_read(tmp_path):
    found = read(tmp_path, "torch==2.4.1\r\n".encode("utf-16"))  # PowerShell's `>` writes UTF-16
    assert texts(found) == [("requirements.txt:1", "torch==2.4.1")]


def test_a_comment_after_a_tab_is_a_comment(tmp_path):
    assert texts(read(tmp_path, "torch==2.4.1\t# pinned\n")) == [("requirements.txt:1", "torch==2.4.1")]


@pytest.mark.parametrize("include", ["-rbase.txt", "--requirement=base.txt", "-r base.txt", "--requirement base.txt"],
                         ids=["short-joined", "long-equals", "short-spaced", "long-spaced"])
def test_every_spelling_of_an_include_is_followed(tmp_path, include):
    found = read(tmp_path, f"{include}\ntorch\n", base_txt="numpy\n")
    assert texts(found) == [("base.txt:1", "numpy"), ("requirements.txt:2", "torch")]
    assert found.files == ("requirements.txt", "base.txt")


def test_an_include_resolves_against_the_including_files_folder(tmp_path):
    found = read(tmp_path, "-r reqs/dev.txt\n", reqs__dev_txt="-r base.txt\npytest\n", reqs__base_txt="numpy\n")
    assert found.files == ("requirements.txt", "reqs/dev.txt", "reqs/base.txt")
    assert texts(found) == [("reqs/base.txt:1", "numpy"), ("reqs/dev.txt:2", "pytest")]


def test_a_constraint_limits_versions_but_is_not_a_requirement(tmp_path):
    found = read(tmp_path, "-c pins.txt\nnumpy\n", pins_txt="numpy<2\n")
    assert texts(found) == [("requirements.txt:2", "numpy")]
    assert [(line.where, line.text, line.constraint) for line in found.lines if line.constraint] == \
        [("pins.txt:1", "numpy<2", True)]
    assert "pins.txt" in found.files


def test_an_include_cycle_reads_each_file_once(tmp_path):
    found = read(tmp_path, "-r b.txt\nsix\n", b_txt="-r requirements.txt\nnumpy\n")
    assert sorted(t for _, t in texts(found)) == ["numpy", "six"]


@pytest.mark.parametrize("line, message", [
    ("-r missing.txt", r"^requirements.txt:1: cannot read missing.txt: No such file"),
    ("-r ../outside.txt", r"^requirements.txt:1: .*outside the project directory"),
    ("-r https://example.com/r.txt", r"^requirements.txt:1: .*from a URL cannot be locked"),
    ("not a requirement!", r"^requirements.txt:1: 'not a requirement!' is not a requirement pip can read"),
    ("-e git+https://github.com/openai/CLIP.git#egg=clip", r"^requirements.txt:1: -e .*write 'clip @ git\+https://github.com/openai/CLIP.git' "),
    ("--no-binary :all:", r"^requirements.txt:1: --no-binary is not supported: .*build_from_source"),
    ("--trusted-host example.com", r"^requirements.txt:1: --trusted-host is not supported"),
    ("--extra-index-url https://${TOKEN}@example.com/simple", r"^requirements.txt:1: .*does not expand environment"),
    ("--extra-index-url https://me:s3cret@example.com/simple", r"^requirements.txt:1: .*carries credentials"),
    ("--config-settings x=y", r"^requirements.txt:1: --config-settings is not supported"),
    ("/abs/pkg", r"^requirements.txt:1: '/abs/pkg' is outside the project directory"),
], ids=["missing-include", "outside-include", "url-include", "not-a-requirement", "editable-vcs", "no-binary",
        "trusted-host", "env-variable", "credentials", "unknown-option", "absolute-path"])
def test_a_line_cudaenv_cannot_honour_is_refused_naming_file_and_line(tmp_path, line, message):
    (tmp_path.parent / "outside.txt").write_text("six\n")
    with pytest.raises(UserError, match=message):
        read(tmp_path, f"{line}\n")


def test_the_projects_own_code_is_not_a_requirement(tmp_path):
    (tmp_path / "pkg").mkdir()
    found = read(tmp_path, "-e .\n./pkg\nnumpy\n")
    assert found.own_code == (".", "pkg")
    assert texts(found) == [("requirements.txt:3", "numpy")]
    assert [line.editable for line in found.lines if line.local] == [True, False]


def test_find_links_and_extra_indexes_are_kept_for_the_lock_and_the_image(tmp_path):
    (tmp_path / "wheels").mkdir()
    found = read(tmp_path, "-f https://data.pyg.org/whl/torch-2.4.0+cu121.html\n--find-links ./wheels\n"
                           "--extra-index-url https://download.pytorch.org/whl/cpu\n--index-url https://mirror.example/simple\n"
                           "torch-scatter\n")
    assert found.find_links == ("https://data.pyg.org/whl/torch-2.4.0+cu121.html", "wheels")
    assert found.local_inputs == ("wheels",)
    assert found.extra_index_urls == ("https://download.pytorch.org/whl/cpu",)
    assert found.index_url == "https://mirror.example/simple"


def test_markers_are_read_for_the_python_asked_not_the_one_running(tmp_path):
    found = read(tmp_path, 'torch==2.1.2; python_version < "3.12"\ntorch==2.5.1; python_version >= "3.12"\n')
    assert texts(found, "3.12") == [("requirements.txt:2", 'torch==2.5.1; python_version >= "3.12"')]
    assert texts(found, "3.10") == [("requirements.txt:1", 'torch==2.1.2; python_version < "3.12"')]
    assert found.pythons_markers_split()


def test_a_wheel_url_is_named_by_its_file(tmp_path):
    found = read(tmp_path, "https://example.com/whl/torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl\n")
    assert [line.requirement.name for line in found.lines] == ["torch-scatter"]


# --- what an adversarial pass found (each failed before its fix) ----------------------------------


def test_a_file_read_as_constraints_is_still_read_as_requirements(tmp_path):
    """requirements-dev.txt's `-c requirements.txt` sorts first: requirements.txt still requires."""
    (tmp_path / "requirements-dev.txt").write_text("-c requirements.txt\npytest\n")
    (tmp_path / "requirements.txt").write_text("torch==2.1\n")
    found = read_requirement_files(tmp_path, ["requirements-dev.txt", "requirements.txt"])
    assert texts(found) == [("requirements-dev.txt:2", "pytest"), ("requirements.txt:1", "torch==2.1")]
    assert found.files == ("requirements-dev.txt", "requirements.txt")


def test_a_wheel_file_in_the_project_is_that_release_from_its_folder(tmp_path):
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "torch-2.1.0-cp312-cp312-linux_x86_64.whl").write_bytes(b"wheel")
    found = read(tmp_path, "dist/torch-2.1.0-cp312-cp312-linux_x86_64.whl\n")
    assert texts(found) == [("requirements.txt:1", "torch==2.1.0")]
    assert found.find_links == ("dist",) and found.local_inputs == ("dist/torch-2.1.0-cp312-cp312-linux_x86_64.whl",)


def test_a_source_archive_is_refused_since_the_image_installs_wheels(tmp_path):
    (tmp_path / "mypkg-1.0.tar.gz").write_bytes(b"sdist")
    with pytest.raises(UserError, match=r"^requirements.txt:1: .*build this archive into a wheel"):
        read(tmp_path, "./mypkg-1.0.tar.gz\n")


def test_markers_take_nothing_from_the_python_running_cudaenv(tmp_path):
    found = read(tmp_path, 'torch==2.5; implementation_version >= "3.12"\ntorch==2.1; implementation_version < "3.12"\n')
    assert [t for _, t in texts(found, "3.12")] == ['torch==2.5; implementation_version >= "3.12"']


def test_a_local_path_keeps_its_marker_and_extras(tmp_path):
    (tmp_path / "sub").mkdir()
    found = read(tmp_path, "./sub ; python_version < '3'\n.[dev]\n-e sub\n")
    assert found.own_code == (".[dev]", "sub")  # ./sub's marker holds for no Python 3
    assert [line.applies("3.12") for line in found.lines] == [False, True, True]


@pytest.mark.parametrize("line", ["file://localhost/etc", "file:///etc", "./a\x00b", "-r a\x00b", "-f ./a\x00b",
                                  "./" + "a" * 300, "-f ./" + "a" * 300, "./missing"],
                         ids=["file-localhost", "file-absolute", "nul-path", "nul-include", "nul-find-links",
                              "long-path", "long-find-links", "missing-path"])
def test_a_path_no_project_file_can_have_is_refused_naming_the_line(tmp_path, line):
    with pytest.raises(UserError, match=r"^requirements.txt:1: "):
        read(tmp_path, f"{line}\n")


@pytest.mark.parametrize("text", [b"# coding: undefined\ntorch\n", b"# coding: punycode\n\\x\n"], ids=["unknown", "punycode"])
def test_a_coding_line_that_cannot_decode_is_bad_input(tmp_path, text):
    with pytest.raises(UserError, match=r"^requirements.txt: not UTF-8 text"):
        read(tmp_path, text)


def test_including_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.txt")
    with pytest.raises(UserError, match=r"^requirements.txt:1: cannot read pipe.txt: not a regular file"):
        read(tmp_path, "-r pipe.txt\n")


def test_a_long_run_of_blanks_reads_in_linear_time(tmp_path):
    import time

    started = time.monotonic()
    found = read(tmp_path, "torch" + " " * 400_000 + "# comment\n")
    assert texts(found) == [("requirements.txt:1", "torch")]
    assert time.monotonic() - started < 5  # quadratic took minutes; a generous bound on any machine
