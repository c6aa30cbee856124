"""How cudaenv asks uv, in process: the ``uv pip compile`` command line and environment it builds
(indexes through the environment, credentials through a private netrc, never argv), what it does
with uv's answer, and the checks of a lock's wheels. uv itself is replaced by a recording stand-in,
so these tests see exactly what would have been run."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cudaenv.errors import UserError
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project import lock as lockmod
from cudaenv.project.config import resolve_project
from cudaenv.hosts.target import project_target
from cudaenv.project.lock import (IndexUnreachable, LockError, compile_requirements, make_lock, run_uv_compile,
                                  uv_binary, wheel_problems)
from cudaenv.project.wheels import NoWheels, manylinux_platform

CU126 = "https://download.pytorch.org/whl/cu126"
MISSING_WHEEL = ("  x No solution found when resolving dependencies:\n  `-> Because only lonely==1.0 is available and "
                 "lonely==1.0 has no wheels with a matching platform tag, we can conclude that lonely cannot be "
                 "used.\n")


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("CUDAENV_FRAMEWORK_INDEX", "CUDAENV_PYTHON_INDEX", "CUDAENV_EXCLUDE_NEWER", "UV_INDEX",
                 "CUDAENV_INDEX_CREDENTIALS", "NETRC", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)


class FakeUv:
    """Records each call (argv, env, cwd, and the files it was handed, read while they exist)."""

    def __init__(self, returncode=0, stdout="", stderr=""):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.calls = []

    def __call__(self, argv, **kwargs):
        env = kwargs["env"]
        files = {Path(a).name: Path(a).read_text() for a in argv if Path(a).is_absolute() and Path(a).is_file()
                 and a != argv[0]}
        netrc = Path(env["NETRC"]).read_text() if "NETRC" in env else None
        mode = Path(env["NETRC"]).stat().st_mode & 0o777 if "NETRC" in env else None
        self.calls.append({"argv": argv, "env": env, "kwargs": kwargs, "files": files, "netrc": netrc,
                           "netrc_mode": mode})
        return subprocess.CompletedProcess(argv, self.returncode, self.stdout, self.stderr)

    @property
    def last(self):
        return self.calls[-1]


@pytest.fixture
def uv(monkeypatch):
    fake = FakeUv()
    monkeypatch.setattr(lockmod.subprocess, "run", fake)
    return fake


def make_project(root: Path, *, build: str = "", requirements=("requirements.txt",), lock_table: str = ""):
    root.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(f'"{r}"' for r in requirements)
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "p"\nrequirements = [{listed}]\n\n[frameworks]\ntorch = "==2.6.0"\n\n'
        f'[target]\ndriver = "570.86.15"\ngpus = ["A100"]\n\n' + (f"[build]\n{build}\n" if build else "")
        + lock_table)
    for r in requirements:
        if not (root / r).exists():
            (root / r).write_text("numpy==2.1.3\n")
    return load_project(root)


def stack_of(matrix, project):
    return resolve_project(matrix, project, project_target(matrix, project).host).stack


def option(argv, name):
    """The value after ``name`` in argv (None when absent)."""
    return argv[argv.index(name) + 1] if name in argv else None


def test_uv_is_asked_for_the_stacks_python_and_platform_from_wheels_only(tmp_path, matrix, uv):
    """The lock must install in the image: its Python and manylinux platform, no source builds."""
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    run_uv_compile(project, stack, ["a.in"], str(tmp_path))
    argv = uv.last["argv"]
    assert argv[:7] == [uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--no-progress"]
    assert option(argv, "--python-version") == stack.python
    assert option(argv, "--python-platform") == manylinux_platform(stack)
    assert "--no-build" in argv and "--exclude-newer" not in argv and "--find-links" not in argv
    assert argv[-1] == "a.in"
    assert uv.last["kwargs"]["cwd"] == project.root.resolve()
    assert uv.last["kwargs"]["capture_output"] is True and uv.last["kwargs"]["text"] is True


def test_uv_reads_no_configuration_and_downloads_no_interpreter(tmp_path, matrix, uv, monkeypatch):
    """A user's uv.toml or UV_INDEX must not change what cudaenv locks."""
    monkeypatch.setenv("UV_INDEX", "https://elsewhere.example/simple")
    project = make_project(tmp_path)
    run_uv_compile(project, stack_of(matrix, project), [], str(tmp_path))
    env = uv.last["env"]
    assert env["UV_NO_CONFIG"] == "1" and env["NO_COLOR"] == "1" and env["UV_PYTHON_DOWNLOADS"] == "never"
    assert env["UV_DEFAULT_INDEX"] == "https://pypi.org/simple"
    assert env["UV_INDEX"] == CU126
    assert "NETRC" not in env and "SSL_CERT_FILE" not in env


def test_a_pypi_build_is_read_from_one_index(tmp_path, matrix, uv, monkeypatch):
    """A framework index equal to the Python index is not passed twice (UV_INDEX left unset)."""
    monkeypatch.setenv("UV_INDEX", "https://elsewhere.example/simple")
    project = make_project(tmp_path, build='python_index = "https://mirror.example/simple"\n'
                                          'framework_index = "https://mirror.example/simple"')
    run_uv_compile(project, stack_of(matrix, project), [], str(tmp_path))
    assert uv.last["env"]["UV_DEFAULT_INDEX"] == "https://mirror.example/simple"
    assert "UV_INDEX" not in uv.last["env"]


def test_a_stack_without_its_own_index_adds_none(tmp_path, matrix, uv):
    """No framework index: uv reads the Python index only."""
    project = make_project(tmp_path)
    stack = replace(stack_of(matrix, project), index_urls=())
    run_uv_compile(project, stack, [], str(tmp_path))
    assert "UV_INDEX" not in uv.last["env"]


def test_exclude_newer_find_links_and_build_from_source_reach_uv(tmp_path, matrix, uv):
    """[lock] exclude_newer pins the index state; find-links and sdist exceptions are the stack's and project's."""
    project = make_project(tmp_path, build='build_from_source = ["lonely"]',
                           lock_table='[lock]\nexclude_newer = "2025-01-31"\n')
    stack = replace(stack_of(matrix, project), find_links=("https://a.example/links", "https://b.example/links"))
    run_uv_compile(project, stack, ["x.in"], str(tmp_path), options=("--no-deps",))
    argv = uv.last["argv"]
    assert option(argv, "--exclude-newer") == project.exclude_newer
    assert [option(argv[i:], "--find-links") for i, a in enumerate(argv) if a == "--find-links"] == \
        ["https://a.example/links", "https://b.example/links"]
    assert option(argv, "--no-binary") == "lonely" and "--no-deps" in argv and argv[-1] == "x.in"


def test_credentials_go_through_a_private_netrc_never_argv_or_the_index_variables(tmp_path, matrix, uv, monkeypatch):
    """A token in an index URL must not show in a process list or an environment dump."""
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", "https://me:tok3n@mirror.example/simple")
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://fw:s3cret@fw.example/cu126")
    project = make_project(tmp_path)
    run_uv_compile(project, stack_of(matrix, project), [], str(tmp_path), ca_bundle="/etc/ca.pem")
    call = uv.last
    assert call["env"]["UV_DEFAULT_INDEX"] == "https://mirror.example/simple"
    assert call["env"]["UV_INDEX"] == "https://fw.example/cu126"
    assert call["env"]["NETRC"] == str(tmp_path / "netrc") and call["netrc_mode"] == 0o600
    assert "tok3n" in call["netrc"] and "s3cret" in call["netrc"]
    assert not any("tok3n" in a or "s3cret" in a for a in call["argv"])
    assert call["env"]["SSL_CERT_FILE"] == "/etc/ca.pem"


def test_the_framework_build_and_the_projects_files_are_compiled_together(tmp_path, matrix, uv):
    """The framework's exact requirements go first, then the project's requirements as cudaenv read
    them (every file, in order, includes followed): one reading for init, the lock and the image."""
    uv.stdout = "# comment\nnumpy==2.1.3\n\n  torch==2.6.0+cu126  \n-e .\n"
    project = make_project(tmp_path, requirements=("requirements.txt", "more.txt"))
    (tmp_path / "requirements.txt").write_text("numpy==2.1.3 \\\n    --hash=sha256:00\n-r base.txt\n-e .\n")
    (tmp_path / "base.txt").write_text("\ufeffsix\r\n")
    (tmp_path / "more.txt").write_text("requests\t# comment\n-c pins.txt\n")
    (tmp_path / "pins.txt").write_text("urllib3<2\n")
    stack = stack_of(matrix, project)
    assert compile_requirements(project, stack) == ["numpy==2.1.3", "torch==2.6.0+cu126"]  # never the own code
    argv = uv.last["argv"]
    assert argv[-2].endswith("/frameworks.in") and argv[-1].endswith("/project.in")
    assert uv.last["files"]["frameworks.in"] == "torch==2.6.0\n"
    assert uv.last["files"]["project.in"] == f"numpy==2.1.3\nsix\n-e {tmp_path.resolve()}\nrequests\n"
    assert uv.last["files"]["constraints.txt"] == "urllib3<2\n"
    assert argv[argv.index("--constraint") + 1].endswith("/constraints.txt")


def test_nothing_to_compile_asks_no_uv(tmp_path, matrix, uv):
    """No requirement files and a framework-free stack: an empty lock, without running uv."""
    project = make_project(tmp_path, requirements=())
    stack = replace(stack_of(matrix, project), requirements=())
    assert compile_requirements(project, stack) == []
    assert uv.calls == []


def test_a_framework_only_project_still_pins_the_framework(tmp_path, matrix, uv):
    """Without requirement files the framework build's own dependencies are still pinned."""
    uv.stdout = "torch==2.6.0\n"
    project = make_project(tmp_path, requirements=())
    assert compile_requirements(project, stack_of(matrix, project)) == ["torch==2.6.0"]
    assert len(uv.calls) == 1


def test_a_conda_environment_file_is_compiled_as_its_pip_list(tmp_path, matrix, uv):
    """environment.yml is not a requirements file: what pip would install from it is."""
    (tmp_path).mkdir(exist_ok=True)
    (tmp_path / "environment.yml").write_text("name: x\ndependencies:\n  - python=3.11\n  - pip:\n    - requests==2.32.3\n")
    project = make_project(tmp_path, requirements=("environment.yml",))
    compile_requirements(project, stack_of(matrix, project))
    assert uv.last["argv"][-1].endswith("project.in")
    assert uv.last["files"]["project.in"] == "requests==2.32.3\n"


def test_a_bad_requirements_line_is_bad_input_before_uv_runs(tmp_path, matrix, uv):
    """The user's own file is checked first, naming the file and line."""
    project = make_project(tmp_path)
    (tmp_path / "requirements.txt").write_text("numpy==2.1.3\nnot a requirement!\n")
    with pytest.raises(UserError, match=r"^requirements.txt:2: 'not a requirement!' "):
        compile_requirements(project, stack_of(matrix, project))
    assert uv.calls == []


def test_a_requirement_without_wheels_is_named_so_an_older_python_can_be_tried(tmp_path, matrix, uv):
    uv.returncode, uv.stderr = 1, "warning: The requested Python version 3.13 is not available\n" + MISSING_WHEEL
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    with pytest.raises(NoWheels) as caught:
        compile_requirements(project, stack)
    assert caught.value.requirement == "lonely==1.0" and caught.value.python == stack.python
    assert "requested Python version" not in caught.value.detail and "lonely==1.0" in caught.value.detail


def test_a_clash_uv_reports_names_the_stack_and_python(tmp_path, matrix, uv):
    """A resolution failure that is no one line of the project's: what could not be resolved with what."""
    uv.returncode, uv.stderr = 1, "  x No solution found\n\n  `-> something else is wrong\n"
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    with pytest.raises(LockError) as caught:
        compile_requirements(project, stack)
    assert str(caught.value) == (f"the project's requirements cannot be resolved together with torch==2.6.0 for "
                                 f"Python {stack.python}:\nx No solution found\n  `-> something else is wrong")


def test_a_clash_without_a_framework_says_the_stack(tmp_path, matrix, uv):
    uv.returncode, uv.stderr = 1, "error\n"
    project = make_project(tmp_path)
    stack = replace(stack_of(matrix, project), requirements=())
    with pytest.raises(LockError, match=r"resolved together with the stack for Python"):
        compile_requirements(project, stack)


def test_an_unreachable_index_while_locking_is_its_own_error(tmp_path, matrix, uv):
    """DNS, refused, TLS: nothing was resolved, and the message says which index and how to fix it."""
    uv.returncode = 1
    uv.stderr = "error: Request failed\n  cause: Failed to fetch: https://pypi.org/simple/numpy/\n  Caused by: dns error: no such host\n"
    project = make_project(tmp_path)
    with pytest.raises(IndexUnreachable, match=r"^cannot reach .*pypi.org.* \(DNS"):
        compile_requirements(project, stack_of(matrix, project))


def test_a_clash_no_index_could_mend_comes_before_an_unreachable_page(tmp_path, matrix, uv):
    """jax==0.4.13 with chex==0.1.89: the files contradict each other on any index, whatever page
    (jax's releases on storage.googleapis.com) uv also failed to fetch."""
    uv.returncode = 1
    uv.stderr = ("warning: Failed to fetch: https://storage.googleapis.com/jax-releases/jax_releases.html\n"
                 "  Caused by: dns error: no such host\n"
                 "  x No solution found when resolving dependencies:\n"
                 "  `-> Because chex==0.1.89 depends on jax>=0.4.27 and you require jax==0.4.13, we can conclude that "
                 "your requirements are unsatisfiable.\n")
    project = make_project(tmp_path)
    with pytest.raises(LockError) as caught:
        compile_requirements(project, stack_of(matrix, project))
    assert not isinstance(caught.value, IndexUnreachable)
    assert "unsatisfiable" in str(caught.value) and "(also: cannot reach https://storage.googleapis.com" in str(caught.value)


def test_a_failure_on_one_of_the_projects_lines_names_it(tmp_path, matrix, uv):
    """uv's complaint about a line of requirements.txt is said with that line, then uv's words."""
    uv.returncode = 1
    uv.stderr = "  x Failed to build `numpy==2.1.3`\n  `-> the build backend failed\n"
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    with pytest.raises(LockError) as caught:
        compile_requirements(project, stack)
    first, _, rest = str(caught.value).partition("\n")
    assert first.startswith("requirements.txt:1: numpy==2.1.3 publishes no wheel uv could use for Python "
                            f"{stack.python},")
    assert rest == "x Failed to build `numpy==2.1.3`\n  `-> the build backend failed"


def lock_for(project, stack, pinned):
    return make_lock(project, stack, matrix_revision="r", target={}, pinned=pinned)


def test_a_lock_whose_wheels_all_exist_has_no_wheel_problems(tmp_path, matrix, uv):
    """The check compiles the pins alone (--no-deps) for the lock's Python and platform."""
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    assert wheel_problems(project, lock_for(project, stack, ["numpy==2.1.3", "torch==2.6.0"])) == []
    argv = uv.last["argv"]
    assert "--no-deps" in argv and argv[-1].endswith("pinned.txt")
    assert uv.last["files"]["pinned.txt"] == "numpy==2.1.3\ntorch==2.6.0\n"
    assert option(argv, "--python-version") == stack.python


def test_a_lock_without_pins_needs_no_check(tmp_path, matrix, uv):
    project = make_project(tmp_path)
    assert wheel_problems(project, lock_for(project, stack_of(matrix, project), [])) == []
    assert uv.calls == []


def test_a_pin_without_a_wheel_is_named_with_the_way_out(tmp_path, matrix, uv):
    """The image could not install it without compiling: say which package, Python and platform."""
    uv.returncode, uv.stderr = 1, MISSING_WHEEL
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    assert wheel_problems(project, lock_for(project, stack, ["lonely==1.0"])) == [
        f"lonely==1.0 has no wheel for Python {stack.python} on {manylinux_platform(stack)}: the image could not install "
        f"it without compiling it (run `cudaenv lock` to choose a Python every requirement has wheels for, or allow "
        f'it with [build] build_from_source = ["lonely"])']


def test_another_wheel_failure_is_said_with_uvs_words_without_warnings(tmp_path, matrix, uv):
    uv.returncode, uv.stderr = 1, "warning: something harmless\n  x broken\n\n   because of reasons  \n"
    project = make_project(tmp_path)
    stack = stack_of(matrix, project)
    assert wheel_problems(project, lock_for(project, stack, ["numpy==2.1.3"])) == [
        f"the pinned packages cannot be installed on Python {stack.python} ({manylinux_platform(stack)}): "
        f"x broken; because of reasons"]


def test_a_long_wheel_failure_is_cut_to_400_characters(tmp_path, matrix, uv):
    uv.returncode, uv.stderr = 1, "y" * 1000
    project = make_project(tmp_path)
    problem, = wheel_problems(project, lock_for(project, stack_of(matrix, project), ["numpy==2.1.3"]))
    assert problem.endswith("): " + "y" * 400)


def test_an_unreachable_index_during_the_wheel_check_is_its_own_error(tmp_path, matrix, uv):
    uv.returncode = 1
    uv.stderr = "error: Request failed\n  cause: Failed to fetch: https://pypi.org/simple/numpy/\n  Caused by: Connection refused\n"
    project = make_project(tmp_path)
    with pytest.raises(IndexUnreachable, match="connection refused"):
        wheel_problems(project, lock_for(project, stack_of(matrix, project), ["numpy==2.1.3"]))


def test_the_wheel_check_trusts_the_projects_ca_certificate(tmp_path, matrix, uv):
    (tmp_path / "ca.pem").write_text("")
    project = make_project(tmp_path, build='ca_cert = "ca.pem"')
    wheel_problems(project, lock_for(project, stack_of(matrix, project), ["numpy==2.1.3"]))
    assert uv.last["env"]["SSL_CERT_FILE"] == str(project.build.ca_cert)
