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


# --- every refusal, word for word (CI logs are where users read them) ------------------------------

REFUSALS = {
    "-r missing.txt": "requirements.txt:1: cannot read missing.txt: No such file or directory",
    "-r https://example.com/r.txt": "requirements.txt:1: 'https://example.com/r.txt': a requirement file from a URL "
                                    "cannot be locked reproducibly; copy it into the project",
    "-e git+https://github.com/openai/CLIP.git#egg=clip":
        "requirements.txt:1: -e 'git+https://github.com/openai/CLIP.git#egg=clip': an editable install from a "
        "repository or URL cannot be locked; write 'clip @ git+https://github.com/openai/CLIP.git' (a pinned "
        "reference uv can lock)",
    "-e git+https://github.com/openai/CLIP.git":
        "requirements.txt:1: -e 'git+https://github.com/openai/CLIP.git': an editable install from a repository or "
        "URL cannot be locked; use a released version, or vendor the code in the project",
    "--no-binary :all:": "requirements.txt:1: --no-binary is not supported: cudaenv installs wheels only; list "
                         "packages to compile in [build] build_from_source",
    "--no-index": "requirements.txt:1: --no-index is not supported: the image installs from the project's indexes; "
                  "use [build] python_index for a mirror",
    "--trusted-host example.com": "requirements.txt:1: --trusted-host is not supported: a plain-HTTP index cannot be "
                                  "verified; serve it over HTTPS (a private CA: [build] ca_cert)",
    "--always-unzip": "requirements.txt:1: --always-unzip is not supported: pip no longer reads it",
    "torch --install-option=x": "requirements.txt:1: --install-option is not supported: per-requirement build "
                                "options are not repeated in the image; use [build] build_from_source",
    "--extra-index-url https://${TOKEN}@example.com/simple":
        "requirements.txt:1: '--extra-index-url https://${TOKEN}@example.com/simple': cudaenv does not expand "
        "environment variables in requirement files (pip does): put index credentials in ~/.netrc or "
        "CUDAENV_PYTHON_INDEX, never in a committed file",
    "--extra-index-url https://me:s3cret@example.com/simple":
        "requirements.txt:1: an index example.com carries credentials in the file; put them in ~/.netrc (they must "
        "never be committed)",
    "--extra-index-url ftp://example.com/simple": "requirements.txt:1: 'ftp://example.com/simple': an index must be "
                                                  "an http(s):// URL",
    "-f ftp://example.com/x": "requirements.txt:1: 'ftp://example.com/x': --find-links must be an http(s):// URL",
    "--config-settings x=y": "requirements.txt:1: --config-settings is not supported: cudaenv does not repeat it in "
                             "the lock or the image (build settings: [build] build_from_source)",
    "/abs/pkg": "requirements.txt:1: '/abs/pkg' is outside the project directory; the image holds only the "
                "project's files",
    "./missing": "requirements.txt:1: './missing': no such folder or file in the project",
    "./src-1.0.tar.gz": "requirements.txt:1: './src-1.0.tar.gz': cudaenv installs wheels; build this archive into a "
                        "wheel (python -m build --wheel) and list the wheel",
    "--find-links ../x": "requirements.txt:1: --find-links '../x' is outside the project directory; the image holds "
                         "only the project's files",
    "--find-links ./nothere": "requirements.txt:1: --find-links './nothere': no such folder or file",
    "-c ./pkg": "requirements.txt:1: cannot read pkg: not a regular file",
    "--index-url https://a.example/simple\n--index-url https://b.example/simple":
        "requirements.txt:2: a second --index-url (https://b.example/simple) after https://a.example/simple: pip "
        "uses one; keep one and make the others --extra-index-url",
    "--pre extra": "requirements.txt:1: unexpected 'extra' after an option",
    "-e ./pkg -e ./pkg": "requirements.txt:1: one requirement per line",
    "file://server/share/pkg": "requirements.txt:1: 'file://server/share/pkg' is outside the project directory; the "
                               "image holds only the project's files",
    "./pkg ; python_version <": "requirements.txt:1: './pkg ; python_version <': not a marker pip can read (Expected "
                                "a marker variable or quoted string)",
    "-c constraints.txt": "requirements.txt:1: cannot read constraints.txt: No such file or directory",
    "~/pkg": "requirements.txt:1: '~/pkg' is outside the project directory; the image holds only the project's files",
    "-e git+https://github.com/cocodataset/cocoapi#egg=pycocotools&subdirectory=PythonAPI":
        "requirements.txt:1: -e 'git+https://github.com/cocodataset/cocoapi#egg=pycocotools&subdirectory=PythonAP': "
        "an editable install from a repository or URL cannot be locked; write 'pycocotools @ "
        "git+https://github.com/cocodataset/cocoapi#subdirectory=PythonAPI' (a pinned reference uv can lock)",
    '--find-links "./x': "requirements.txt:1: '--find-links \"./x' is not a line cudaenv can read as pip does (No "
                         "closing quotation)",
    "-c ./pkg/": "requirements.txt:1: cannot read pkg: not a regular file",
}


@pytest.mark.parametrize("line", sorted(REFUSALS), ids=[f"refusal-{n}" for n in range(len(REFUSALS))])
def test_each_refusal_says_exactly_this(tmp_path, line):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "src-1.0.tar.gz").write_bytes(b"sdist")
    with pytest.raises(UserError) as caught:
        read(tmp_path, f"{line}\n")
    assert str(caught.value) == REFUSALS[line]


def test_an_include_chain_may_be_sixteen_deep_and_no_deeper(tmp_path):
    for n in range(1, 17):
        (tmp_path / f"r{n}.txt").write_text(f"-r r{n + 1}.txt\n" if n < 16 else "six\n")
    found = read(tmp_path, "-r r1.txt\n")
    assert texts(found) == [("r16.txt:1", "six")] and len(found.files) == 17
    (tmp_path / "r16.txt").write_text("-r r17.txt\n")
    (tmp_path / "r17.txt").write_text("six\n")
    with pytest.raises(UserError, match=r"^r16.txt:1: includes nested more than 16 deep \(a loop\?\)$"):
        read(tmp_path, "-r r1.txt\n")


@pytest.mark.parametrize("line", ["-f=./wheels", "--find-links=./wheels", "-f ./wheels"], ids=["short-equals", "long-equals", "spaced"])
def test_every_spelling_of_find_links_names_the_folder(tmp_path, line):
    (tmp_path / "wheels").mkdir()
    assert read(tmp_path, f"{line}\n").find_links == ("wheels",)


def test_an_index_url_written_with_a_legacy_equals_sign_reads(tmp_path):
    found = read(tmp_path, "-i=https://mirror.example/simple\n--extra-index-url=https://e.example/simple\n")
    assert (found.index_url, found.extra_index_urls) == ("https://mirror.example/simple", ("https://e.example/simple",))


@pytest.mark.parametrize("text, local", [("sub/pkg", "sub/pkg"), ("./sub/pkg[extra]", "sub/pkg[extra]"),
                                         ("file:sub/pkg", "sub/pkg")], ids=["bare-path", "extras", "file-relative"])
def test_a_path_pip_reads_as_a_path_is_the_projects_code(tmp_path, text, local):
    (tmp_path / "sub" / "pkg").mkdir(parents=True)
    assert read(tmp_path, f"{text}\n").own_code == (local,)


def test_a_url_with_a_query_and_a_fragment_names_its_wheel(tmp_path):
    found = read(tmp_path, "https://example.com/x/torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl?sig=a/b#sha256=00\n")
    assert [line.requirement.name for line in found.lines] == ["torch-scatter"]
    assert read(tmp_path, "https://example.com/x/archive.tar.gz\n").lines[0].requirement is None


def test_a_marker_with_no_python_applies_when_some_python_meets_it(tmp_path):
    found = read(tmp_path, 'a; python_version < "3.8"\nb; python_version > "9.0"\nc\n')
    assert [line.applies() for line in found.lines] == [True, False, True]
    assert not read(tmp_path, "a\nb\n").pythons_markers_split()


def test_nothing_of_the_machine_running_cudaenv_reaches_a_marker(tmp_path):
    found = read(tmp_path, 'a; platform_release == ""\nb; platform_version == ""\nc; platform_machine == "x86_64"\n')
    assert [line.applies("3.12") for line in found.lines] == [True, True, True]


def test_a_conda_pip_list_resolves_against_its_own_folder_and_names_its_lines(tmp_path):
    from cudaenv.project.reqfile import read_requirement_items

    (tmp_path / "env" / "reqs").mkdir(parents=True)
    (tmp_path / "env" / "reqs" / "base.txt").write_text("six\n")
    found = read_requirement_items(tmp_path, tmp_path / "env", [(7, "-r reqs/base.txt"), (8, "numpy")],
                                   "env/environment.yml")
    assert texts(found) == [("env/reqs/base.txt:1", "six"), ("env/environment.yml:8", "numpy")]


@pytest.mark.parametrize("folder", ["wheels dir", "w,target=x", "it's", "$HOME"], ids=["space", "comma", "quote", "dollar"])
def test_a_find_links_folder_whose_name_a_build_mount_cannot_carry_is_refused(tmp_path, folder):
    (tmp_path / folder).mkdir()
    with pytest.raises(UserError, match=r"^requirements.txt:1: --find-links .*letters, digits and \. _ - \+ /"):
        read(tmp_path, f"--find-links \"./{folder}\"\n")  # shlex quoting, as pip reads option values


LONG = "a" * 120


@pytest.mark.parametrize("line, shown", [
    (f"{LONG}!", f"{LONG}!"), (f"-e git+https://example.com/{LONG}", f"git+https://example.com/{LONG}"),
    (f"-r https://example.com/{LONG}", f"https://example.com/{LONG}"), (f"--find-links ../{LONG}", f"../{LONG}"),
    (f"--extra-index-url ftp://example.com/{LONG}", f"ftp://example.com/{LONG}"), (f"./{LONG}", f"./{LONG}"),
    (f"--extra-index-url https://${{TOKEN}}@example.com/{LONG}", f"--extra-index-url https://${{TOKEN}}@example.com/{LONG}"),
    (f"--pre {LONG}", None), (f"./{LONG}.tar.gz", f"./{LONG}.tar.gz"),
], ids=["requirement", "editable", "include-url", "find-links", "index", "path", "variable", "argument", "archive"])
def test_a_long_bad_value_is_shown_cut_to_80_characters(tmp_path, line, shown):
    (tmp_path / f"{LONG}.tar.gz").write_bytes(b"sdist")
    with pytest.raises(UserError) as caught:
        read(tmp_path, f"{line}\n")
    message = str(caught.value)
    if shown is None:  # an option's stray argument
        assert f"unexpected {LONG[:80]!r} after an option" in message
        return
    assert repr(shown[:80]) in message and repr(shown[:81]) not in message, message


def test_a_requirement_error_quotes_the_parsers_first_line_only(tmp_path):
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        Requirement("torch >= = 2")
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0]
    with pytest.raises(UserError) as caught:
        read(tmp_path, "torch >= = 2\n")
    assert str(caught.value) == f"requirements.txt:1: 'torch >= = 2' is not a requirement pip can read ({first})"


def test_a_local_marker_is_kept_for_the_wheel_it_names(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "torch-2.1.0-cp312-cp312-linux_x86_64.whl").write_bytes(b"wheel")
    found = read(tmp_path, 'w/torch-2.1.0-cp312-cp312-linux_x86_64.whl ; python_version >= "3.12"\n')
    assert [line.text for line in found.lines] == ['torch==2.1.0; python_version >= "3.12"']
    assert found.lines[0].applies("3.12") and not found.lines[0].applies("3.11")


def test_credentials_are_refused_with_only_a_user_name_too(tmp_path):
    with pytest.raises(UserError, match="carries credentials"):
        read(tmp_path, "--extra-index-url https://token@example.com/simple\n")


def test_a_file_url_on_localhost_is_a_path_on_this_machine(tmp_path):
    (tmp_path / "pkg").mkdir()
    assert read(tmp_path, f"file://localhost{tmp_path}/pkg\n").own_code == ("pkg",)


def test_an_include_and_find_links_are_found_from_the_including_files_folder(tmp_path):
    (tmp_path / "reqs" / "wheels").mkdir(parents=True)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "reqs" / "dev.txt").write_text("-f wheels\n-f ../wheels\n")
    found = read(tmp_path, "-r reqs/dev.txt\n")
    assert found.find_links == ("reqs/wheels", "wheels")


def test_an_absolute_path_to_a_file_in_the_project_reads(tmp_path):
    (tmp_path / "requirements.txt").write_text("six\n")
    assert texts(read_requirement_files(tmp_path, [tmp_path / "requirements.txt"])) == [("requirements.txt:1", "six")]


def test_a_bare_name_is_a_package_even_beside_a_folder_of_that_name(tmp_path):
    (tmp_path / "sub").mkdir()
    found = read(tmp_path, "sub\n-e sub\n")
    assert [(line.where, line.text, line.local) for line in found.lines] == [
        ("requirements.txt:1", "sub", None), ("requirements.txt:2", "sub", "sub")]
    assert found.lines[1].editable and found.lines[1].requirement is None


def test_paths_in_an_included_file_fall_back_to_the_project_root_as_pip_does(tmp_path):
    (tmp_path / "reqs").mkdir()
    (tmp_path / "wheels").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "reqs" / "dev.txt").write_text("-f wheels\n./pkg\n")
    found = read(tmp_path, "-r reqs/dev.txt\n")
    assert found.find_links == ("wheels",) and found.own_code == ("pkg",)
    assert [(line.where, line.text) for line in found.lines] == [("reqs/dev.txt:2", "./pkg")]


def test_a_url_requirement_keeps_its_line_and_text(tmp_path):
    found = read(tmp_path, "-c pins.txt\n", pins_txt="https://example.com/a-1.0-py3-none-any.whl\n")
    assert [(line.where, line.text, line.constraint) for line in found.lines] == [
        ("pins.txt:1", "https://example.com/a-1.0-py3-none-any.whl", True)]


def test_options_written_with_pips_legacy_equals_sign_read_as_pip_reads_them(tmp_path):
    """`-r=FILE`, `-f=DIR`, `--extra-index-url==URL`: pip drops the leading '=' of an option value
    (names that start with X, like the letters a mutation might strip, keep theirs)."""
    (tmp_path / "Xwheels").mkdir()
    (tmp_path / "Xbase.txt").write_text("six\n")
    found = read(tmp_path, "-r=Xbase.txt\n-f=Xwheels\n--extra-index-url==https://e.example/simple\n"
                           "--index-url==https://i.example/simple\n")
    assert texts(found) == [("Xbase.txt:1", "six")]
    assert found.find_links == ("Xwheels",)
    assert (found.extra_index_urls, found.index_url) == (("https://e.example/simple",), "https://i.example/simple")


# --- what the last mutation run left in the reader ----------------------------------------------------


def test_markers_are_read_for_the_images_platform_whatever_machine_runs_cudaenv(tmp_path, monkeypatch):
    import packaging.markers

    mac = dict(packaging.markers.default_environment(), sys_platform="darwin", platform_system="Darwin",
               platform_machine="arm64", os_name="posix")
    monkeypatch.setattr(packaging.markers, "default_environment", lambda: dict(mac))
    found = read(tmp_path, 'a; sys_platform == "linux" and platform_machine == "x86_64"\nb; sys_platform == "darwin"\n')
    assert [line.applies("3.12") for line in found.lines] == [True, False]


def test_a_marker_that_cannot_be_evaluated_does_not_hold(tmp_path):
    assert [line.applies("3.12") for line in read(tmp_path, 'a; extra == "gpu"\n').lines] == [False]


@pytest.mark.parametrize("line, message", [
    ("six; platform_release != 'a/b'", None),
    ("a/b @ https://example.com/x.whl", "requirements.txt:1: 'a/b @ https://example.com/x.whl' is not a requirement "
                                        "pip can read ("),
    ("~pkg", "requirements.txt:1: '~pkg' is outside the project directory; the image holds only the project's files"),
    ("torch --hash=sha256:00 extra", "requirements.txt:1: unexpected 'extra' after the requirement"),
    ("--pre a b", "requirements.txt:1: unexpected 'a b' after an option"),
    ("--index-url ftp://example.com/simple", "requirements.txt:1: 'ftp://example.com/simple': an index must be an "
                                             "http(s):// URL"),
], ids=["slash-in-a-marker", "slash-name-at-url", "tilde-name", "argument-after-requirement", "two-arguments",
        "index-url-scheme"])
def test_lines_at_the_edges_of_the_path_and_option_rules(tmp_path, line, message):
    if message is None:
        assert texts(read(tmp_path, f"{line}\n")) == [("requirements.txt:1", 'six; platform_release != "a/b"')]
        return
    with pytest.raises(UserError) as caught:
        read(tmp_path, f"{line}\n")
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("data, reason", [(b"torch\n\xff\n", "invalid start byte"),
                                          (b"# coding: undefined\ntorch\n",
                                           "decoding with 'undefined' codec failed (UnicodeError: undefined encoding)")],
                         ids=["bad-byte", "unknown-coding"])
def test_a_file_that_does_not_decode_says_why_word_for_word(tmp_path, data, reason):
    with pytest.raises(UserError) as caught:
        read(tmp_path, data)
    assert str(caught.value) == f"requirements.txt: not UTF-8 text ({reason}); save it as UTF-8"


def test_a_wheel_url_with_only_a_fragment_names_its_wheel(tmp_path):
    found = read(tmp_path, "https://example.com/x/torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl#sha256=00\n")
    assert [line.requirement.name for line in found.lines] == ["torch-scatter"]


def test_a_wheel_file_named_bare_is_a_local_archive(tmp_path):
    (tmp_path / "a-1.0-py3-none-any.whl").write_bytes(b"wheel")
    found = read(tmp_path, "a-1.0-py3-none-any.whl\n")
    assert texts(found) == [("requirements.txt:1", "a==1.0")] and found.find_links == (".",)


def test_an_editable_folder_is_found_beside_the_file_before_the_root(tmp_path):
    (tmp_path / "reqs" / "pkg").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    (tmp_path / "reqs" / "dev.txt").write_text("-e pkg\n-e lib\n./pkg\n")
    assert read(tmp_path, "-r reqs/dev.txt\n").own_code == ("reqs/pkg", "lib")


def test_extras_of_the_projects_own_code_lose_their_blanks(tmp_path):
    assert read(tmp_path, ".[dev, test]\n").own_code == (".[dev,test]",)


def test_find_links_as_a_file_url_is_a_folder_in_the_project(tmp_path):
    (tmp_path / "wheels").mkdir()
    assert read(tmp_path, f"--find-links file://{tmp_path}/wheels\n").find_links == ("wheels",)


def test_a_constraint_that_is_a_path_is_refused(tmp_path):
    (tmp_path / "pkg").mkdir()
    with pytest.raises(UserError) as caught:
        read(tmp_path, "-c pins.txt\n", pins_txt="./pkg\n")
    assert str(caught.value) == "pins.txt:1: './pkg': a constraint must name a package"


def test_an_include_outside_the_project_names_it(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "outside.txt").write_text("six\n")
    with pytest.raises(UserError) as caught:
        read(tmp_path / "p", "-r ../outside.txt\n")
    assert str(caught.value) == (f"requirements.txt:1: {tmp_path / 'p'}/../outside.txt is outside the project "
                                 f"directory {tmp_path / 'p'}; the image holds only the project's files")


def test_a_wheel_folder_a_build_mount_cannot_carry_is_refused_word_for_word(tmp_path):
    (tmp_path / "w,x").mkdir()
    (tmp_path / "w,x" / "a-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / "my wheels").mkdir()
    with pytest.raises(UserError) as caught:
        read(tmp_path, "./w,x/a-1.0-py3-none-any.whl\n")
    assert str(caught.value) == ("requirements.txt:1: './w,x/a-1.0-py3-none-any.whl': the wheel's folder reaches the "
                                 "image as a build mount, whose path may hold only letters, digits and . _ - + / "
                                 "(rename it)")
    with pytest.raises(UserError) as caught:
        read(tmp_path, '--find-links "./my wheels"\n')
    assert str(caught.value) == ("requirements.txt:1: --find-links './my wheels': a folder in the project reaches the "
                                 "image as a build mount, whose path may hold only letters, digits and . _ - + / "
                                 "(rename it)")
