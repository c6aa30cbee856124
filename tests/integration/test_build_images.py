"""`cudaenv build` for real: fixture projects built into images and checked inside containers.

Base images are the suite's stand-ins, served by the local registry under the names the templates
ask for (``[build] base_registry`` points at it); project requirements come from a real PEP 503
index on loopback (``CUDAENV_PYTHON_INDEX``), reached from the build with ``--network host``. Each
fixture image is built once per module; tests that need a variant (an edited file, a hostile
command, a missing requirement) build a copy of the project, which reuses every cached layer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from cudaenv.engine import ContainerSpec
from cudaenv.images.plan import LABEL_INPUTS, build_user_ids
from cudaenv.core.references import with_registry
from cudaenv.images.render import render_dockerignore
from cudaenv.resolver.model import Stack
from tests.support.cli import cudaenv as run_cli
from tests.support.package_index import serve_index
from tests.support.lockfile import lock_view

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytestmark = [pytest.mark.docker, pytest.mark.registry]

RUN_ID = uuid.uuid4().hex[:8]
MAIN_OUTPUT = "cudaenv fixture project: main.py ran"
MAIN_PY = f"print({MAIN_OUTPUT!r})\n"


# --- helpers ------------------------------------------------------------------------------------


cudaenv = partial(run_cli, timeout=1200)


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def toml_list(values) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


def write_config(directory: Path, *, name: str, registry: str, flavor: str = "runtime", cuda: str | None = "12.4",
                 driver: str = "550.54.15", frameworks: dict[str, str] | None = None,
                 system_packages=("less",), command=("python", "main.py"), ca_cert: str | None = None) -> None:
    lines = ["[project]", f"name = {toml_string(name)}", 'python = "3.11"', 'requirements = ["requirements.txt"]', ""]
    if frameworks:
        lines += ["[frameworks]", *(f"{k} = {toml_string(v)}" for k, v in frameworks.items()), ""]
    if cuda:
        lines += ["[cuda]", f"version = {toml_string(cuda)}", ""]
    lines += ["[target]", f"driver = {toml_string(driver)}", 'gpus = ["A100"]', ""]
    lines += ["[build]", f"flavor = {toml_string(flavor)}", f"base_registry = {toml_string(registry)}",
              f"system_packages = {toml_list(system_packages)}"]
    if ca_cert:
        lines.append(f"ca_cert = {toml_string(ca_cert)}")
    lines += ["", "[run]", f"command = {toml_list(command)}", "ulimits = { memlock = 8388608 }", ""]
    (directory / "cudaenv.toml").write_text("\n".join(lines))


def read_lock(directory: Path) -> dict:
    return lock_view(directory / "cudaenv.lock")


def pins(lock: dict) -> dict[str, str]:
    return dict(line.split("==", 1) for line in lock["requirements"]["pinned"])


def lock_project(directory: Path, env: dict[str, str], standins) -> dict:
    proc = cudaenv("lock", directory, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = read_lock(directory)
    standins.provide(lock["stack"]["base_image"])
    return lock


@dataclass
class Built:
    tag: str
    directory: Path
    lock: dict
    result: dict  # `cudaenv build --json`
    env: dict[str, str]


STACK_BASES: set[str] = set()  # the stack bases this module's builds used, removed when it ends


def build(directory: Path, env: dict[str, str], tag: str, *extra: str) -> dict:
    proc = cudaenv("build", directory, "--network", "host", "--json", "-t", tag, *extra, env=env)
    assert proc.returncode == 0, f"build failed:\n{proc.stderr[-4000:]}"
    result = json.loads(proc.stdout)
    STACK_BASES.add(result["base"]["image_id"])
    return result


def image_attrs(engine, tag: str) -> dict:
    return engine.client.images.get(tag).attrs


def container(image: str, *command: str) -> ContainerSpec:
    """As `cudaenv run` starts it: the image's own tini is the init (no second one from Docker)."""
    return ContainerSpec(image=image, command=tuple(command), init=False)


def run_in(engine, image: str, *command: str) -> str:
    result = engine.run(container(image, *command), timeout=120)
    assert result.exit_code == 0, result.output
    return result.output


def layers(engine, tag: str) -> list[str]:
    return image_attrs(engine, tag)["RootFS"]["Layers"]


def code_step_index(steps: list[dict]) -> int:
    return next(i for i, s in enumerate(steps) if re.search(r"COPY --chown=\S+ \. /workspace/", s["step"]))


def step_number(step: dict) -> int:
    """``[base 6/9] RUN ...`` -> 6: steps come from BuildKit in completion order, not file order."""
    return int(re.match(r"\[\S+ (\d+)/\d+\]", step["step"]).group(1))


def remove_images(engine, *tags: str) -> None:
    for tag in tags:
        engine.remove_image(tag, force=True)


def copy_project(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".venv", "__pycache__", ".git"))
    return target


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def remove_stack_bases(engine):
    """Every name of the stack bases the module's builds made or found: the next run starts clean."""
    yield
    import docker.errors

    for image_id in STACK_BASES:
        info = engine.image_info(image_id)
        for name in info.tags if info else ():
            try:
                engine.client.images.remove(name)
            except docker.errors.APIError:  # a container of another test still uses it
                pass


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """The module's package index: a project requirement with a dependency, and a stand-in torch."""
    served, stop = serve_index(tmp_path_factory.mktemp("build-index"))
    served.add("fixture-leaf", "2.0.1", files={"fixture_leaf/__init__.py": 'NAME = "leaf"\n'})
    served.add("fixture-dep", "1.2.3", requires=["fixture-leaf>=2"],
               files={"fixture_dep/__init__.py": "import fixture_leaf\nVERSION = '1.2.3'\n"})
    served.add("torch", "2.99.0", files={
        "torch/__init__.py": '__version__ = "2.99.0"\nfrom . import version\n',
        "torch/version.py": 'cuda = "12.8"\n',
    })
    yield served
    stop()


OVERRIDES = ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_MATRIX_PATH", "CUDAENV_DRIVER_VERSION",
             "CUDAENV_GPUS", "CUDAENV_UID", "CUDAENV_GID")


@pytest.fixture(scope="module")
def clean_env(tmp_path_factory) -> dict[str, str]:
    """The caller's environment without cudaenv overrides, and no user matrix overlays."""
    overlays = tmp_path_factory.mktemp("no-overlays")
    return dict({k: v for k, v in os.environ.items() if k not in OVERRIDES}, CUDAENV_MATRIX_PATH=str(overlays))


@pytest.fixture(scope="module")
def env(index, clean_env) -> dict[str, str]:
    """The CLI's environment for the fixture projects: requirements from the module index."""
    return dict(clean_env, CUDAENV_PYTHON_INDEX=index.url)


@pytest.fixture(scope="module")
def runtime_project(tmp_path_factory, standins, env) -> tuple[Path, dict]:
    """A plain-CUDA runtime project: a locked requirement, a system package, a command."""
    directory = tmp_path_factory.mktemp("runtime") / "project"
    directory.mkdir()
    write_config(directory, name=f"buildtest-{RUN_ID}", registry=standins.host)
    (directory / "requirements.txt").write_text("fixture-dep==1.2.3\n")
    (directory / "main.py").write_text(MAIN_PY)
    (directory / "pkg").mkdir()
    (directory / "pkg" / "util.py").write_text("VALUE = 1\n")
    # never part of the image (cudaenv's default ignore rules)
    (directory / ".venv" / "bin").mkdir(parents=True)
    (directory / ".venv" / "bin" / "python").write_text("not a python\n")
    (directory / "__pycache__").mkdir()
    (directory / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0stale")
    return directory, lock_project(directory, env, standins)


@pytest.fixture(scope="module")
def runtime_image(engine, runtime_project, env):
    directory, lock = runtime_project
    tag = f"cudaenv-test/build-runtime:{RUN_ID}"
    result = build(directory, env, tag)
    yield Built(tag, directory, lock, result, env)
    remove_images(engine, tag)


# --- the runtime image, inside and out -------------------------------------------------------------


def test_build_reports_the_image_it_tagged(engine, runtime_image):
    assert runtime_image.result["ok"] is True
    assert runtime_image.result["tags"] == [runtime_image.tag]
    assert image_attrs(engine, runtime_image.tag)["Id"] == runtime_image.result["image_id"]


def test_container_python_is_the_locked_python(engine, runtime_image):
    output = run_in(engine, runtime_image.tag, "python", "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
    assert output.strip() == runtime_image.lock["stack"]["python"]


def test_container_python_is_the_project_venv(engine, runtime_image):
    output = run_in(engine, runtime_image.tag, "python", "-c", "import sys; print(sys.prefix)")
    assert output.strip() == "/opt/venv"


def test_locked_requirement_and_its_dependency_are_installed_from_the_index(engine, runtime_image):
    locked = pins(runtime_image.lock)
    assert set(locked) == {"fixture-dep", "fixture-leaf"}
    output = run_in(engine, runtime_image.tag, "python", "-c",
                    "import importlib.metadata as m, fixture_dep; "
                    "print(m.version('fixture-dep'), m.version('fixture-leaf'), fixture_dep.VERSION)")
    assert output.split() == [locked["fixture-dep"], locked["fixture-leaf"], locked["fixture-dep"]]


def test_system_package_from_the_configuration_is_installed(engine, runtime_image):
    assert run_in(engine, runtime_image.tag, "sh", "-c", "command -v less").strip().endswith("/less")


def test_stack_label_is_the_locked_stack(engine, runtime_image):
    labels = engine.image_labels(runtime_image.tag)
    assert Stack.from_dict(json.loads(labels["io.cudaenv.stack"])) == Stack.from_dict(runtime_image.lock["stack"])


def test_labels_name_the_project_lock_and_base(engine, runtime_image, standins):
    labels = engine.image_labels(runtime_image.tag)
    lock_text = (runtime_image.directory / "cudaenv.lock").read_bytes()
    assert labels["io.cudaenv.project"] == f"buildtest-{RUN_ID}"
    assert labels["org.opencontainers.image.title"] == f"buildtest-{RUN_ID}"
    assert labels["io.cudaenv.lock-hash"] == hashlib.sha256(lock_text).hexdigest()[:32]
    assert labels["io.cudaenv.cuda"] == runtime_image.lock["stack"]["cuda"]
    assert labels["io.cudaenv.python"] == runtime_image.lock["stack"]["python"]
    assert labels["org.opencontainers.image.base.name"] == with_registry(runtime_image.lock["stack"]["base_image"],
                                                                         standins.host)


def test_nvidia_require_cuda_admits_native_and_minor_version_drivers(engine, runtime_image):
    stack = runtime_image.lock["stack"]
    output = run_in(engine, runtime_image.tag, "printenv", "NVIDIA_REQUIRE_CUDA")
    alternatives = output.split()  # libnvidia-container ORs space-separated constraints
    assert alternatives[0] == f"cuda>={stack['cuda']}"
    assert f"driver>={stack['min_driver_compat']}" in alternatives
    assert not any(a.startswith("brand=") for a in alternatives), "no cuda-compat in a native/minor-version image"


def test_container_runs_as_the_non_root_app_user(engine, runtime_image):
    uid, gid = build_user_ids()
    output = run_in(engine, runtime_image.tag, "sh", "-c", "id -u; id -g; id -un; echo $HOME")
    assert output.split() == [str(uid), str(gid), "app", "/home/app"]
    assert uid != 0


def test_image_user_is_numeric(engine, runtime_image):
    uid, gid = build_user_ids()
    assert image_attrs(engine, runtime_image.tag)["Config"]["User"] == f"{uid}:{gid}"


def test_project_code_belongs_to_the_app_user(engine, runtime_image):
    uid, _ = build_user_ids()
    output = run_in(engine, runtime_image.tag, "stat", "-c", "%u %n", "/workspace/main.py", "/workspace/pkg/util.py",
                    "/workspace")
    assert [line.split()[0] for line in output.splitlines()] == [str(uid)] * 3


def test_default_command_runs_the_project_code(engine, runtime_image):
    result = engine.run(container(runtime_image.tag), timeout=120)
    assert result.exit_code == 0
    assert result.output.strip() == MAIN_OUTPUT


def test_default_ignore_rules_keep_venv_and_bytecode_out_of_the_image(engine, runtime_image):
    listing = run_in(engine, runtime_image.tag, "find", "/workspace", "-mindepth", "1").split()
    assert "/workspace/main.py" in listing and "/workspace/pkg/util.py" in listing
    assert not any(".venv" in path or "__pycache__" in path for path in listing), listing


def test_dockerfile_command_prints_exactly_what_build_used(runtime_image, engine):
    proc = cudaenv("dockerfile", runtime_image.directory, env=runtime_image.env)
    assert proc.returncode == 0, proc.stderr
    dockerignore = render_dockerignore(None)
    printed_hash = hashlib.sha256(f"{proc.stdout}\0{dockerignore}".encode()).hexdigest()[:32]
    assert engine.image_labels(runtime_image.tag)[LABEL_INPUTS] == printed_hash


def test_build_goes_through_buildkit_and_reports_step_timings(runtime_image):
    assert runtime_image.result["builder"] in {"buildkit", "buildx"}
    assert runtime_image.result["steps"], "BuildKit's step timings are reported"


# --- rebuilds ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def edited_rebuild(engine, runtime_image, tmp_path_factory):
    """The runtime project with one source file edited, built again."""
    directory = copy_project(runtime_image.directory, tmp_path_factory.mktemp("edited") / "project")
    (directory / "pkg" / "util.py").write_text("VALUE = 2  # edited\n")
    tag = f"cudaenv-test/build-runtime:{RUN_ID}-edited"
    result = build(directory, runtime_image.env, tag)
    yield tag, result
    remove_images(engine, tag)


def test_rebuild_after_editing_code_reuses_every_step_before_the_code_layer(edited_rebuild):
    _, result = edited_rebuild
    steps = sorted((s for s in result["steps"] if " FROM " not in s["step"]), key=step_number)
    code = code_step_index(steps)
    before = steps[:code]
    assert before and all(s["cached"] for s in before), [s["step"][:80] for s in before if not s["cached"]]
    assert not steps[code]["cached"], "the code layer must be rebuilt"


def test_rebuild_after_editing_code_shares_every_layer_but_the_last(engine, runtime_image, edited_rebuild):
    tag, _ = edited_rebuild
    old, new = layers(engine, runtime_image.tag), layers(engine, tag)
    assert len(old) == len(new)
    assert new[:-1] == old[:-1]
    assert new[-1] != old[-1]


def test_rebuilt_image_carries_the_edited_file(engine, edited_rebuild):
    tag, _ = edited_rebuild
    assert run_in(engine, tag, "cat", "/workspace/pkg/util.py").strip() == "VALUE = 2  # edited"


# --- hostile values ------------------------------------------------------------------------------

HOSTILE_ARGS = [
    "curl; rm -rf /",
    "$(touch /tmp/pwned-subst)",
    "`touch /tmp/pwned-backtick`",
    "line one\nRUN touch /tmp/pwned-newline",
    "quote \" and 'single' and \\ backslash",
    "${HOME} && echo not-expanded",
]


@pytest.fixture(scope="module")
def hostile_command_image(engine, runtime_image, tmp_path_factory, standins):
    directory = copy_project(runtime_image.directory, tmp_path_factory.mktemp("hostile") / "project")
    script = "import os, sys; print(repr(sys.argv[1:])); print(sorted(p for p in os.listdir('/tmp') if 'pwned' in p))"
    command = ["python", "-c", script, *HOSTILE_ARGS]
    write_config(directory, name=f"buildtest-{RUN_ID}", registry=standins.host, command=command)
    tag = f"cudaenv-test/build-runtime:{RUN_ID}-hostile"
    result = build(directory, runtime_image.env, tag)  # the configuration changed: build locks again first
    yield tag, command, result
    remove_images(engine, tag)


def test_hostile_run_command_is_the_image_cmd_word_for_word(engine, hostile_command_image):
    tag, command, _ = hostile_command_image
    config = image_attrs(engine, tag)["Config"]
    assert config["Cmd"] == command
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"]


def test_hostile_run_command_runs_without_a_shell_expanding_it(engine, hostile_command_image):
    tag, _, _ = hostile_command_image
    result = engine.run(container(tag), timeout=120)
    assert result.exit_code == 0, result.output
    printed_args, created = result.output.strip().split("\n")[-2:]
    assert printed_args == repr(HOSTILE_ARGS)
    assert created == "[]"


def test_hostile_run_command_adds_no_build_instruction(engine, hostile_command_image):
    tag, _, _ = hostile_command_image
    history = [entry.get("CreatedBy", "") for entry in engine.client.images.get(tag).history()]
    assert not any("touch /tmp/pwned" in line and not line.startswith("CMD") for line in history), history


# --- a failed build ---------------------------------------------------------------------------------


def test_build_with_a_requirement_gone_from_the_index_exits_1_naming_the_step(engine, runtime_image, package_index,
                                                                               tmp_path, standins):
    directory = tmp_path / "project"
    directory.mkdir()
    write_config(directory, name=f"buildtest-{RUN_ID}-fails", registry=standins.host)
    (directory / "requirements.txt").write_text("vanishing-dep==0.1\n")
    (directory / "main.py").write_text(MAIN_PY)
    env = dict(runtime_image.env, CUDAENV_PYTHON_INDEX=package_index.url)
    wheel = package_index.add("vanishing-dep", "0.1")
    lock_project(directory, env, standins)
    # the index loses the package after the lock was written (a yanked release, a pruned mirror)
    wheel.unlink()
    shutil.rmtree(package_index.root / "simple" / "vanishing-dep")
    tag = f"cudaenv-test/build-fails:{RUN_ID}"
    proc = cudaenv("build", directory, "--network", "host", "-t", tag, env=env)
    try:
        assert proc.returncode == 1, proc.stderr
        failure = next(line for line in proc.stderr.splitlines() if line.startswith("✗"))
        assert "image build failed at step" in failure
        assert "uv pip install" in failure and "vanishing-dep==0.1" in failure
        tail = proc.stderr.split("--- last lines of the failing step ---", 1)[1]
        assert "vanishing-dep" in tail and "not found" in tail.lower()
        assert "Traceback" not in proc.stderr
        assert engine.image_labels(tag) is None
    finally:
        remove_images(engine, tag)


# --- [build] ca_cert ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca_bundle(host_ca_bundle, tmp_path_factory) -> tuple[Path, str]:
    """The host's bundle plus a certificate made for this run: its base64 lines exist nowhere else."""
    if host_ca_bundle is None:
        pytest.fail("no host CA bundle: a build that reaches PyPI needs one")
    directory = tmp_path_factory.mktemp("ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN=cudaenv-test-ca-{RUN_ID}", "-keyout", str(directory / "key.pem"),
                    "-out", str(directory / "cert.pem")], check=True, capture_output=True)
    cert = (directory / "cert.pem").read_text()
    bundle = directory / "bundle.pem"
    bundle.write_text(Path(host_ca_bundle).read_text() + "\n" + cert)
    body = [line for line in cert.splitlines() if line and not line.startswith("-----")]
    return bundle, body[len(body) // 2]


@pytest.fixture(scope="module")
def ca_image(engine, tmp_path_factory, standins, ca_bundle, clean_env):
    """A project whose requirement comes from PyPI over HTTPS, through the CA bundle as a build secret."""
    bundle, _ = ca_bundle
    directory = tmp_path_factory.mktemp("ca-project") / "project"
    directory.mkdir()
    write_config(directory, name=f"buildtest-{RUN_ID}-ca", registry=standins.host, ca_cert=str(bundle))
    (directory / "requirements.txt").write_text("six==1.16.0\n")
    (directory / "main.py").write_text(f"print('marker-{RUN_ID}-in-the-code-layer')\n")
    lock = lock_project(directory, clean_env, standins)
    tag = f"cudaenv-test/build-ca:{RUN_ID}"
    result = build(directory, clean_env, tag)
    yield Built(tag, directory, lock, result, clean_env)
    remove_images(engine, tag)


@pytest.mark.network
def test_ca_cert_build_installs_the_requirement_from_pypi(engine, ca_image):
    assert ca_image.lock["requirements"]["python_index"] == "https://pypi.org/simple"
    output = run_in(engine, ca_image.tag, "python", "-c", "import importlib.metadata as m; print(m.version('six'))")
    assert output.strip() == pins(ca_image.lock)["six"]


@pytest.mark.network
def test_ca_cert_content_leaves_no_trace_in_the_image(engine, ca_image, ca_bundle):
    _, distinctive = ca_bundle
    saved = subprocess.run(["docker", "save", ca_image.tag], capture_output=True, check=True).stdout
    # the search does find a file's content in the saved layers (the project code)...
    assert f"marker-{RUN_ID}-in-the-code-layer".encode() in saved
    # ...and not the CA bundle's
    assert distinctive.encode() not in saved
    assert b"cudaenv-test-ca-" not in saved


@pytest.mark.network
def test_ca_cert_is_not_in_the_running_container(engine, ca_image, ca_bundle):
    _, distinctive = ca_bundle
    search = f"grep -rlF -- '{distinctive}' /etc /run /opt /root /tmp /workspace /home 2>/dev/null; true"
    result = engine.run(container(ca_image.tag, "sh", "-c", search), timeout=120)
    assert result.output.strip() == ""


# --- the classic builder (no BuildKit) -----------------------------------------------------------


@pytest.fixture(scope="module")
def classic_image(engine, runtime_image, tmp_path_factory):
    directory = copy_project(runtime_image.directory, tmp_path_factory.mktemp("classic") / "project")
    tag = f"cudaenv-test/build-classic:{RUN_ID}"
    result = build(directory, runtime_image.env, tag, "--no-buildkit")
    yield Built(tag, directory, runtime_image.lock, result, runtime_image.env)
    remove_images(engine, tag)


def test_classic_builder_is_used_when_asked(classic_image):
    assert classic_image.result["builder"] == "sdk"


def test_classic_builder_image_runs_the_project_as_the_app_user(engine, classic_image):
    uid, _ = build_user_ids()
    script = "id -u; python -c 'import importlib.metadata as m; print(m.version(\"fixture-dep\"))'; python main.py"
    output = run_in(engine, classic_image.tag, "sh", "-c", script)
    assert output.split("\n")[:3] == [str(uid), pins(classic_image.lock)["fixture-dep"], MAIN_OUTPUT]


def test_classic_builder_leaves_no_apt_lists_behind(engine, classic_image):
    assert run_in(engine, classic_image.tag, "sh", "-c", "ls /var/lib/apt/lists | grep -vx -e lock -e partial | wc -l"
                  ).strip() == "0"


def test_dockerfile_no_buildkit_prints_what_the_classic_build_used(engine, classic_image):
    proc = cudaenv("dockerfile", "--no-buildkit", classic_image.directory, env=classic_image.env)
    assert proc.returncode == 0, proc.stderr
    assert "--mount=" not in proc.stdout
    printed_hash = hashlib.sha256(f"{proc.stdout}\0{render_dockerignore(None)}".encode()).hexdigest()[:32]
    assert engine.image_labels(classic_image.tag)[LABEL_INPUTS] == printed_hash


# --- the wheels flavor, with a stand-in torch from the module index -------------------------------

TEST_TORCH = """
[[release]]
version = "2.99.0"
python = ["3.11"]
source = "test fixture ; read 2026-11-21"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
"""


@pytest.fixture(scope="module")
def wheels_image(engine, tmp_path_factory, standins, index, env):
    overlay = tmp_path_factory.mktemp("torch-overlay")
    (overlay / "torch.toml").write_text(TEST_TORCH)
    wheels_env = dict(env, CUDAENV_MATRIX_PATH=str(overlay), CUDAENV_FRAMEWORK_INDEX=index.url)
    directory = tmp_path_factory.mktemp("wheels") / "project"
    directory.mkdir()
    write_config(directory, name=f"buildtest-{RUN_ID}-wheels", registry=standins.host, flavor="wheels", cuda=None,
                 driver="570.124.06", frameworks={"torch": "==2.99.0"}, system_packages=())
    (directory / "requirements.txt").write_text("fixture-dep==1.2.3\n")
    (directory / "main.py").write_text("import torch\nprint(torch.__version__)\n")
    lock = lock_project(directory, wheels_env, standins)
    tag = f"cudaenv-test/build-wheels:{RUN_ID}"
    result = build(directory, wheels_env, tag, "--rebuild-base")  # the base's steps, from this run's index
    yield Built(tag, directory, lock, result, wheels_env)
    remove_images(engine, tag)


def test_wheels_lock_records_the_builds_own_index_not_the_override(wheels_image):
    stack = wheels_image.lock["stack"]
    assert stack["flavor"] == "wheels"
    assert stack["base_image"] == "python:3.11-slim"
    assert wheels_image.lock["requirements"]["framework_index"] == stack["index_urls"][0]


def test_wheels_build_takes_the_framework_from_the_overriding_index(wheels_image, index):
    assert wheels_image.result["base"]["how"] == "built"
    framework = next(s["step"] for s in wheels_image.result["base"]["steps"] if "torch==2.99.0" in s["step"])
    # the override is also the Python index here: the framework comes from it, named once
    assert f"--index-url {index.url} " in framework and "--extra-index-url" not in framework
    assert "download.pytorch.org" not in framework


def test_wheels_image_has_the_locked_framework_build(engine, wheels_image):
    locked = wheels_image.lock["stack"]["frameworks"]["torch"]
    output = run_in(engine, wheels_image.tag, "python", "-c",
                    "import torch, importlib.metadata as m; print(torch.__version__, m.version('torch'))")
    assert output.split() == [locked, locked]


def test_wheels_framework_layer_is_a_step_of_the_stack_base_and_the_requirements_one_of_the_project(wheels_image):
    [framework] = [s["step"] for s in wheels_image.result["base"]["steps"] if "uv pip install" in s["step"]]
    [requirements] = [s["step"] for s in wheels_image.result["steps"] if "uv pip install" in s["step"]]
    assert "torch==2.99.0" in framework and "fixture-dep" not in framework
    assert "fixture-dep==1.2.3" in requirements


def test_wheels_image_requires_the_frameworks_cuda(engine, wheels_image):
    stack = wheels_image.lock["stack"]
    output = run_in(engine, wheels_image.tag, "printenv", "NVIDIA_REQUIRE_CUDA")
    assert output.split()[0] == f"cuda>={stack['cuda']}"
    assert stack["cuda"] == "12.8"


def test_wheels_image_default_command_imports_the_framework(engine, wheels_image):
    result = engine.run(container(wheels_image.tag), timeout=120)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == wheels_image.lock["stack"]["frameworks"]["torch"]


# --- opt-in: a real PyTorch from PyPI ---------------------------------------------------------------


def cudnn_version_int(version: str) -> int:
    """cuDNN's own integer encoding (cudnnGetVersion): 8.x is M*1000+m*100+p, 9.x is M*10000+m*100+p."""
    major, minor, patch = (int(p) for p in version.split(".")[:3])
    return major * (10000 if major >= 9 else 1000) + minor * 100 + patch


@pytest.mark.e2e
@pytest.mark.network
def test_real_pytorch_image_matches_the_lock(engine, tmp_path, standins, host_ca_bundle, clean_env):
    """Downloads a few GB (torch and NVIDIA's CUDA wheels): `pytest -m e2e` only.

    The framework comes from PyPI itself (CUDAENV_FRAMEWORK_INDEX), so the project asks for the
    CUDA of the PyPI build, as the matrix records it."""
    from cudaenv.matrix import load_matrix

    release = next(r for r in load_matrix(overlays=[]).torch if r.version == "2.6.0")
    directory = tmp_path / "project"
    directory.mkdir()
    write_config(directory, name=f"buildtest-{RUN_ID}-torch", registry=standins.host, flavor="wheels",
                 cuda=f"=={release.pypi_cuda}", driver="550.54.15", frameworks={"torch": "==2.6.0"},
                 system_packages=(), ca_cert=host_ca_bundle)
    (directory / "requirements.txt").write_text("")
    (directory / "main.py").write_text("import torch\n")
    env = dict(clean_env, CUDAENV_FRAMEWORK_INDEX="https://pypi.org/simple")
    lock = lock_project(directory, env, standins)
    tag = f"cudaenv-test/build-torch:{RUN_ID}"
    try:
        started = time.monotonic()
        build(directory, env, tag)
        size = engine.client.images.get(tag).attrs["Size"]
        print(f"\nreal PyTorch image: built in {time.monotonic() - started:.0f} s, {size / 2**30:.2f} GiB")
        output = run_in(engine, tag, "python", "-c",
                        "import torch; print(torch.__version__); print(torch.version.cuda); "
                        "print(torch.backends.cudnn.version())")
        version, cuda, cudnn = output.split()
        stack = lock["stack"]
        assert version.split("+")[0] == stack["frameworks"]["torch"]
        assert cuda == stack["cuda"]
        assert int(cudnn) == cudnn_version_int(stack["cudnn_version"])
    finally:
        remove_images(engine, tag)
