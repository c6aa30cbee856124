"""cudaenv.toml, field by field: each bad value is exactly one line "FILE: FIELD: expected WHAT,
got VALUE" (README "Configuration"; the --json error object and editors parse it), and each good
value lands in the typed setting the rest of cudaenv reads. Issue 25 §3: these rules survived a
mutation run of cudaenv/project/config.py because the older tests checked fragments only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.errors import UserError, shown
from cudaenv.project.config import ConfigError, load_project, parse_config, parse_ulimit, resolve_project, sanitize_name
from cudaenv.versions import specifier_example

GPUS = "all, none, auto, a count, or devices like '0,1' / 'device=1'"
PORTS = 'ports like 8888, "8888:8888" or "127.0.0.1:8888:8888"'
NAME = "an image name of lower-case letters, digits and . _ - (e.g. 'detector')"
REGISTRY = "a registry prefix like registry.example.com:5000/mirror (no scheme)"
INDEX = "an http(s):// URL of a PEP 503 simple index"
MIRRORS = '"pypi" or the URL of the index framework_index mirrors (e.g. "https://download.pytorch.org/whl/cu126")'
TABLES = "[project], [frameworks], [cuda], [target], [targets], [build], [run], [cluster], [lock]"

# (cudaenv.toml text, the message after "FILE: "): the field, what it expects, the value as repr shows it
FIELD_ERRORS = {
    "table not a table": ('project = 3\n', "[project]: expected a table, got 3"),
    "cluster not a table": ('cluster = "slurm"\n', "[cluster]: expected a table, got 'slurm'"),
    "name not a string": ('[project]\nname = 3\n', "project.name: expected a string, got 3"),
    "name upper case": ('[project]\nname = "Detector"\n', f"project.name: expected {NAME}, got 'Detector'"),
    "name too long": (f'[project]\nname = "{"a" * 129}"\n', f"project.name: expected {NAME}, got {shown('a' * 129)}"),
    "python not a string": ('[project]\npython = 3.11\n',
                            f"project.python: expected {specifier_example('python')}, as a string, got 3.11"),
    "python bad": ('[project]\npython = ">>3"\n', f"project.python: expected {specifier_example('python')}, got '>>3'"),
    "requirements a string": ('[project]\nrequirements = "r.txt"\n',
                              "project.requirements: expected a list of strings, e.g. requirements = [\"r.txt\"], got 'r.txt'"),
    "requirements blank item": ('[project]\nrequirements = [" "]\n',
                                "project.requirements: expected a list of strings, got [' ']"),
    "requirements number item": ('[project]\nrequirements = [3]\n', "project.requirements: expected a list of strings, got [3]"),
    "framework not a string": ('[frameworks]\ntorch = 2.6\n',
                               f"frameworks.torch: expected {specifier_example('torch')}, as a string, got 2.6"),
    "cuda version bad": ('[cuda]\nversion = "12.x"\n', f"cuda.version: expected {specifier_example('version')}, got '12.x'"),
    "cuda version number": ('[cuda]\nversion = 12\n',
                            f"cuda.version: expected {specifier_example('version')}, as a string, got 12"),
    "cudnn bad": ('[cuda]\ncudnn = "nine"\n', f"cuda.cudnn: expected {specifier_example('cudnn')}, got 'nine'"),
    "driver not a string": ('[target]\ndriver = 535\n', "target.driver: expected a string, got 535"),
    "driver bad": ('[target]\ndriver = "latest"\n', "target.driver: expected a driver version like 535.104.05, got 'latest'"),
    "target gpus a string": ('[target]\ngpus = "A100"\n',
                             "target.gpus: expected a list of strings, e.g. gpus = [\"A100\"], got 'A100'"),
    "ccs a string": ('[target]\ncompute_capabilities = "8.0"\n',
                     "target.compute_capabilities: expected a list of strings, e.g. compute_capabilities = [\"8.0\"], got '8.0'"),
    "cc one part": ('[target]\ncompute_capabilities = ["8"]\n',
                    "target.compute_capabilities: expected compute capabilities like \"8.0\", got '8'"),
    "cc three parts": ('[target]\ncompute_capabilities = ["8.0.1"]\n',
                       "target.compute_capabilities: expected compute capabilities like \"8.0\", got '8.0.1'"),
    "flavor not a string": ('[build]\nflavor = 1\n', "build.flavor: expected a string, got 1"),
    "flavor unknown": ('[build]\nflavor = "cuda"\n', "build.flavor: expected one of auto, wheels, runtime, devel, got 'cuda'"),
    "os not a string": ('[build]\nos = 22\n', "build.os: expected a string, got 22"),
    "packages a string": ('[build]\nsystem_packages = "ffmpeg"\n',
                          "build.system_packages: expected a list of strings, e.g. system_packages = [\"ffmpeg\"], got 'ffmpeg'"),
    "package bad": ('[build]\nsystem_packages = ["FFmpeg"]\n',
                    "build.system_packages: expected Debian package names (lower-case letters, digits, + - .), got 'FFmpeg'"),
    "registry not a string": ('[build]\nbase_registry = 5000\n', "build.base_registry: expected a string, got 5000"),
    "registry scheme": ('[build]\nbase_registry = "https://reg.example.com"\n',
                        f"build.base_registry: expected {REGISTRY}, got 'https://reg.example.com'"),
    "registry port out of range": ('[build]\nbase_registry = "reg.example.com:99999/mirror"\n',
                                   f"build.base_registry: expected {REGISTRY}, got 'reg.example.com:99999/mirror'"),
    "python index not a string": ('[build]\npython_index = 1\n', "build.python_index: expected a string, got 1"),
    "python index no scheme": ('[build]\npython_index = "pypi.example/simple"\n',
                               f"build.python_index: expected {INDEX}, got 'pypi.example/simple'"),
    "framework index not a string": ('[build]\nframework_index = true\n', "build.framework_index: expected a string, got True"),
    "framework index ftp": ('[build]\nframework_index = "ftp://mirror.example/whl"\n',
                            f"build.framework_index: expected {INDEX}, got 'ftp://mirror.example/whl'"),
    "mirrors not a string": ('[build]\nframework_index_mirrors = 1\n', "build.framework_index_mirrors: expected a string, got 1"),
    "mirrors bad": ('[build]\nframework_index = "https://m.example/whl"\nframework_index_mirrors = "pytorch"\n',
                    f"build.framework_index_mirrors: expected {MIRRORS}, got 'pytorch'"),
    "mirrors without index": ('[build]\nframework_index_mirrors = "pypi"\n',
                              "build.framework_index_mirrors: says what build.framework_index mirrors, but no "
                              "framework_index is set"),
    "from source a string": ('[build]\nbuild_from_source = "apex"\n',
                             "build.build_from_source: expected a list of strings, e.g. build_from_source = [\"apex\"], got 'apex'"),
    "from source bad": ('[build]\nbuild_from_source = ["apex!"]\n',
                        "build.build_from_source: expected package names as on PyPI (letters, digits, - _ .), got 'apex!'"),
    "ca cert not a string": ('[build]\nca_cert = 1\n', "build.ca_cert: expected a string, got 1"),
    "ca cert missing": ('[build]\nca_cert = "corp.pem"\n', "build.ca_cert: file 'corp.pem' does not exist"),
    "slurm not a table": ('[cluster]\nslurm = "gpu"\n', "[cluster.slurm]: expected a table, got 'gpu'"),
    "slurm unknown key": ('[cluster.slurm]\npartition = "gpu"\n', "unknown key 'cluster.slurm.partition' (allowed: features)"),
    "gpus bool": ('[run]\ngpus = true\n', f"run.gpus: expected {GPUS}, got True"),
    "gpus list": ('[run]\ngpus = [0, 1]\n', f"run.gpus: expected {GPUS}, got [0, 1]"),
    "gpus words": ('[run]\ngpus = "some"\n',
                   "run.gpus: expected all, none, auto, auto:N, a count, or devices like 0,1 / device=1 / GPU-<uuid>"),
    "gpus zero": ('[run]\ngpus = 0\n', "run.gpus: 0 would give the container no GPU: say none for that, or device=0 for "
                  "the first GPU"),
    "gpus with a colon": ('[run]\ngpus = "device: 1"\n',
                          "run.gpus: expected all, none, auto, auto:N, a count, or devices like 0,1 / device=1 / GPU-<uuid>"),
    "shm not a string": ('[run]\nshm_size = 8\n', "run.shm_size: expected a string, got 8"),
    "shm bad": ('[run]\nshm_size = "8 GB"\n', "run.shm_size: expected a size like 8g or 512m, got '8 GB'"),
    "ipc not a string": ('[run]\nipc = true\n', "run.ipc: expected a string, got True"),
    "ipc bad": ('[run]\nipc = "container:x"\n', "run.ipc: expected host, private or shareable, got 'container:x'"),
    "env not a table": ('[run]\nenv = ["A=1"]\n', "run.env: expected a table of NAME = \"value\", got ['A=1']"),
    "env bad name": ('[run]\nenv = { "1A" = "x" }\n', "run.env: expected variable names of letters, digits and _, got '1A'"),
    "env value a list": ('[run]\nenv = { A = [1] }\n', "run.env.A: expected a string, got [1]"),
    "env value a boolean": ('[run]\nenv = { A = true }\n',
                            'run.env.A: expected a string (quote a number or true/false: A = "true"), got True'),
    "env value false": ('[run]\nenv = { A = false }\n',
                        'run.env.A: expected a string (quote a number or true/false: A = "false"), got False'),
    "env value a float": ('[run]\nenv = { A = 1e-5 }\n',
                          'run.env.A: expected a string (quote a number or true/false: A = "1e-05"), got 1e-05'),
    "env value infinite": ('[run]\nenv = { A = inf }\n',
                           'run.env.A: expected a string (quote a number or true/false: A = "inf"), got inf'),
    "env value with NUL": ('[run]\nenv = { A = "x\\u0000y" }\n',
                           "run.env.A: expected a string without NUL characters (no process can receive one), "
                           "got 'x\\x00y'"),
    "command word with NUL": ('[run]\ncommand = ["python", "a\\u0000"]\n',
                              "run.command: expected words without NUL characters (no process can receive one), "
                              "got ['python', 'a\\x00']"),
    "port bool": ('[run]\nports = [true]\n', f"run.ports: expected {PORTS}, got True"),
    "port float": ('[run]\nports = [80.5]\n', f"run.ports: expected {PORTS}, got 80.5"),
    "port bad text": ('[run]\nports = ["http"]\n', f"run.ports: expected {PORTS}, got 'http'"),
    "port out of range": ('[run]\nports = 70000\n', f"run.ports: expected {PORTS}, got 70000"),
    "command a string": ('[run]\ncommand = "python train.py"\n',
                         "run.command: expected a list of strings like [\"python\", \"train.py\"], got 'python train.py'"),
    "command number item": ('[run]\ncommand = ["python", 3]\n',
                            "run.command: expected a list of strings like [\"python\", \"train.py\"], got ['python', 3]"),
    "ulimits not a table": ('[run]\nulimits = ["memlock=-1"]\n',
                            "run.ulimits: expected a table like {memlock = -1, stack = 67108864}, got ['memlock=-1']"),
    "ulimit bad value": ('[run]\nulimits = { nofile = "many" }\n',
                         "run.ulimits: ulimit nofile: expected a number or 'soft:hard' (-1 for unlimited), got 'many'"),
    "jupyter a string": ('[run]\njupyter = "yes"\n', "run.jupyter: expected true or false, got 'yes'"),
    "jupyter a number": ('[run]\njupyter = 1\n', "run.jupyter: expected true or false, got 1"),
    "unknown table far from all": ('[zzz]\nx = 1\n', f"unknown table [zzz] (tables: {TABLES})"),
    "unknown key far from all": ('[build]\nzzz = 1\n', "unknown key 'build.zzz' (allowed: flavor, os, system_packages, "
                                 "base_registry, python_index, framework_index, framework_index_mirrors, ca_cert, "
                                 "build_from_source)"),
}


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "cudaenv.toml").write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("case", sorted(FIELD_ERRORS), ids=[c.replace(" ", "-") for c in sorted(FIELD_ERRORS)])
def test_each_bad_field_is_one_exact_line_naming_file_field_and_value(tmp_path, case):
    """The message is the contract: file, field, what was expected and the value, in that order."""
    text, message = FIELD_ERRORS[case]
    with pytest.raises(ConfigError) as caught:
        load_project(write(tmp_path, text))
    assert str(caught.value) == f"{tmp_path / 'cudaenv.toml'}: {message}"


@pytest.mark.parametrize("text, field", [
    ('[project]\nnmae = "x"\n', "project.nmae"),
    ('[cluster.slurm]\npartition = "gpu"\n', "cluster.slurm.partition"),
], ids=["project-key", "slurm-key"])
def test_an_unknown_key_names_its_field_for_the_json_error(tmp_path, text, field):
    """`--json` reports the field of an unknown key, which its message cannot spell as FILE: FIELD."""
    with pytest.raises(ConfigError) as caught:
        load_project(write(tmp_path, text))
    assert caught.value.field == field


@pytest.mark.parametrize("text, field", [
    ('[build]\npython_index = "https://user:secret@pypi.example/simple"\n', "build.python_index"),
    ('[build]\nframework_index = "https://user:secret@m.example/whl"\n', "build.framework_index"),
    ('[build]\nframework_index = "https://m.example/whl"\nframework_index_mirrors = "https://u:p@download.example/whl"\n',
     "build.framework_index_mirrors"),
], ids=["python-index", "framework-index", "mirrors"])
def test_an_index_url_with_credentials_is_refused_naming_its_field(tmp_path, text, field):
    """A committed file is copied into the image and every clone: no user:password@ in it."""
    with pytest.raises(UserError) as caught:
        load_project(write(tmp_path, text))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'cudaenv.toml'}: {field}: expected an index URL without credentials")
    assert "secret" not in message and "u:p" not in message


def test_a_long_file_name_is_a_missing_file_not_a_crash(tmp_path):
    """A name the file system refuses (over 255 bytes) is reported like any missing file."""
    long = "r" * 300 + ".txt"
    with pytest.raises(ConfigError) as caught:
        load_project(write(tmp_path, f'[project]\nrequirements = ["{long}"]\n'))
    assert str(caught.value) == f"{tmp_path / 'cudaenv.toml'}: project.requirements: file {shown(long)} does not exist in {tmp_path}"
    with pytest.raises(ConfigError) as caught:
        load_project(write(tmp_path, f'[build]\nca_cert = "{long}"\n'))
    assert str(caught.value) == f"{tmp_path / 'cudaenv.toml'}: build.ca_cert: file {shown(long)} does not exist"


def test_a_requirements_file_outside_the_project_is_refused(tmp_path):
    """The build context is the project directory: a file outside it would not be in the image."""
    (tmp_path / "outside.txt").write_text("numpy\n")
    root = tmp_path / "p"
    root.mkdir()
    with pytest.raises(ConfigError) as caught:
        load_project(write(root, '[project]\nrequirements = ["../outside.txt"]\n'))
    assert str(caught.value) == f"{root / 'cudaenv.toml'}: project.requirements: '../outside.txt' is outside the project directory"


def test_errors_of_a_pyproject_name_its_tool_table(tmp_path):
    """In pyproject.toml the fields live under [tool.cudaenv]; the message says so."""
    (tmp_path / "pyproject.toml").write_text('[tool.cudaenv.run]\nipc = "none"\n')
    with pytest.raises(ConfigError) as caught:
        load_project(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'pyproject.toml'} [tool.cudaenv]: run.ipc: expected host, private or shareable, got 'none'"


FULL = """
[project]
name = "detector"
python = ">=3.10,<3.13"
requirements = ["requirements.txt"]

[frameworks]
torch = "2.6"
jax = "*"
tensorflow = ""
keras = "any"

[cuda]
version = ">=12.1"
cudnn = "9"

[target]
driver = " 535.104.05 "
gpus = ["A100", "L4"]
compute_capabilities = ["8.0", "8.9"]

[build]
flavor = "devel"
os = "ubuntu22.04"
system_packages = ["ffmpeg"]
base_registry = " registry.example.com:5000/mirror/ "
python_index = " https://pypi.example/simple "
framework_index = "https://m.example/whl/cu126"
framework_index_mirrors = " PyPI "
ca_cert = "certs/corp.pem"

[run]
gpus = 2
shm_size = "512m"
ipc = "host"
env = { B = 1, A = "x" }
ports = 8888
command = ["python", "train.py"]
ulimits = { nofile = 1024 }
jupyter = true
"""


def test_every_field_lands_in_its_typed_setting(tmp_path):
    """What the file says is what the image, the run and the resolver get: no field read from
    the wrong table, dropped, or left at its default."""
    root = write(tmp_path, FULL)
    (root / "requirements.txt").write_text("numpy\n")
    (root / "certs").mkdir()
    (root / "certs" / "corp.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    project = load_project(root)
    assert project.name == "detector" and project.python == ">=3.10,<3.13"
    assert project.requirements == (Path("requirements.txt"),)
    constraints = project.constraints
    assert constraints.python == SpecifierSet(">=3.10,<3.13")
    assert dict(constraints.frameworks) == {"torch": SpecifierSet("==2.6"), "jax": SpecifierSet(),
                                            "tensorflow": SpecifierSet(), "keras": SpecifierSet()}
    assert constraints.cuda == SpecifierSet(">=12.1") and constraints.cudnn == SpecifierSet("==9.*")
    assert constraints.flavor == "devel" and constraints.os == "ubuntu22.04" and constraints.variants == ()
    assert project.target.driver == "535.104.05"
    assert project.target.gpus == ("A100", "L4") and project.target.compute_capabilities == ("8.0", "8.9")
    build = project.build
    assert build.flavor == "devel" and build.os == "ubuntu22.04" and build.system_packages == ("ffmpeg",)
    assert build.base_registry == "registry.example.com:5000/mirror"
    assert build.python_index == "https://pypi.example/simple"
    assert build.framework_index == "https://m.example/whl/cu126"
    assert build.framework_index_mirrors == "pypi"
    assert build.ca_cert == root / "certs" / "corp.pem"
    run = project.run
    assert run.gpus == "2" and run.shm_size == "512m" and run.ipc == "host"
    assert run.env == (("A", "x"), ("B", "1"))  # sorted by name; a number is passed as its text
    assert run.ports == ("8888",) and run.command == ("python", "train.py") and run.jupyter is True
    assert run.ulimits == (("memlock", -1, -1), ("nofile", 1024, 1024), ("stack", 67108864, 67108864))


def test_an_unset_field_takes_its_documented_default(tmp_path):
    """Defaults are part of the schema: all GPUs, 8g of shared memory, no JupyterLab, NVIDIA's ulimits."""
    project = load_project(write(tmp_path, '[project]\nname = "x"\n'))
    assert project.python is None and project.constraints.python is None
    assert project.constraints.cuda is None and project.constraints.cudnn is None and project.constraints.os is None
    assert project.build.flavor == "auto" and project.build.base_registry == "" and project.build.ca_cert is None
    assert (project.build.python_index, project.build.framework_index, project.build.framework_index_mirrors) == ("", "", "")
    assert project.run.gpus == "all" and project.run.shm_size == "8g" and project.run.ipc is None
    assert project.run.jupyter is False and project.run.ports == () and project.run.command == ()
    assert project.run.ulimits == (("memlock", -1, -1), ("stack", 67108864, 67108864))


def test_a_mirror_url_is_kept_as_written_and_pypi_in_any_case_is_pypi(tmp_path):
    """framework_index_mirrors names an index: only the word pypi is case-folded, a URL is not."""
    text = ('[build]\nframework_index = "https://m.example/whl"\n'
            'framework_index_mirrors = "https://download.pytorch.org/whl/CU126"\n')
    assert load_project(write(tmp_path, text)).build.framework_index_mirrors == "https://download.pytorch.org/whl/CU126"


def test_an_absolute_ca_cert_is_used_where_it_is(tmp_path):
    """A CA bundle outside the project (e.g. /etc/ssl/...) is named by its absolute path."""
    cert = tmp_path / "corp.pem"
    cert.write_text("x\n")
    root = tmp_path / "p"
    root.mkdir()
    assert load_project(write(root, f'[build]\nca_cert = "{cert}"\n')).build.ca_cert == cert


def test_a_pytorch_local_version_pins_the_version_and_its_build(tmp_path):
    """torch = "==2.0.1+cu118" (PyTorch's install page) means that version and that build; the build
    brings its CUDA (11.8) at resolution, so no [cuda] constraint is made up that a --torch flag
    replacing the pin would leave behind."""
    project = load_project(write(tmp_path, '[frameworks]\ntorch = "==2.0.1+cu118"\ntorchvision = "==0.15.2+cu118"\n'))
    assert project.constraints.spec("torch") == SpecifierSet("==2.0.1")
    assert project.constraints.variants == (("torch", "cu118"), ("torchvision", "cu118"))
    assert project.constraints.cuda is None


def test_an_explicit_cuda_version_wins_over_the_one_a_local_version_implies(tmp_path):
    """[cuda] version is what the user asked for; the +cuXYZ of a pin does not overwrite it."""
    project = load_project(write(tmp_path, '[frameworks]\ntorch = "==2.0.1+cu118"\n\n[cuda]\nversion = ">=11.7"\n'))
    assert project.constraints.cuda == SpecifierSet(">=11.7")
    assert project.constraints.variants == (("torch", "cu118"),)


def test_a_registry_with_a_trailing_slash_is_the_same_prefix(tmp_path):
    """"reg/mirror/" and "reg/mirror" name the same place; image references are joined with one "/"."""
    project = load_project(write(tmp_path, '[build]\nbase_registry = "registry.example.com/mirror//"\n'))
    assert project.build.base_registry == "registry.example.com/mirror"


@pytest.mark.parametrize("ipc", ["host", "private", "shareable"])
def test_each_docker_ipc_mode_is_accepted(tmp_path, ipc):
    """The three modes docker run --ipc takes without a container name."""
    assert load_project(write(tmp_path, f'[run]\nipc = "{ipc}"\n')).run.ipc == ipc


def test_ports_are_kept_as_text_whether_numbers_or_strings(tmp_path):
    """docker -p takes text; 8888 and "8888" are the same port."""
    project = load_project(write(tmp_path, '[run]\nports = [8888, "127.0.0.1:8080:80"]\n'))
    assert project.run.ports == ("8888", "127.0.0.1:8080:80")


def test_a_project_without_configuration_gets_defaults_when_not_required(tmp_path):
    """`cudaenv resolve DIR` works before `cudaenv init`: the directory name, no file, defaults."""
    root = tmp_path / "Vision Model"
    root.mkdir()
    project = load_project(root, required=False)
    assert project.root == root and project.config_path is None and project.name == "vision-model"
    assert project.raw == {} and project.constraints.frameworks == ()


def test_a_directory_name_too_long_for_an_image_is_reported_against_the_default_file(tmp_path):
    """Without a file the name comes from the directory; if that cannot be an image name, say where to set it."""
    root = tmp_path / ("d" * 130)
    root.mkdir()
    with pytest.raises(ConfigError) as caught:
        load_project(root, required=False)
    assert str(caught.value) == f"{root / 'cudaenv.toml'}: project.name: expected {NAME}, got {shown('d' * 130)}"


def test_a_project_that_is_not_a_directory_is_a_config_error(tmp_path):
    """A file or a typo given as the project is bad input naming it."""
    with pytest.raises(ConfigError) as caught:
        load_project(tmp_path / "missing")
    assert str(caught.value) == f"{tmp_path / 'missing'}: not a directory"


@pytest.mark.parametrize("name, expected", [
    ("My Project", "my-project"),
    ("..hidden..", "hidden"),
    ("_a__b", "a-b"),
    ("a.-_b", "a-b"),
    ("a.b", "a.b"),
    ("***", "project"),
], ids=["spaces", "dots-around", "underscores", "mixed-separators", "one-dot-kept", "nothing-left"])
def test_a_directory_name_is_made_a_valid_image_name(name, expected):
    """Image names allow single separators between lower-case runs; nothing usable means "project"."""
    assert sanitize_name(name) == expected


# --- [run] ulimits --------------------------------------------------------------------------------

WHERE = "f.toml: run.ulimits"
LIMIT = 2**63 - 1


@pytest.mark.parametrize("value, soft, hard", [
    (-1, -1, -1),
    (0, 0, 0),
    (LIMIT, LIMIT, LIMIT),
    ("1024:4096", 1024, 4096),
    (" 1024 ", 1024, 1024),
    ("-1:-1", -1, -1),
    ("1024:-1", 1024, -1),
    (f"0:{LIMIT}", 0, LIMIT),
], ids=["unlimited", "zero", "largest", "soft-hard", "one-number-text", "both-unlimited", "unlimited-hard", "largest-hard"])
def test_a_ulimit_is_soft_and_hard_within_what_the_kernel_holds(value, soft, hard):
    """-1 is unlimited, otherwise 0 .. 2**63-1 (rlim_t); one number sets both limits."""
    assert parse_ulimit("nofile", value, WHERE) == ("nofile", soft, hard)


@pytest.mark.parametrize("value, message", [
    (-2, f"ulimit nofile: expected -1 (unlimited) or 0 to {LIMIT}, got -2"),
    (LIMIT + 1, f"ulimit nofile: expected -1 (unlimited) or 0 to {LIMIT}, got {LIMIT + 1}"),
    (f"0:{LIMIT + 1}", f"ulimit nofile: expected -1 (unlimited) or 0 to {LIMIT}, got '0:{LIMIT + 1}'"),
    ("0:-2", f"ulimit nofile: expected -1 (unlimited) or 0 to {LIMIT}, got '0:-2'"),
    ("-2:5", f"ulimit nofile: expected -1 (unlimited) or 0 to {LIMIT}, got '-2:5'"),
    ("4096:1024", "ulimit nofile: the soft limit 4096 is above the hard limit 1024"),
    ("-1:1024", "ulimit nofile: the soft limit -1 is above the hard limit 1024"),
    (True, "ulimit nofile: expected a number or 'soft:hard' (-1 for unlimited), got True"),
    ("1024:", "ulimit nofile: expected a number or 'soft:hard' (-1 for unlimited), got '1024:'"),
    (1.5, "ulimit nofile: expected a number or 'soft:hard' (-1 for unlimited), got 1.5"),
], ids=["below-unlimited", "above-rlim", "hard-above-rlim", "hard-below-unlimited", "soft-below-unlimited", "soft-above-hard",
        "unlimited-soft-finite-hard", "bool", "empty-hard", "float"])
def test_a_ulimit_out_of_range_or_inverted_is_refused(value, message):
    """The engine would refuse these at `docker run`; say so when the file is read, naming the limit."""
    with pytest.raises(ConfigError) as caught:
        parse_ulimit("nofile", value, WHERE)
    assert str(caught.value) == f"{WHERE}: {message}"


@pytest.mark.parametrize("name, hint", [
    ("nofiles", " (did you mean 'nofile'?)"),
    ("zzz", " (known: core, cpu, data, fsize, locks, memlock, msgqueue, nice, nofile, nproc, rss, rtprio, rttime, "
            "sigpending, stack)"),
], ids=["close", "far"])
def test_an_unknown_ulimit_suggests_the_close_one_or_lists_all(name, hint):
    """A typo gets a did-you-mean; anything else the full list docker accepts."""
    with pytest.raises(ConfigError) as caught:
        parse_ulimit(name, 1, WHERE)
    assert str(caught.value) == f"{WHERE}: unknown ulimit {name!r}{hint}"


def test_a_ulimit_error_in_the_file_names_the_file_and_table(tmp_path):
    """parse_ulimit is told where it is: FILE: run.ulimits: ulimit NAME: ..."""
    with pytest.raises(ConfigError) as caught:
        load_project(write(tmp_path, '[run]\nulimits = { nofile = "9:1" }\n'))
    assert str(caught.value) == f"{tmp_path / 'cudaenv.toml'}: run.ulimits: ulimit nofile: the soft limit 9 is above the hard limit 1"


# --- resolve_project ------------------------------------------------------------------------------


def _unknown_torch(tmp_path: Path, pyproject: bool = False):
    from tests.unit.resolver.helpers import host, matrix

    if pyproject:
        (tmp_path / "pyproject.toml").write_text('[tool.cudaenv.frameworks]\ntorch = "==0.4.1"\n')
    else:
        write(tmp_path, '[frameworks]\ntorch = "==0.4.1"\n')
    return matrix(), load_project(tmp_path), host(driver="550.54.15")


@pytest.mark.parametrize("pyproject", [False, True], ids=["cudaenv-toml", "pyproject"])
def test_a_version_the_matrix_lacks_is_reported_against_the_file_and_key(tmp_path, pyproject):
    """The user fixes the file, not a flag: the message names the file (and tool table) and key."""
    from cudaenv.resolver.resolve import UnknownVersion

    matrix, project, host = _unknown_torch(tmp_path, pyproject)
    with pytest.raises(UnknownVersion) as original:
        from cudaenv.resolver.resolve import resolve

        resolve(matrix, project.constraints, host)
    with pytest.raises(ConfigError) as caught:
        resolve_project(matrix, project, host)
    label = f"{tmp_path / 'pyproject.toml'} [tool.cudaenv]" if pyproject else str(tmp_path / "cudaenv.toml")
    assert str(caught.value) == f"{label}: frameworks.torch: {original.value}"


def test_a_version_a_flag_set_keeps_the_flags_error(tmp_path):
    """`--torch 0.4.1` is not in the file: blaming the file would send the user to the wrong place."""
    from cudaenv.resolver.resolve import UnknownVersion

    matrix, project, host = _unknown_torch(tmp_path)
    with pytest.raises(UnknownVersion) as caught:
        resolve_project(matrix, project, host, from_flags=("torch",))
    assert not isinstance(caught.value, ConfigError) and caught.value.field == "frameworks.torch"


def test_a_version_without_a_file_keeps_the_resolvers_error(tmp_path):
    """With no configuration file there is no file and key to name."""
    from dataclasses import replace

    from cudaenv.resolver.resolve import UnknownVersion

    matrix, project, host = _unknown_torch(tmp_path)
    with pytest.raises(UnknownVersion) as caught:
        resolve_project(matrix, replace(project, config_path=None), host)
    assert not isinstance(caught.value, ConfigError)


def test_parse_config_reports_against_the_label_it_is_given(tmp_path):
    """Callers that read the tables themselves (pyproject, tests) choose the label messages use."""
    with pytest.raises(ConfigError) as caught:
        parse_config(tmp_path, {"run": {"ipc": "none"}}, "LABEL", None)
    assert str(caught.value) == "LABEL: run.ipc: expected host, private or shareable, got 'none'"


def test_resolve_project_explains_a_no_by_default(tmp_path):
    """`cudaenv resolve` on a project says which filter rejected the stacks, as resolve() does."""
    from tests.unit.resolver.helpers import codes, host, matrix

    from cudaenv.resolver.resolve import resolve

    project = load_project(write(tmp_path, '[frameworks]\ntorch = "2.6"\n'))
    old = host(driver="418.40.04")
    expected = codes(resolve(matrix(), project.constraints, old))
    assert expected != ["no-stack"]
    assert codes(resolve_project(matrix(), project, old)) == expected
    assert codes(resolve_project(matrix(), project, old, explain=False)) == ["no-stack"]


def test_project_constraints_add_what_the_framework_index_serves(tmp_path, monkeypatch):
    """Resolution chooses among the builds the project's index has, unless the caller already said."""
    from dataclasses import replace

    from cudaenv.project.config import project_constraints
    from cudaenv.project.served import INDEX_ENV, MIRRORS_ENV, served_by
    from tests.unit.resolver.helpers import matrix

    monkeypatch.delenv(INDEX_ENV, raising=False)
    monkeypatch.delenv(MIRRORS_ENV, raising=False)
    project = load_project(write(tmp_path, '[frameworks]\ntorch = "2.6"\n\n[build]\n'
                                 'framework_index = "https://download.pytorch.org/whl/cu124"\n'))
    served = served_by(matrix(), project)
    assert served is not None
    assert project_constraints(matrix(), project) == replace(project.constraints, framework_index=served)
    flags = replace(project.constraints, python=SpecifierSet("==3.11"))
    assert project_constraints(matrix(), project, flags) == replace(flags, framework_index=served)
    chosen = replace(flags, framework_index="https://pypi.org/simple")
    assert project_constraints(matrix(), project, chosen) == chosen


def test_exclude_newer_is_read_from_the_lock_table(tmp_path):
    """[lock] exclude_newer reaches the lock (uv's --exclude-newer); a bad value names lock.exclude_newer."""
    assert load_project(write(tmp_path, '[lock]\nexclude_newer = "2026-11-20"\n')).exclude_newer == "2026-11-20"
    assert load_project(write(tmp_path, '[project]\nname = "x"\n')).exclude_newer is None
    with pytest.raises(ConfigError) as caught:
        load_project(write(tmp_path, '[lock]\nexclude_newer = "last week"\n'))
    assert str(caught.value).startswith(f"{tmp_path / 'cudaenv.toml'}: lock.exclude_newer: expected a date")


@pytest.mark.parametrize("length, accepted", [(4095, True), (4096, False)], ids=["4095", "4096"])
def test_a_file_name_of_path_max_characters_is_not_looked_up(tmp_path, length, accepted):
    """Names of 4096 characters or more (PATH_MAX) are refused before the file system sees them,
    even when they would normalize to a real file."""
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "ca.pem").write_text("x\n")
    for key, name in (("project]\nrequirements", "requirements.txt"), ("build]\nca_cert", "ca.pem")):
        item = "./" * ((length - len(name)) // 2) + "/" * ((length - len(name)) % 2) + name
        assert len(item) == length
        text = f'[{key} = {[item]!r}\n'.replace("'", '"') if "requirements" in key else f'[{key} = "{item}"\n'
        if accepted:
            load_project(write(tmp_path, text))
        else:
            with pytest.raises(ConfigError, match="does not exist"):
                load_project(write(tmp_path, text))


def test_resolve_project_resolves_the_constraints_it_is_given(tmp_path):
    """Flags merged over the file arrive as ``constraints``: they, not the file's, are resolved."""
    from dataclasses import replace

    from cudaenv.versions import parse_specifier
    from tests.unit.resolver.helpers import host, matrix

    write(tmp_path, '[frameworks]\ntorch = "==2.5.1"\n')
    project = load_project(tmp_path)
    flags = replace(project.constraints, frameworks=(("torch", parse_specifier("==2.6.0")),))
    assert resolve_project(matrix(), project, host(driver="570.86.15")).stack.frameworks[0] == ("torch", "2.5.1")
    assert resolve_project(matrix(), project, host(driver="570.86.15"), flags).stack.frameworks[0] == ("torch", "2.6.0")


def test_resolve_project_chooses_among_what_the_framework_index_serves(tmp_path, monkeypatch):
    """[build] framework_index = PyTorch's cu118 index: only its CUDA 11.8 builds are candidates."""
    from tests.unit.resolver.helpers import host, matrix

    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX", raising=False)
    monkeypatch.delenv("CUDAENV_FRAMEWORK_INDEX_MIRRORS", raising=False)
    write(tmp_path, '[frameworks]\ntorch = "==2.6.0"\n\n[build]\nframework_index = "https://download.pytorch.org/whl/cu118"\n')
    stack = resolve_project(matrix(), load_project(tmp_path), host(driver="570.86.15")).stack
    assert (stack.frameworks[0], stack.cuda) == (("torch", "2.6.0"), "11.8")


@pytest.mark.parametrize("value, expected", [
    ("registry.example.com:5000/mirror/", "registry.example.com:5000/mirror"),
    (" ghcr.io/team// ", "ghcr.io/team"),
    ("Mirror.Example.X", "Mirror.Example.X"),  # host names are case-free; only slashes are trimmed
    ("", ""),
], ids=["slash", "spaces-slashes", "upper-host", "empty"])
def test_a_base_registry_loses_only_surrounding_space_and_trailing_slashes(tmp_path, value, expected):
    assert parse_config(tmp_path, {"build": {"base_registry": value}}, "cudaenv.toml", None).build.base_registry == expected
