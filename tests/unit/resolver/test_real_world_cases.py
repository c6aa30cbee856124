"""Real-world resolution cases. Each expected answer names its source in a comment; the facts
behind them live in the matrix, so these tests pin the resolver's rules, not hard-coded stacks."""

from __future__ import annotations

import pytest

from cudaenv.resolver.resolve import UnknownVersion
from tests.unit.resolver.helpers import codes, resolve_case

# --- axis 1: driver <-> CUDA ------------------------------------------------------------------


def test_torch_2_6_on_r535_offers_its_three_cuda_builds():
    # PyTorch 2.6 release matrix: CUDA 11.8, 12.4, 12.6. R535 runs 12.2 natively and every 12.x through
    # minor-version compatibility (NVIDIA CUDA Compatibility guide: 12.x >= 525.60.13).
    # Issue 16: between builds of the same version, the one the driver runs natively wins (11.8) over
    # the newer ones it runs only through minor-version compatibility; --cuda asks for those anyway.
    r = resolve_case(torch="2.6.0", driver="535.104.05", gpus=["A100"])
    assert r.ok
    assert set(r.valid_cuda) == {"11.8", "12.4", "12.6"}
    assert r.stack.cuda == "11.8" and r.stack.driver_compatibility == "native"
    asked = resolve_case(torch="2.6.0", cuda=">=12", driver="535.104.05", gpus=["A100"])
    assert asked.stack.cuda == "12.6" and asked.stack.driver_compatibility == "minor-version"
    assert "minor-version-compatibility" in codes(asked)


def test_native_cuda_12_8_wins_over_minor_version_12_9_on_r570():
    # Issue 16's case: R570 runs 12.8 natively (570.26 is 12.8's minimum, NVIDIA Table 3) and 12.9 only
    # through minor-version compatibility.
    r = resolve_case(torch="2.8.0", driver="570.124.06", gpus=["T4"])
    assert r.ok and r.stack.driver_compatibility == "native" and r.stack.cuda == "12.8"


def test_torch_2_6_on_r470_only_runs_cuda_11_8():
    # R470 reports CUDA 11.4; 11.8 runs through minor-version compatibility (11.x >= 450.80.02);
    # 12.x needs >= 525.60.13 (NVIDIA CUDA Compatibility guide).
    r = resolve_case(torch="2.6.0", driver="470.82.01", gpus=["A100"])
    assert r.ok and r.valid_cuda == ("11.8",)
    assert r.stack.index_urls == ("https://download.pytorch.org/whl/cu118",)


def test_torch_2_9_needs_a_newer_driver_than_r470():
    # PyTorch 2.9 builds: CUDA 12.6, 12.8, 13.0 (RELEASE.md). Nothing of CUDA 12 runs below 525.60.13.
    r = resolve_case(torch="2.9.0", driver="470.82.01", gpus=["A100"])
    assert not r.ok
    assert "driver-too-old" in codes(r)
    assert any(p.code == "fix-driver" and "525.60.13" in p.message for p in r.problems)


def test_driver_too_old_for_any_cuda_major_is_explained_in_driver_terms():
    # R418 reports CUDA 10.1 (Table 3: 10.1 >= 418.39); CUDA 11 minor-version compatibility needs >= 450.80.02.
    r = resolve_case(torch="2.0.1", driver="418.87.01", gpus=["V100"])
    assert not r.ok
    message = next(p.message for p in r.problems if p.code == "driver-too-old")
    assert "CUDA <= 10.1 natively" in message and "11.7, 11.8" in message


def test_native_on_a_new_enough_driver():
    # CUDA 12.4 GA needs >= 550.54.14 (Table 3); R550 runs it natively.
    r = resolve_case(torch="2.6.0", cuda="12.4", driver="550.54.15", gpus=["H100"])
    assert r.ok and r.stack.driver_compatibility == "native"
    assert r.stack.min_driver == "550.54.14"


def test_unknown_driver_still_resolves_and_names_the_minimum():
    # CUDA 12.6 GA needs >= 560.28.03 natively (Table 3), >= 525.60.13 through minor-version compatibility.
    r = resolve_case(torch="2.6.0", gpus=["A100"])
    assert r.ok and r.stack.driver_compatibility is None
    assert (r.stack.min_driver, r.stack.min_driver_compat) == ("560.28.03", "525.60.13")
    assert "driver-unknown" in codes(r)


def test_forward_compatibility_on_a_datacenter_gpu():
    # PyTorch 2.15 is built for CUDA 13.0/13.2 only; R535 predates 13.x, but NVIDIA's forward-compatibility
    # matrix supports cuda-compat 13.x on R535 for data-center GPUs.
    r = resolve_case(torch="2.15.0", driver="535.104.05", gpus=["H100"])
    assert r.ok and r.stack.driver_compatibility == "forward"
    assert r.stack.flavor == "runtime" and r.stack.base_image.startswith("nvidia/cuda:13.")
    assert "forward-compatibility" in codes(r)


def test_no_forward_compatibility_for_a_geforce_gpu():
    # Forward compatibility is for data-center GPUs only (CUDA Compatibility guide).
    r = resolve_case(torch="2.15.0", driver="535.104.05", gpus=["RTX 4090"])
    assert not r.ok and "driver-too-old" in codes(r)
    # 13.x runs on any R580 driver through minor-version compatibility (NVIDIA gives only the branch)
    assert any(p.code == "fix-driver" and "R580" in p.message for p in r.problems)


# --- axis 2: GPU <-> build ----------------------------------------------------------------------


def test_h100_cannot_run_torch_1_13_1_builds():
    # torch 1.13.1's cu116/cu117 wheels carry SASS up to sm_86 and no PTX (matrix/torch.toml, from the wheels):
    # Hopper (sm_90) is a newer major, so nothing in them runs there ("no kernel image is available").
    r = resolve_case(torch="1.13.1", driver="535.104.05", gpus=["H100"])
    assert not r.ok and "gpu-unsupported-by-build" in codes(r)
    assert any(p.code == "fix-relax-pin" for p in r.problems)


def test_h100_with_cuda_11_7_pinned_runs_only_builds_that_carry_ptx():
    # CUDA 11.7's libraries reach sm_90 only through PTX JIT (CUDA C++ Programming Guide, PTX compatibility);
    # every torch release built for 11.7 lacks sm_90 SASS and PTX, so pinning 11.7 finds no torch for Hopper.
    r = resolve_case(torch="any", cuda="11.7", driver="535.104.05", gpus=["H100"])
    assert not r.ok and "gpu-unsupported-by-build" in codes(r)


def test_k80_cannot_use_cuda_12():
    # CUDA 12.0 removed Kepler (sm_35/sm_37) support (CUDA 12.0 release notes).
    r = resolve_case(torch="any", cuda=">=12", driver="470.82.01", gpus=["K80"])
    assert not r.ok and "gpu-unsupported-by-cuda" in codes(r)


def test_k80_on_r470_gets_a_cuda_11_build_that_carries_sm_37():
    # Kepler is supported up to R470; PyTorch's CUDA 11.x builds kept sm_37 (RELEASE.md / builder scripts).
    r = resolve_case(torch="any", driver="470.82.01", gpus=["K80"])
    assert r.ok and r.stack.cuda.startswith("11.")
    assert "3.7" in r.stack.compute_capabilities


def test_kepler_gpu_with_a_driver_past_r470_is_a_host_problem():
    # NVIDIA: R470 is the last driver branch supporting Kepler.
    r = resolve_case(torch="any", driver="535.104.05", gpus=["K80"])
    assert not r.ok and codes(r) == ["driver-drops-architecture"]
    assert "R470" in r.problems[0].message


def test_pascal_with_a_build_that_dropped_sm_60():
    # PyTorch 2.8 CUDA 12.8 builds start at sm_70 (RELEASE.md); the CUDA 12.6 build still has sm_50/sm_60.
    r = resolve_case(torch="2.8.0", cuda="12.8", driver="570.124.06", gpus=["GTX 1080"])
    assert not r.ok and "gpu-unsupported-by-build" in codes(r)
    ok = resolve_case(torch="2.8.0", driver="570.124.06", gpus=["GTX 1080"])
    assert ok.ok and ok.stack.cuda == "12.6"


def test_volta_dropped_from_cu128_in_torch_2_11():
    # PyTorch 2.11: Volta removed from the CUDA 12.8 build (pytorch/pytorch#172598).
    r = resolve_case(torch="2.11.0", cuda="12.8", driver="580.65.06", gpus=["V100"])
    assert not r.ok and "gpu-unsupported-by-build" in codes(r)


def test_blackwell_consumer_gpu_needs_cuda_12_8_builds():
    # RTX 5090 is sm_120 (NVIDIA CUDA GPUs); torch 2.6.0's builds stop at sm_90 with no PTX (matrix/torch.toml);
    # PyTorch 2.7 added cu128 builds with sm_120.
    r = resolve_case(torch="2.6.0", driver="570.124.06", gpus=["RTX 5090"])
    assert not r.ok and "gpu-unsupported-by-build" in codes(r)
    newer = resolve_case(torch=">=2.7", driver="570.124.06", gpus=["RTX 5090"])
    assert newer.ok and newer.stack.cuda in ("12.8", "12.9")
    assert "12.0" in newer.stack.compute_capabilities


def test_sass_for_a_lower_minor_runs_on_a_higher_minor_of_the_same_major():
    # CUDA C Programming Guide (binary compatibility): cubin for X.y runs on X.z, z >= y. sm_80 -> A10 (8.6).
    r = resolve_case(torch="2.0.1", driver="535.104.05", gpus=["A10"])
    assert r.ok


# --- axis 3: framework <-> CUDA / cuDNN / Python ------------------------------------------------


def test_python_outside_published_wheels():
    # torch 1.13.1 published Linux wheels for CPython 3.7–3.11 (PyPI file list).
    r = resolve_case(torch="1.13.1", python="3.12", driver="525.60.13", gpus=["A100"])
    assert not r.ok and "python-unavailable" in codes(r)
    assert "3.7–3.11" in r.problems[0].message
    assert any(p.code == "fix-python" for p in r.problems)


def test_newest_python_all_frameworks_share_is_chosen():
    # torch 2.6.0 wheels: CPython 3.9–3.13 (PyPI).
    r = resolve_case(torch="2.6.0", driver="560.35.03", gpus=["A100"])
    assert r.stack.python == "3.13"


def test_tensorflow_and_torch_without_a_shared_cuda():
    # TF 2.15 tested configuration: CUDA 12.2; torch 2.0.1: CUDA 11.7/11.8 (PyTorch release matrix).
    r = resolve_case(tensorflow="2.15.1", torch="2.0.1", driver="535.104.05", gpus=["A100"])
    assert not r.ok and "no-common-cuda" in codes(r)
    assert any(p.code == "fix-relax-pin" and "tensorflow" in p.message for p in r.problems)


def test_tensorflow_and_torch_sharing_cuda_11_8():
    # TF 2.14 tested configuration: CUDA 11.8, cuDNN 8.7; torch 2.0.1 has a cu118 build.
    r = resolve_case(tensorflow="2.14.1", torch="2.0.1", driver="535.104.05", gpus=["A100"])
    assert r.ok and r.stack.cuda == "11.8"
    assert r.stack.framework("tensorflow") == "2.14.1" and r.stack.framework("torch") == "2.0.1"


def test_tensorflow_2_15_with_and_cuda_is_a_wheels_stack():
    # tensorflow[and-cuda]==2.15.1 pins nvidia-cudnn-cu12==8.9.4.25 and CUDA 12.2 runtime wheels (PyPI METADATA).
    r = resolve_case(tensorflow="2.15.1", driver="535.104.05", gpus=["A100"])
    assert r.ok and r.stack.flavor == "wheels" and r.stack.cuda == "12.2"
    assert r.stack.cudnn == "8.9" and r.stack.driver_compatibility == "native"
    assert r.stack.requirements == ("tensorflow[and-cuda]==2.15.1",)


def test_tensorflow_2_11_needs_the_system_cudnn_of_a_runtime_image():
    # TF 2.11 tested configuration: CUDA 11.2, cuDNN 8.1; no [and-cuda] extra before 2.14.
    r = resolve_case(tensorflow="2.11.0", driver="470.82.01", gpus=["T4"])
    assert r.ok and r.stack.flavor == "runtime" and r.stack.cuda == "11.2"
    assert r.stack.base_image.startswith("nvidia/cuda:11.2.") and "-cudnn8-runtime-" in r.stack.base_image


def test_tensorflow_2_4_runs_on_hopper_through_its_ptx():
    # TF 2.4 (CUDA 11.0) cannot be *compiled* for sm_90, but its wheel carries compute_80 PTX
    # (matrix/tensorflow.toml), which the driver JIT-compiles for a newer GPU (CUDA C++ Programming Guide,
    # "Just-in-Time Compilation"): it runs on an H100 where the driver runs CUDA 11.0 natively.
    r = resolve_case(tensorflow="2.4.0", driver="535.104.05", gpus=["H100"])
    assert r.ok and r.stack.driver_compatibility == "native"


def test_the_rtx_4090_runs_the_cu117_build_of_torch_2_0_1():
    # Issue 16: torch 2.0.1's default PyPI build is cu117, carrying sm_86 SASS (matrix/torch.toml); by NVIDIA's
    # binary-compatibility rule SASS for 8.6 runs on 8.9 (CUDA C++ Programming Guide, "Binary Compatibility").
    r = resolve_case(torch="2.0.1", python="3.10", driver="535.104.05", gpus=["RTX 4090"])
    assert r.ok and "11.7" in r.valid_cuda and "11.8" in r.valid_cuda


@pytest.mark.parametrize("torch,gpu,cudas", [("1.13.1", "RTX 4090", {"11.6", "11.7"}), ("1.12.1", "L4", {"11.3", "11.6"}),
                                             ("1.13.1", "L4", {"11.6", "11.7"})])
def test_ada_gpus_run_the_sm_86_builds_of_older_torch(torch, gpu, cudas):
    # The same rule for torch 1.12.1 / 1.13.1 (cu113/cu116/cu117 builds with sm_86 SASS) on Ada (sm_89).
    r = resolve_case(torch=torch, python="3.10", driver="535.104.05", gpus=[gpu])
    assert r.ok and cudas <= set(r.valid_cuda)


def test_jax_and_torch_with_conflicting_cudnn_pins():
    # torch 2.3.1's PyPI build pins nvidia-cudnn-cu12==8.9.2.26; jax 0.4.30's CUDA 12 plugin needs cuDNN >= 9.0
    # (PyPI METADATA of both). Wheels only: they cannot share one environment.
    r = resolve_case(torch="2.3.1", jax="0.4.30", flavor="wheels", driver="550.54.15", gpus=["A100"])
    assert not r.ok and "conflicting-pins" in codes(r)
    assert "nvidia-cudnn-cu12" in next(p.message for p in r.problems if p.code == "conflicting-pins")


def test_jax_on_r535_uses_the_newest_cuda_12():
    # jax[cuda12] needs CUDA >= 12.1 (JAX installation docs); any 12.x runs on R535 via minor-version compatibility.
    r = resolve_case(jax="0.4.30", driver="535.104.05", gpus=["A100"])
    assert r.ok and r.stack.cuda.startswith("12.") and r.stack.flavor == "wheels"


def test_companion_pin_selects_the_matching_release():
    # torchvision 0.20.1 is the companion of torch 2.5.1 (torchvision wheel requires torch==2.5.1).
    r = resolve_case(torchvision="0.20.1", driver="550.54.15", gpus=["A100"])
    assert r.ok and r.stack.framework("torch") == "2.5.1"


def test_cudnn_constraint_selects_older_builds():
    # cuDNN 8.x builds of torch end with 2.3.x (cu121 pins cuDNN 8.9.2.26; 2.4 moved to cuDNN 9).
    r = resolve_case(torch="any", cudnn="<9", driver="550.54.15", gpus=["A100"])
    assert r.ok and r.stack.cudnn.startswith("8.")
    assert r.stack.framework("torch").startswith("2.3.")


def test_exact_cuda_and_python_are_honoured():
    r = resolve_case(torch="2.6", cuda="12.4", python="3.10", driver="550.54.15", gpus=["A100"])
    assert (r.stack.cuda, r.stack.python) == ("12.4", "3.10")
    assert r.stack.index_urls == ("https://download.pytorch.org/whl/cu124",)


def test_plain_cuda_project_gets_a_cudnn_runtime_image():
    # nvidia/cuda 12.4.1 cuDNN tags are spelled "cudnn" (NVIDIA container-images supported-tags).
    r = resolve_case(cuda="12.4", cudnn=">=9", driver="550.54.15", gpus=["A100"])
    assert r.ok and r.stack.base_image == "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04"


def test_devel_flavor_uses_devel_images():
    r = resolve_case(torch="2.6.0", cuda="12.4", flavor="devel", driver="550.54.15", gpus=["A100"])
    assert r.ok and "-devel-" in r.stack.base_image and r.stack.base_image.startswith("nvidia/cuda:12.4.")


def test_mxnet_legacy_wheels_resolve_on_r470():
    # mxnet-cu112 1.9.1 (PyPI) runs with CUDA 11.2; R470 runs 11.x.
    r = resolve_case(mxnet="1.9.1", driver="470.82.01", gpus=["V100"])
    assert r.ok and r.stack.cuda.startswith("11.") and r.stack.flavor == "runtime"


def test_unknown_framework_version_is_bad_input_with_nearest_versions():
    with pytest.raises(UnknownVersion) as info:
        resolve_case(torch="2.6.9", driver="535.104.05")
    assert "nearest known: 2.6.0" in str(info.value)


def test_specifier_matching_nothing_is_bad_input():
    with pytest.raises(UnknownVersion, match="matches no release"):
        resolve_case(tensorflow=">=9")


def test_tensorflow_with_a_keras_it_excludes_says_so():
    # TF 2.15.0's METADATA requires keras>=2.15.0,<2.16 (matrix/tensorflow.toml): keras >= 3 cannot join it.
    r = resolve_case(tensorflow="2.15.0", keras=">=3", python="3.11", driver="550.54.15", gpus=["A100"])
    assert not r.ok and "companion-clash" in codes(r)
    message = next(p.message for p in r.problems if p.code == "companion-clash")
    assert "requires keras >=2.15.0,<2.16" in message and "Python" not in message
    assert resolve_case(tensorflow="2.15.0", keras="<3", driver="550.54.15", gpus=["A100"]).ok


def test_the_nearest_fitting_release_is_offered_first():
    # torch 1.13.1 has no sm_90 build; 2.0.0's cu118 build does (matrix/torch.toml): the smallest move comes first,
    # with the newest that fits named too.
    r = resolve_case(torch="1.13.1", driver="535.104.05", gpus=["H100"])
    fix = next(p.message for p in r.problems if p.code == "fix-relax-pin")
    assert "torch 2.0.0 fits this host" in fix and "newest that fits" in fix
