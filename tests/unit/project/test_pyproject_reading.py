"""pyproject.toml as PEP 621, PEP 735 and Poetry write it (``cudaenv.project.pyproject``), and the
merged reading of a project's files (``cudaenv.project.inputs``): every rule with the input that
shows it, every refusal word for word."""

from __future__ import annotations

import hashlib

import pytest

from cudaenv.errors import UserError
from cudaenv.project.inputs import extra_inputs, file_digest, merge, read_project_requirements
from cudaenv.project.pyproject import poetry_specifier, read_pyproject, read_toml
from cudaenv.project.reqfile import Line, RequirementFiles


def pyproject(tmp_path, text: str):
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return read_pyproject(path)


def found(lines) -> list[tuple[str, str]]:
    return [(line.where, str(line.requirement)) for line in lines]


# --- PEP 621 and PEP 735 -------------------------------------------------------------------------


def test_pep621_dependencies_and_requires_python(tmp_path):
    lines, python = pyproject(tmp_path, '[project]\nname = "x"\nrequires-python = ">=3.10"\n'
                                        'dependencies = [\n  "torch>=2.4",\n  \'numpy<2\',\n]\n')
    assert found(lines) == [("pyproject.toml:5", "torch>=2.4"), ("pyproject.toml:6", "numpy<2")]
    assert python == ">=3.10"


def test_only_the_dev_group_is_read_with_its_includes_once_each(tmp_path):
    lines, _ = pyproject(tmp_path, '[dependency-groups]\ntest = ["pytest"]\ndocs = ["mkdocs"]\n'
                                   'dev = [{include-group = "test"}, "ruff", {include-group = "test"}]\n')
    assert [str(line.requirement) for line in lines] == ["ruff", "pytest"]
    assert [line.where for line in lines] == ["pyproject.toml:4", "pyproject.toml:2"]


def test_a_group_cycle_ends(tmp_path):
    lines, _ = pyproject(tmp_path, '[dependency-groups]\ndev = [{include-group = "a"}, "x"]\n'
                                   'a = [{include-group = "dev"}, "y"]\n')
    assert sorted(str(line.requirement) for line in lines) == ["x", "y"]


@pytest.mark.parametrize("text, message", [
    ('project = 5\n', "project] must be a table"),
    ('[project]\ndependencies = "torch"\n', "project.dependencies: expected a list of requirement strings"),
    ('[project]\ndependencies = [5]\n', "project.dependencies: expected requirement strings, got 5"),
    ('[project]\ndependencies = ["torch>=="]\n', "project.dependencies: 'torch>==' is not a PEP 508 requirement ("),
    ('[project]\nrequires-python = 3.10\n', "project.requires-python: expected a string like '>=3.10', got 3.1"),
    ('dependency-groups = 5\n', "dependency-groups: expected a table of lists"),
    ('[dependency-groups]\ndev = "pytest"\n', "dependency-groups.dev: expected a list"),
], ids=["project-scalar", "deps-string", "deps-number", "deps-invalid", "python-number", "groups-scalar",
        "group-string"])
def test_a_pep621_or_735_mistake_is_one_line_naming_the_field(tmp_path, text, message):
    with pytest.raises(UserError) as caught:
        pyproject(tmp_path, text)
    assert str(caught.value).startswith(f"{tmp_path / 'pyproject.toml'}") and message in str(caught.value)
    assert "\n" not in str(caught.value)


# --- Poetry --------------------------------------------------------------------------------------


POETRY = '''[tool.poetry]
name = "x"

[tool.poetry.dependencies]
python = "^3.9"
torch = "^2.1"
"tensorflow-io" = {version = "0.36.0", extras = ["tensorflow"], markers = "sys_platform == 'linux'"}
numpy = {version = ">=1.24", python = ">=3.9,<3.13"}
local = {path = "../local"}
fromgit = {git = "https://example.com/x.git"}
extra-only = {version = "1.0", optional = true}

[tool.poetry.group.train.dependencies]
wandb = "*"

[tool.poetry.group.docs]
optional = true

[tool.poetry.group.docs.dependencies]
mkdocs = "^1.5"
'''


def test_poetry_main_and_default_groups_become_requirements_with_their_lines(tmp_path):
    lines, python = pyproject(tmp_path, POETRY)
    assert found(lines) == [
        ("pyproject.toml:6", "torch<3.0,>=2.1"),
        ("pyproject.toml:7", 'tensorflow-io[tensorflow]==0.36.0; sys_platform == "linux"'),
        ("pyproject.toml:8", 'numpy>=1.24; python_version >= "3.9" and python_version < "3.13"'),
        ("pyproject.toml:14", "wandb"),
    ]
    assert python == ">=3.9,<4.0"


def test_requires_python_wins_over_poetrys_python(tmp_path):
    _, python = pyproject(tmp_path, '[project]\nname = "x"\nrequires-python = ">=3.11"\n\n'
                                    '[tool.poetry.dependencies]\npython = "^3.9"\n')
    assert python == ">=3.11"


@pytest.mark.parametrize("text, message", [
    ('[tool.poetry]\ndependencies = 5\n', "tool.poetry.dependencies: expected a table of name = version"),
    ('[tool.poetry.dependencies]\npython = 3\n', "tool.poetry.dependencies.python: expected a string like"),
    ('[tool.poetry.dependencies]\ntorch = 2\n', "tool.poetry.dependencies: torch: expected a version string or a "
                                                "table, got 2"),
    ('[tool.poetry.dependencies]\ntorch = [{version = "2"}]\n', "torch: several constraints for one package"),
    ('[tool.poetry.dependencies]\ntorch = {version = "2", extras = "x"}\n', "torch.extras: expected a list of names"),
    ('[tool.poetry.dependencies]\ntorch = {version = 2}\n', "torch.version: expected a string like '^2.1', got 2"),
    ('[tool.poetry.dependencies]\ntorch = "1.0 || 2.0"\n', "'1.0 || 2.0': Poetry's '||' (either range) has no PEP "
                                                           "440 spelling; write one range"),
], ids=["deps-scalar", "python-number", "entry-number", "entry-list", "extras-string", "version-number", "union"])
def test_a_poetry_mistake_is_one_line_naming_the_field(tmp_path, text, message):
    with pytest.raises(UserError) as caught:
        pyproject(tmp_path, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("poetry, pep440", [
    ("=2.1", "==2.1"), ("==2.1", "==2.1"), ("!=2.1", "!=2.1"), ("<2.1", "<2.1"), ("<=2.1", "<=2.1"), (">2.1", ">2.1"),
    ("", ""), ("  *  ", ""), ("^2.1.3,<2.5", ">=2.1.3,<3.0.0,<2.5"), ("~0.0.3", ">=0.0.3,<0.1.0"),
], ids=["eq", "eqeq", "ne", "lt", "le", "gt", "empty", "star", "caret-and-range", "tilde-zero"])
def test_poetrys_other_operators_pass_through(poetry, pep440):
    assert poetry_specifier(poetry, "here") == pep440


def test_a_poetry_constraint_error_names_where_it_was(tmp_path):
    with pytest.raises(UserError, match=r"^pyproject.toml: torch: '\^x' is not a Poetry version constraint"):
        poetry_specifier("^x", "pyproject.toml: torch")


# --- reading TOML --------------------------------------------------------------------------------


def test_a_toml_file_with_a_bom_reads(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'\xef\xbb\xbf[project]\r\nname = "x"\r\n')
    assert read_toml(path) == {"project": {"name": "x"}}


@pytest.mark.parametrize("data, message", [
    (b"a = 1\n\xff\n", "not UTF-8 text (invalid start byte); save it as UTF-8"),
    (b"a = = 1\n", "invalid TOML: "),
], ids=["not-utf8", "not-toml"])
def test_a_toml_file_that_does_not_read_is_one_line(tmp_path, data, message):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(data)
    with pytest.raises(UserError) as caught:
        read_toml(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_a_missing_toml_file_says_it_cannot_be_read(tmp_path):
    with pytest.raises(UserError, match=r": cannot read: No such file or directory$"):
        read_toml(tmp_path / "gone.toml")


# --- the merged reading --------------------------------------------------------------------------


def test_a_projects_files_are_read_each_by_its_reader_in_order(tmp_path):
    (tmp_path / "requirements.txt").write_text("-r base.txt\nnumpy\n")
    (tmp_path / "base.txt").write_text("six\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n')
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pip:\n    - --find-links ./wheels\n    - jax\n")
    (tmp_path / "wheels").mkdir()
    read = read_project_requirements(tmp_path, ["requirements.txt", "pyproject.toml", "environment.yml"])
    assert [(line.where, line.text) for line in read.lines] == [
        ("base.txt:1", "six"), ("requirements.txt:2", "numpy"), ("pyproject.toml:3", "torch>=2.4"),
        ("environment.yml:4", "jax")]
    assert read.files == ("requirements.txt", "base.txt", "pyproject.toml", "environment.yml")
    assert read.find_links == ("wheels",) and read.local_inputs == ("wheels",)
    assert extra_inputs(tmp_path, ["requirements.txt", "pyproject.toml", "environment.yml"]) == ["base.txt", "wheels"]


def test_merging_keeps_each_link_and_index_once_and_one_index_url():
    one = RequirementFiles(lines=(Line("a.txt:1", "x", None),), files=("a.txt",), find_links=("f",),
                           extra_index_urls=("https://e.example/simple",), index_url="https://i.example/simple",
                           local_inputs=("f",))
    two = RequirementFiles(files=("b.txt",), find_links=("f", "g"), extra_index_urls=("https://e.example/simple",),
                           index_url="https://i.example/simple")
    merged = merge([one, two])
    assert (merged.files, merged.find_links, merged.extra_index_urls, merged.index_url, merged.local_inputs) == (
        ("a.txt", "b.txt"), ("f", "g"), ("https://e.example/simple",), "https://i.example/simple", ("f",))
    assert merged.lines == one.lines
    assert merge([RequirementFiles(files=("a.txt",)), two]).index_url == "https://i.example/simple"
    with pytest.raises(UserError, match=r"^b.txt: --index-url https://other.example/simple differs from another "
                                        r"file's https://i.example/simple: pip uses one"):
        merge([one, RequirementFiles(files=("b.txt",), index_url="https://other.example/simple")])


def test_a_files_digest_is_its_bytes_and_a_folders_digest_its_names_and_bytes(tmp_path):
    (tmp_path / "f.whl").write_bytes(b"wheel")
    assert file_digest(str(tmp_path / "f.whl")) == hashlib.sha256(b"wheel").hexdigest()
    folder = tmp_path / "wheels"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.whl").write_bytes(b"one")
    before = file_digest(str(folder))
    assert file_digest(str(folder)) == before
    (folder / "sub" / "a.whl").rename(folder / "sub" / "b.whl")  # same bytes, another name
    renamed = file_digest(str(folder))
    assert renamed != before
    (folder / "sub" / "b.whl").write_bytes(b"two")
    assert file_digest(str(folder)) not in (before, renamed)
    assert file_digest(str(folder)) != file_digest(str(tmp_path))  # names are taken relative to the folder


def test_a_project_without_includes_has_no_extra_inputs(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.4\nnumpy  # plain\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert extra_inputs(tmp_path, ["requirements.txt", "pyproject.toml"]) == []


def test_one_package_in_every_table_is_named_by_each_tables_own_line(tmp_path):
    lines, _ = pyproject(tmp_path, '[project]\nname = "x"\ndependencies = ["numpy"]\n\n'
                                   '[dependency-groups]\ndev = ["numpy"]\n\n'
                                   '[tool.poetry.dependencies]\nnumpy = "*"\n\n'
                                   '[tool.poetry.group.test.dependencies]\nnumpy = "^1"\n')
    assert [line.where for line in lines] == ["pyproject.toml:3", "pyproject.toml:6", "pyproject.toml:9",
                                              "pyproject.toml:12"]


def test_a_package_the_file_never_spells_plainly_has_no_line(tmp_path):
    lines, _ = pyproject(tmp_path, '[project]\nname = "x"\ndependencies = ["\\u0074orch"]\n')
    assert [(line.where, line.text) for line in lines] == [("pyproject.toml", "torch")]


def test_a_poetry_entry_on_the_first_line_of_its_table_is_found(tmp_path):
    lines, _ = pyproject(tmp_path, '[tool.poetry.dependencies]\ntorch = "2.1.0"\n')
    assert [line.where for line in lines] == ["pyproject.toml:2"]
    lines, _ = pyproject(tmp_path, 'tool.poetry.dependencies.torch = "2.1.0"\n')  # dotted keys, no table header
    assert [line.where for line in lines] == ["pyproject.toml"]


def test_a_poetry_dependency_with_a_url_or_file_is_the_projects_own_business(tmp_path):
    lines, _ = pyproject(tmp_path, '[tool.poetry.dependencies]\na = {url = "https://example.com/a.whl"}\n'
                                   'b = {file = "b.whl"}\nc = {path = "c"}\nd = {git = "https://example.com/d.git"}\n'
                                   'e = {version = "1.0", optional = false}\n')
    assert [str(line.requirement) for line in lines] == ["e==1.0"]


def test_an_invalid_requirement_built_from_poetry_parts_is_named(tmp_path):
    with pytest.raises(UserError, match=r"tool.poetry.dependencies: torch: 'torch\[a b\]==2' is not a requirement"):
        pyproject(tmp_path, '[tool.poetry.dependencies]\ntorch = {version = "2", extras = ["a b"]}\n')


def test_a_group_after_an_unknown_include_still_reads(tmp_path):
    lines, _ = pyproject(tmp_path, '[dependency-groups]\ndev = [{include-group = "gone"}, {include-group = "a"}]\n'
                                   'a = ["x"]\n')
    assert [str(line.requirement) for line in lines] == ["x"]


# --- what a mutation run left -----------------------------------------------------------------------


def test_dotted_keys_on_the_first_line_are_found_there(tmp_path):
    lines, _ = pyproject(tmp_path, 'project.dependencies = ["torch>=2"]\n')
    assert [line.where for line in lines] == ["pyproject.toml:1"]


@pytest.mark.parametrize("text", ['[tool.poetry]\nname = "x"\n', '[tool.poetry.group.dev]\noptional = false\n',
                                  'tool = 5\n', '[tool]\npoetry = "x"\n'],
                         ids=["poetry-without-dependencies", "group-without-dependencies", "tool-scalar",
                              "poetry-scalar"])
def test_tables_that_hold_no_dependencies_read_as_none(tmp_path, text):
    assert pyproject(tmp_path, text) == ([], None)


def test_a_poetry_entry_without_a_version_is_any_version(tmp_path):
    lines, _ = pyproject(tmp_path, '[tool.poetry.dependencies]\ntorch = {extras = ["a", "b"]}\n')
    assert [line.text for line in lines] == ["torch[a,b]"]


def test_a_poetry_entry_keeps_its_markers_and_its_python_together(tmp_path):
    lines, _ = pyproject(tmp_path, '[tool.poetry.dependencies]\n'
                                   'torch = {version = "2.1.0", markers = "sys_platform == \'linux\'", python = ">=3.9"}\n')
    assert [line.text for line in lines] == ['torch==2.1.0; sys_platform == "linux" and python_version >= "3.9"']


def test_caret_after_another_part_keeps_both(tmp_path):
    assert poetry_specifier("<2.5,^2.1", "here") == "<2.5,>=2.1,<3.0"


@pytest.mark.parametrize("text, message", [
    ('[tool.poetry.dependencies]\ntorch = {version = "2", python = "1 || 2"}\n',
     "tool.poetry.dependencies: torch.python: '1 || 2': Poetry's '||'"),
    ('[tool.poetry.dependencies]\npython = "3 || 4"\n', "tool.poetry.dependencies.python: '3 || 4': Poetry's '||'"),
    ('[tool.poetry.dependencies]\ntorch = "^x"\n', "tool.poetry.dependencies: torch: '^x' is not a Poetry version"),
    ('[dependency-groups]\ndev = ["torch>>2"]\n', "dependency-groups.dev: 'torch>>2' is not a PEP 508 requirement"),
    ('[tool.poetry.dependencies]\ntorch = [1]\n', "tool.poetry.dependencies: torch: several constraints for one "
                                                 "package (a Poetry list) are not supported; keep one"),
], ids=["entry-python", "project-python", "entry-version", "group-requirement", "entry-list"])
def test_each_poetry_and_group_message_names_its_field(tmp_path, text, message):
    with pytest.raises(UserError) as caught:
        pyproject(tmp_path, text)
    assert str(caught.value).startswith(f"{tmp_path / 'pyproject.toml'}: {message}")


def test_a_long_invalid_dependency_is_shown_cut_and_with_the_parsers_first_line(tmp_path):
    from packaging.requirements import InvalidRequirement, Requirement

    item = "torch" + "!" * 100
    try:
        Requirement(item)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0][:120]
    with pytest.raises(UserError) as caught:
        pyproject(tmp_path, f'[project]\ndependencies = ["{item}"]\n')
    assert str(caught.value) == (f"{tmp_path / 'pyproject.toml'}: project.dependencies: {item[:80]!r} is not a PEP "
                                 f"508 requirement ({first})")


def test_a_toml_integer_past_pythons_limit_is_named(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("v = " + "1" * 5000 + "\n")
    with pytest.raises(UserError) as caught:
        read_toml(path)
    assert str(caught.value).startswith(f"{path}: invalid TOML: Exceeds the limit (4300 digits) for integer string")


def test_uv_is_handed_the_projects_code_by_path_with_its_marker(tmp_path):
    from cudaenv.project.inputs import uv_lines

    (tmp_path / "sub").mkdir()
    (tmp_path / "requirements.txt").write_text("-c pins.txt\nsix\n-e .\n./sub ; python_version < '3.9'\n")
    (tmp_path / "pins.txt").write_text("six<2\n")
    read = read_project_requirements(tmp_path, ["requirements.txt"])
    assert uv_lines(read, tmp_path) == ["six", f"-e {tmp_path}", f'{tmp_path}/sub ; python_version < "3.9"']
