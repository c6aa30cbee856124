"""The whole project decides the Python: a requirement whose wheels stop at an older Python than
the framework's moves the stack's Python down (and the framework release with it), or makes a
clean "no" that names it; the lock's pins must have wheels for the locked Python.

Every test here locks against a PEP 503 index on loopback (tests/support/package_index.py) that
serves wheels whose Python tags the test sets (``cp39-cp39-manylinux_2_17_x86_64``), and a matrix
overlay with two stand-in torch releases, so what is "the newest Python the framework supports" is
the test's to say. uv answers, as for a real project; nothing reaches the network.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.test_init_lock import read_toml, run_cli
from tests.support.package_index import TORCH_OVERLAY  # 2.98.0 for Python 3.9-3.11, 2.99.0 for 3.11-3.13
from tests.support.lockfile import lock_view

HOST = ("--driver", "570.124.06", "--gpu", "A100", "--no-detect")
FRAMEWORK_PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13")


def cp_tag(python: str) -> str:
    nodot = python.replace(".", "")
    return f"cp{nodot}-cp{nodot}-manylinux_2_17_x86_64"


@pytest.fixture
def overlay(tmp_path) -> Path:
    directory = tmp_path / "overlay"
    directory.mkdir()
    (directory / "torch.toml").write_text(TORCH_OVERLAY)
    return directory


@pytest.fixture
def index(package_index):
    package_index.add("torch", "2.98.0")
    package_index.add("torch", "2.99.0")
    return package_index


def publish(index, name: str, version: str, pythons) -> None:
    """``name==version`` with one wheel per Python in ``pythons`` (CPython, manylinux x86_64)."""
    for python in pythons:
        index.add(name, version, tag=cp_tag(python))


def project(tmp_path: Path, torch: str, requirements: list[str], name: str = "wheelchoice", *,
            build: str = "") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "requirements.txt").write_text("".join(f"{r}\n" for r in requirements))
    (directory / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\nrequirements = ["requirements.txt"]\n\n[frameworks]\ntorch = "{torch}"\n\n'
        '[target]\ndriver = "570.124.06"\ngpus = ["A100"]\n\n[build]\nflavor = "wheels"\n' + build)
    return directory


def lock_of(directory: Path) -> dict:
    return lock_view(directory / "cudaenv.lock")


def the_no(text: str) -> list[str]:
    """The lines of a resolver "no" from its first reason on (what every command must agree on)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("✗ no stack fits"))
    return [line.strip() for line in lines[start:] if line.strip() and not line.startswith("nothing written")]


# --- choosing the Python ------------------------------------------------------------------------


def test_lock_takes_the_newest_python_every_requirement_has_wheels_for(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.11", "3.12"])
    directory = project(tmp_path, "==2.99.0", ["oldpin==1.0"])
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_of(directory)
    assert lock["stack"]["python"] == "3.12"  # torch 2.99.0 has 3.13; oldpin stops at 3.12
    assert lock["stack"]["base_image"] == "python:3.12-slim"
    assert "oldpin==1.0" in lock["requirements"]["pinned"]


def test_lock_keeps_the_frameworks_newest_python_when_every_requirement_has_wheels_for_it(tmp_path, index, overlay):
    publish(index, "newpin", "1.0", ["3.12", "3.13"])
    directory = project(tmp_path, "==2.99.0", ["newpin==1.0"])
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lock_of(directory)["stack"]["python"] == "3.13"


def test_framework_release_moves_to_the_newest_with_wheels_for_the_requirements_python(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, ">=2.98", ["oldpin==1.0"])
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = lock_of(directory)
    assert (lock["stack"]["python"], lock["stack"]["frameworks"]["torch"]) == ("3.9", "2.98.0")
    assert "torch==2.98.0" in lock["requirements"]["pinned"]


def test_a_moved_python_names_its_end_of_life_and_why_it_moved(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, ">=2.98", ["oldpin==1.0"])
    proc = run_cli("resolve", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Python 3.9 reached its end of life on 2025-10-31 (PEP 596)" in proc.stdout
    # one failed try: oldpin is pinned exactly, so its wheels' tags rule out 3.10-3.12 without asking uv
    assert "! Python 3.9: the newest on which every requirement has wheels (oldpin==1.0 has none for 3.13)\n" \
        in proc.stdout


def test_lock_check_accepts_a_lock_whose_python_moved_for_wheels(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, ">=2.98", ["oldpin==1.0"])
    assert run_cli("lock", directory, index=index, overlay=overlay).returncode == 0
    proc = run_cli("lock", "--check", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_resolve_dir_gives_a_current_locks_answer_without_asking_the_index(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, ">=2.98", ["oldpin==1.0"])
    assert run_cli("lock", directory, index=index, overlay=overlay).returncode == 0
    # no index override now: PyPI has no oldpin, so only the lock can say Python 3.9
    proc = run_cli("resolve", directory, "--json", overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payload = json.loads(proc.stdout)
    assert (payload["stack"]["python"], payload["stack"]["frameworks"]["torch"]) == ("3.9", "2.98.0")
    assert any("(as cudaenv.lock recorded)" in p["message"] for p in payload["problems"])


def test_resolve_dir_init_and_lock_choose_the_same_python(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.10"])
    directory = project(tmp_path, ">=2.98", ["oldpin==1.0", "torch>=2.98"])
    resolved = json.loads(run_cli("resolve", directory, "--json", index=index, overlay=overlay).stdout)
    assert run_cli("lock", directory, index=index, overlay=overlay).returncode == 0
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(directory / "requirements.txt", fresh)
    init = run_cli("init", fresh, *HOST, "--json", index=index, overlay=overlay)
    assert init.returncode == 0, init.stdout + init.stderr
    chosen = {(s["python"], s["frameworks"]["torch"]) for s in (
        resolved["stack"], lock_of(directory)["stack"], json.loads(init.stdout)["resolution"]["stack"],
        lock_of(fresh)["stack"])}
    assert chosen == {("3.10", "2.98.0")}
    assert run_cli("lock", "--check", fresh, index=index, overlay=overlay).returncode == 0  # init's lock is current


# --- the clean "no" -----------------------------------------------------------------------------


def test_no_python_is_exit_1_naming_the_requirement_the_pythons_its_wheels_cover_and_the_fix(tmp_path, index,
                                                                                              overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    publish(index, "oldpin", "1.2", ["3.11", "3.12"])
    directory = project(tmp_path, "==2.99.0", ["oldpin==1.0"])
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "oldpin==1.0 has wheels for Python 3.9; torch 2.99.0 for 3.11–3.13" in proc.stdout
    assert "relax oldpin to ≥ 1.2 (wheels for 3.11–3.12)" in proc.stdout
    assert "or torch to ≤ 2.98.0" in proc.stdout  # the newest release with wheels for oldpin's 3.9
    assert not (directory / "cudaenv.lock").exists()
    assert "Traceback" not in proc.stderr


def test_resolve_init_lock_and_plan_give_the_same_no(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, "==2.99.0", ["oldpin==1.0"])
    answers = {}
    for command in (("resolve", directory), ("lock", directory), ("plan", directory, *HOST)):
        proc = run_cli(*command, index=index, overlay=overlay)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        answers[command[0]] = proc.stdout
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "requirements.txt").write_text("torch==2.99.0\noldpin==1.0\n")
    init = run_cli("init", fresh, *HOST, index=index, overlay=overlay)
    assert init.returncode == 1, init.stdout + init.stderr
    assert not (fresh / "cudaenv.toml").exists()
    expected = the_no(answers["resolve"])
    assert expected[1].startswith("- oldpin==1.0 has wheels for Python 3.9")
    assert the_no(answers["lock"]) == expected
    assert the_no(init.stdout) == expected
    plan_lines = [line.strip() for line in answers["plan"].splitlines()]
    assert expected[1][2:] in " ".join(plan_lines)  # plan lists it under "cannot run on this host"
    assert all(fix.removeprefix("→ ") in " ".join(plan_lines) for fix in expected if fix.startswith("→"))


def test_check_dir_without_a_lock_judges_what_lock_would_pin(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, "==2.99.0", ["oldpin==1.0"])
    proc = run_cli("check", directory, "--driver", "570.124.06", "--gpu", "A100", index=index, overlay=overlay)
    # check's contract for a configuration that admits no stack: bad input for it (exit 2), saying why
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "oldpin==1.0 has wheels for Python 3.9; torch 2.99.0 for 3.11–3.13" in proc.stdout + proc.stderr


def test_resolve_json_no_names_the_requirement_as_a_problem(tmp_path, index, overlay):
    publish(index, "oldpin", "1.0", ["3.9"])
    directory = project(tmp_path, "==2.99.0", ["oldpin==1.0"])
    proc = run_cli("resolve", directory, "--json", index=index, overlay=overlay)
    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["stack"] is None
    assert [p["code"] for p in payload["problems"]][:2] == ["no-wheels", "fix-requirement"] or \
        payload["problems"][0]["code"] == "no-wheels"


# --- lock truth extends to wheels ---------------------------------------------------------------


def test_lock_check_and_check_dir_fail_when_a_pin_has_no_wheel_for_the_locked_python(tmp_path, index, overlay):
    publish(index, "gone", "1.0", ["3.12", "3.13"])
    directory = project(tmp_path, "==2.99.0", ["gone==1.0"])
    assert run_cli("lock", directory, index=index, overlay=overlay).returncode == 0
    assert lock_of(directory)["stack"]["python"] == "3.13"
    # the index withdraws the 3.13 wheel: the lock no longer installs on its own Python
    withdrawn = next(w for w in index.wheels if w.name == f"gone-1.0-{cp_tag('3.13')}.whl")
    index.wheels.remove(withdrawn)
    withdrawn.unlink()
    index._write_pages()
    shutil.rmtree(index.root.with_name(index.root.name + "-uv-cache"), ignore_errors=True)  # uv asks the index again
    proc = run_cli("lock", "--check", directory, index=index, overlay=overlay)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gone==1.0 has no wheel for Python 3.13 on x86_64-manylinux_2_28" in proc.stdout
    check = run_cli("check", directory, "--driver", "570.124.06", "--gpu", "A100", "--json", index=index,
                    overlay=overlay)
    assert check.returncode == 1, check.stdout + check.stderr
    payload = json.loads(check.stdout)
    assert payload["compatible"] is False
    assert any("gone==1.0 has no wheel for Python 3.13" in reason for reason in payload["wheels"])


def test_lock_check_passes_when_every_pin_has_a_wheel(tmp_path, index, overlay):
    publish(index, "kept", "1.0", ["3.12", "3.13"])
    directory = project(tmp_path, "==2.99.0", ["kept==1.0"])
    assert run_cli("lock", directory, index=index, overlay=overlay).returncode == 0
    assert run_cli("lock", "--check", directory, index=index, overlay=overlay).returncode == 0
    check = run_cli("check", directory, "--driver", "570.124.06", "--gpu", "A100", "--json", index=index,
                    overlay=overlay)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["wheels"] == []


# --- property: the chosen Python has a wheel for every pinned package ---------------------------

_NAMES = itertools.count()
CPYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
ALL_PYTHONS = tuple(f"3.{m}" for m in range(6, 17))


def key(python: str) -> tuple[int, ...]:
    return tuple(int(p) for p in python.split("."))


# one wheel: a CPython-specific build, a stable-ABI build (that CPython and every later one), or a
# pure-Python py3 wheel (every Python)
WHEEL = st.one_of(st.tuples(st.just("cp"), st.sampled_from(CPYTHONS)),
                  st.tuples(st.just("abi3"), st.sampled_from(CPYTHONS)), st.tuples(st.just("py3"), st.just("")))


def wheel_tag(kind: str, python: str) -> str:
    nodot = python.replace(".", "")
    return {"cp": f"cp{nodot}-cp{nodot}-manylinux_2_17_x86_64", "abi3": f"cp{nodot}-abi3-manylinux_2_17_x86_64",
            "py3": "py3-none-any"}[kind]


def installs_on(kind: str, python: str) -> set[str]:
    """The Pythons a wheel of that kind installs on, by the wheel spec's rules (independent of cudaenv)."""
    if kind == "py3":
        return set(ALL_PYTHONS)
    return {python} if kind == "cp" else {p for p in ALL_PYTHONS if key(p) >= key(python)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(packages=st.lists(st.sets(WHEEL, min_size=1, max_size=3), min_size=1, max_size=3))
def test_property_the_chosen_python_has_a_wheel_for_every_pinned_package(tmp_path_factory, index, overlay, packages):
    run = next(_NAMES)
    names = [f"gen{run}x{i}" for i in range(len(packages))]
    for name, wheels in zip(names, packages):
        for kind, python in sorted(wheels):
            index.add(name, "1.0", tag=wheel_tag(kind, python))
    covers = [set().union(*(installs_on(kind, python) for kind, python in wheels)) for wheels in packages]
    directory = project(tmp_path_factory.mktemp("property"), ">=2.98", [f"{n}==1.0" for n in names], name=f"prop{run}")
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    common = set(FRAMEWORK_PYTHONS).intersection(*covers)
    if common:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        python = lock_of(directory)["stack"]["python"]
        assert all(python in pythons for pythons in covers)  # a wheel for every pinned package
        assert python == max(common, key=key)  # and the newest such Python
    else:
        assert proc.returncode == 1, proc.stdout + proc.stderr
        named = re.search(r"- (gen\d+x\d+)==1\.0 has wheels for Python", proc.stdout)
        assert named, proc.stdout
        missing_all = [n for n, p in zip(names, covers) if not p & set(FRAMEWORK_PYTHONS)]
        if missing_all:  # a package whose wheels miss every candidate is the one named
            assert named.group(1) in missing_all
        else:
            assert named.group(1) in names


# --- the image: locked on the older Python, built on the stand-in base, run ----------------------


@pytest.mark.docker
@pytest.mark.registry
def test_a_project_whose_wheels_stop_at_an_older_python_locks_builds_and_runs_there(tmp_path, index, overlay,
                                                                                     standins, engine):
    import uuid

    from tests.integration.test_build_images import build, cudaenv, remove_images, run_in

    index.add("oldpin", "1.0", tag=cp_tag("3.11"), files={"oldpin/__init__.py": 'VALUE = "oldpin 1.0 (cp311)"\n'})
    directory = project(tmp_path, ">=2.98", ["oldpin==1.0"], name=f"wheelchoice-{uuid.uuid4().hex[:8]}",
                        build=f'base_registry = "{standins.host}"\n')
    (directory / "main.py").write_text("import sys, oldpin, torch\n"
                                       "print(sys.version_info[:2], oldpin.VALUE, torch.__version__)\n")
    proc = run_cli("lock", directory, index=index, overlay=overlay)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stack = lock_of(directory)["stack"]
    # torch 2.99.0 supports up to 3.13; oldpin's only wheel is for 3.11
    assert (stack["python"], stack["frameworks"]["torch"]) == ("3.11", "2.99.0")
    standins.provide(stack["base_image"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_", "PIP_"))}
    env.update(CUDAENV_MATRIX_PATH=str(overlay), CUDAENV_PYTHON_INDEX=index.url, CUDAENV_FRAMEWORK_INDEX=index.url)
    if "CUDAENV_CACHE_DIR" in os.environ:
        env["CUDAENV_CACHE_DIR"] = os.environ["CUDAENV_CACHE_DIR"]
    tag = f"cudaenv-test/wheel-choice:{uuid.uuid4().hex[:8]}"
    try:
        result = build(directory, env, tag, "--rebuild-base")
        [install] = [s["step"] for s in result["steps"] if "uv pip install" in s["step"]]
        assert "--no-build" in install and "oldpin==1.0" in install  # wheels only
        assert run_in(engine, tag, "python", "main.py").strip() == "(3, 11) oldpin 1.0 (cp311) 2.99.0"
        assert cudaenv("dockerfile", directory, env=env).returncode == 0
    finally:
        remove_images(engine, tag)
