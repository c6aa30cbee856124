"""`cudaenv init` sees the project that pip, conda and the build tools install: issue 33's shapes."""

from __future__ import annotations

import pytest

from cudaenv.errors import UserError
from cudaenv.project.config import load_project
from cudaenv.project.detect import detect_project
from cudaenv.project.pyproject import poetry_specifier


def test_a_hash_pinned_torch_is_its_pin_not_a_guess(tmp_path):
    (tmp_path / "requirements.txt").write_text(
        "torch==2.4.1 \\\n    --hash=sha256:aaaa \\\n    --hash=sha256:bbbb\nnumpy==1.26.4 \\\n    --hash=sha256:cc\n")
    assert detect_project(tmp_path).frameworks == {"torch": "==2.4.1"}


def test_a_windows_file_keeps_its_first_line(tmp_path):
    (tmp_path / "requirements.txt").write_bytes(b"\xef\xbb\xbftorch==2.4.1\r\ntransformers\r\n")
    assert detect_project(tmp_path).frameworks == {"torch": "==2.4.1"}


def test_markers_are_read_for_the_projects_python_not_cudaenvs(tmp_path):
    (tmp_path / ".python-version").write_text("3.12\n")
    (tmp_path / "requirements.txt").write_text(
        'torch==2.1.2; python_version < "3.12"\ntorch==2.5.1; python_version >= "3.12"\n')
    assert detect_project(tmp_path).frameworks == {"torch": "==2.5.1"}
    (tmp_path / ".python-version").write_text("3.10\n")
    assert detect_project(tmp_path).frameworks == {"torch": "==2.1.2"}


def test_without_a_python_the_newest_reading_wins_and_narrows_the_python(tmp_path):
    (tmp_path / "requirements.txt").write_text(
        'torch==2.1.2; python_version < "3.12"\ntorch==2.5.1; python_version >= "3.12"\n')
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": "==2.5.1"}
    assert found.python == ">=3.12"  # so the lock's Python reads the file the same way


def test_an_included_file_is_read_from_a_nested_folder(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements.txt").write_text("-r requirements/base.txt\n")
    (tmp_path / "requirements" / "base.txt").write_text("-c constraints.txt\ntensorflow==2.15.1\n")
    (tmp_path / "requirements" / "constraints.txt").write_text("torch==2.4.1\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"tensorflow": "==2.15.1"}  # a constraint installs nothing


def test_poetry_dependencies_and_python_are_the_projects(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry]\nname = "x"\n\n[tool.poetry.dependencies]\npython = ">=3.8,<3.12"\n'
        'tensorflow = "2.12.1"\nnumpy = "^1.23"\n\n[tool.poetry.group.dev.dependencies]\npytest = "^7"\n')
    found = detect_project(tmp_path)
    assert found.frameworks == {"tensorflow": "==2.12.1"}
    assert found.python == ">=3.8,<3.12"
    assert "numpy<2.0,>=1.23" in found.other_requirements  # ^1.23 is >=1.23,<2.0


@pytest.mark.parametrize("poetry, pep440", [
    ("^1.2.3", ">=1.2.3,<2.0.0"), ("^0.2.3", ">=0.2.3,<0.3.0"), ("^0.0.3", ">=0.0.3,<0.0.4"), ("^1.2", ">=1.2,<2.0"),
    ("^1", ">=1,<2"), ("^0", ">=0,<1"), ("^0.0", ">=0.0,<0.1"), ("~1.2.3", ">=1.2.3,<1.3.0"), ("~1.2", ">=1.2,<1.3"),
    ("~1", ">=1,<2"), ("1.2.3", "==1.2.3"), ("*", ""), (">=1.2,<1.5", ">=1.2,<1.5"), (">=1.2 <1.5", ">=1.2,<1.5"),
    ("~=1.4", "~=1.4"), ("==2.1.*", "==2.1.*"),
], ids=lambda value: value.replace("*", "star").replace(" ", "_") or "empty")
def test_poetrys_version_grammar_becomes_pep_440(poetry, pep440):
    assert poetry_specifier(poetry, "pyproject.toml") == pep440


@pytest.mark.parametrize("bad", ["^1.x", "1.0 || 2.0", "nonsense!"], ids=["caret-word", "union", "word"])
def test_a_poetry_constraint_without_pep_440_spelling_is_bad_input(bad):
    with pytest.raises(UserError, match="pyproject.toml: "):
        poetry_specifier(bad, "pyproject.toml")


def test_the_dev_dependency_group_is_read_with_its_includes(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndependencies = ["numpy"]\n\n'
        '[dependency-groups]\ntrain = ["jax==0.4.30"]\ndev = [{include-group = "train"}, "pytest"]\n')
    assert detect_project(tmp_path).frameworks == {"jax": "==0.4.30"}


def test_an_environment_files_pip_list_resolves_against_its_own_folder(tmp_path):
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "base.txt").write_text("torch==2.4.1\n")
    (tmp_path / "environment.yml").write_text("name: x\ndependencies:\n  - python=3.11\n  - pip:\n"
                                              "    - -r reqs/base.txt\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": "==2.4.1"} and found.conda_file == "environment.yml"


def test_an_environment_files_bad_pip_line_names_its_line(tmp_path):
    (tmp_path / "environment.yml").write_text("name: x\ndependencies:\n  - pip:\n    - numpy\n    - not valid!\n")
    with pytest.raises(UserError, match=r"^environment.yml:5: 'not valid!'"):
        detect_project(tmp_path)


@pytest.mark.parametrize("text, where", [
    ("dependencies: 5\n", "environment.yml:1: dependencies: expected a list"),
    ("- a\n- b\n", "environment.yml:1: expected a mapping"),
    ("dependencies:\n  - {conda: x}\n", "environment.yml:2: dependencies: expected a package spec"),
    ("dependencies:\n  - pip: 7\n", "environment.yml:2: dependencies: the pip entry must be a list"),
], ids=["scalar", "list", "mapping-item", "pip-scalar"])
def test_an_environment_file_of_the_wrong_shape_is_one_line(tmp_path, text, where):
    (tmp_path / "environment.yml").write_text(text)
    with pytest.raises(UserError) as caught:
        detect_project(tmp_path)
    assert str(caught.value).startswith(where) and "\n" not in str(caught.value)


def test_pytorch_cuda_is_the_cuda_the_project_asks_for(tmp_path):
    (tmp_path / "environment.yml").write_text(
        "channels: [pytorch, nvidia]\ndependencies:\n  - pytorch=2.1.0\n  - pytorch-cuda=11.8\n")
    found = detect_project(tmp_path)
    assert found.cuda == "11.8" and found.frameworks == {"torch": "==2.1.0"}


def test_conda_jax_and_jaxlib_are_two_packages(tmp_path):
    (tmp_path / "environment.yml").write_text("dependencies:\n  - jax=0.3.16\n  - jaxlib=0.3.15=*cuda*\n")
    assert detect_project(tmp_path).frameworks == {"jax": "==0.3.16"}


def test_a_config_file_with_a_bom_and_crlf_reads(tmp_path):
    (tmp_path / "cudaenv.toml").write_bytes(b'\xef\xbb\xbf[project]\r\nname = "bom"\r\n')
    assert load_project(tmp_path).name == "bom"


def test_pytorchs_cpu_index_beside_torch_means_torch_on_the_cpu(tmp_path):
    """flax on the GPU, torch only for data loading: the file points pip at PyTorch's CPU index."""
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cpu\n"
                                               "torch==2.4.1\ntorchvision==0.19.1\njax[cuda12]==0.4.30\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"jax": "==0.4.30"} and found.cuda == "12.*"
    assert found.cpu_only == {"torch"}
    assert {"torch==2.4.1", "torchvision==0.19.1"} <= set(found.other_requirements)


def test_a_cuda_index_beside_torch_keeps_torch_on_the_gpu(tmp_path):
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu121\n"
                                               "torch==2.4.1\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": "==2.4.1"} and found.cpu_only == set()


def test_a_poetry_python_with_a_patch_level_is_a_full_version_marker(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.poetry.dependencies]\npython = "^3.8"\n'
                                             'torch = {version = "^2.1", python = ">=3.8.1"}\n')
    (tmp_path / ".python-version").write_text("3.8\n")
    assert detect_project(tmp_path).frameworks == {}  # 3.8.0 < 3.8.1, as uv reads --python-version 3.8
    (tmp_path / ".python-version").write_text("3.9\n")
    assert detect_project(tmp_path).frameworks == {"torch": "<3.0,>=2.1"}  # packaging orders a SpecifierSet


def test_a_poetry_constraint_may_have_a_space_after_its_operator():
    assert poetry_specifier(">= 2.1, < 2.3", "pyproject.toml") == ">=2.1,<2.3"
    assert poetry_specifier("^ 2.1", "pyproject.toml") == ">=2.1,<3.0"


def test_a_distribution_name_is_read_as_pip_normalizes_it(tmp_path):
    (tmp_path / "requirements.txt").write_text("Tensorflow_GPU==2.10.0\n")
    assert detect_project(tmp_path).frameworks == {"tensorflow": "==2.10.0"}


def test_pyproject_lines_are_named_by_the_entry_not_a_substring(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\ndependencies = ['torch>=2']\n\n[tool.poetry.dependencies]\n"
        'torchvision = "^0.16"\n\n[dependency-groups]\ndev = ["jax>=0.4"]\n')
    found = detect_project(tmp_path)
    assert found.named["torch"] == ["pyproject.toml:3"]
    assert found.named["torchvision"] == ["pyproject.toml:6"]
    assert found.named["jax"] == ["pyproject.toml:9"]


@pytest.mark.parametrize("name, text", [
    ("pyproject.toml", "v = " + "1" * 5000 + "\n"), ("pyproject.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
    ("pyproject.toml", "[dependency-groups]\ndev = [{include-group = 'g0'}]\n"
                       + "".join(f"g{n} = [{{include-group = 'g{n + 1}'}}]\n" for n in range(3000))),
    ("environment.yml", "dependencies: " + "[" * 5000 + "]" * 5000 + "\n"),
], ids=["huge-integer", "deep-array", "long-group-chain", "deep-yaml"])
def test_a_pathological_file_is_one_line_of_bad_input_or_read(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    try:
        detect_project(tmp_path)
    except UserError as exc:
        assert "\n" not in str(exc)


def test_two_exact_pins_of_one_framework_name_both_lines(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.1.2\nnumpy\ntorch==2.5.1\n")
    with pytest.raises(UserError, match=r"^requirements.txt:1 and requirements.txt:3 contradict: torch==2.1.2 and "
                                        r"torch==2.5.1; keep one"):
        detect_project(tmp_path)


def test_the_same_pin_twice_or_a_local_build_of_it_is_no_contradiction(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.1.0\ntorch==2.1.0+cu118\n")
    assert detect_project(tmp_path).frameworks == {"torch": "==2.1.0,==2.1.0"}


# --- conda files, rule by rule -------------------------------------------------------------------

ENVIRONMENT = """name: research
channels: [pytorch, nvidia, conda-forge]
dependencies:
  - python=3.10.13
  - pip:
    - --extra-index-url https://download.pytorch.org/whl/cpu
    - torchvision==0.19.1
  - pytorch::pytorch=2.1.0
  - conda-forge::cudatoolkit=11.8.0
  - tensorflow-cpu
  - jaxlib=0.4.13=*cuda*
  - not a spec!
  - numpy
"""


def test_a_conda_file_reads_its_python_cuda_frameworks_and_pip_list_in_one_pass(tmp_path):
    (tmp_path / "environment.yml").write_text(ENVIRONMENT)
    found = detect_project(tmp_path)
    assert found.python == "3.10" and found.cuda == "11.8"
    assert found.frameworks == {"torch": "==2.1.0", "jax": ""}  # jaxlib's number is not jax's
    assert found.cpu_only == {"tensorflow", "torch"}  # tensorflow-cpu; torchvision from the pip list's CPU index
    assert found.conda_file == "environment.yml"
    assert found.found[:3] == ["python 3.10.13 (environment.yml)", "torch==2.1.0 (environment.yml)",
                              "cudatoolkit 11.8.0 (environment.yml)"]
    assert found.named["torch"] == ["environment.yml:8"] and found.named["jaxlib"] == ["environment.yml:11"]


def test_a_conda_file_without_a_pip_list_is_not_a_requirements_file(tmp_path):
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pytorch=2.1.0\n  - pip\n")
    found = detect_project(tmp_path)
    assert found.conda_file is None and found.frameworks == {"torch": "==2.1.0"}


def test_a_pip_list_of_only_an_include_is_a_requirements_file(tmp_path):
    (tmp_path / "base.txt").write_text("# nothing yet\n")
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pip:\n    - -r base.txt\n")
    assert detect_project(tmp_path).conda_file == "environment.yml"


@pytest.mark.parametrize("spec, pep440", [("pytorch=2.1", "==2.1.*"), ("pytorch=2.1.0", "==2.1.0"),
                                          ("pytorch>=2.1", ">=2.1"), ("pytorch", "")],
                         ids=["series", "release", "range", "bare"])
def test_conda_versions_read_as_pep_440(tmp_path, spec, pep440):
    (tmp_path / "environment.yml").write_text(f"dependencies:\n  - {spec}\n")
    assert detect_project(tmp_path).frameworks == {"torch": pep440}


def test_an_environment_file_that_is_not_utf8_or_yaml_is_one_line(tmp_path):
    path = tmp_path / "environment.yml"
    path.write_bytes(b"dependencies:\n  - \xff\n")
    with pytest.raises(UserError, match=rf"^{path}: not UTF-8 text \(invalid start byte\); save it as UTF-8$"):
        detect_project(tmp_path)
    path.write_text("dependencies: [\n")
    with pytest.raises(UserError, match=rf"^{path}: invalid YAML: "):
        detect_project(tmp_path)
    path.write_text("# only a comment\n")
    assert detect_project(tmp_path).frameworks == {}


def test_requires_python_that_is_no_specifier_is_bad_input(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = "three"\n')
    with pytest.raises(UserError, match=r"project.requires-python: 'three' is not a PEP 440 specifier"):
        detect_project(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.9"\n')
    assert detect_project(tmp_path).found == ["requires-python >=3.9 (pyproject.toml)"]


@pytest.mark.parametrize("text, python", [("3.12\n", "3.12"), ("cpython-3.11.4\n", "3.11"), ("python3.10\n", "3.10"),
                                          ("\ufeff3.9\n", "3.9"), ("pypy\n", None)],
                         ids=["plain", "cpython", "python", "bom", "other"])
def test_python_version_file(tmp_path, text, python):
    (tmp_path / ".python-version").write_text(text, encoding="utf-8")
    assert detect_project(tmp_path).python == python


def test_every_requirements_file_at_the_root_is_listed(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "requirements-dev.txt").write_text("pytest\n")
    assert detect_project(tmp_path).requirement_files == ["requirements-dev.txt", "requirements.txt"]


def test_two_distributions_of_tensorflow_name_both_places(tmp_path):
    (tmp_path / "requirements.txt").write_text("tensorflow==2.15.0\ntensorflow-cpu==2.15.0\n")
    with pytest.raises(UserError) as caught:
        detect_project(tmp_path)
    assert str(caught.value) == (
        "tensorflow (requirements.txt:1); tensorflow-cpu (requirements.txt:2): these distributions install the same "
        "files and overwrite each other; keep one of them (tensorflow-cpu keeps the GPU for another framework)")


def test_a_framework_the_project_names_is_not_added_again_through_a_carrier(tmp_path):
    (tmp_path / "requirements.txt").write_text("accelerate\npeft\ntorch==2.4.1\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": "==2.4.1"}
    assert not [note for note in found.found if "through" in note]
    (tmp_path / "requirements.txt").write_text("tensorflow-cpu\naccelerate\ntf_keras\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": ""}  # tf_keras brings tensorflow, asked for on the CPU


def test_a_local_cuda_build_names_the_cuda_and_leaves_the_version(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.1.0+cu118\ntorchvision==0.16.0+cu118\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": "==2.1.0", "torchvision": "==0.16.0"} and found.cuda == "11.8"
    (tmp_path / "requirements.txt").write_text("torch==2.1.0+cpu\n")
    assert detect_project(tmp_path).cuda is None


def test_an_arbitrary_equality_pin_is_read_without_contradiction(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch===2.1.0\ntorch===2.1.0\n")
    assert detect_project(tmp_path).frameworks == {"torch": "===2.1.0,===2.1.0"}
    (tmp_path / "requirements.txt").write_text("torch==2.1.*\ntorch==2.1.2\n")
    assert detect_project(tmp_path).frameworks == {"torch": "==2.1.*,==2.1.2"}  # a series is no exact pin


# --- what a mutation run left: each rule of detection pinned down ---------------------------------


def test_what_detection_says_of_each_line(tmp_path):
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cpu\n"
                                               "torchvision==0.19.1\ntensorflow-cpu==2.15.0\naccelerate\n"
                                               "jax[cuda12]==0.4.30\n")
    assert detect_project(tmp_path).found == [
        "torchvision==0.19.1 (requirements.txt: on the CPU, from its index)",
        "tensorflow-cpu==2.15.0 (requirements.txt: on the CPU)", "jax[cuda12]==0.4.30 (requirements.txt)"]
    (tmp_path / "requirements.txt").write_text("accelerate\n")
    assert detect_project(tmp_path).found == ["torch through accelerate (requirements.txt)"]


def test_a_cpu_jaxlib_is_jax_on_the_cpu(tmp_path):
    (tmp_path / "requirements.txt").write_text("jaxlib[cpu]==0.4.30\n")
    found = detect_project(tmp_path)
    assert found.cpu_only == {"jax"} and found.frameworks == {}


def test_a_carrier_after_one_skipped_still_brings_its_framework(tmp_path):
    (tmp_path / "requirements.txt").write_text("tensorflow-cpu\ntf_keras\naccelerate\n")
    assert detect_project(tmp_path).frameworks == {"torch": ""}


def test_arbitrary_pins_that_are_no_versions_are_not_compared(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch===foo\ntorch===bar\n")
    assert detect_project(tmp_path).frameworks == {"torch": "===foo,===bar"}


def test_each_place_of_a_duplicated_distribution_is_named(tmp_path):
    (tmp_path / "requirements.txt").write_text("tensorflow>=2.15\ntensorflow-cpu\ntensorflow<2.17\n")
    with pytest.raises(UserError, match=r"^tensorflow \(requirements.txt:1, requirements.txt:3\); tensorflow-cpu "
                                        r"\(requirements.txt:2\): "):
        detect_project(tmp_path)


SPLIT_AT = 'torch==2.1.2; python_version < "{at}"\ntorch==2.5.1; python_version >= "{at}"\n'


def test_markers_that_split_a_requires_python_narrow_it_and_say_so(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.8"\n')
    (tmp_path / "requirements.txt").write_text(SPLIT_AT.format(at="3.12"))
    found = detect_project(tmp_path)
    assert found.python == ">=3.8,>=3.12" and found.frameworks == {"torch": "==2.5.1"}
    assert "Python >=3.12 (the requirement files' markers pick these lines for it)" in found.found


def test_markers_that_split_below_a_requires_python_leave_it_alone(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.10"\n')
    (tmp_path / "requirements.txt").write_text(SPLIT_AT.format(at="3.10"))
    found = detect_project(tmp_path)
    assert found.python == ">=3.10" and found.frameworks == {"torch": "==2.5.1"}
    assert not [note for note in found.found if "markers pick" in note]


def test_the_newest_python_decides_when_a_marker_names_it(tmp_path):
    (tmp_path / "requirements.txt").write_text('torch==2.9.0; python_version >= "3.20"\n'
                                               'torch==2.5.1; python_version < "3.20"\n')
    assert detect_project(tmp_path).frameworks == {"torch": "==2.9.0"}


def test_a_python_range_no_candidate_meets_reads_markers_for_none(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=4.0"\n')
    (tmp_path / "requirements.txt").write_text('torch==2.1.2; python_version < "3.12"\nnumpy\n')
    assert detect_project(tmp_path).frameworks == {"torch": "==2.1.2"}


@pytest.mark.parametrize("text, frameworks", [
    ("dependencies:\n", {}),
    ("dependencies:\n  - pip:\n  - pytorch=2.1.0\n", {"torch": "==2.1.0"}),
    ("dependencies:\n  - '!!!'\n  - pytorch=2.1.0\n", {"torch": "==2.1.0"}),
    ("dependencies:\n  - pytorch=2.*.1\n  - jax=0.4.30\n", {"jax": "==0.4.30"}),
    ("dependencies:\n  - pip:\n    - torch==2.1.0\n  - numpy\n  - pip:\n    - jax==0.4.30\n", {"torch": "==2.1.0", "jax": "==0.4.30"}),
], ids=["null-dependencies", "null-pip", "unreadable-spec-first", "invalid-version-first", "two-pip-lists"])
def test_conda_entries_after_an_odd_one_are_still_read(tmp_path, text, frameworks):
    (tmp_path / "environment.yml").write_text(text)
    assert detect_project(tmp_path).frameworks == frameworks


def test_a_pip_entry_of_mappings_is_refused(tmp_path):
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pip:\n    - {a: b}\n")
    with pytest.raises(UserError, match=r"^environment.yml:2: dependencies: the pip entry must be a list of requirement lines$"):
        detect_project(tmp_path)


def test_an_environment_files_messages_word_for_word(tmp_path):
    import yaml

    path = tmp_path / "environment.yml"
    path.write_text("dependencies: 5\n")
    with pytest.raises(UserError) as caught:
        detect_project(tmp_path)
    assert str(caught.value) == "environment.yml:1: dependencies: expected a list of package specs, got '5'"
    path.write_text("dependencies: [\n")
    try:
        yaml.compose("dependencies: [\n", Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0]
    with pytest.raises(UserError) as caught:
        detect_project(tmp_path)
    assert str(caught.value) == f"{path}: invalid YAML: {first}"
    path.write_text("dependencies: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UserError) as caught:
        detect_project(tmp_path)
    assert str(caught.value) == f"{path}: invalid YAML: nested too deeply"


def test_markers_in_a_conda_pip_list_are_read_for_the_conda_python(tmp_path):
    (tmp_path / "environment.yml").write_text(
        'dependencies:\n  - python=3.12\n  - pip:\n    - torch==2.1.2; python_version < "3.12"\n'
        '    - torch==2.5.1; python_version >= "3.12"\n')
    assert detect_project(tmp_path).frameworks == {"torch": "==2.5.1"}


@pytest.mark.parametrize("spec, python", [("python=3.10.13", "3.10"), ("python=3.9.*", "3.9"), ("python=3.*", "3")],
                         ids=["release", "series", "major"])
def test_a_conda_python_is_its_major_minor(tmp_path, spec, python):
    (tmp_path / "environment.yml").write_text(f"dependencies:\n  - {spec}\n")
    assert detect_project(tmp_path).python == python


def test_python_version_is_noted(tmp_path):
    (tmp_path / ".python-version").write_text("3.11\n")
    assert detect_project(tmp_path).found == ["Python 3.11 (.python-version)"]
