"""The one rule for which of a project's targets a host runs (cudaenv/project/which_target.py), on the
issue's three targets: laptop (CPU), a100 (535.104.05, CUDA 12.6 stack), h100 (580.65.06, CUDA 13.0)."""

from __future__ import annotations

import pytest

from cudaenv.hosts.target import project_target, project_targets
from cudaenv.project import load_project
from cudaenv.project.config import resolve_project
from cudaenv.project.lock import LockFile, make_lock
from cudaenv.project.which_target import (choose_fit, declares_host_gpus, fit_named, fit_target, judge_stacks,
                                          judge_targets, no_fit_message)
from cudaenv.resolver.model import Host
from tests.support.targets import THREE_TARGETS
from tests.unit.resolver.helpers import matrix, target_gpu


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("three")
    (root / "cudaenv.toml").write_text(THREE_TARGETS)
    return load_project(root)


@pytest.fixture(scope="module")
def targets(project):
    """(name, stack, declared host) as `cudaenv lock` resolves each target."""
    return [(name, resolve_project(matrix(), project, target.host).stack, target.host)
            for name, target in project_targets(matrix(), project)]


def host(driver: str | None, *gpus: str, arch: str | None = None) -> Host:
    return Host(driver, tuple(target_gpu(g) for g in gpus), arch)


def by_name(fits) -> dict:
    return {f.name: f for f in fits}


def test_the_three_stacks_are_what_the_other_tests_assume(targets):
    laptop, a100, h100 = (stack for _, stack, _ in targets)
    assert laptop.cpu and (a100.cuda, h100.cuda) == ("12.6", "13.0")


def test_a_gpu_host_runs_the_gpu_target_whose_stack_its_driver_runs(targets):
    fits = judge_stacks(matrix(), targets, host("550.54.15", "A100"))
    found = by_name(fits)
    assert found["a100"].fits and not found["a100"].reasons
    assert not found["h100"].fits and found["h100"].reasons[0].startswith("driver 550.54.15 runs")
    assert choose_fit(fits).name == "a100"


def test_a_gpu_host_never_gets_the_cpu_target(targets):
    laptop = by_name(judge_stacks(matrix(), targets, host("550.54.15", "A100")))["laptop"]
    assert not laptop.fits and laptop.cpu
    assert laptop.reasons == ("a CPU target, and this host has a GPU (A100 (sm_80)): it is picked only with "
                              "--target laptop",)


def test_no_target_fits_a_gpu_host_whose_driver_runs_no_gpu_stack(targets):
    fits = judge_stacks(matrix(), targets, host("470.129.06", "T4"))
    assert choose_fit(fits) is None and not any(f.fits for f in fits)


def test_the_target_that_declares_the_hosts_gpu_wins_over_the_configurations_order(targets):
    fits = judge_stacks(matrix(), targets, host("580.65.06", "H100"))
    found = by_name(fits)
    assert found["a100"].fits and found["h100"].fits  # CUDA 12.6 runs on R580 and on Hopper too
    assert found["h100"].declares_host_gpus and not found["a100"].declares_host_gpus
    assert choose_fit(fits).name == "h100"


def test_without_a_declaring_target_the_first_fitting_one_in_the_configuration_wins(targets):
    fits = judge_stacks(matrix(), targets, host("580.65.06", "RTX 4090"))
    assert [f.name for f in fits if f.fits] == ["a100", "h100"]
    assert choose_fit(fits).name == "a100"


def test_a_host_without_a_gpu_runs_the_cpu_target_of_its_cpu(targets):
    fits = judge_stacks(matrix(), targets, Host(arch="x86_64"))
    found = by_name(fits)
    assert choose_fit(fits).name == "laptop"
    assert found["a100"].reasons == ("no NVIDIA GPU on this host",)


def test_a_cpu_target_of_another_cpu_does_not_fit(targets):
    fits = judge_stacks(matrix(), targets, Host(arch="aarch64"))
    assert choose_fit(fits) is None
    assert by_name(fits)["laptop"].reasons == ("built for x86_64 and this host's CPU is aarch64",)


def test_where_names_the_host_in_the_reasons(targets):
    name, stack, declared = targets[0]
    fit = fit_target(matrix(), name, stack, declared, host("550.54.15", "A100", arch="aarch64"), where="this node")
    assert fit.reasons == ("a CPU target, and this node has a GPU (A100 (sm_80)): it is picked only with --target "
                           "laptop", "built for x86_64 and this node's CPU is aarch64")


def test_a_cpu_target_asked_for_by_name_runs_on_a_gpu_host_of_its_cpu(targets):
    name, stack, declared = targets[0]
    assert fit_named(matrix(), name, stack, declared, host("550.54.15", "A100")).fits
    wrong_cpu = fit_named(matrix(), name, stack, declared, host("550.54.15", "A100", arch="aarch64"))
    assert not wrong_cpu.fits and wrong_cpu.reasons == ("built for x86_64 and this host's CPU is aarch64",)


def test_a_gpu_target_asked_for_by_name_still_needs_a_gpu_and_a_driver_it_runs_on(targets):
    name, stack, declared = targets[2]  # h100: CUDA 13.0
    assert not fit_named(matrix(), name, stack, declared, Host(arch="x86_64")).fits
    assert not fit_named(matrix(), name, stack, declared, host("550.54.15", "H100")).fits
    assert fit_named(matrix(), name, stack, declared, host("580.65.06", "H100")).fits


def test_a_host_with_a_gpu_the_target_does_not_declare_is_not_declared_by_it():
    declared = host("535.104.05", "A100")
    assert declares_host_gpus(declared, host("550.54.15", "A100"))
    assert not declares_host_gpus(declared, host("550.54.15", "A100", "T4"))  # every GPU of the host
    assert not declares_host_gpus(Host(cpu=True), host("550.54.15", "A100"))
    assert not declares_host_gpus(declared, Host())


def test_judge_targets_reads_each_targets_locked_stack_and_declared_host(project, targets):
    views = [make_lock(project, stack, matrix_revision=matrix().revision,
                       target=project_target(matrix(), project, name).as_dict(), pinned=[], name=name)
             for name, stack, _ in targets]
    fits = judge_targets(matrix(), project, LockFile.of(views), host("580.65.06", "H100"))
    assert [f.name for f in fits] == ["laptop", "a100", "h100"]
    assert choose_fit(fits).name == "h100"  # only the declared host says h100 declares the H100


def test_the_no_fit_message_names_every_target_and_why(targets):
    fits = judge_stacks(matrix(), targets, host("470.129.06", "T4"))
    message = no_fit_message("cudaenv.lock", "this host (driver 470.129.06, T4 (sm_75), x86_64)", fits)
    assert message.startswith("cudaenv.lock: no target fits this host (driver 470.129.06, T4 (sm_75), x86_64) "
                              "(laptop: a CPU target, and this host has a GPU (T4 (sm_75))")
    assert "; a100: driver 470.129.06 runs" in message and "; h100: driver 470.129.06 runs" in message
    assert message.endswith("pass --target NAME to use one anyway (targets: laptop, a100, h100)")



# --- every field of a fit, the words, and the configuration's order ----------------------------------------


def test_each_fit_is_the_whole_value_the_callers_read(targets):
    from cudaenv.project.which_target import TargetFit

    laptop, a100, h100 = judge_stacks(matrix(), targets, host(None))
    assert laptop == TargetFit("laptop", True, (), False, True)
    assert a100 == TargetFit("a100", False, ("no NVIDIA GPU on this host",), False, False)
    assert h100 == TargetFit("h100", False, ("no NVIDIA GPU on this host",), False, False)
    fits = judge_stacks(matrix(), targets, host("580.65.06", "H100"))
    assert fits[2] == TargetFit("h100", True, (), True, False)  # declares the host's GPU, a GPU target
    assert fits[1] == TargetFit("a100", True, (), False, False)
    assert fits[0] == TargetFit("laptop", False, ("a CPU target, and this host has a GPU (H100 (sm_90)): it is picked "
                                                  "only with --target laptop",), False, True)


def test_a_driver_without_a_gpu_the_matrix_names_is_a_gpu_host_in_so_many_words(targets):
    from cudaenv.project.which_target import TargetFit, describe_host, gpu_words

    driver_only = host("580.65.06")
    assert gpu_words(driver_only) == "an NVIDIA driver, GPU not identified" and gpu_words(host(None)) is None
    assert gpu_words(host("580.65.06", "H100")) == "H100 (sm_90)"
    laptop, a100, _ = judge_stacks(matrix(), targets, driver_only)
    assert laptop == TargetFit("laptop", False, ("a CPU target, and this host has a GPU (an NVIDIA driver, GPU not "
                                                 "identified): it is picked only with --target laptop",), False, True)
    assert a100 == TargetFit("a100", False, ("no GPU this driver reports is in the matrix",), False, False)
    assert describe_host(driver_only) == "this host (driver 580.65.06, GPU not identified, x86_64)"
    assert describe_host(host(None)) == "this host (no NVIDIA driver, no GPU, x86_64)"
    assert describe_host(host("580.65.06", "H100", "A100", arch="aarch64")) == \
        "this host (driver 580.65.06, H100 (sm_90), A100 (sm_80), aarch64)"


def test_a_named_target_is_judged_in_the_callers_words_under_its_own_name(targets):
    from cudaenv.project.which_target import TargetFit

    (name, stack, declared), a100 = targets[0], targets[1]
    assert fit_named(matrix(), name, stack, declared, host("580.65.06"), where="this node") == \
        TargetFit("laptop", True, (), False, True)  # a CPU target asked for by name runs on a GPU host too
    assert fit_named(matrix(), name, stack, declared, host(None, arch="aarch64"), where="this node") == \
        TargetFit("laptop", False, ("built for x86_64 and this node's CPU is aarch64",), False, True)
    assert fit_named(matrix(), *a100, host(None), where="this node") == \
        TargetFit("a100", False, ("no NVIDIA GPU on this node",), False, False)
    assert judge_stacks(matrix(), targets, host("580.65.06", "H100"), named=True)[0].fits  # named: fit_named's rule
    assert not judge_stacks(matrix(), targets, host("580.65.06", "H100"))[0].fits


def test_no_fit_message_names_each_reason_and_the_way_out():
    from cudaenv.project.which_target import TargetFit

    fits = (TargetFit("laptop", False, ("a", "b"), False, True), TargetFit("a100", False, (), False, False))
    assert no_fit_message("cudaenv.toml", "this host (x)", fits) == (
        "cudaenv.toml: no target fits this host (x) (laptop: a, b; a100: does not fit); pass --target NAME to use "
        "one anyway (targets: laptop, a100)")


def test_the_configurations_order_decides_whatever_order_the_lock_holds(project, targets):
    """A lock written before the tables were reordered, or by hand: judged in the configuration's order,
    and a target only the lock names (none here) would come last."""
    views = [make_lock(project, stack, matrix_revision=matrix().revision,
                       target=project_target(matrix(), project, name).as_dict(), pinned=[], name=name)
             for name, stack, _ in reversed(targets)]
    fits = judge_targets(matrix(), project, LockFile.of(views), host("580.65.06", "RTX 4090"))
    assert [f.name for f in fits] == ["laptop", "a100", "h100"]
    assert choose_fit(fits).name == "a100"  # both GPU targets run an RTX 4090 on 580: the first configured
    extra = make_lock(project, targets[1][1], matrix_revision=matrix().revision,
                      target=project_target(matrix(), project, "a100").as_dict(), pinned=[], name="zeta")
    fits = judge_targets(matrix(), project, LockFile.of([extra, *views]), host("580.65.06", "RTX 4090"))
    assert [f.name for f in fits] == ["laptop", "a100", "h100", "zeta"]
