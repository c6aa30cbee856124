"""How the search builds a stack out of framework builds: which cuDNN the environment holds, which
pins clash, which builds are tried first and which Python is kept (issue 25 §3)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.specifiers import SpecifierSet

from cudaenv.matrix.builds import framework_builds
from cudaenv.resolver.resolve import (_Context, _cudnn_demands, _range_floor, _search_xy, _stack_cudnn, pin_conflicts)
from tests.unit.resolver.helpers import constraints, host, matrix, resolve_case


def _build(**kw):
    """A torch build of the shipped matrix with the fields a rule reads replaced."""
    base = next(b for b in framework_builds(matrix())["torch"] if b.version == "2.6.0" and "12.6" in b.cuda)
    defaults = dict(pins=(), cudnn=None, cudnn_range=None, brings_own_cuda=True)
    return replace(base, **{**defaults, **kw})


def test_cudnn_demands_are_the_nvidia_cudnn_pins_else_the_bundled_version_plus_a_declared_range():
    """One environment holds one cuDNN: every way a build states its cuDNN is one demand."""
    assert _cudnn_demands(_build(pins=(("nvidia-cudnn-cu12", "==9.1.0.70"), ("nvidia-cublas-cu12", "==12.4.5.8")),
                                 cudnn="9.1")) == [("nvidia-cudnn-cu12", "==9.1.0.70")]
    assert _cudnn_demands(_build(cudnn="9.1")) == [("cuDNN", "==9.1")]
    assert _cudnn_demands(_build(cudnn="8.9", brings_own_cuda=False)) == []  # the image's cuDNN: checked elsewhere
    assert _cudnn_demands(_build(cudnn_range=SpecifierSet(">=9.0,<10"))) == [("cuDNN", "<10,>=9.0")]
    assert _cudnn_demands(_build(cudnn_range=SpecifierSet())) == []


def test_a_pair_reports_every_clash_an_nvidia_pin_and_its_cudnn():
    """Both clashes are named: the user must move both, not one."""
    a = _build(pins=(("nvidia-cublas-cu12", "==12.1.3.1"),), cudnn="8.9")
    b = _build(pins=(("nvidia-cublas-cu12", "==12.4.5.8"),), cudnn="9.1")
    assert pin_conflicts([a, b]) == [("nvidia-cublas-cu12", a, "==12.1.3.1", b, "==12.4.5.8"), ("cuDNN", a, "==8.9", b, "==9.1")]


def test_the_stacks_cudnn_is_a_bundled_one_else_the_system_need_else_a_range_floor():
    """What the report shows as the stack's cuDNN, and what a base image must provide."""
    system = _build(cudnn="8.6", brings_own_cuda=False)
    assert _stack_cudnn([system, _build(cudnn="9.1")]) == ("9.1", "8.6")
    assert _stack_cudnn([system, _build(cudnn="8.10", brings_own_cuda=False)]) == ("8.10", "8.10")  # version order
    assert _stack_cudnn([_build(cudnn_range=SpecifierSet(">=9.1,<10"))]) == ("9.1", None)
    assert _stack_cudnn([_build()]) == (None, None)


def test_a_range_floor_is_its_highest_lower_bound_or_pin():
    assert _range_floor(SpecifierSet("==9.1")) == "9.1"
    assert _range_floor(SpecifierSet("~=8.9")) == "8.9"
    assert _range_floor(SpecifierSet(">=9.9,>=9.10,<11")) == "9.10"
    assert _range_floor(SpecifierSet("<10")) is None and _range_floor(None) is None


def test_an_established_build_is_tried_before_a_newer_one_nobody_showed_was_published():
    """A doubtful build is chosen only when no published one fits."""
    c, h = constraints(torch="any"), host("560.35.03", ["A100"])
    builds = [b for b in framework_builds(matrix())["torch"] if "12.6" in b.cuda]
    newest, older = builds[0], next(b for b in builds if b.version != builds[0].version)
    stacks = _search_xy(_Context(matrix(), c, h), "12.6", {"torch": [replace(newest, established=False), older]})
    assert stacks and stacks[0].framework("torch") == older.version


@pytest.mark.parametrize("python", ["3.8", "3.9"])
def test_an_older_release_is_tried_when_the_newest_lacks_the_python_asked_for(python):
    """torch's newest builds have no Python 3.8 or 3.9 wheels; an older release that has them is the answer."""
    result = resolve_case(torch="any", python=python, driver="560.35.03", gpus=["A100"])
    assert result.ok and result.stack.python == python
    assert python in next(b for b in framework_builds(matrix())["torch"] if b.version == result.stack.framework("torch")).python


def test_the_wheels_flavor_runs_natively():
    """flavor 'wheels' is refused only for forward compatibility, not on a driver that runs the CUDA natively."""
    result = resolve_case(torch="2.6.0", flavor="wheels", driver="560.35.03", gpus=["A100"])
    assert result.ok and result.stack.flavor == "wheels" and result.stack.driver_compatibility == "native"


def test_the_cuda_versions_searched_are_the_shared_ones_newest_first_in_version_order():
    """Newest CUDA first (12.10 before 10.0 before 9.2), and only the x.y every framework is built for."""
    from cudaenv.resolver.resolve import _cuda_candidates

    ctx = _Context(matrix(), constraints(torch="any", jax="any"), host())
    torch, jax = _build(cuda=("9.2", "10.0", "12.10", "11.8")), _build(cuda=("9.2", "10.0", "12.10"))
    assert _cuda_candidates(ctx, {"torch": [torch], "jax": [jax]}) == ["12.10", "10.0", "9.2"]


def test_a_build_that_records_no_companion_cannot_satisfy_a_companion_pin():
    """torchvision pinned: a torch build with no torchvision recorded is not a candidate."""
    from cudaenv.resolver.resolve import _companion_ok

    c = constraints(torch="any", torchvision="==0.21.0")
    assert _companion_ok(_build(), c)  # torch 2.6.0 records torchvision 0.21.0
    assert not _companion_ok(_build(companions=()), c)


def _pair_of_frameworks():
    """torch builds for Python 3.8 (no pins) and 3.12 (cuBLAS 12.1), a jax build for 3.12 (cuBLAS 12.4) on CUDA 12.4."""
    old = _build(python=frozenset({"3.8"}), cuda=("12.4",))
    new = _build(python=frozenset({"3.12"}), cuda=("12.4",), pins=(("nvidia-cublas-cu12", "==12.1.3.1"),))
    jax = _build(python=frozenset({"3.12"}), cuda=("12.4",), pins=(("nvidia-cublas-cu12", "==12.4.5.8"),))
    return old, new, jax


def test_the_pin_conflict_reported_is_the_first_among_combinations_that_share_a_python():
    """A combination without a shared Python is skipped, not taken for a conflict-free one; a CUDA for which
    one framework has no build is skipped, not the end of the search."""
    from cudaenv.resolver.resolve import _first_pin_conflict

    ctx = _Context(matrix(), constraints(torch="any", jax="any"), host())
    old, new, jax = _pair_of_frameworks()
    usable = {"torch": [old, new], "jax": [jax]}
    expected = ("nvidia-cublas-cu12", new, "==12.1.3.1", jax, "==12.4.5.8")
    assert _first_pin_conflict(ctx, usable, ["12.4"]) == expected
    assert _first_pin_conflict(ctx, {"torch": [old, new], "jax": [replace(jax, cuda=("12.4",))]}, ["12.6", "12.4"]) == expected
    assert _first_pin_conflict(ctx, usable, ["12.4"], cap=1) is None  # the cap bounds the combinations tried
    assert _first_pin_conflict(ctx, {"torch": [old], "jax": [jax]}, ["12.4"]) is None  # no shared Python: no conflict
