"""What `cudaenv init` reads from an existing project."""

from __future__ import annotations

from cudaenv.project.detect import detect_project


def test_requirements_files_give_framework_pins_and_the_rest(tmp_path):
    (tmp_path / "requirements.txt").write_text(
        "# training\ntorch>=2.4,<2.7\ntransformers==4.44.0  # hub models\n-r requirements-extra.txt\n--extra-index-url https://x.example/simple\n")
    (tmp_path / "requirements-extra.txt").write_text("torchvision\nwandb\n")
    found = detect_project(tmp_path)
    assert set(found.frameworks) == {"torch", "torchvision"}
    assert found.frameworks["torch"] in (">=2.4,<2.7", "<2.7,>=2.4")
    assert "transformers==4.44.0" in found.other_requirements and "wandb" in found.other_requirements
    assert found.requirement_files == ["requirements-extra.txt", "requirements.txt"]


def test_a_file_included_by_another_is_read_once(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.4\nnumpy\n")
    (tmp_path / "requirements-dev.txt").write_text("-r requirements.txt\npytest\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"torch": ">=2.4"}
    assert found.found == ["torch>=2.4 (requirements.txt)"]
    assert sorted(found.other_requirements) == ["numpy", "pytest"]


def test_local_version_label_names_the_cuda(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.1.0+cu118\n")
    found = detect_project(tmp_path)
    assert found.frameworks["torch"] == "==2.1.0"
    assert found.cuda == "11.8"


def test_mxnet_package_name_names_the_cuda(tmp_path):
    (tmp_path / "requirements.txt").write_text("mxnet-cu112==1.9.1\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {"mxnet": "==1.9.1"} and found.cuda == "11.2"


def test_pyproject_dependencies_and_requires_python(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "tfapp"\nrequires-python = ">=3.9,<3.12"\ndependencies = ["tensorflow[and-cuda]==2.15.1", "pandas"]\n')
    found = detect_project(tmp_path)
    assert found.frameworks == {"tensorflow": "==2.15.1"}
    assert found.python == ">=3.9,<3.12"


def test_python_version_file_beats_requires_python(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.9"\n')
    (tmp_path / ".python-version").write_text("3.11.7\n")
    assert detect_project(tmp_path).python == "3.11"


def test_conda_environment_file(tmp_path):
    (tmp_path / "environment.yml").write_text(
        "name: seg\nchannels: [pytorch, nvidia]\ndependencies:\n  - python=3.10\n  - pytorch=2.1\n"
        "  - cudatoolkit=11.8\n  - pip\n  - pip:\n    - timm==0.9.12\n")
    found = detect_project(tmp_path)
    assert found.python == "3.10"
    assert found.frameworks["torch"] == "==2.1.*"
    assert found.cuda == "11.8"
    assert "timm==0.9.12" in found.other_requirements


def test_project_without_frameworks_is_plain_cuda(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\nscipy\n")
    found = detect_project(tmp_path)
    assert found.frameworks == {} and found.other_requirements == ["numpy", "scipy"]
