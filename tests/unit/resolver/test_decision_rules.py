"""Rules that decide a stack, each pinned by a case that fails when the rule is changed (issue 25
§3: a mutation run left every one of these alive)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.resolver import driver as drv
from cudaenv.resolver.model import Constraints
from cudaenv.resolver.resolve import _stack_cudnn, resolve
from cudaenv.versions import numeric_key, parse_specifier
from tests.unit.resolver.helpers import codes, constraints, host, matrix, resolve_case


# --- forward compatibility is a last resort ------------------------------------------------------


def test_forward_compatibility_is_not_chosen_while_minor_version_compatibility_runs_a_stack():
    """A100 on R535 with torch unpinned: a cuda-compat CUDA 13 stack with a newer torch exists, but
    a CUDA 12 stack runs through minor-version compatibility, which needs nothing in the image."""
    unpinned = resolve_case(driver="535.104.05", gpus=["A100"], torch="any")
    newest = resolve_case(driver="535.104.05", gpus=["A100"], torch=f"=={_newest_torch()}")
    assert newest.stack is not None and newest.stack.driver_compatibility == drv.FORWARD  # it is there
    assert unpinned.stack.driver_compatibility == drv.MINOR_VERSION
    assert unpinned.stack.cuda.startswith("12.")
    assert numeric_key(unpinned.stack.framework("torch")) < numeric_key(newest.stack.framework("torch"))


def _newest_torch() -> str:
    return max((r.version for r in matrix().torch), key=numeric_key)


def test_a_driver_without_any_gpu_does_not_unlock_forward_compatibility():
    """Forward compatibility needs data-center GPUs; a host with no GPU named has none to vouch for."""
    pin = f"=={_newest_torch()}"
    alone = resolve_case(driver="535.104.05", torch=pin)
    assert alone.stack is None and "driver-too-old" in codes(alone)
    with_a100 = resolve_case(driver="535.104.05", gpus=["A100"], torch=pin)
    assert with_a100.stack is not None and with_a100.stack.driver_compatibility == drv.FORWARD


def test_a_host_without_gpus_is_not_all_data_center():
    assert host("535.104.05").all_datacenter is False
    assert host("535.104.05", ["A100"]).all_datacenter is True
    assert host("535.104.05", ["A100", "RTX 4090"]).all_datacenter is False


# --- no PTX JIT under minor-version compatibility ------------------------------------------------


def test_h100_on_the_cuda_12_floor_driver_cannot_jit_tensorflows_cuda_12_2_ptx():
    """TensorFlow's CUDA 12.2 build carries no sm_90 SASS, only PTX; R525.60.13 runs CUDA 12.2 only
    through minor-version compatibility, where the driver cannot JIT newer PTX: refused."""
    refused = resolve_case(driver="525.60.13", gpus=["H100"], tensorflow="any", cuda="==12.2")
    assert refused.stack is None and "gpu-unsupported-by-build" in codes(refused)
    native = resolve_case(driver="535.104.05", gpus=["H100"], tensorflow="any", cuda="==12.2")
    assert native.stack is not None and native.stack.driver_compatibility == drv.NATIVE  # PTX JIT: it runs


# --- a project file decides what no flag names ---------------------------------------------------


def test_a_stack_flag_keeps_the_projects_flavor():
    project = Constraints(flavor="devel", os="ubuntu22.04")
    flags = constraints(torch="2.6")
    merged = project.merged(flags)
    assert merged.flavor == "devel" and merged.os == "ubuntu22.04" and merged.spec("torch") == parse_specifier("2.6")
    result = resolve(matrix(), merged, host("550.54.15", ["A100"]))
    assert result.stack.flavor == "devel" and "-devel-" in result.stack.base_image


def test_the_os_flag_wins_over_the_projects_os():
    merged = Constraints(os="ubuntu22.04", flavor="runtime").merged(Constraints(os="ubuntu24.04"))
    assert merged.os == "ubuntu24.04" and merged.flavor == "runtime"
    result = resolve(matrix(), replace(merged, cuda=parse_specifier("12.8")), host("570.124.06"))
    assert result.stack.base_image.endswith("ubuntu24.04")


def test_a_flavor_flag_wins_over_the_projects_flavor():
    assert Constraints(flavor="devel").merged(Constraints(flavor="runtime")).flavor == "runtime"


# --- the base image satisfies the larger system cuDNN need ---------------------------------------


def _builds(framework: str, predicate):
    from cudaenv.matrix.builds import framework_builds

    return next(b for b in framework_builds(matrix())[framework] if predicate(b))


def test_two_frameworks_on_the_system_cudnn_need_the_larger_of_their_versions():
    tensorflow = _builds("tensorflow", lambda b: not b.brings_own_cuda and b.cudnn == "8.6")
    jax_local = _builds("jax", lambda b: not b.brings_own_cuda and b.cudnn_range is not None
                        and str(b.cudnn_range) in ("<9,>=8.2", ">=8.2,<9"))
    for chosen in ([tensorflow, jax_local], [jax_local, tensorflow]):
        version, need = _stack_cudnn(chosen)
        assert need == "8.6" and version == "8.6"
    lower = replace(tensorflow, cudnn="8.1")
    assert _stack_cudnn([lower, jax_local])[1] == "8.2"  # the range's floor is the larger need now


# --- what an unknown version is told: the nearest ones by version order ---------------------------

KNOWN = ["2.4.0", "2.4.1", "2.5.0", "2.5.1", "2.6.0", "2.14.1", "1.13.1", "2.4.2", "2.4.3"]


@pytest.mark.parametrize("wanted, nearest", [
    ("2.4.99", ["2.4.1", "2.4.2", "2.4.3"]),  # the series, the three nearest below it
    ("2.4.0", ["2.4.0", "2.4.1", "2.4.2"]),
    ("2.4.2", ["2.4.1", "2.4.2", "2.4.3"]),  # one below, itself, one above
    ("2.4.*", ["2.4.0", "2.4.1", "2.4.2"]),  # a wildcard is its series
    ("2.5.7", ["2.5.0", "2.5.1"]),  # a series shorter than three: all of it
    ("2.7.0", ["2.6.0", "2.14.1"]),  # no such series: the nearest below and above, in version order
    ("3.0", ["2.14.1"]),  # nothing above
    ("1.0", ["1.13.1"]),  # nothing below
    ("not a version", []),
])
def test_an_unknown_version_is_offered_its_nearest_releases_in_version_order(wanted, nearest):
    from cudaenv.resolver.resolve import nearest_versions

    assert nearest_versions(wanted, KNOWN) == nearest


def _with_variant(name: str, pin: str, tag: str, **host_kw):
    return resolve(matrix(), replace(constraints(**{name: pin}), variants=((name, tag),)),
                   host(host_kw.get("driver"), host_kw.get("gpus", ())))


def test_a_local_build_pin_names_the_builds_that_were_published():
    from cudaenv.errors import UserError

    with pytest.raises(UserError) as caught:
        _with_variant("torch", "==2.6.0", "cu999")
    assert str(caught.value) == ("torch 2.6.0+cu999: no such build was published; torch 2.6.0 is built for cu118, "
                                 "cu124, cu126 (see `cudaenv matrix list torch`)")
    assert caught.value.field == "frameworks.torch"


def test_a_companion_pin_of_a_local_build_names_the_companion_release():
    from cudaenv.errors import UserError

    with pytest.raises(UserError) as caught:
        _with_variant("torchvision", "==0.21.0", "cu999")
    assert str(caught.value) == ("torchvision 0.21.0+cu999: no such build was published; torchvision 0.21.0 is "
                                 "built for cu118, cu124, cu126 (see `cudaenv matrix list torch`)")


def test_a_published_local_build_resolves_to_it():
    result = _with_variant("torch", "==2.6.0", "cu124", driver="550.54.15", gpus=["A100"])
    assert result.stack.framework("torch") == "2.6.0" and result.stack.cuda == "12.4"


def test_a_project_without_a_framework_may_ask_for_any_python_between_the_oldest_and_newest():
    """No framework constrains Python, so each minor from the lowest to the highest that the newest
    framework builds run on is offered: Python 3.9 is no framework's newest build's (MXNet's stops at
    3.8, the others start at 3.10) yet is one a CUDA runtime project may use."""
    from cudaenv.matrix.builds import framework_builds
    from tests.unit.resolver.helpers import matrix

    newest = {p for rows in framework_builds(matrix()).values() for p in rows[0].python}
    assert "3.9" not in newest
    result = resolve_case(python="3.9", cuda="==12.4", driver="550.54.15")
    assert result.ok and result.stack.python == "3.9"
    assert resolve_case(cuda="==12.4", driver="550.54.15").stack.python == max(newest, key=numeric_key)


def test_an_os_without_apt_is_bad_input_naming_the_ubuntu_ones():
    """centos7 is an nvidia/cuda OS in the matrix, but the image layers run apt-get: refused up front."""
    from cudaenv.resolver.resolve import UnknownVersion, check_versions_exist

    with pytest.raises(UnknownVersion) as caught:
        check_versions_exist(matrix(), constraints(os="centos7"))
    ubuntu = sorted({o for i in matrix().images for o in i.os if o.startswith("ubuntu")})
    assert str(caught.value) == ("os 'centos7': cudaenv's image layers install packages with apt-get, so the base must "
                                 f"be an Ubuntu nvidia/cuda image (known: {', '.join(ubuntu)})")
    assert caught.value.field == "build.os"
    check_versions_exist(matrix(), constraints(os="ubuntu22.04"))


def test_a_cudnn_only_centos_images_carry_is_not_chosen():
    """cuDNN 7.6.5.33 was only in CUDA 10.2's CentOS/UBI cudnn7 tags: no stack, rather than a base
    the Dockerfile's apt-get cannot build on."""
    result = resolve_case(cudnn="7.6.5.33", driver="535.104.05", gpus=["V100"])
    assert not result.ok
    offered = [(i.cuda, c.os) for i in matrix().images for c in i.cudnn if c.version == "7.6.5.33"]
    assert offered and all(not o.startswith("ubuntu") for _, oses in offered for o in oses)


@pytest.mark.parametrize("builds, expected", [
    # the newest build's range, 3.9-3.10: a later Python an older build had (3.15) is not offered
    ({"x": [("3.9", "3.10"), ("3.8", "3.15")]}, {"3.9", "3.10"}),
    # versions compare as versions: 3.10 is above uv's 3.8 (as text it is below), so 3.9 stays out
    ({"x": [("3.10", "3.11")], "y": [("3.10",), ("3.9",)]}, {"3.10", "3.11"}),
    # below 3.8 uv installs nothing: the floor is 3.8 however old the newest builds go
    ({"x": [("3.5", "3.6", "3.7", "3.8", "3.9")]}, {"3.8", "3.9"}),
], ids=["newest-build-range", "compared-as-versions", "uv-floor"])
def test_runtime_pythons_span_the_newest_builds_from_what_uv_installs(monkeypatch, builds, expected):
    from types import SimpleNamespace

    from cudaenv.resolver import resolve as resolve_module

    table = {name: [SimpleNamespace(python=pythons) for pythons in rows] for name, rows in builds.items()}
    monkeypatch.setattr(resolve_module, "framework_builds", lambda matrix: table)
    assert resolve_module._runtime_pythons(None) == expected
