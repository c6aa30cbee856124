"""Properties of the resolver over the whole matrix (hypothesis draws projects and hosts)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudaenv.resolver import driver as drv
from cudaenv.resolver import gpu as gpu_rules
from cudaenv.matrix.builds import framework_builds
from cudaenv.resolver.resolve import driver_candidates, resolve
from cudaenv.versions import specifier_contains
from tests.unit.resolver.helpers import constraints, host, matrix

M = matrix()
GPU_NAMES = [g.name for g in M.gpus]
DRIVERS = driver_candidates(M) + ["470.82.01", "535.104.05", "550.54.15", "570.124.06", "580.65.06"]


@st.composite
def projects(draw):
    kw = {}
    for framework in draw(st.sets(st.sampled_from(["torch", "tensorflow", "jax"]), min_size=0, max_size=2)):
        # jax 0.3.18: no pin can install it, so its exact pin is bad input (test_yanked_releases says why)
        releases = [r for r in getattr(M, framework) if not getattr(r, "uninstallable", None)]
        release = draw(st.sampled_from(releases))
        kw[framework] = draw(st.sampled_from([f"=={release.version}", f">={release.version}", "any"]))
        if draw(st.booleans()):
            kw["python"] = draw(st.sampled_from(list(release.python)))
    if draw(st.booleans()):
        kw["cuda"] = draw(st.sampled_from([f">={xy}" for xy in M.cuda_minors[-12:]] + list(M.cuda_minors[-12:])))
    kw["flavor"] = draw(st.sampled_from(["auto", "auto", "wheels", "runtime"]))
    return kw


@st.composite
def hosts(draw):
    driver = draw(st.none() | st.sampled_from(DRIVERS))
    gpus = draw(st.lists(st.sampled_from(GPU_NAMES), max_size=2))
    return driver, gpus


def _chosen_builds(stack):
    builds = framework_builds(M)
    chosen = []
    for name, version in stack.frameworks:
        if name in builds:
            options = [b for b in builds[name] if b.version == version and stack.cuda in b.cuda
                       and set(b.requirements) <= set(stack.requirements)]
            assert options, f"{name} {version} has no build for CUDA {stack.cuda}"
            chosen.append(options)
    return chosen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects(), hosts())
def test_every_returned_stack_satisfies_every_constraint_and_rule(project, target):
    driver, gpus = target
    c = constraints(**project)
    h = host(driver, gpus)
    result = resolve(M, c, h, explain=False)
    if not result.ok:
        assert result.valid_cuda == () and result.problems
        return
    s = result.stack
    assert s.cuda in result.valid_cuda
    for name, spec in c.frameworks:
        assert specifier_contains(spec, s.framework(name)), (name, spec, s.frameworks)
    if c.python is not None:
        assert specifier_contains(c.python, s.python)
    if c.cuda is not None:
        assert specifier_contains(c.cuda, s.cuda)
    if c.flavor != "auto":
        assert s.flavor == c.flavor
    if driver is not None:
        mode = drv.driver_mode(M, driver, s.cuda, all_datacenter=h.all_datacenter)
        assert mode is not None and mode == s.driver_compatibility
    for g in h.gpus:  # the release's own libraries run on it (NVIDIA's binary/PTX compatibility rule)
        assert gpu_rules.toolkit_runs_on(M, s.cuda, g.compute_capability,
                                         ptx_jit=s.driver_compatibility != drv.MINOR_VERSION)
        if driver is not None:
            assert gpu_rules.driver_supports_architecture(M, driver, g) is not False
    ptx_jit = s.driver_compatibility != drv.MINOR_VERSION
    for options in _chosen_builds(s):
        assert any(s.python in b.python for b in options)
        assert any(all(gpu_rules.build_runs_on(b.sass, b.ptx, g.compute_capability, ptx_jit=ptx_jit) is not False
                       for g in h.gpus) for b in options)
    if s.flavor == "wheels":
        assert s.brings_own_cuda and s.base_image == f"python:{s.python}-slim"
    else:
        assert s.base_image.startswith(f"nvidia/cuda:{s.cuda}.") or s.base_image.startswith(f"nvidia/cuda:{s.cuda}-")


@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax", "mxnet"])
def test_every_framework_release_resolves_for_some_host(framework):
    """Every release resolves, except one whose Pythons all predate what uv can install in an
    nvidia/cuda image and that no Ubuntu archive in the matrix has (matrix/images.toml [[os]]): it
    is refused and says so. A release whose only Pythons are older than uv's (MXNet 1.4-1.6: Python
    <= 3.7) gets its Python from ubuntu18.04's archive, and the stack names the packages."""
    from cudaenv.resolver.images import cuda_base, uv_installs

    failures, refused = [], []
    for release in getattr(M, framework):
        if getattr(release, "uninstallable", None):  # jax 0.3.18: no pin can install it (its own test says so)
            continue
        result = resolve(M, constraints(**{framework: f"=={release.version}"}), host(), explain=False)
        if result.ok and not uv_installs(result.stack.python) and result.stack.flavor != "wheels":
            assert result.stack.python_packages == (f"python{result.stack.python}", "python3-distutils")
            assert result.stack.base_image.endswith("-ubuntu18.04"), result.stack.base_image
        if not any(uv_installs(p) or any(p in o.python for o in M.os_releases) for p in release.python):
            refused.append(release.version)
            assert not result.ok
            assert "python-uv" in [p.code for p in resolve(M, constraints(**{framework: f"=={release.version}"}),
                                                           host()).problems]
        elif not result.ok and framework == "tensorflow" and cuda_base(M, "runtime", release.cuda, cudnn=None,
                                                                        os_name=None) is None:
            # TensorFlow 1.0-1.12 need CUDA 8.0/9.0, whose images are Ubuntu 16.04 or older: no archive
            # of theirs has an init (matrix/images.toml [[os]]), so there is no base to build on
            assert "no-base-image" in [p.code for p in resolve(M, constraints(**{framework: f"=={release.version}"}),
                                                               host()).problems]
        elif not result.ok:
            failures.append(release.version)
    assert failures == []
    assert len(refused) < len(getattr(M, framework))  # the newer ones still resolve


def test_every_torch_cuda_variant_resolves_when_asked_for():
    failures = []
    for release in M.torch:
        for variant in release.variants:
            c = constraints(torch=f"=={release.version}", cuda=variant.cuda)
            result = resolve(M, c, host(), explain=False)
            if not (result.ok and result.stack.cuda == variant.cuda):
                failures.append(f"{release.version}+{variant.tag}")
    assert failures == []


def test_resolution_is_deterministic():
    c = constraints(torch=">=2.0", tensorflow="any")
    h = host("535.104.05", ["A100"])
    first = resolve(M, c, h).as_dict()
    assert all(resolve(M, c, h).as_dict() == first for _ in range(3))
