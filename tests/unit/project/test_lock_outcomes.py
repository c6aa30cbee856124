"""What ``lock_project`` and ``installable`` make of uv's pins, in process: a lock of the stack and
its pins, a stack that follows the CUDA the wheels carry where the host runs it, a refusal naming
the contradiction otherwise, and the answer a current lock already gave. uv is replaced by a
stand-in that answers with fixed pins (see test_uv_invocation for what it is asked)."""

from __future__ import annotations

import subprocess

import pytest

from cudaenv.hosts.target import project_target
from cudaenv.matrix import load_matrix
from cudaenv.project import load_project
from cudaenv.project import lock as lockmod
from cudaenv.project import wheels as wheelsmod
from cudaenv.project.config import resolve_project
from cudaenv.project.lock import LockError, PYPI_SIMPLE, inputs_hash, installable, lock_project, wheel_inputs
from cudaenv.project.pins import clash_message, pin_clashes
from cudaenv.project.wheels import manylinux_platform

CU126 = "https://download.pytorch.org/whl/cu126"
PYPI_2_15_0 = ["torch==2.15.0", "cuda-toolkit==13.2.2", "nvidia-cuda-runtime==13.2.86", "nvidia-cudnn-cu13==9.26.0.51"]


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(overlays=[])


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("CUDAENV_FRAMEWORK_INDEX", "CUDAENV_PYTHON_INDEX", "CUDAENV_EXCLUDE_NEWER", "CUDAENV_DRIVER_VERSION",
                 "CUDAENV_GPUS"):
        monkeypatch.delenv(name, raising=False)


class FakeUv:
    def __init__(self):
        self.answers = []  # (returncode, stdout, stderr) per call; the last one repeats
        self.calls = []

    def __call__(self, argv, **kwargs):
        frameworks = next((open(a).read() for a in argv if a.endswith("frameworks.in")), None)
        self.calls.append({"argv": argv, "frameworks": frameworks, "env": kwargs.get("env", {})})
        code, out, err = self.answers[min(len(self.calls), len(self.answers)) - 1]
        return subprocess.CompletedProcess(argv, code, out, err)


@pytest.fixture
def uv(monkeypatch):
    fake = FakeUv()
    monkeypatch.setattr(lockmod.subprocess, "run", fake)
    return fake


def answer(uv, *pins, code=0, stderr=""):
    uv.answers.append((code, "".join(f"{p}\n" for p in pins), stderr))


def project(root, torch="==2.6.0", driver="570.86.15", gpu="A100", requirements=True):
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "p"\n' + ('requirements = ["requirements.txt"]\n' if requirements else "")
        + f'\n[frameworks]\ntorch = "{torch}"\n\n[target]\ndriver = "{driver}"\ngpus = ["{gpu}"]\n')
    (root / "requirements.txt").write_text("numpy==2.1.3\n")
    return load_project(root)


def resolved(matrix, p):
    return resolve_project(matrix, p, project_target(matrix, p).host)


def test_a_lock_records_the_stack_its_pins_and_where_they_came_from(tmp_path, matrix, uv):
    """What `cudaenv lock` writes: the stack, the target, the indexes, the platform and the pins."""
    answer(uv, "numpy==2.1.3", "torch==2.6.0+cu126")
    p = project(tmp_path)
    result, lock = lock_project(p, matrix)
    assert result.ok and result.stack == resolved(matrix, p).stack
    assert lock.pinned == ("numpy==2.1.3", "torch==2.6.0+cu126")
    assert lock.stack == result.stack.as_dict() and lock.matrix_revision == matrix.revision
    assert lock.target == project_target(matrix, p).as_dict() and lock.inputs_hash == inputs_hash(p)
    assert (lock.python_index, lock.framework_index) == (PYPI_SIMPLE, CU126)
    assert lock.platform == manylinux_platform(result.stack)
    assert len(uv.calls) == 1


def test_no_stack_means_no_lock_and_no_uv(tmp_path, matrix, uv):
    p = project(tmp_path, torch="==2.9.1", driver="450.80.02")
    result, lock = lock_project(p, matrix)
    assert not result.ok and lock is None and uv.calls == []


def test_a_requirement_without_wheels_anywhere_means_no_lock(tmp_path, matrix, uv):
    """Every candidate Python lacks a wheel: the answer is a "no" resolution, not an exception."""
    answer(uv, code=1, stderr="  `-> Because lonely has no usable wheels, we can conclude that lonely cannot be used.\n")
    p = project(tmp_path)
    (tmp_path / "requirements.txt").write_text("lonely\n")
    result, lock = lock_project(p, matrix)
    assert not result.ok and lock is None and len(uv.calls) >= 1


def test_two_distributions_of_one_package_are_refused(tmp_path, matrix, uv):
    """tensorflow beside tensorflow-cpu: whichever installs last silently wins."""
    answer(uv, "tensorflow==2.18.0", "tensorflow-cpu==2.18.0")
    with pytest.raises(LockError, match=r"^the lock would install tensorflow==2\.18\.0 and tensorflow-cpu==2\.18\.0"):
        lock_project(project(tmp_path), matrix)


def test_pins_of_another_cuda_the_host_runs_are_adopted_with_a_note(tmp_path, matrix, uv):
    """The wheels' CUDA is the truth: R580 runs CUDA 13.2 through minor-version compatibility."""
    answer(uv, *PYPI_2_15_0)
    p = project(tmp_path, torch="==2.15.0", driver="580.65.06")
    first = resolved(matrix, p).stack
    assert first.cuda == "13.0"
    result, lock = lock_project(p, matrix)
    assert result.ok and result.stack.cuda == "13.2" and lock.stack["cuda"] == "13.2"
    assert lock.pinned == tuple(PYPI_2_15_0) and lock.stack == result.stack.as_dict()
    note = result.problems[0]
    assert note.code == "cuda-from-wheels"
    assert note.message == ("the locked wheels carry CUDA 13.2 (cuda-toolkit==13.2.2), not the CUDA 13.0 of the build "
                            "first chosen: the stack follows the wheels; the target's driver runs it through "
                            "minor-version compatibility")
    if result.stack.requirements != first.requirements:  # the adopted build's own requirements were pinned again
        assert len(uv.calls) == 2 and uv.calls[1]["frameworks"] == "".join(f"{r}\n" for r in result.stack.requirements)
    else:
        assert len(uv.calls) == 1


def test_pins_of_a_cuda_the_host_cannot_run_are_refused_saying_why(tmp_path, matrix, uv):
    pins = ["torch==2.9.1", "cuda-toolkit==13.0.3.0"]
    answer(uv, *pins)
    p = project(tmp_path, torch="==2.9.1", driver="570.86.15", gpu="RTX 4090")
    stack = resolved(matrix, p).stack
    with pytest.raises(LockError) as caught:
        lock_project(p, matrix)
    message = str(caught.value)
    expected = clash_message(pin_clashes(stack, pins), stack, stack.index_urls[0])
    assert message.startswith(expected + " The wheels' CUDA 13.0 (cuda-toolkit==13.0.3.0) cannot be adopted: ")
    assert "driver 570.86.15" in message and message.endswith(".")


def test_pins_that_carry_no_cuda_are_refused_naming_the_index_that_served_them(tmp_path, matrix, uv, monkeypatch):
    """A CPU-only build from a mirror: nothing to adopt; the index is named without its credentials."""
    monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", "https://me:tok3n@mirror.example/cu126")
    answer(uv, "torch==2.6.0+cpu")
    p = project(tmp_path)
    stack = resolved(matrix, p).stack
    with pytest.raises(LockError) as caught:
        lock_project(p, matrix)
    assert str(caught.value) == clash_message(pin_clashes(stack, ["torch==2.6.0+cpu"]), stack,
                                              "https://mirror.example/cu126")


def test_wheel_inputs_name_the_indexes_in_the_order_uv_reads_them_without_credentials(tmp_path, matrix, monkeypatch):
    """The page reader gets the credentials as headers, the index list never."""
    seen = {}
    monkeypatch.setattr(wheelsmod, "http_page_reader", lambda ca, headers: seen.update(ca=ca, headers=headers) or "reader")
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", "https://me:tok3n@pypi.example/simple")
    p = project(tmp_path)
    (tmp_path / "requirements.txt").write_text("numpy==2.1.3\nrequests>=2\n")
    inputs = wheel_inputs(p, resolved(matrix, p).stack, ca_bundle="/ca.pem")
    assert inputs.indexes == (CU126, "https://pypi.example/simple")
    assert inputs.read_page == "reader" and seen["ca"] == "/ca.pem"
    assert seen["headers"] == {"pypi.example": "Basic bWU6dG9rM24="}  # base64 of me:tok3n
    assert {str(k): str(v) for k, v in inputs.exact_pins.items()} == {"numpy": "2.1.3"}


def test_wheel_inputs_without_a_framework_index_read_the_python_index_only(tmp_path, matrix, monkeypatch):
    monkeypatch.setattr(wheelsmod, "http_page_reader", lambda ca, headers: seen.update(headers=headers))
    seen = {}
    p = project(tmp_path)
    from dataclasses import replace

    inputs = wheel_inputs(p, replace(resolved(matrix, p).stack, index_urls=()))
    assert inputs.indexes == (PYPI_SIMPLE,) and seen["headers"] == {}


def test_installable_asks_nothing_without_requirements_or_a_stack(tmp_path, matrix, uv):
    p = project(tmp_path, requirements=False)
    result = resolved(matrix, p)
    assert installable(matrix, p, project_target(matrix, p).host, result) is result
    (tmp_path / "q").mkdir()
    q = project(tmp_path / "q", torch="==2.9.1", driver="450.80.02")
    bad = resolved(matrix, q)
    assert installable(matrix, q, project_target(matrix, q).host, bad) is bad
    assert uv.calls == []


def test_installable_gives_the_stack_lock_would_choose(tmp_path, matrix, uv):
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    result = resolved(matrix, p)
    chosen = installable(matrix, p, project_target(matrix, p).host, result)
    assert chosen.ok and chosen.stack == result.stack and len(uv.calls) == 1


def test_an_unreachable_index_leaves_the_answer_with_a_warning(tmp_path, matrix, uv):
    answer(uv, code=1, stderr=("error: Request failed after 3 retries\n  cause: Failed to fetch: "
                                       "https://pypi.org/simple/numpy/\n  cause: dns error\n"))
    p = project(tmp_path)
    result = resolved(matrix, p)
    answered = installable(matrix, p, project_target(matrix, p).host, result)
    assert answered.stack == result.stack and answered.problems[:-1] == result.problems
    warning = answered.problems[-1]
    assert warning.code == "wheels-unchecked"
    assert warning.message.startswith("wheels not checked: cannot reach https://pypi.org/simple/ (DNS: the host name "
                                      "does not resolve). Use a mirror you can reach")


def test_a_clash_uv_reports_leaves_the_answer_to_lock(tmp_path, matrix, uv):
    answer(uv, code=1, stderr="  x No solution found\n")
    p = project(tmp_path)
    result = resolved(matrix, p)
    assert installable(matrix, p, project_target(matrix, p).host, result) is result


def test_a_current_lock_answers_without_uv(tmp_path, matrix, uv):
    """resolve DIR and plan give lock's answer without a network round trip when the lock is current."""
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    _, lock = lock_project(p, matrix)
    p.lock_path.write_text(lock.as_toml())
    uv.calls.clear()
    result = resolved(matrix, p)
    host = project_target(matrix, p).host
    assert installable(matrix, p, host, result) is result and uv.calls == []
    assert installable(matrix, p, host, result, constraints=p.constraints) is result and uv.calls == []


@pytest.mark.parametrize("change", ["matrix", "inputs", "host"])
def test_a_stale_lock_or_another_host_asks_uv_again(tmp_path, matrix, uv, change):
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    _, lock = lock_project(p, matrix)
    text = lock.as_toml()
    if change == "matrix":
        text = text.replace(f'matrix_revision = "{matrix.revision}"', 'matrix_revision = "other"')
    elif change == "inputs":
        (tmp_path / "requirements.txt").write_text("numpy==2.1.2\n")
    p.lock_path.write_text(text)
    uv.calls.clear()
    result = resolved(matrix, p)
    host = project_target(matrix, p).host
    if change == "host":
        from dataclasses import replace

        host = replace(host, driver="580.65.06")
    installable(matrix, p, host, result)
    assert len(uv.calls) == 1


def test_an_unreadable_lock_is_no_answer(tmp_path, matrix, uv):
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    p.lock_path.write_text("format = 99\n")
    result = resolved(matrix, p)
    installable(matrix, p, project_target(matrix, p).host, result)
    assert len(uv.calls) == 1


@pytest.mark.parametrize("mode, runs", [
    ("native", "; the target's driver runs it natively"),
    ("forward", "; the target's driver runs it through forward compatibility"),
    (None, ""),
], ids=["native", "forward", "unknown"])
def test_the_adoption_note_says_how_the_driver_runs_the_wheels_cuda(tmp_path, matrix, mode, runs):
    """The note says why the CUDA is not the one first chosen, and how the host's driver runs the new one."""
    from dataclasses import replace

    from cudaenv.project.lock import _adopted

    p = project(tmp_path, torch="==2.15.0", driver="580.65.06")
    first = resolved(matrix, p)
    adopted = replace(first, stack=replace(first.stack, cuda="13.2", driver_compatibility=mode))
    note = _adopted(adopted, first.stack, PYPI_2_15_0).problems[0]
    assert note.message == ("the locked wheels carry CUDA 13.2 (cuda-toolkit==13.2.2), not the CUDA 13.0 of the build "
                            f"first chosen: the stack follows the wheels{runs}")
    assert _adopted(adopted, first.stack, PYPI_2_15_0).problems[1:] == first.problems


NO_WHEEL_FOR_NEWEST = "  `-> Because lonely==1.0 has no usable wheels, we can conclude that lonely==1.0 cannot be used.\n"


def lock_on_an_older_python(tmp_path, matrix, uv, newer_without_wheels=1):
    """A lock whose Python is older than the resolver's best: a requirement has no wheels for the newest
    ``newer_without_wheels`` Pythons."""
    uv.answers += [(1, "", NO_WHEEL_FOR_NEWEST)] * newer_without_wheels + [(0, "numpy==2.1.3\n", "")]
    p = project(tmp_path)
    result, lock = lock_project(p, matrix)
    best = resolved(matrix, p).stack
    assert lock is not None and lock.stack["python"] != best.python
    p.lock_path.write_text(lock.as_toml())
    uv.calls.clear()
    return p, result, lock


@pytest.mark.parametrize("newer_without_wheels, index, end_of_life", [(1, None, False), (4, CU126, True)],
                         ids=["one-python-older", "four-pythons-older-past-its-end-of-life"])
def test_a_current_lock_on_an_older_python_answers_with_that_python(tmp_path, matrix, uv, monkeypatch,
                                                                    newer_without_wheels, index, end_of_life):
    """resolve DIR and plan say the Python the lock moved to, and why (and that it gets no security fixes
    when that is so), without asking uv again."""
    from cudaenv.project.wheels import eol_caveat

    if index:
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", index)
    p, locked_result, lock = lock_on_an_older_python(tmp_path, matrix, uv, newer_without_wheels)
    assert (eol_caveat(lock.stack["python"]) is not None) is end_of_life
    python = lock.stack["python"]
    host = project_target(matrix, p).host
    answered = installable(matrix, p, host, resolved(matrix, p))
    assert uv.calls == [] and answered.stack.as_dict() == locked_result.stack.as_dict()
    notes = [q for q in answered.problems if q.code == "python-from-wheels"]
    assert [q.message for q in notes] == [f"Python {python}: the newest on which every requirement has wheels "
                                          f"(as cudaenv.lock recorded)"]
    caveat = eol_caveat(python)
    assert (caveat in answered.problems) if caveat else all(q.code != "python-end-of-life" for q in answered.problems)
    assert answered.problems.index(notes[0]) == len(answered.problems) - (2 if caveat else 1)


@pytest.mark.parametrize("index", [None, CU126], ids=["own-index", "configured-index"])
def test_a_lock_on_an_older_python_is_current(tmp_path, matrix, uv, monkeypatch, index):
    """`lock --check` accepts the Python the lock moved to for wheels: the inputs hash covers that choice
    (and the older Python's stack is chosen among the builds the configured index serves)."""
    from cudaenv.project.lock import current_lock

    if index:
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", index)
    p, _, lock = lock_on_an_older_python(tmp_path, matrix, uv)
    found, reasons = current_lock(p, matrix)
    assert found == lock and reasons == []


def test_a_lock_on_a_python_the_resolver_cannot_give_is_no_answer(tmp_path, matrix, uv):
    """A lock whose recorded stack is neither the resolver's best nor its best on the lock's Python."""
    from cudaenv.project.lock import current_lock

    p, _, lock = lock_on_an_older_python(tmp_path, matrix, uv)
    text = p.lock_path.read_text().replace(f'cuda = "{lock.stack["cuda"]}"', 'cuda = "11.8"', 1)
    p.lock_path.write_text(text)
    answer(uv, "numpy==2.1.3")
    installable(matrix, p, project_target(matrix, p).host, resolved(matrix, p))
    assert len(uv.calls) >= 1
    assert any(r.startswith("the resolved stack changed (") for r in current_lock(p, matrix)[1])


def test_no_lock_is_stale_for_want_of_one(tmp_path, matrix):
    from cudaenv.project.lock import current_lock

    assert current_lock(project(tmp_path), matrix) == (None, ["there is no cudaenv.lock"])


def test_a_lock_whose_configuration_no_longer_resolves_says_so(tmp_path, matrix, uv):
    from cudaenv.project.lock import current_lock

    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    p.lock_path.write_text(lock_project(p, matrix)[1].as_toml())
    p = project(tmp_path, torch="==2.9.1", driver="450.80.02")
    lock, reasons = current_lock(p, matrix)
    assert lock is not None and "the configuration no longer resolves to any stack" in reasons


def test_a_lock_with_an_unreadable_python_is_stale_not_a_crash(tmp_path, matrix, uv):
    """A hand-edited Python that is no version is a changed stack, not a moved one."""
    from cudaenv.project.lock import current_lock

    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    lock = lock_project(p, matrix)[1]
    p.lock_path.write_text(lock.as_toml().replace(f'python = "{lock.stack["python"]}"', 'python = "three"', 1))
    assert current_lock(p, matrix)[1] == ["the resolved stack changed (python)"]


def test_a_lock_with_the_hash_cudaenv_0_1_0_wrote_still_answers(tmp_path, matrix, uv):
    """Locks written before [run] keys were split still count as current: no uv round trip."""
    from dataclasses import replace

    answer(uv, "numpy==2.1.3")
    (tmp_path / "requirements.txt").write_text("numpy==2.1.3\n")
    p = project(tmp_path)
    (tmp_path / "cudaenv.toml").write_text((tmp_path / "cudaenv.toml").read_text() + '\n[run]\ngpus = "1"\n')
    p = load_project(tmp_path)
    _, lock = lock_project(p, matrix)
    old = replace(lock, inputs_hash=inputs_hash(p, whole_run=True), inputs=())
    assert old.inputs_hash != lock.inputs_hash
    p.lock_path.write_text(old.as_toml())
    uv.calls.clear()
    result = resolved(matrix, p)
    assert installable(matrix, p, project_target(matrix, p).host, result) is result and uv.calls == []


def test_a_lock_whose_pins_carry_no_cuda_it_could_follow_is_stale(tmp_path, matrix):
    """A CPU-only torch under a CUDA stack: nothing to adopt, so the contradiction is the reason."""
    from cudaenv.project.lock import current_lock, make_lock

    p = project(tmp_path)
    stack = resolved(matrix, p).stack
    p.lock_path.write_text(make_lock(p, stack, matrix_revision=matrix.revision, target={},
                                     pinned=["torch==2.6.0+cpu"]).as_toml())
    assert current_lock(p, matrix)[1] == [
        f"the locked packages contradict the locked stack: torch==2.6.0+cpu carries a CPU-only build, but the stack "
        f"is CUDA {stack.cuda}"]


def test_a_lock_that_follows_its_wheels_cuda_but_still_contradicts_them_is_not_current(tmp_path, matrix):
    """Adopting the wheels' CUDA makes a lock current only when no pin contradicts the adopted stack."""
    from cudaenv.project.lock import current_lock, make_lock, wheels_stack

    p = project(tmp_path, torch="==2.15.0", driver="580.65.06")
    first = resolved(matrix, p).stack
    pins = PYPI_2_15_0 + ["nvidia-cudnn-cu12==9.1.0.70"]
    adopted = wheels_stack(matrix, p, project_target(matrix, p).host, first, pins)
    assert adopted.ok and pin_clashes(adopted.stack, pins)
    p.lock_path.write_text(make_lock(p, adopted.stack, matrix_revision=matrix.revision, target={},
                                     pinned=pins).as_toml())
    assert any(r.startswith("the resolved stack changed (") for r in current_lock(p, matrix)[1])


def test_a_stale_adopted_lock_names_only_what_differs_from_the_adopted_stack(tmp_path, matrix, uv):
    """The adopted stack is the one to compare with: the first choice's other CUDA is no change."""
    from cudaenv.project.lock import current_lock

    answer(uv, *PYPI_2_15_0)
    p = project(tmp_path, torch="==2.15.0", driver="580.65.06")
    _, lock = lock_project(p, matrix)
    assert current_lock(p, matrix)[1] == ["there is no cudaenv.lock"]
    p.lock_path.write_text(lock.as_toml())
    assert current_lock(p, matrix)[1] == []
    p.lock_path.write_text(lock.as_toml().replace(f'base_image = "{lock.stack["base_image"]}"',
                                                  'base_image = "python:3.0-slim"', 1))
    assert current_lock(p, matrix)[1] == ["the resolved stack changed (base_image)"]


@pytest.mark.parametrize("index", [None, "https://download.pytorch.org/whl/cu130"], ids=["own-index", "configured-index"])
def test_wheels_carrying_the_stacks_own_cuda_adopt_nothing(tmp_path, matrix, monkeypatch, index):
    """Only another CUDA is something to follow; the same one leaves the stack as chosen."""
    from cudaenv.project.lock import wheels_stack

    if index:
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", index)
    p = project(tmp_path, torch="==2.15.0", driver="580.65.06")
    first = resolved(matrix, p).stack
    host = project_target(matrix, p).host
    assert wheels_stack(matrix, p, host, first, ["torch==2.15.0+cu130", "cuda-toolkit==13.0.2"]) is None
    adopted = wheels_stack(matrix, p, host, first, PYPI_2_15_0)
    if index is None:
        assert adopted.ok and adopted.stack.cuda == "13.2" and adopted.stack.python == first.python
    else:  # the configured index serves the cu130 build only: there is no CUDA 13.2 build to adopt
        assert not adopted.ok


def test_other_constraints_than_the_projects_are_not_answered_by_its_lock(tmp_path, matrix, uv):
    """`resolve DIR --python 3.11`: the lock answered another question, so uv is asked."""
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    p.lock_path.write_text(lock_project(p, matrix)[1].as_toml())
    uv.calls.clear()
    host = project_target(matrix, p).host
    other = replace(p.constraints, python=SpecifierSet("==3.11"))
    result = resolve_project(matrix, p, host, other)
    chosen = installable(matrix, p, host, result, constraints=other)
    assert len(uv.calls) == 1 and chosen.stack.python == "3.11"


def test_checking_wheels_trusts_the_projects_ca_certificate(tmp_path, matrix, uv, monkeypatch):
    """uv is handed [build] ca_cert both when resolve/plan check wheels and when lock pins."""
    monkeypatch.setattr(wheelsmod, "http_page_reader", lambda ca, headers: None)  # no pages are read here
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    (tmp_path / "ca.pem").write_text("")
    (tmp_path / "cudaenv.toml").write_text((tmp_path / "cudaenv.toml").read_text() + '\n[build]\nca_cert = "ca.pem"\n')
    p = load_project(tmp_path)
    installable(matrix, p, project_target(matrix, p).host, resolved(matrix, p))
    assert uv.calls[-1]["env"]["SSL_CERT_FILE"] == str(p.build.ca_cert)
    lock_project(p, matrix)
    assert uv.calls[-1]["env"]["SSL_CERT_FILE"] == str(p.build.ca_cert)


@pytest.mark.parametrize("cuda, adopts", [(">=13.0", True), ("<13.2", False)], ids=["allows", "excludes"])
def test_the_projects_cuda_range_decides_whether_the_wheels_cuda_may_be_followed(tmp_path, matrix, cuda, adopts):
    """[cuda] version is the user's word: wheels carrying a CUDA outside it are not followed."""
    from cudaenv.project.lock import wheels_stack

    (tmp_path / "cudaenv.toml").write_text(
        '[project]\nname = "p"\n\n[frameworks]\ntorch = "==2.15.0"\n\n'
        f'[cuda]\nversion = "{cuda}"\n\n[target]\ndriver = "580.65.06"\ngpus = ["A100"]\n')
    p = load_project(tmp_path)
    first = resolved(matrix, p).stack
    adopted = wheels_stack(matrix, p, project_target(matrix, p).host, first, PYPI_2_15_0)
    if adopts:
        assert adopted.ok and adopted.stack.cuda == "13.2"
    else:
        assert adopted is None


@pytest.mark.parametrize("index", [None, CU126], ids=["own-index", "configured-index"])
def test_lock_resolves_the_constraints_it_is_given(tmp_path, matrix, uv, monkeypatch, index):
    """`init` locks what it detected (here: Python 3.11), not the project's own constraints."""
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    if index:
        monkeypatch.setenv("CUDAENV_FRAMEWORK_INDEX", index)
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    result, lock = lock_project(p, matrix, replace(p.constraints, python=SpecifierSet("==3.11")))
    assert result.stack.python == "3.11" and lock.stack["python"] == "3.11"
    assert lock.framework_index == CU126 and lock.platform == manylinux_platform(result.stack)


def test_wheels_that_contradict_even_the_stack_they_carry_are_refused(tmp_path, matrix, uv):
    """Following the wheels' CUDA helps only if nothing then contradicts it: a cuDNN built for CUDA 12
    beside CUDA 13.2 wheels is refused with the first stack's contradictions, nothing about adopting."""
    pins = PYPI_2_15_0 + ["nvidia-cudnn-cu12==9.1.0.70"]
    answer(uv, *pins)
    p = project(tmp_path, torch="==2.15.0", driver="580.65.06")
    stack = resolved(matrix, p).stack
    with pytest.raises(LockError) as caught:
        lock_project(p, matrix)
    assert str(caught.value) == clash_message(pin_clashes(stack, pins), stack, stack.index_urls[0])


def test_following_the_wheels_cuda_keeps_the_framework_release_and_python(tmp_path, matrix):
    """Only the CUDA moves: the release and the Python the lock chose (an older one, for wheels) stay,
    even where the project's own range would allow newer ones."""
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    from cudaenv.project.lock import wheels_stack
    from cudaenv.resolver.resolve import resolve

    p = project(tmp_path, torch=">=2.9", driver="580.65.06")
    host = project_target(matrix, p).host
    best = resolved(matrix, p).stack
    chosen = resolve(matrix, replace(p.constraints, python=SpecifierSet("==3.11"),
                                     frameworks=(("torch", SpecifierSet("==2.9.1")),)), host).stack
    assert chosen.python == "3.11" and dict(chosen.frameworks)["torch"] == "2.9.1" != dict(best.frameworks)["torch"]
    assert chosen.cuda != "12.6"
    adopted = wheels_stack(matrix, p, host, chosen, ["torch==2.9.1+cu126"])
    assert adopted.ok and adopted.stack.cuda == "12.6"
    assert adopted.stack.frameworks == chosen.frameworks and adopted.stack.python == "3.11"


def test_a_lock_on_a_python_no_stack_has_is_no_answer(tmp_path, matrix, uv):
    """A lock recording a Python the matrix has no build for (hand-edited, or an old matrix): uv is asked."""
    answer(uv, "numpy==2.1.3")
    p = project(tmp_path)
    lock = lock_project(p, matrix)[1]
    p.lock_path.write_text(lock.as_toml().replace(f'python = "{lock.stack["python"]}"', 'python = "3.6"', 1))
    uv.calls.clear()
    installable(matrix, p, project_target(matrix, p).host, resolved(matrix, p))
    assert len(uv.calls) == 1


def test_the_projects_exact_pins_are_read_as_pip_reads_them_and_none_behind_a_marker(tmp_path, matrix):
    """An exact pin decides which Pythons are tried; one that holds only on some Pythons cannot."""
    from cudaenv.project.wheels import exact_pins

    p = project(tmp_path)
    (tmp_path / "requirements.txt").write_text(
        "numpy==2.1.3 \\\n    --hash=sha256:00\n-r more.txt\n-c pins.txt\n"
        'scipy==1.14.1; python_version < "3.13"\nrequests>=2\n')
    (tmp_path / "more.txt").write_text("six==1.16.0\n")
    (tmp_path / "pins.txt").write_text("urllib3==2.2.3\n")  # a constraint requires nothing
    assert {str(k): str(v) for k, v in exact_pins(p).items()} == {"numpy": "2.1.3", "six": "1.16.0"}
