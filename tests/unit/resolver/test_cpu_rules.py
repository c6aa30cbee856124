"""The rules of ``cudaenv.resolver.cpu`` one at a time: which CPU builds the matrix offers and in
what order, which of them fits a project (its pins, its companions' pins, yanked releases), which
Python the stack gets, what the stack says, and the exact reasons a CPU target (or a GPU target
that only a CPU build would fit) is refused. test_cpu_targets.py covers the same ground over the
shipped matrix; these tests use small made-up matrices so that each rule alone decides."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix.builds import framework_builds
from cudaenv.matrix.model import CpuBuild, TorchRelease
from cudaenv.resolver import cpu
from cudaenv.resolver.cpu import CpuChoice, cpu_builds, cpu_only_problem, resolve_cpu
from cudaenv.resolver.model import Constraints, Host, Problem, Resolution, Stack
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import constraints, matrix

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
OTHER_INDEX = "https://cpu.example.org/simple"
CPU = Host(cpu=True)


def torch(version, python=("3.11", "3.12"), *, cpu_python=(), platforms=("x86_64",), torchvision=None,
          torchaudio=None, yanked=None, index=CPU_INDEX, builds=None) -> TorchRelease:
    """A torch release with one CPU build (``builds`` to give others, () for none)."""
    if builds is None:
        builds = (CpuBuild(index_url=index, source="test", platforms=platforms, python=cpu_python),)
    return TorchRelease(version=version, python=python, source="test", torchvision=torchvision,
                        torchaudio=torchaudio, yanked=yanked, cpu=builds)


def fake(*releases):
    """What cpu_builds and resolve_cpu read of a matrix: its torch rows and a memo."""
    return SimpleNamespace(torch=releases, memo={})


def ask(python=None, variants=(), **frameworks) -> Constraints:
    """Constraints with specifiers given as text ("any": every version)."""
    return Constraints(python=SpecifierSet(python) if python is not None else None,
                       frameworks=tuple((n, SpecifierSet("" if s == "any" else s)) for n, s in frameworks.items()),
                       variants=variants)


def chosen(resolution) -> str | None:
    return resolution.stack.framework("torch") if resolution.ok else None


def messages(resolution) -> list[tuple[str, str]]:
    return [(p.code, p.message) for p in resolution.problems]


# --- cpu_builds: what the matrix offers, per platform, newest first --------------------------------


def test_every_framework_has_a_list_even_without_cpu_builds():
    assert cpu_builds(fake(), "x86_64") == {"torch": [], "tensorflow": [], "jax": [], "mxnet": []}
    assert cpu_builds(fake(torch("2.6.0", builds=())), "x86_64")["torch"] == []


def test_the_cpu_builds_are_ordered_by_version_number_not_by_text():
    m = fake(torch("2.9.1"), torch("2.10.0"), torch("2.11.0"), torch("2.6.0"))
    assert [c.version for c in cpu_builds(m, "x86_64")["torch"]] == ["2.11.0", "2.10.0", "2.9.1", "2.6.0"]


def test_a_cpu_choice_carries_the_release_the_build_and_the_platform():
    release = torch("2.6.0", python=("3.10", "3.11"), torchvision="0.21.0", torchaudio="2.6.0", yanked="broken",
                    index=OTHER_INDEX, platforms=("x86_64", "aarch64"))
    m = fake(release)
    for platform in ("x86_64", "aarch64"):
        assert cpu_builds(m, platform)["torch"] == [
            CpuChoice("torch", "2.6.0", frozenset({"3.10", "3.11"}), OTHER_INDEX,
                      (("torchvision", "0.21.0"), ("torchaudio", "2.6.0")), "broken", platform)]


@pytest.mark.parametrize("torchvision, torchaudio, companions", [
    ("0.21.0", None, (("torchvision", "0.21.0"),)),
    (None, "2.6.0", (("torchaudio", "2.6.0"),)),
    (None, None, ()),
])
def test_a_cpu_choice_lists_only_the_companions_the_release_records(torchvision, torchaudio, companions):
    (choice,) = cpu_builds(fake(torch("2.6.0", torchvision=torchvision, torchaudio=torchaudio)), "x86_64")["torch"]
    assert choice.companions == companions and choice.yanked is None


def test_a_cpu_build_with_its_own_pythons_uses_them_not_the_releases():
    m = fake(torch("2.6.0", python=("3.10", "3.11"), cpu_python=("3.12",)), torch("2.5.0", python=("3.9", "3.10")))
    assert [c.python for c in cpu_builds(m, "x86_64")["torch"]] == [frozenset({"3.12"}), frozenset({"3.9", "3.10"})]


def test_a_cpu_build_is_offered_only_on_its_platforms():
    m = fake(torch("2.6.0", platforms=("aarch64",)), torch("2.5.0"),
             torch("2.4.0", builds=(CpuBuild(CPU_INDEX, "test", ("x86_64",)),
                                    CpuBuild(OTHER_INDEX, "test", ("aarch64",)))))
    assert [(c.version, c.index_url) for c in cpu_builds(m, "x86_64")["torch"]] == [("2.5.0", CPU_INDEX),
                                                                                  ("2.4.0", CPU_INDEX)]
    assert [(c.version, c.index_url) for c in cpu_builds(m, "aarch64")["torch"]] == [("2.6.0", CPU_INDEX),
                                                                                   ("2.4.0", OTHER_INDEX)]


def test_the_cpu_builds_are_worked_out_once_per_matrix_and_platform():
    m = fake(torch("2.6.0", platforms=("x86_64", "aarch64")))
    first = cpu_builds(m, "x86_64")
    assert cpu_builds(m, "x86_64") is first and cpu_builds(m, "aarch64") is not first
    assert cpu_builds(m, "aarch64")["torch"][0].platform == "aarch64"


# --- which release fits: pins, yanked releases, companions ------------------------------------------


def test_the_newest_release_the_pin_admits_is_chosen():
    m = fake(torch("2.4.0"), torch("2.5.0"), torch("2.6.0"))
    assert chosen(resolve_cpu(m, ask(torch="<2.6"), CPU)) == "2.5.0"
    assert chosen(resolve_cpu(m, ask(torch="any"), CPU)) == "2.6.0"
    assert chosen(resolve_cpu(m, ask(torch="!=2.6.0,!=2.5.0"), CPU)) == "2.4.0"


@pytest.mark.parametrize("pin, expected", [
    (">=2.5", "2.5.0"),        # a range never installs a yanked release (PEP 592)
    ("any", "2.5.0"),
    ("==2.6.*", None),         # a wildcard is not an exact pin, and 2.5.0 is not in it
    (">=2.6.0", None),         # naming the version in another clause is not pinning it
    ("==2.6.0", "2.6.0"),      # an exact pin installs it anyway
    ("===2.6.0", "2.6.0"),
    (">=2.0,==2.6.0", "2.6.0"),  # one exact clause among others is an exact pin
    ("==2.6", "2.6.0"),        # 2.6 and 2.6.0 are the same version (PEP 440): as pins_exactly says
])
def test_a_yanked_release_is_chosen_only_for_an_exact_pin(pin, expected):
    m = fake(torch("2.5.0"), torch("2.6.0", yanked="broken"))
    assert chosen(resolve_cpu(m, ask(torch=pin), CPU)) == expected


def test_a_yanked_release_is_not_chosen_when_only_a_companion_is_pinned():
    m = fake(torch("2.5.0", torchvision="0.20.0"), torch("2.6.0", torchvision="0.21.0", yanked=""))
    assert chosen(resolve_cpu(m, ask(torchvision=">=0.20"), CPU)) == "2.5.0"
    assert not resolve_cpu(m, ask(torchvision="==0.21.0"), CPU).ok


def test_the_same_exact_pins_admit_a_yanked_release_on_cpu_and_gpu_targets():
    yanked = replace(matrix(), torch=tuple(replace(r, yanked="broken") if r.version == "2.6.0" else r
                                           for r in matrix().torch))
    gpu = Host(driver="550.54.15")
    for pin in ("==2.6", "==2.6.0", "===2.6.0"):
        assert resolve(yanked, constraints(torch=pin), gpu).stack.framework("torch") == "2.6.0"
        assert resolve(yanked, constraints(torch=pin), CPU).stack.framework("torch") == "2.6.0"


@pytest.mark.parametrize("companion, pin, expected", [
    ("torchvision", "==0.20.0", "2.5.0"),
    ("torchvision", "<0.21", "2.5.0"),
    ("torchaudio", "==2.4.0", "2.4.0"),
    ("torchaudio", "any", "2.6.0"),
    ("torchvision", "any", "2.5.0"),  # 2.6.0 records no torchvision: a CPU stack cannot pair one with it
])
def test_a_companion_pin_chooses_the_torch_it_was_made_for(companion, pin, expected):
    m = fake(torch("2.4.0", torchvision="0.19.0", torchaudio="2.4.0"),
             torch("2.5.0", torchvision="0.20.0", torchaudio="2.5.0"),
             torch("2.6.0", torchaudio="2.6.0"))
    found = resolve_cpu(m, ask(**{companion: pin}), CPU)
    assert chosen(found) == expected


def test_a_companion_recorded_as_a_pre_release_is_admitted_by_a_range():
    # as the CUDA resolver does (specifier_contains: pre-releases allowed): the companion is the one
    # recorded for that torch release, not a choice among pre-releases
    m = fake(torch("2.5.0", torchvision="0.20.0"), torch("2.6.0", torchvision="0.21.0rc1"))
    assert chosen(resolve_cpu(m, ask(torchvision=">=0.20"), CPU)) == "2.6.0"
    assert chosen(resolve_cpu(m, ask(torch="any", torchvision=">0.20.0"), CPU)) == "2.6.0"


def test_a_pin_of_another_frameworks_companion_does_not_filter_torch(monkeypatch):
    tensorflow = CpuChoice("tensorflow", "2.16.1", frozenset({"3.11"}), OTHER_INDEX, (("keras", "3.0.0"),),
                           None, "x86_64")
    torch_choice = CpuChoice("torch", "2.6.0", frozenset({"3.11"}), CPU_INDEX, (), None, "x86_64")
    monkeypatch.setattr(cpu, "cpu_builds", lambda matrix, platform: {"torch": [torch_choice],
                                                                     "tensorflow": [tensorflow]})
    found = resolve_cpu(fake(), ask(torch="any", keras="==3.0.0"), CPU)
    assert found.stack.frameworks == (("torch", "2.6.0"), ("tensorflow", "2.16.1"), ("keras", "3.0.0"))


# --- the Python --------------------------------------------------------------------------------------


def test_the_newest_python_of_the_build_is_chosen_by_number():
    m = fake(torch("2.6.0", python=("3.9", "3.10")))
    assert resolve_cpu(m, ask(torch="any"), CPU).stack.python == "3.10"
    assert resolve_cpu(m, ask(torch="any", python="<3.10"), CPU).stack.python == "3.9"


def test_the_newest_release_with_a_wheel_for_the_python_is_chosen():
    m = fake(torch("2.5.0", python=("3.9", "3.10")), torch("2.6.0", python=("3.10", "3.11")))
    assert chosen(resolve_cpu(m, ask(torch="any", python="==3.9"), CPU)) == "2.5.0"
    assert chosen(resolve_cpu(m, ask(torch="any", python=">=3.10"), CPU)) == "2.6.0"


def test_without_a_framework_the_newest_python_any_cpu_build_has_is_chosen_by_number():
    m = fake(torch("2.5.0", python=("3.8", "3.9")), torch("2.6.0", python=("3.9", "3.10")))
    assert resolve_cpu(m, ask(), CPU).stack.python == "3.10"
    assert resolve_cpu(m, ask(python="<3.10"), CPU).stack.python == "3.9"
    # the shipped matrix: torch 2.9.0 and 2.9.1's CPU builds reach Python 3.14
    assert resolve_cpu(matrix(), Constraints(), CPU).stack.python == "3.14"


def test_without_a_framework_a_python_no_cpu_build_has_is_refused():
    m = fake(torch("2.6.0", python=("3.10", "3.11")))
    assert resolve_cpu(m, ask(python="==3.8"), CPU) == Resolution(stack=None, valid_cuda=(), problems=(Problem(
        "cpu-python", "no Python in ==3.8 is known to cudaenv's CPU builds"),))


# --- the stack -----------------------------------------------------------------------------------------


def test_the_cpu_stack_in_full():
    m = fake(torch("2.6.0", python=("3.10", "3.11"), torchvision="0.21.0", torchaudio="2.6.0",
                   platforms=("aarch64",)))
    found = resolve_cpu(m, ask(torch="any"), Host(arch="aarch64", cpu=True))
    assert found == Resolution(stack=Stack(
        python="3.11", cuda=None, cuda_release=None, cudnn=None, cudnn_version=None,
        frameworks=(("torch", "2.6.0"),), requirements=("torch==2.6.0+cpu",), index_urls=(CPU_INDEX,), find_links=(),
        flavor="cpu", base_image="python:3.11-slim", driver_compatibility=None, min_driver=None,
        min_driver_compat=None, compute_capabilities=(), brings_own_cuda=False, arch="aarch64", device="cpu",
    ), valid_cuda=(), problems=())
    assert found.alternatives == ()


@pytest.mark.parametrize("asked, frameworks", [
    ({"torchaudio": "any"}, (("torch", "2.6.0"), ("torchaudio", "2.6.1"))),
    ({"torchvision": "any"}, (("torch", "2.6.0"), ("torchvision", "0.21.0"))),
    ({"torch": "any", "torchvision": "any", "torchaudio": "any"},
     (("torch", "2.6.0"), ("torchvision", "0.21.0"), ("torchaudio", "2.6.1"))),
    ({"torch": "any"}, (("torch", "2.6.0"),)),  # a companion not asked for is not installed
])
def test_the_stack_installs_the_companions_asked_for_made_for_its_torch(asked, frameworks):
    m = fake(torch("2.6.0", torchvision="0.21.0", torchaudio="2.6.1"))
    stack = resolve_cpu(m, ask(**asked), CPU).stack
    assert stack.frameworks == frameworks
    assert stack.requirements == tuple(f"{n}=={v}+cpu" for n, v in frameworks)  # the CPU index's builds, by name


# --- several frameworks (the shipped matrix records CPU builds of torch only; given here) ----------


def choice(framework, version, python, index=CPU_INDEX, companions=()):
    return CpuChoice(framework, version, frozenset(python), index, companions, None, "x86_64")


@pytest.fixture
def offered(monkeypatch):
    """Replace the CPU builds resolve_cpu sees: offered({"torch": [...], "tensorflow": [...]})."""
    def offer(builds):
        every = {"torch": [], "tensorflow": [], "jax": [], "mxnet": []}
        monkeypatch.setattr(cpu, "cpu_builds", lambda matrix, platform: {**every, **builds})
    return offer


def test_several_frameworks_get_the_newest_python_they_all_have(offered):
    offered({"torch": [choice("torch", "2.6.0", ("3.9", "3.10", "3.11", "3.12"))],
             "jax": [choice("jax", "0.4.30", ("3.9", "3.10", "3.11"), index=OTHER_INDEX)]})
    stack = resolve_cpu(fake(), ask(torch="any", jax="any"), CPU).stack
    assert stack.python == "3.11" and stack.frameworks == (("torch", "2.6.0"), ("jax", "0.4.30"))
    assert stack.requirements == ("torch==2.6.0+cpu", "jax==0.4.30")  # only PyTorch's CPU index labels its builds
    assert stack.index_urls == (CPU_INDEX, OTHER_INDEX)


def test_several_frameworks_from_one_index_list_it_once(offered):
    offered({"torch": [choice("torch", "2.6.0", ("3.11",))], "jax": [choice("jax", "0.4.30", ("3.11",))],
             "mxnet": [choice("mxnet", "1.9.1", ("3.11",), index=OTHER_INDEX)]})
    stack = resolve_cpu(fake(), ask(torch="any", jax="any", mxnet="any"), CPU).stack
    assert stack.index_urls == (CPU_INDEX, OTHER_INDEX)


def test_several_frameworks_that_share_no_python_are_refused_listing_each_ones_newest_first(offered):
    offered({"torch": [choice("torch", "2.6.0", ("3.9", "3.10"))],
             "tensorflow": [choice("tensorflow", "2.16.1", ("3.11", "3.12"))]})
    found = resolve_cpu(fake(), ask(torch="any", tensorflow="any"), CPU)
    assert found == Resolution(stack=None, valid_cuda=(), problems=(Problem(
        "cpu-python", "the CPU builds chosen share no Python: torch 2.6.0: 3.10, 3.9; tensorflow 2.16.1: 3.12, 3.11"),))


def test_three_frameworks_share_only_what_all_three_have(offered):
    offered({"torch": [choice("torch", "2.6.0", ("3.10", "3.11"))],
             "tensorflow": [choice("tensorflow", "2.16.1", ("3.11", "3.12"))],
             "jax": [choice("jax", "0.4.30", ("3.10", "3.12"))]})
    found = resolve_cpu(fake(), ask(torch="any", tensorflow="any", jax="any"), CPU)
    assert [p.code for p in found.problems] == ["cpu-python"] and not found.ok


# --- the reasons a CPU target is refused ----------------------------------------------------------------


def test_a_pin_of_a_cuda_build_is_refused_with_its_fix_each_named():
    pins = ask(torch="==2.6.0", torchvision="==0.21.0", variants=(("torch", "cu124"), ("torchvision", "cu124")))
    found = resolve_cpu(fake(torch("2.6.0", torchvision="0.21.0")), pins, CPU)
    assert found == Resolution(stack=None, valid_cuda=(), problems=(
        Problem("cpu-target-cuda-pin", "torch is pinned to its cu124 build (a CUDA build), but the target has no "
                "GPU: a CPU target installs CPU builds only", fix="drop the +cu124 label from the torch pin"),
        Problem("cpu-target-cuda-pin", "torchvision is pinned to its cu124 build (a CUDA build), but the target "
                "has no GPU: a CPU target installs CPU builds only",
                fix="drop the +cu124 label from the torchvision pin"),
    ))


def test_a_cpu_build_pin_is_not_a_cuda_pin():
    found = resolve_cpu(fake(torch("2.6.0")), ask(torch="==2.6.0", variants=(("torch", "cpu"),)), CPU)
    assert chosen(found) == "2.6.0" and found.problems == ()


def test_every_framework_without_a_cpu_build_is_named_in_order():
    found = resolve_cpu(fake(torch("2.6.0")), ask(jax="any", tensorflow=">=2.16"), CPU)
    assert found == Resolution(stack=None, valid_cuda=(), problems=tuple(Problem("no-cpu-build", (
        f"cudaenv's matrix records no CPU-only build of {name} for x86_64: a target without a GPU cannot get "
        f"{name} (its CUDA builds are never installed there)")) for name in ("tensorflow", "jax")))


def test_a_pin_no_cpu_build_fits_is_named_with_the_releases_recorded():
    m = fake(torch("2.5.0"), torch("2.6.0"))
    found = resolve_cpu(m, ask(torch=">=2.7", jax="any"), Host(arch="x86_64", cpu=True))
    assert messages(found) == [
        ("no-cpu-build", "torch>=2.7: no CPU-only build of it is recorded for x86_64 (CPU builds recorded: torch "
                         "2.6.0, 2.5.0)"),
        ("no-cpu-build", "cudaenv's matrix records no CPU-only build of jax for x86_64: a target without a GPU "
                         "cannot get jax (its CUDA builds are never installed there)")]
    assert found.stack is None and found.valid_cuda == ()


@pytest.mark.parametrize("count, listed", [
    (6, "2.6.0, 2.5.0, 2.4.0, 2.3.0, 2.2.0, 2.1.0"),
    (7, "2.7.0, 2.6.0, 2.5.0, 2.4.0, 2.3.0, 2.2.0 …"),
], ids=["six", "seven"])
def test_the_releases_recorded_are_the_six_newest(count, listed):
    m = fake(*(torch(f"2.{minor}.0") for minor in range(1, count + 1)))
    assert messages(resolve_cpu(m, ask(torch="<2"), CPU)) == [
        ("no-cpu-build", f"torch<2: no CPU-only build of it is recorded for x86_64 (CPU builds recorded: torch "
                         f"{listed})")]


def test_a_yanked_release_is_marked_among_the_releases_recorded():
    m = fake(torch("2.5.0"), torch("2.6.0", yanked="broken"))
    assert messages(resolve_cpu(m, ask(torch=">=2.6"), CPU)) == [
        ("no-cpu-build", "torch>=2.6: no CPU-only build of it is recorded for x86_64 (CPU builds recorded: torch "
                         "2.6.0 (yanked), 2.5.0)")]


@pytest.mark.parametrize("asked, wanted", [
    ({"torch": ">=2.6", "torchvision": "==0.20.0"}, "torch>=2.6 with torchvision==0.20.0"),
    ({"torchvision": "==0.19.0"}, "torch with torchvision==0.19.0"),
    ({"torch": "any", "torchvision": ">=0.21", "torchaudio": "==2.5.0"},
     "torch with torchvision>=0.21 and torchaudio==2.5.0"),
])
def test_a_companion_pin_no_cpu_build_pairs_with_is_named_in_the_reason(asked, wanted):
    m = fake(torch("2.5.0", torchvision="0.20.0", torchaudio="2.5.0"),
             torch("2.6.0", torchvision="0.21.0", torchaudio="2.6.0"))
    assert messages(resolve_cpu(m, ask(**asked), CPU)) == [
        ("no-cpu-build", f"{wanted}: no CPU-only build of it is recorded for x86_64 (CPU builds recorded: torch "
                         "2.6.0, 2.5.0)")]


def test_a_python_none_of_the_fitting_builds_has_is_named_with_them():
    m = fake(torch("2.4.0", python=("3.8",)), torch("2.5.0", python=("3.9",)), torch("2.6.0", python=("3.10",)))
    found = resolve_cpu(m, ask(torch=">=2.5", python="==3.8", jax="any"), CPU)
    assert messages(found) == [
        ("cpu-python", "torch: its CPU builds that fit (2.6.0, 2.5.0) have no wheel for Python ==3.8"),
        ("no-cpu-build", "cudaenv's matrix records no CPU-only build of jax for x86_64: a target without a GPU "
                         "cannot get jax (its CUDA builds are never installed there)")]
    assert found.stack is None and found.valid_cuda == ()


def test_only_the_builds_for_the_hosts_platform_are_considered():
    m = fake(torch("2.6.0", platforms=("aarch64",)), torch("2.5.0"))
    assert chosen(resolve_cpu(m, ask(torch="any"), Host(arch="aarch64", cpu=True))) == "2.6.0"
    assert chosen(resolve_cpu(m, ask(torch="any"), CPU)) == "2.5.0"
    assert messages(resolve_cpu(m, ask(torch="==2.6.0"), CPU)) == [
        ("no-cpu-build", "torch==2.6.0: no CPU-only build of it is recorded for x86_64 (CPU builds recorded: torch "
                         "2.5.0)")]


# --- a GPU target that only a CPU build would fit ----------------------------------------------------------


def only_cpu(version: str, python: str, platforms=("x86_64",)):
    """The shipped matrix with torch ``version``'s CPU build published for ``python``, which none of
    its CUDA builds has, on ``platforms``."""
    def with_cpu(release):
        if release.version != version:
            return release
        return replace(release, cpu=(CpuBuild(index_url=CPU_INDEX, source="test", platforms=platforms,
                                              python=(python,)),))
    return replace(matrix(), torch=tuple(with_cpu(r) for r in matrix().torch))


def test_the_cpu_only_reason_names_the_stack_its_index_and_the_fix():
    m = only_cpu("2.6.0", "3.14")
    problem = cpu_only_problem(m, constraints(torch="==2.6.0", torchvision="any", python="==3.14"),
                               Host(driver="550.54.15"))
    assert problem == Problem(
        "cpu-build-only", "the only build of torch 2.6.0, torchvision 0.21.0 that fits (Python 3.14) is a CPU-only "
        f"build ({CPU_INDEX}): a GPU target never gets a CPU build, so it is refused",
        fix="allow a release or Python that has a CUDA build, or declare the target without a GPU (gpus = \"none\")")


def test_the_cpu_only_reason_looks_at_the_hosts_platform():
    # torch 2.3.1 has CUDA builds for x86_64 only (PyPI's aarch64 torch was CPU-only then); given an
    # aarch64 CPU build, that is all an aarch64 GPU host could get
    m = only_cpu("2.3.1", "3.11", platforms=("aarch64",))
    pinned = constraints(torch="==2.3.1", python="==3.11")
    assert "3.11" in next(r for r in matrix().torch if r.version == "2.3.1").python
    problem = cpu_only_problem(m, pinned, Host(driver="550.54.15", arch="aarch64"))
    assert problem is not None and problem.code == "cpu-build-only"
    assert problem.message.startswith("the only build of torch 2.3.1 that fits (Python 3.11) is a CPU-only build")
    # on x86_64 no CPU build of it fits, and CUDA builds of it exist there
    assert cpu_only_problem(m, pinned, Host(driver="550.54.15", arch="x86_64")) is None


def test_no_cpu_only_reason_where_a_cuda_build_of_that_release_has_that_python():
    # torch 2.6.0 has CUDA builds for 3.9 to 3.13; its CPU build here only for 3.12
    m = only_cpu("2.6.0", "3.12")
    assert cpu_only_problem(m, constraints(torch="==2.6.0", python="==3.12"), Host(driver="550.54.15")) is None


def test_no_cpu_only_reason_where_another_release_has_a_cuda_build_for_that_python_but_this_one_not():
    # torch 2.9.0 has CUDA builds for Python 3.14; 2.6.0 has none, so a 2.6.0 CPU build for 3.14 is CPU-only
    m = only_cpu("2.6.0", "3.14")
    assert any("3.14" in b.python for b in framework_builds(m, "x86_64")["torch"] if b.version == "2.9.0")
    assert cpu_only_problem(m, constraints(torch="==2.6.0", python="==3.14"), Host(driver="550.54.15")) is not None


def test_no_cpu_only_reason_where_no_cpu_build_fits_either():
    assert cpu_only_problem(matrix(), constraints(torch="==2.14.1"), Host(driver="550.54.15")) is None


def test_the_cpu_only_reason_names_every_framework_and_index(offered):
    # neither torch 2.6.0 nor jax 0.4.30 has a CUDA build for Python 3.14; their CPU builds are given here
    offered({"torch": [choice("torch", "2.6.0", ("3.14",))],
             "jax": [choice("jax", "0.4.30", ("3.14",), index=OTHER_INDEX)]})
    problem = cpu_only_problem(matrix(), constraints(torch="==2.6.0", jax="==0.4.30"), Host(driver="550.54.15"))
    assert problem.message == ("the only build of torch 2.6.0, jax 0.4.30 that fits (Python 3.14) is a CPU-only "
                               f"build ({CPU_INDEX}, {OTHER_INDEX}): a GPU target never gets a CPU build, so it is "
                               "refused")


@pytest.mark.parametrize(("index", "label"), [
    (CPU_INDEX, "+cpu"), (CPU_INDEX + "/", "+cpu"), ("https://mirror.example.org/pytorch/whl/cpu", "+cpu"),
    (OTHER_INDEX, ""), ("https://download.pytorch.org/whl/cu126", ""), ("https://download.pytorch.org/whl/cpu-cxx11", ""),
], ids=["cpu-index", "trailing-slash", "a-mirror", "other", "cuda-index", "another-cpu-flavour"])
def test_the_label_a_cpu_build_is_named_by(index, label):
    from cudaenv.resolver.cpu import cpu_label

    assert cpu_label(index) == label
