"""The rules of ``cudaenv.project.wheels`` one at a time: which package uv's refusal names, which
wheel tags an image installs, what an index page says a package's releases cover, how the page is
read, which Pythons are tried and in what order, and every part of the "no" (the culprit, the
Pythons its wheels cover, what the frameworks need, each fix). test_wheels.py and
test_python_choice.py hold the first cases; these pin the rest down.

The matrix is the shipped one plus two stand-in torch releases (2.98.0 for Python 3.9-3.11, 2.99.0
for 3.11-3.13), as in test_python_choice.py; uv's part is played by a compile function."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.version import Version

import cudaenv.project.wheels as wheels
from cudaenv.errors import LockError
from cudaenv.matrix import load_matrix
from cudaenv.project.wheels import (Attempt, Inputs, NoWheels, Release, _brought_by, _culprit, _framework_fixes,
                                    _framework_pythons, _moved, _nearest_release, candidate_pythons, choose, coverage,
                                    eol_caveat, glibc_of, http_page_reader, index_releases, missing_wheel, no_python,
                                    page_files, platform_tags, python_text, pythons_of_wheel, releases,
                                    requirement_name, stack_for_python, supported_tags)
from cudaenv.resolver.model import Constraints, Host, Problem, Resolution
from cudaenv.resolver.resolve import resolve
from tests.support.package_index import TORCH_OVERLAY

MODERN = "x86_64-manylinux_2_28"
OLD_GLIBC = "x86_64-manylinux_2_17"
HOST = Host(driver="570.124.06")
INDEX = "https://index.example/simple"


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    overlay: Path = tmp_path_factory.mktemp("overlay")
    (overlay / "torch.toml").write_text(TORCH_OVERLAY)
    return load_matrix(overlays=[overlay])


def torch(spec: str, python: str | None = None) -> Constraints:
    return Constraints(frameworks=(("torch", SpecifierSet(spec)),),
                       python=SpecifierSet(python) if python is not None else None)


def wheel(name: str, version: str, python: str, platform: str = "manylinux_2_17_x86_64") -> str:
    tag = "cp" + python.replace(".", "")
    return f"{name}-{version}-{tag}-{tag}-{platform}.whl"


# --- what uv's refusal names ---------------------------------------------------------------------


@pytest.mark.parametrize("text, name", [
    ("numpy>=1.20,<1.22", "numpy"), ("Foo_Bar[extra]==1.0", "foo-bar"), ("pkg @ https://x.example/p.whl", "pkg"),
    ("pkg;python_version<'3.10'", "pkg"), ("  Zope.Interface~=5.0 ", "zope-interface"), ("six!=1.0", "six"),
    ("six 1.0", "six"), ("antlr4-python3-runtime==4.9.*", "antlr4-python3-runtime"),
], ids=["range", "extra", "url", "marker", "spaces-dots", "not-equal", "space", "dashes"])
def test_a_requirement_uv_printed_is_named_by_its_normalized_package(text, name):
    assert requirement_name(text) == name


def test_no_wheels_says_which_requirement_has_none_on_which_python():
    missing = NoWheels("NumPy==1.21.0", "3.12", "Because numpy==1.21.0 has no usable wheels")
    assert str(missing) == "NumPy==1.21.0 has no wheel for Python 3.12:\nBecause numpy==1.21.0 has no usable wheels"
    assert (missing.requirement, missing.python, missing.name) == ("NumPy==1.21.0", "3.12", "numpy")
    assert missing.detail == "Because numpy==1.21.0 has no usable wheels"


@pytest.mark.parametrize("stderr, requirement", [
    ("Because jieba==0.42.1 has no wheels and you require jieba", "jieba==0.42.1"),
    ("  cause: Because there is no version of numpy==1.21.0 has no usable wheels", "numpy==1.21.0"),
    ("Because torch>=2 and dep==1.0 has no usable wheels", "dep==1.0"),
    ("x, and Flash_Attn[cuda]==2.6.3 has no usable wheels", "Flash_Attn[cuda]==2.6.3"),
    ("Because grain>=0.2,<0.3,!=0.2.1 has no usable wheels", "grain>=0.2,<0.3,!=0.2.1"),
    ("hint: Wheels are required for `antlr4-python3-runtime` because", "antlr4-python3-runtime"),
    ("error: Because numpy has no wheels for cp312\nhint: Wheels are required for `scipy`", "numpy"),
    ("error: numpy==1.21.0 has no usable wheels", None),
    ("error: Failed to fetch: https://index.example/simple/numpy/", None),
], ids=["no-wheels", "no-version-of", "and", "comma-extra", "range", "hint", "refusal-before-hint", "no-because",
        "fetch"])
def test_the_requirement_uv_says_has_no_wheel(stderr, requirement):
    assert missing_wheel(stderr) == requirement


# --- which tags an image installs ----------------------------------------------------------------


def test_a_platform_is_read_as_its_cpu_and_glibc():
    assert glibc_of("aarch64-manylinux_2_17") == ("aarch64", 2, 17)
    assert glibc_of("x86_64-manylinux_2_28") == ("x86_64", 2, 28)


@pytest.mark.parametrize("platform", ["x86_64-musllinux_1_1", "x86_64-manylinux_2_28_x", "x86_64-manylinux2014",
                                      "riscv64-manylinux_2_28"], ids=["musl", "trailing", "legacy", "other-cpu"])
def test_a_platform_that_is_not_manylinux_is_refused_by_name(platform):
    with pytest.raises(ValueError) as raised:
        glibc_of(platform)
    assert str(raised.value) == f"not a manylinux platform: {platform!r}"


def test_an_images_platform_tags_run_from_its_glibc_down_to_2_5_with_legacy_names():
    assert platform_tags("aarch64-manylinux_2_17") == [
        "manylinux_2_17_aarch64", "manylinux2014_aarch64", "manylinux_2_16_aarch64", "manylinux_2_15_aarch64",
        "manylinux_2_14_aarch64", "manylinux_2_13_aarch64", "manylinux_2_12_aarch64", "manylinux2010_aarch64",
        "manylinux_2_11_aarch64", "manylinux_2_10_aarch64", "manylinux_2_9_aarch64", "manylinux_2_8_aarch64",
        "manylinux_2_7_aarch64", "manylinux_2_6_aarch64", "manylinux_2_5_aarch64", "manylinux1_aarch64",
        "linux_aarch64"]


def test_a_cpython_installs_its_own_abi_the_stable_abi_and_pure_wheels_of_its_platform():
    tags = supported_tags("3.12", MODERN)
    for tag in (Tag("cp312", "cp312", "manylinux_2_28_x86_64"), Tag("cp39", "abi3", "manylinux_2_17_x86_64"),
                Tag("cp312", "none", "manylinux1_x86_64"), Tag("py3", "none", "any"), Tag("cp312", "none", "any"),
                Tag("py312", "none", "any"), Tag("py3", "none", "linux_x86_64")):
        assert tag in tags, tag
    for tag in (Tag("cp313", "cp313", "manylinux_2_28_x86_64"), Tag("cp311", "cp311", "manylinux_2_28_x86_64"),
                Tag("cp312", "cp312", "manylinux_2_29_x86_64"), Tag("cp312", "cp312", "manylinux_2_28_aarch64"),
                Tag("cp313", "abi3", "manylinux_2_28_x86_64"), Tag("cp311", "none", "any")):
        assert tag not in tags, tag


def test_a_wheel_is_asked_about_the_pythons_given():
    assert pythons_of_wheel("six-1.16.0-py3-none-any.whl", MODERN, pythons=("3.8", "3.12")) == {"3.8", "3.12"}
    assert pythons_of_wheel("not a wheel.whl", MODERN) == set()


# --- what an index page says -----------------------------------------------------------------------


def test_releases_read_every_wheel_and_sdist_of_the_package_and_nothing_else():
    files = [
        "my-pkg-1.3.tar.bz2",                               # an sdist of a dashed name, no wheel
        wheel("my_pkg", "1.0", "3.9"), wheel("My.Pkg", "1.0", "3.10"),
        "my_pkg-1.0.zip",                                   # this version's sdist, after its wheels
        "My_Pkg-1.1.tar.gz", wheel("my_pkg", "1.1", "3.12"),  # the sdist before the wheel
        wheel("my_pkg", "1.2rc1", "3.13"),
        wheel("other", "9.0", "3.12"), "other-9.0.tar.gz",   # another package
        "my_pkg-notaversion-py3-none-any.whl", "not-a-wheel.whl", "my_pkg-latest.tar.gz", "my_pkg.tar.gz",
        "my_pkg-2.0.tar.xz", "my_pkg-2.0.egg", "my_pkg-2.0-cp312-cp312-manylinux_2_17_aarch64.whl",
    ]
    found = releases(files, "MY_PKG", MODERN)
    assert found == [
        Release(Version("1.0"), frozenset({"3.9", "3.10"}), True),
        Release(Version("1.1"), frozenset({"3.12"}), True),
        Release(Version("1.2rc1"), frozenset({"3.13"}), False),
        Release(Version("1.3"), frozenset(), True),
        Release(Version("2.0"), frozenset(), False),  # its only wheel is for another CPU
    ]


def test_coverage_without_a_range_is_every_release_and_includes_prereleases_in_range():
    found = [Release(Version("1.0"), frozenset({"3.9"}), False), Release(Version("1.1rc1"), frozenset({"3.13"}), False)]
    assert coverage(found, None) == {"3.9", "3.13"}
    assert coverage(found, SpecifierSet(">=1.1.dev0")) == {"3.13"}
    assert coverage(found, SpecifierSet(">1.0")) == {"3.13"}


def test_an_index_page_lists_the_files_its_anchors_link_to():
    page = ('<html><head><link href="/style/x.css"></head><body>'
            '<a href="https://files.example/p/torch-2.4.1%2Bcu121-cp312-cp312-linux_x86_64.whl?x=1#sha256=00">t</a>'
            '<a>no link</a><a href="">empty</a><a href="/p/dir/">dir</a><A HREF="/p/six-1.16.0.tar.gz">s</A>'
            '</body></html>')
    assert page_files(page) == ["torch-2.4.1+cu121-cp312-cp312-linux_x86_64.whl", "six-1.16.0.tar.gz"]


class Response:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self) -> bytes:
        return self.body

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


@pytest.fixture
def opened(monkeypatch):
    """Plays urllib's urlopen: records each request, answers a page with one wheel (and a byte
    that is not UTF-8), or raises what ``answers`` holds for the URL."""
    import urllib.request

    calls, answers = [], {}

    def urlopen(request, timeout=None, context=None):
        calls.append((request, timeout, context))
        answer = answers.get(request.full_url)
        if isinstance(answer, Exception):
            raise answer
        return Response(b'<a href="/f/six-1.16.0-py3-none-any.whl">\xff</a>')

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return calls, answers


def test_the_index_page_is_read_as_uv_reads_it(opened):
    calls, _ = opened
    read = http_page_reader(credentials={"index.example": "Basic dTpw"})
    assert read(INDEX + "/", "Six_Py") == ("six-1.16.0-py3-none-any.whl",)
    (request, timeout, context), = calls
    assert request.full_url == "https://index.example/simple/six-py/"
    assert request.get_header("Accept") == "text/html" and request.get_header("User-agent") == "cudaenv"
    assert request.get_header("Authorization") == "Basic dTpw"
    assert timeout == 30 and context is None
    assert read(INDEX + "/", "Six_Py") == ("six-1.16.0-py3-none-any.whl",)
    assert len(calls) == 1  # the same page serves the pruning and the "no"


def test_credentials_go_only_to_their_own_host_and_the_ca_bundle_is_trusted(opened, monkeypatch):
    import ssl

    calls, _ = opened
    bundles = []
    monkeypatch.setattr(ssl, "create_default_context", lambda cafile=None: bundles.append(cafile) or "context")
    read = http_page_reader(ca_bundle="/etc/ca.pem", credentials={"other.example": "Basic dTpw"})
    read(INDEX, "six")
    (request, _, context), = calls
    assert request.get_header("Authorization") is None
    assert bundles == ["/etc/ca.pem"] and context == "context"
    http_page_reader(credentials=None)(INDEX, "six")
    assert calls[-1][0].get_header("Authorization") is None


@pytest.mark.parametrize("error", [OSError("404"), ValueError("bad url")], ids=["missing", "bad-url"])
def test_a_page_that_cannot_be_read_is_no_answer(opened, error):
    _, answers = opened
    answers[INDEX + "/six/"] = error
    assert http_page_reader()(INDEX, "six") is None


def test_releases_come_from_the_first_index_that_has_the_package():
    pages = {("https://a.example", "six"): None, ("https://b.example", "six"): (),
             ("https://c.example", "six"): ("six-1.0-py3-none-any.whl",),
             ("https://d.example", "six"): ("six-2.0-py3-none-any.whl",)}
    read = lambda index, name: pages.get((index, name))  # noqa: E731
    found = index_releases("six", ["https://a.example", "https://b.example", "https://c.example", "https://d.example"],
                           MODERN, read)
    assert [str(r.version) for r in found] == ["1.0"]
    assert index_releases("six", ["https://a.example", "https://b.example"], MODERN, read) is None


# --- how Pythons read, and when one is past its end of life -------------------------------------


@pytest.mark.parametrize("pythons, text", [
    (["3.10", "4.11"], "3.10, 4.11"), (["3.9", "3.9"], "3.9"), (["3.13", "3.11", "3.12", "3.9"], "3.9, 3.11–3.13"),
], ids=["another-major", "repeated", "one-then-run"])
def test_python_runs_need_one_major_and_consecutive_minors(pythons, text):
    assert python_text(pythons) == text


def test_end_of_life_is_known_only_for_the_pythons_listed_and_defaults_to_today():
    assert eol_caveat("3.15", today=date(2099, 1, 1)) is None
    caveat = eol_caveat("3.6")  # ended 2021-12-23, before any day these tests run
    assert caveat == Problem("python-end-of-life", "Python 3.6 reached its end of life on 2021-12-23 (PEP 494): it "
                                                   "gets no security fixes; the project's pins keep it there")
    assert eol_caveat("3.14", today=date(2030, 10, 31)).message.startswith("Python 3.14 reached its end of life on "
                                                                             "2030-10-31 (PEP 745)")


# --- which Pythons are tried ------------------------------------------------------------------------


def test_candidates_are_the_framework_builds_pythons_newest_first_up_to_the_resolvers_choice(matrix):
    constraints = torch(">=2.98")
    result = resolve(matrix, constraints, HOST)
    assert candidate_pythons(matrix, constraints, result) == ["3.13", "3.12", "3.11", "3.10", "3.9"]
    capped = replace(result, stack=replace(result.stack, python="3.11"))
    assert candidate_pythons(matrix, constraints, capped) == ["3.11", "3.10", "3.9"]


def test_candidates_keep_to_the_projects_python_constraint(matrix):
    constraints = torch(">=2.98", python=">=3.10,!=3.12")
    assert candidate_pythons(matrix, constraints, resolve(matrix, constraints, HOST)) == ["3.13", "3.11", "3.10"]


def test_candidates_include_the_pythons_of_the_resolvers_alternatives(matrix):
    constraints = Constraints()  # no framework: the resolver's alternatives alone say which Pythons
    result = resolve(matrix, constraints, HOST)
    alternatives = (replace(result.stack, python="3.10"), replace(result.stack, python="3.99"))
    assert candidate_pythons(matrix, constraints, replace(result, alternatives=alternatives)) == ["3.10"]


def test_the_stack_for_a_python_is_the_resolvers_best_on_exactly_that_python(matrix):
    found = stack_for_python(matrix, torch(">=2.98"), HOST, "3.10")
    assert found.ok and (found.stack.python, found.stack.framework("torch")) == ("3.10", "2.98.0")
    assert not stack_for_python(matrix, torch("==2.99.0"), HOST, "3.10").ok


class Index:
    """Packages (name -> Pythons its one release, 1.0, has wheels for); records each compile."""

    def __init__(self, packages: dict[str, set[str]], *, pinned: bool = True, clash_on=frozenset()) -> None:
        self.packages, self.pinned, self.clash_on, self.calls = packages, pinned, clash_on, []

    def compile(self, stack) -> list[str]:
        self.calls.append(stack.python)
        if stack.python in self.clash_on:
            raise LockError(f"clash on {stack.python}")
        for name, pythons in self.packages.items():
            if stack.python not in pythons:
                raise NoWheels(f"{name}==1.0", stack.python, f"Because {name}==1.0 has no usable wheels and you "
                                                             f"require {name}==1.0")
        return [f"torch=={stack.framework('torch')}"]

    def page(self, index: str, name: str):
        pythons = self.packages.get(name)
        return None if pythons is None else tuple(wheel(name, "1.0", p) for p in sorted(pythons))

    def inputs(self) -> Inputs:
        return Inputs(compile=self.compile, indexes=(INDEX,), read_page=self.page,
                      exact_pins={n: Version("1.0") for n in self.packages} if self.pinned else {})


def choice(matrix, constraints, index):
    return choose(matrix, constraints, HOST, resolve(matrix, constraints, HOST), index.inputs())


def test_the_resolvers_own_stack_is_kept_unchanged_when_it_installs(matrix):
    constraints = torch(">=2.98")
    result = resolve(matrix, constraints, HOST)
    chosen, pinned = choose(matrix, constraints, HOST, result, Index({}).inputs())
    assert chosen is result and pinned == ["torch==2.99.0"]


def test_a_python_the_exact_pin_cannot_cover_is_never_tried(matrix):
    index = Index({"a": {"3.10", "3.12"}})
    chosen, _ = choice(matrix, torch(">=2.98"), index)
    assert index.calls == ["3.13", "3.12"] and chosen.stack.python == "3.12"


def test_a_page_that_cannot_be_read_skips_nothing(matrix):
    index = Index({"a": {"3.10"}})
    index.page = lambda _index, _name: None
    chosen, _ = choice(matrix, torch(">=2.98"), index)
    assert index.calls == ["3.13", "3.12", "3.11", "3.10"] and chosen.stack.python == "3.10"


def test_a_moved_python_names_at_most_three_newer_refusals_and_clashes(matrix):
    index = Index({"a": {"3.9"}}, pinned=False)
    chosen, pinned = choice(matrix, torch(">=2.98"), index)
    assert pinned == ["torch==2.98.0"]
    moved = [p.message for p in chosen.problems if p.code == "python-from-wheels"]
    assert moved == ["Python 3.9: the newest on which every requirement has wheels (a==1.0 has none for 3.13, "
                     "a==1.0 has none for 3.12, a==1.0 has none for 3.11)"]
    clashes = Index({}, clash_on={"3.13", "3.12", "3.11", "3.10"})
    chosen, _ = choice(matrix, torch(">=2.98"), clashes)
    assert chosen.stack.python == "3.9"
    assert [p.message for p in chosen.problems if p.code == "python-from-wheels"] == [
        "Python 3.9: the newest on which every requirement has wheels (the requirements conflict on 3.13, the "
        "requirements conflict on 3.12, the requirements conflict on 3.11)"]


def test_a_refusal_and_a_clash_are_both_said_and_a_supported_python_gets_no_caveat(matrix):
    index = Index({"a": {"3.11", "3.12"}}, pinned=False, clash_on={"3.12"})
    chosen, _ = choice(matrix, torch(">=2.98"), index)
    assert chosen.stack.python == "3.11" and index.calls == ["3.13", "3.12", "3.11"]
    assert [(p.code, p.message) for p in chosen.problems if p not in resolve(matrix, torch("==2.99.0"), HOST).problems
            ] == [("python-from-wheels", "Python 3.11: the newest on which every requirement has wheels (a==1.0 has "
                                         "none for 3.13, the requirements conflict on 3.12)")]


def test_moving_keeps_the_resolutions_own_problems_first(matrix):
    here = resolve(matrix, torch(">=2.98"), HOST)
    here = replace(here, problems=(Problem("note", "kept"),))
    attempt = Attempt("3.13", here.stack, NoWheels("a==1.0", "3.13", ""))
    moved = _moved(replace(here, stack=replace(here.stack, python="3.12")), [attempt])
    assert [p.code for p in moved.problems] == ["note", "python-from-wheels"]


def test_no_candidate_python_resolving_is_a_no_without_a_culprit(matrix):
    constraints = torch(">=2.98")
    result = resolve(matrix, constraints, HOST)
    assert no_python(matrix, constraints, HOST, result, [], Index({}).inputs()) == Resolution(
        stack=None, valid_cuda=(), problems=(Problem("no-wheels", "no candidate Python resolves"),))


def test_pythons_whose_stack_vanishes_are_not_tried(matrix, monkeypatch):
    """No stack on 3.12 (for this host, say): 3.12 is passed over and 3.11 still tried."""
    constraints = torch(">=2.98")
    result = resolve(matrix, constraints, HOST)
    real = wheels.stack_for_python
    nothing = Resolution(stack=None, valid_cuda=(), problems=())
    monkeypatch.setattr(wheels, "stack_for_python",
                        lambda m, c, h, python: nothing if python == "3.12" else real(m, c, h, python))
    index = Index({"a": {"3.11"}}, pinned=False)
    chosen, pinned = choose(matrix, constraints, HOST, result, index.inputs())
    assert index.calls == ["3.13", "3.11"]  # the resolver's own choice is not resolved again
    assert chosen.stack.python == "3.11" and pinned == ["torch==2.99.0"]


def test_no_python_left_to_try_is_a_no_not_a_crash(matrix, monkeypatch):
    constraints = torch(">=2.98")
    result = resolve(matrix, constraints, HOST)
    monkeypatch.setattr(wheels, "candidate_pythons", lambda *args: [])
    index = Index({})
    chosen, pinned = choose(matrix, constraints, HOST, result, index.inputs())
    assert pinned is None and index.calls == []
    assert chosen == Resolution(stack=None, valid_cuda=(), problems=(Problem("no-wheels", "no candidate Python resolves"),))


# --- the "no" ---------------------------------------------------------------------------------------


def refusal(matrix, constraints, requirement: str, pythons=("3.13",), detail: str = "") -> list[Attempt]:
    out = []
    for python in pythons:
        stack = stack_for_python(matrix, constraints, HOST, python).stack
        out.append(Attempt(python, stack, NoWheels(requirement, python, detail or f"you require {requirement}")))
    return out


def answer(matrix, constraints, attempts, pages: dict, pins=None) -> list[tuple[str, str]]:
    inputs = Inputs(compile=None, indexes=(INDEX,), read_page=lambda _i, name: pages.get(name), exact_pins=pins or {})
    result = resolve(matrix, constraints, HOST)
    found = no_python(matrix, constraints, HOST, result, attempts, inputs)
    assert found.stack is None and found.valid_cuda == ()
    return [(p.code, p.message) for p in found.problems]


def test_the_no_says_the_page_could_not_be_read_and_which_pythons_were_tried(matrix):
    constraints = torch("==2.99.0")
    attempts = refusal(matrix, constraints, "a==1.0", pythons=("3.13", "3.12", "3.11"))
    assert answer(matrix, constraints, attempts, {}) == [
        ("no-wheels", "a==1.0 has no wheels for Python 3.11–3.13 (its index page could not be read); torch 2.99.0 for "
                      "3.11–3.13 (tried with source builds disabled, for x86_64-manylinux_2_28)")]


def test_the_no_names_a_package_without_wheels_for_the_images_platform(matrix):
    constraints = torch(">=2.98")
    pages = {"a": ("a-1.0-cp313-cp313-macosx_11_0_arm64.whl", "a-1.0.tar.gz")}
    assert answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages) == [
        ("no-wheels", "a==1.0 has no wheels for x86_64-manylinux_2_28 on any Python; torch>=2.98 for 3.9–3.13 "
                      "(tried with source builds disabled, for x86_64-manylinux_2_28)"),
        ("fix-build-from-source", 'or let it compile: [build] build_from_source = ["a"] (a compiler joins the image; '
                                  'flavor = "devel" only for CUDA extensions)')]


def test_without_a_framework_the_no_says_which_pythons_the_stack_needs(matrix):
    constraints = Constraints()
    stack = resolve(matrix, constraints, HOST).stack
    attempts = [Attempt(stack.python, stack, NoWheels("a==1.0", stack.python, "you require a==1.0"))]
    pages = {"a": (wheel("a", "1.0", "3.9"),)}
    assert answer(matrix, constraints, attempts, pages)[0] == (
        "no-wheels", f"a==1.0 has wheels for Python 3.9; the stack needs Python {stack.python} (tried with source "
                     "builds disabled, for x86_64-manylinux_2_28)")


def test_the_no_for_an_old_glibc_image_is_for_manylinux_2_17(matrix):
    constraints = torch(">=2.98")
    attempts = refusal(matrix, constraints, "a==1.0")
    old = "nvidia/cuda:11.3.1-runtime-ubuntu18.04"
    attempts = [replace(a, stack=replace(a.stack, base_image=old)) for a in attempts]
    pages = {"a": (wheel("a", "1.0", "3.13", "manylinux_2_28_x86_64"),)}
    assert answer(matrix, constraints, attempts, pages)[0] == (
        "no-wheels", "a==1.0 has no wheels for x86_64-manylinux_2_17 on any Python; torch>=2.98 for 3.9–3.13 "
                     "(tried with source builds disabled, for x86_64-manylinux_2_17)")


def test_the_frameworks_pythons_are_said_within_the_projects_python_constraint(matrix):
    constraints = torch(">=2.98", python=">=3.12")
    pages = {"a": (wheel("a", "1.0", "3.9"),)}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages)
    assert problems[0] == ("no-wheels", "a==1.0 has wheels for Python 3.9; torch>=2.98 for 3.12–3.13 (tried with "
                                        "source builds disabled, for x86_64-manylinux_2_28)")
    assert ("fix-python", "or widen [project] python (>=3.12): a has wheels for Python 3.9, which it excludes"
            ) in problems


def test_no_python_fix_when_the_python_constraint_admits_some_covered_python(matrix):
    constraints = torch("==2.99.0", python=">=3.10")
    pages = {"a": (wheel("a", "1.0", "3.9"), wheel("a", "1.0", "3.10"))}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages)
    assert [code for code, _ in problems if code == "fix-python"] == []


@pytest.mark.parametrize("spec, text", [
    ("", "torch"), ("==2.99.0", "torch 2.99.0"), (">=2.98", "torch>=2.98"), ("==2.99.0,<3", "torch<3,==2.99.0"),
], ids=["any", "pinned", "range", "pinned-and-capped"])
def test_what_a_framework_needs_is_named_as_the_project_constrains_it(matrix, spec, text):
    assert [t for t, _ in _framework_pythons(matrix, torch(spec))] == [text]


def test_what_a_framework_needs_is_every_python_of_its_candidate_builds(matrix):
    assert _framework_pythons(matrix, torch(">=2.98", python="<3.13")) == [
        ("torch>=2.98", frozenset({"3.9", "3.10", "3.11", "3.12"}))]


def test_the_no_names_the_package_that_misses_every_framework_python_whatever_order_it_failed_in(matrix):
    constraints = torch("==2.99.0")
    attempts = (refusal(matrix, constraints, "a==1.0", ("3.13",)) + refusal(matrix, constraints, "a==1.0", ("3.12",))
                + refusal(matrix, constraints, "b==1.0", ("3.11",)))
    pages = {"a": (wheel("a", "1.0", "3.12"),), "b": (wheel("b", "1.0", "3.8"),)}
    assert answer(matrix, constraints, attempts, pages)[0][1].startswith("b==1.0 has wheels for Python 3.8;")


def test_when_every_culprit_fits_some_framework_python_the_first_is_named(matrix):
    constraints = torch("==2.99.0")
    attempts = refusal(matrix, constraints, "a==1.0", ("3.13",)) + refusal(matrix, constraints, "b==1.0", ("3.12",))
    pages = {"a": (wheel("a", "1.0", "3.12"),), "b": (wheel("b", "1.0", "3.13"),)}
    assert answer(matrix, constraints, attempts, pages)[0][1].startswith("a==1.0 has wheels for Python 3.12;")


def test_a_requirement_uv_printed_that_cannot_be_parsed_covers_every_release(matrix):
    attempt = refusal(matrix, torch(">=2.98"), "a (>=1.0) !!")[0]
    pages = {"a": (wheel("a", "1.0", "3.9"), wheel("a", "2.0", "3.13"))}
    inputs = Inputs(compile=None, indexes=(INDEX,), read_page=lambda _i, name: pages.get(name), exact_pins={})
    missing, found, spec = _culprit([attempt], inputs, MODERN, frozenset({"3.12"}))
    assert missing is attempt.missing and spec == SpecifierSet() and len(found) == 2


def test_the_relax_fix_goes_down_to_the_newest_older_release_when_no_newer_one_fits(matrix):
    constraints = torch("==2.99.0")
    pages = {"a": (wheel("a", "0.8", "3.11"), wheel("a", "0.9", "3.12"), wheel("a", "1.0", "3.9"),
                   wheel("a", "1.1", "3.8"))}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages)
    assert ("fix-requirement", "relax a to ≤ 0.9 (wheels for 3.12)") in problems


def test_no_relax_fix_when_no_release_fits_the_frameworks_pythons(matrix):
    constraints = torch("==2.99.0")
    pages = {"a": (wheel("a", "1.0", "3.9"), wheel("a", "1.1", "3.10"))}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages)
    assert [code for code, _ in problems if code == "fix-requirement"] == []


def test_no_build_from_source_fix_without_an_sdist_of_a_release_in_range(matrix):
    constraints = torch("==2.99.0")
    pages = {"a": (wheel("a", "1.0", "3.9"), "a-0.9.tar.gz")}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages)
    assert [code for code, _ in problems] == ["no-wheels", "fix-framework"]
    pages = {"a": (wheel("a", "1.0", "3.9"), "a-1.0.tar.gz")}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a>=1.0"), pages)
    assert [code for code, _ in problems] == ["no-wheels", "fix-framework", "fix-build-from-source"]


@pytest.mark.parametrize("found, spec, pythons, nearest", [
    ([("1.0", "3.9"), ("1.1rc1", "3.12"), ("1.2", "3.12"), ("1.3", "3.12")], "==1.0", {"3.12"}, ("1.2", "≥")),
    ([("0.9", "3.12"), ("1.0", "3.9"), ("1.1", "3.9")], ">=0.5,==1.0", {"3.12"}, ("0.9", "≤")),
    ([("0.9", "3.12"), ("1.0", "3.9"), ("1.1", "3.12")], "==1.*", {"3.12"}, ("1.1", "≤")),
    ([("1.0", "3.9"), ("2.0", "3.12")], "==1.*", {"3.12"}, ("2.0", "≤")),
    ([("1.0", "3.9"), ("2.0rc1", "3.12")], "==1.0", {"3.12"}, (None, "")),
    ([("1.0", "3.9"), ("1.5", "3.12"), ("2.0", "3.12")], "<1.2,==1.0", {"3.12"}, ("1.5", "≥")),
], ids=["oldest-newer", "newest-older", "no-plain-pin", "anchor-last", "prerelease-only", "highest-pin"])
def test_the_nearest_release_that_meets_the_frameworks_pythons(found, spec, pythons, nearest):
    releases_ = [Release(Version(v), frozenset({p}), False) for v, p in found]
    release, op = _nearest_release(releases_, SpecifierSet(spec), frozenset(pythons))
    assert ((str(release.version) if release else None), op) == nearest


def test_the_framework_fix_is_the_newest_release_on_a_python_the_culprit_covers(matrix):
    constraints = Constraints(frameworks=(("torch", SpecifierSet("==2.99.0")), ("torchvision", SpecifierSet(">=0"))))
    # torchvision is no framework of its own to relax
    assert [name for name, _ in _framework_fixes(matrix, constraints, HOST, frozenset({"3.10"}))] == ["torch"]
    constraints = torch("==2.99.0")
    assert _framework_fixes(matrix, constraints, HOST, frozenset({"3.9", "3.10"})) == [("torch", "2.98.0")]
    assert _framework_fixes(matrix, constraints, HOST, frozenset({"3.9", "3.12"})) == [("torch", "2.99.0")]
    assert _framework_fixes(matrix, constraints, HOST, frozenset()) == []
    assert _framework_fixes(matrix, torch(""), HOST, frozenset({"3.9"})) == []  # unconstrained: nothing to relax


def test_the_framework_fix_names_each_constrained_framework(matrix):
    constraints = Constraints(frameworks=(("torch", SpecifierSet("==2.99.0")), ("jax", SpecifierSet(">=0.4"))))
    fixes = dict(_framework_fixes(matrix, constraints, HOST, frozenset({"3.10", "3.11"})))
    assert fixes["torch"] == "2.99.0" and "jax" in fixes


# --- where the culprit comes from -------------------------------------------------------------------


def brought(requirement: str, detail: str):
    return _brought_by(NoWheels(requirement, "3.13", detail))


def test_a_package_the_project_requires_itself_is_fixed_by_its_own_pin():
    assert brought("numpy==1.21.0", "Because numpy==1.21.0 has no usable wheels and You Require numpy==1.21.0, "
                                    "and scipy==1.7 depends on numpy==1.21.0") is None


def test_a_package_a_dependency_brings_names_that_dependency():
    detail = ("Because antlr4-python3-runtime==4.9.3 has no usable wheels and hydra-core==1.3.2 depends on "
              "antlr4-python3-runtime==4.9.*, we can conclude that hydra-core==1.3.2 cannot be used. And because you "
              "require numpyx and you require hydra-core==1.3.2, we can conclude ...")
    assert brought("Antlr4_Python3_Runtime==4.9.3", detail) == ("hydra-core==1.3.2", "antlr4-python3-runtime==4.9.*")


def test_a_parent_with_extras_is_named_by_its_package_not_its_version():
    # uv writes the extras: "jax[cuda12]==0.4.23 depends on ..." (no cuDNN 8.9 wheel for aarch64)
    detail = ("Because nvidia-cudnn-cu12>=8.9.0.131,<=8.9.7.29 has no wheels with a matching platform tag and "
              "jax[cuda12]==0.4.23 depends on nvidia-cudnn-cu12>=8.9, we can conclude that jax[cuda12]==0.4.23 "
              "cannot be used.")
    assert brought("nvidia-cudnn-cu12>=8.9.0.131,<=8.9.7.29", detail) == ("jax[cuda12]==0.4.23",
                                                                          "nvidia-cudnn-cu12>=8.9")


def test_only_a_dependency_on_the_culprit_itself_counts():
    detail = "omegaconf==2.3 depends on pyyaml>=5.1, and antlr4==4.9 depends on antlr4==4.9.3, and x depends on antlr4"
    assert brought("antlr4==4.9.3", detail) == ("x", "antlr4")
    assert brought("antlr4==4.9.3", "omegaconf==2.3 depends on pyyaml>=5.1") is None


def test_the_no_says_the_pythons_of_the_releases_the_requirement_allows_and_what_each_framework_needs(matrix):
    constraints = Constraints(frameworks=(("torch", SpecifierSet("==2.99.0")), ("jax", SpecifierSet())))
    pages = {"a": (wheel("a", "1.0", "3.9"), wheel("a", "2.0", "3.13"))}
    message = answer(matrix, constraints, refusal(matrix, constraints, "a==1.0"), pages)[0][1]
    jax = python_text(dict(_framework_pythons(matrix, constraints))["jax"])
    assert message == (f"a==1.0 has wheels for Python 3.9; torch 2.99.0 for 3.11–3.13; jax for {jax} (tried with "
                       "source builds disabled, for x86_64-manylinux_2_28)")


def test_a_pre_release_sdist_in_range_can_still_be_compiled(matrix):
    """The only release newer than the wheels is a pre-release with an sdist: building it is a fix."""
    constraints = torch("==2.99.0")
    pages = {"a": (wheel("a", "1.0", "3.9"), "a-1.1rc1.tar.gz")}
    problems = answer(matrix, constraints, refusal(matrix, constraints, "a>=1.0"), pages)
    assert [code for code, _ in problems] == ["no-wheels", "fix-framework", "fix-build-from-source"]


def test_the_culprit_is_judged_by_the_releases_its_requirement_allows(matrix):
    """b fits the frameworks' Pythons; a's newer 2.0 would too, but a==1.0 allows only 1.0 (3.9)."""
    constraints = torch("==2.99.0")
    attempts = refusal(matrix, constraints, "b==1.0", ("3.13",)) + refusal(matrix, constraints, "a==1.0", ("3.12",))
    pages = {"a": (wheel("a", "1.0", "3.9"), wheel("a", "2.0", "3.13")), "b": (wheel("b", "1.0", "3.12"),)}
    assert answer(matrix, constraints, attempts, pages)[0][1].startswith("a==1.0 has wheels for Python 3.9;")


def test_each_package_is_judged_once_by_its_first_refusal(matrix):
    constraints = torch("==2.99.0")
    attempts = refusal(matrix, constraints, "a>=1.0", ("3.13",)) + refusal(matrix, constraints, "a==1.0", ("3.12",))
    pages = {"a": (wheel("a", "1.0", "3.9"), wheel("a", "2.0", "3.13"))}
    reads = []
    inputs = Inputs(compile=None, indexes=(INDEX,), read_page=lambda _i, name: reads.append(name) or pages.get(name),
                    exact_pins={})
    missing, _, spec = _culprit(attempts, inputs, MODERN, frozenset({"3.11", "3.12", "3.13"}))
    assert (missing.requirement, str(spec), reads) == ("a>=1.0", ">=1.0", ["a"])


def test_a_try_on_a_python_without_a_stack_is_a_plain_no_without_the_explanation_search(matrix):
    """Each Python's try is resolved without explain: the "no" of one Python is never shown, and
    explaining it would cost a search per Python."""
    found = stack_for_python(matrix, torch("==2.99.0"), HOST, "3.10")
    assert found.problems == (Problem("no-stack", "no valid stack"),)


def test_each_refused_exact_pin_narrows_the_pythons_left_to_try(matrix):
    """a covers 3.9, 3.10, 3.12; b 3.10, 3.11, 3.13: after both refused, only 3.10 is left."""
    index = Index({"a": {"3.9", "3.10", "3.12"}, "b": {"3.10", "3.11", "3.13"}})
    chosen, _ = choice(matrix, torch(">=2.98"), index)
    assert index.calls == ["3.13", "3.12", "3.10"] and chosen.stack.python == "3.10"


def test_an_exact_pin_is_judged_by_the_wheels_of_its_own_release(matrix):
    """a==1.0 has wheels for 3.9 only; its 2.0 for 3.12 does not make 3.12 worth a try."""
    index = Index({"a": {"3.9"}})
    index.page = lambda _index, name: (wheel("a", "1.0", "3.9"), wheel("a", "2.0", "3.12")) if name == "a" else None
    chosen, _ = choice(matrix, torch(">=2.98"), index)
    assert index.calls == ["3.13", "3.9"] and chosen.stack.python == "3.9"


def test_a_companion_alone_names_its_framework_in_the_no(matrix):
    constraints = Constraints(frameworks=(("torchvision", SpecifierSet()),))
    assert [text for text, _ in _framework_pythons(matrix, constraints)] == ["torch"]


def test_a_pin_with_another_bound_is_named_as_the_whole_specifier(matrix):
    assert [text for text, _ in _framework_pythons(matrix, torch(">=2,==2.99.0"))] == ["torch==2.99.0,>=2"]


def test_the_framework_fix_skips_a_companion_listed_first_and_keeps_its_constraint(matrix):
    """Relaxing torch keeps torchvision==0.21.0, which only torch 2.6.0 goes with."""
    constraints = Constraints(frameworks=(("torchvision", SpecifierSet("==0.21.0")), ("torch", SpecifierSet("==2.99.0"))))
    assert _framework_fixes(matrix, constraints, HOST, frozenset({"3.12"})) == [("torch", "2.6.0")]
    pinned = Constraints(frameworks=(("torchvision", SpecifierSet("==0.21.0")), ("torch", SpecifierSet("==2.6.0"))))
    assert _framework_fixes(matrix, pinned, HOST, frozenset({"3.12"})) == [("torch", "2.6.0")]  # none for torchvision


@pytest.mark.parametrize("lines, pins", [
    ("-c pins.txt\nnumpy==2.1.3\n", {"numpy": "2.1.3"}),
    ("lib @ https://files.example/lib-1.0.tar.gz\nnumpy==2.1.3\n", {"numpy": "2.1.3"}),
    ("numpy===2.1.3\nscipy==1.*\nsix==1.16.0,<2\n", {"numpy": "2.1.3"}),
], ids=["after-a-constraint", "after-a-url", "arbitrary-equality"])
def test_every_exact_pin_counts_wherever_it_stands(tmp_path, lines, pins):
    from cudaenv.project import load_project
    from cudaenv.project.wheels import exact_pins

    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "p"\nrequirements = ["requirements.txt"]\n\n'
                                           '[frameworks]\ntorch = "any"\n')
    (tmp_path / "requirements.txt").write_text(lines)
    (tmp_path / "pins.txt").write_text("urllib3==2.2.3\n")
    assert {str(k): str(v) for k, v in exact_pins(load_project(tmp_path)).items()} == pins
