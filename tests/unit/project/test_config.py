"""cudaenv.toml / [tool.cudaenv]: every mistake is one line naming the file, the key and what
was expected; the CLI exits 2 without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.project.config import ConfigError, load_project

from tests.support.cli import cudaenv as run_cli

VALID = """
[project]
name = "detector"
python = "3.11"
requirements = ["requirements.txt"]

[frameworks]
torch = ">=2.4,<2.7"
torchvision = "any"

[cuda]
version = ">=12.1"
cudnn = ">=9"

[target]
driver = "535.104.05"
gpus = ["A100"]

[build]
flavor = "auto"
system_packages = ["ffmpeg", "libgl1"]
base_registry = "registry.example.com:5000/mirror"

[run]
gpus = "auto"
shm_size = "16g"
env = { WANDB_MODE = "offline" }
ports = [8888, "6006:6006"]
command = ["python", "train.py"]
ulimits = { nofile = "1024:4096" }
"""


def project_dir(tmp_path: Path, config: str, *, requirements: bool = True) -> Path:
    (tmp_path / "cudaenv.toml").write_text(config)
    if requirements:
        (tmp_path / "requirements.txt").write_text("numpy\n")
    return tmp_path


def test_valid_config_is_read_into_typed_settings(tmp_path):
    project = load_project(project_dir(tmp_path, VALID))
    assert project.name == "detector"
    assert project.constraints.framework_names == ("torch",)
    assert str(project.constraints.spec("torch")) in (">=2.4,<2.7", "<2.7,>=2.4")
    assert project.target.driver == "535.104.05" and project.target.gpus == ("A100",)
    assert project.build.system_packages == ("ffmpeg", "libgl1")
    assert project.run.gpus == "auto" and project.run.ports == ("8888", "6006:6006")
    assert dict(project.run.env) == {"WANDB_MODE": "offline"}
    assert ("nofile", 1024, 4096) in project.run.ulimits and ("memlock", -1, -1) in project.run.ulimits


def test_name_defaults_to_the_directory_name_made_valid(tmp_path):
    root = tmp_path / "My Project"
    root.mkdir()
    (root / "cudaenv.toml").write_text("[frameworks]\ntorch = '2.6'\n")
    assert load_project(root).name == "my-project"


def test_pyproject_tool_table_is_read_when_there_is_no_cudaenv_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.cudaenv.frameworks]\ntensorflow = "2.15.1"\n')
    project = load_project(tmp_path)
    assert project.constraints.framework_names == ("tensorflow",)
    assert project.config_path.name == "pyproject.toml"


@pytest.mark.parametrize("text, expected", [
    ('tool = "black"\n', "tool: expected a table"),
    ('[tool]\ncudaenv = 3\n', "tool.cudaenv: expected a table"),
])
def test_a_pyproject_whose_tool_is_not_a_table_is_a_config_error(tmp_path, text, expected):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_project(tmp_path)
    assert str(caught.value).startswith(str(tmp_path / "pyproject.toml"))


BAD = {
    "invalid TOML": ("[project\nname = 'x'\n", ["cudaenv.toml", "invalid TOML"]),
    "unknown key": ("[project]\nnmae = 'x'\n", ["unknown key 'project.nmae'", "did you mean 'name'"]),
    "unknown table": ("[framework]\ntorch = '2.6'\n", ["unknown table [framework]", "did you mean [frameworks]"]),
    "unknown framework": ("[frameworks]\npytorch = '2.6'\n", ["unknown key 'frameworks.pytorch'"]),
    "wrong type": ("[project]\nrequirements = 3\n", ["project.requirements", "expected a list of strings", "3"]),
    "bad specifier": ("[frameworks]\ntorch = '>>2.6'\n", ["frameworks.torch", "PEP 440 specifier", "'>>2.6'"]),
    "bad driver": ("[target]\ndriver = 'latest'\n", ["target.driver", "driver version like 535.104.05", "'latest'"]),
    "missing requirements file": ("[project]\nrequirements = ['reqs.txt']\n", ["project.requirements", "'reqs.txt' does not exist"]),
    "hostile package name": ("[build]\nsystem_packages = ['curl; rm -rf /']\n", ["build.system_packages", "Debian package names", "'curl; rm -rf /'"]),
    "package with newline": ("[build]\nsystem_packages = [\"curl\\nrm\"]\n", ["build.system_packages"]),
    "bad flavor": ("[build]\nflavor = 'cuda'\n", ["build.flavor", "one of auto, wheels, runtime, devel"]),
    "bad registry": ("[build]\nbase_registry = 'https://reg.example.com'\n", ["build.base_registry", "no scheme"]),
    "bad env name": ("[run]\nenv = { 'A B' = 'x' }\n", ["run.env", "variable names"]),
    "bad shm": ("[run]\nshm_size = 'lots'\n", ["run.shm_size", "a size like 8g"]),
    "bad gpus": ("[run]\ngpus = 'some'\n", ["run.gpus", "all, none, auto"]),
    "bad ulimit": ("[run]\nulimits = { memlok = -1 }\n", ["unknown ulimit 'memlok'", "did you mean 'memlock'"]),
    "index with a backslash": ('[build]\npython_index = "https://pypi.example/\\\\simple"\n', ["build.python_index", "http(s):// URL"]),
    "missing ca cert": ("[build]\nca_cert = 'corp-ca.pem'\n", ["build.ca_cert", "'corp-ca.pem' does not exist"]),
    "build from source not a list": ("[build]\nbuild_from_source = 'flash-attn'\n",
                                     ["build.build_from_source", 'build_from_source = ["flash-attn"]']),
    "build from source option": ("[build]\nbuild_from_source = ['--no-binary=:all:']\n",
                                 ["build.build_from_source", "package names", "'--no-binary=:all:'"]),
}


def test_build_from_source_names_are_normalized_and_deduplicated(tmp_path):
    project = load_project(project_dir(tmp_path, "[build]\nbuild_from_source = ['Flash_Attn', 'flash-attn', 'apex']\n"))
    assert project.build.build_from_source == ("flash-attn", "apex")


def test_nothing_builds_from_source_unless_named(tmp_path):
    assert load_project(project_dir(tmp_path, "[project]\nname = 'x'\n")).build.build_from_source == ()


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_is_one_clear_error(tmp_path, case):
    text, fragments = BAD[case]
    with pytest.raises(ConfigError) as info:
        load_project(project_dir(tmp_path, text, requirements=False))
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_cli_exits_2_with_one_line_and_no_traceback(tmp_path):
    project_dir(tmp_path, "[project]\nnmae = 'x'\n", requirements=False)
    proc = run_cli("resolve", str(tmp_path), "--no-detect")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "unknown key 'project.nmae'" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_configuration_points_at_init(tmp_path):
    with pytest.raises(ConfigError, match="run `cudaenv init"):
        load_project(tmp_path)


def docs_configurations() -> list[tuple[str, str]]:
    """Every ```toml block after a `<!-- cudaenv-toml -->` comment in README.md and docs/*.md."""
    from tests.support.docs import find_all, name

    return [(name(path), match.group(1)) for path, match in find_all(r"<!-- cudaenv-toml -->\n```toml\n(.+?)\n```")]


@pytest.mark.parametrize("text", [t for _, t in docs_configurations()],
                         ids=[f"{where}#{i}" for i, (where, _) in enumerate(docs_configurations())])
def test_every_configuration_shown_in_the_docs_is_a_valid_config(tmp_path: Path, text):
    """What newcomers copy must load as it stands (a ConfigError names the file, key and value)."""
    project = load_project(project_dir(tmp_path, text))
    assert project.config_path == tmp_path / "cudaenv.toml"  # read, not defaulted


def test_the_annotated_configuration_is_shown_and_valid(tmp_path: Path):
    """The reference's annotated cudaenv.toml, every table in it, loads as it stands."""
    import re

    from tests.support.docs import DOCS

    shown = [text for where, text in docs_configurations() if where.startswith("docs/")]
    annotated = [text for text in shown if "[cluster.slurm.features]" in text]
    assert len(annotated) == 1, "docs/ must show one annotated cudaenv.toml (with [cluster.slurm.features])"
    tables = set(re.findall(r"^\[([a-z.]+)\]", annotated[0], re.M))
    assert {"project", "frameworks", "cuda", "target", "build", "run"} <= tables
    assert (DOCS / "configuration.md").read_text(encoding="utf-8").count(annotated[0]) == 1
    project = load_project(project_dir(tmp_path, annotated[0]))
    assert project.run.ports == ("8888", "6006:6006", "127.0.0.1:8080:8080")
