"""CUDA builds of doubtful existence (issue #16, part 1).

A framework build the matrix lists must have been published. Which PyTorch cu129 builds exist was
settled from PyTorch's own build matrix at each release's commit (pytorch/test-infra
tools/scripts/generate_binary_build_matrix.py), read 2026-11-24:

* release/2.11 @2121ac63e9cd (candidate 2.11.0): 12.9 appended to the Linux test channel -> 2.11.0+cu129;
* 626d4e708156, the 2.12 go-live (#8070): CUDA 12.6, 13.0, 13.2 only (#7917 removed 12.9) -> no 2.12.0+cu129;
* #8164 @35c0ecab9467 on release/2.12 (candidate 2.12.1): 12.9 added to the Linux test channel -> 2.12.1+cu129;
* #8215 @0f7335e1e293 on release/2.13 (candidate 2.13.0), with pytorch/pytorch#188443 (release/2.13's
  TORCH_CUDA_ARCH_LIST table gains 12.9, x86_64 {75, 80, 86, 90, 100, 120}) -> 2.13.0+cu129;
* release/2.14 @c840391a1 (#8498 "sync test channel CUDA arches with what 2.14 builds"): no 12.9.

A variant whose existence is not established is marked ``established = false`` (with a note
saying what is missing) and is never preferred over one that is; a ``+cuXYZ`` pin of a build
that does not exist is bad input naming the builds that do.
"""

from __future__ import annotations

import json

import pytest

from cudaenv.errors import MatrixError
from cudaenv.matrix import load_matrix
from cudaenv.resolver.model import Constraints, Host
from cudaenv.resolver.resolve import UnknownVersion, resolve
from tests.support.cli import cudaenv, without_target_overrides
from tests.unit.resolver.helpers import constraints, host, matrix

DRIVER_12_9 = "575.51.03"  # R575: CUDA 12.9 natively, 13.x not at all


def tags(version: str) -> set[str]:
    release = next(r for r in matrix().torch if r.version == version)
    return {v.tag for v in release.variants}


@pytest.mark.parametrize("version", ["2.11.0", "2.12.1", "2.13.0"])
def test_torch_releases_built_for_cuda_12_9_list_that_build(version):
    assert "cu129" in tags(version)
    release = next(r for r in matrix().torch if r.version == version)
    variant = next(v for v in release.variants if v.tag == "cu129")
    assert variant.established and "test-infra" in variant.note


@pytest.mark.parametrize("version", ["2.12.0", "2.14.0", "2.14.1", "2.15.0"])
def test_torch_releases_not_built_for_cuda_12_9_do_not_list_it(version):
    assert "cu129" not in tags(version)


# --- an unestablished variant (an overlay marks the 2.13.0 cu129 build doubtful) ----------------

DOUBTFUL_2_13 = """
[[release]]
version = "2.13.0"
python = ["3.12", "3.13", "3.14"]
torchvision = "0.28.0"
source = "overlay test: the shipped row with its cu129 build marked doubtful ; read 2026-11-24"

[[release.variant]]
cuda = "12.6"
index_url = "https://download.pytorch.org/whl/cu126"
compute_capabilities = ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]

[[release.variant]]
cuda = "12.9"
index_url = "https://download.pytorch.org/whl/cu129"
compute_capabilities = ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
established = false
note = "no build matrix or wheel index record read"

[[release.variant]]
cuda = "13.0"
index_url = "https://download.pytorch.org/whl/cu130"
compute_capabilities = ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
"""


@pytest.fixture()
def doubtful(tmp_path):
    (tmp_path / "torch.toml").write_text(DOUBTFUL_2_13)
    return load_matrix(overlays=[tmp_path], use_cache=False)


def test_the_flag_is_read_from_the_row(doubtful):
    release = next(r for r in doubtful.torch if r.version == "2.13.0")
    assert {v.tag: v.established for v in release.variants} == {"cu126": True, "cu129": False, "cu130": True}


def test_an_established_build_is_preferred_over_a_newer_cuda_whose_build_is_doubtful(doubtful):
    # without the flag cu129 would win: same torch, both native on R575, newer CUDA
    result = resolve(doubtful, constraints(torch="==2.13.0"), host(DRIVER_12_9, ["A100"]))
    assert result.ok and result.stack.cuda == "12.6"
    assert "variant-unestablished" not in [p.code for p in result.problems]


NEWER_DOUBTFUL = """
[[release]]
version = "2.99.0"
python = ["3.12", "3.13", "3.14"]
source = "overlay test ; read 2026-11-24"

[[release.variant]]
cuda = "12.9"
index_url = "https://download.pytorch.org/whl/cu129"
compute_capabilities = ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
established = false
note = "announced, no wheel index record"
"""


def test_an_older_established_release_is_preferred_over_a_doubtful_build_of_a_newer_one(tmp_path):
    (tmp_path / "torch.toml").write_text(NEWER_DOUBTFUL)
    m = load_matrix(overlays=[tmp_path], use_cache=False)
    result = resolve(m, constraints(torch=">=2.13"), host(DRIVER_12_9, ["A100"]))
    assert result.ok and result.stack.framework("torch") != "2.99.0"  # the newest established release instead
    # the same row without the flag would win (newest release): the flag is what decides
    (tmp_path / "torch.toml").write_text(NEWER_DOUBTFUL.replace("established = false\n", ""))
    m = load_matrix(overlays=[tmp_path], use_cache=False)
    assert resolve(m, constraints(torch=">=2.13"), host(DRIVER_12_9, ["A100"])).stack.framework("torch") == "2.99.0"


def test_the_doubtful_build_is_used_when_asked_for_and_said_so(doubtful):
    result = resolve(doubtful, constraints(torch="==2.13.0", cuda="==12.9"), host(DRIVER_12_9, ["A100"]))
    assert result.ok and result.stack.cuda == "12.9"
    warning = next(p for p in result.problems if p.code == "variant-unestablished")
    assert "torch 2.13.0 (cu129)" in warning.message


def test_a_doubtful_build_without_a_note_is_refused(tmp_path):
    (tmp_path / "torch.toml").write_text(DOUBTFUL_2_13.replace('note = "no build matrix or wheel index record read"\n', ""))
    with pytest.raises(MatrixError, match=r"torch.toml.*version = '2.13.0'.*field 'note'.*established = false"):
        load_matrix(overlays=[tmp_path], use_cache=False)


def test_established_must_be_true_or_false(tmp_path):
    (tmp_path / "torch.toml").write_text(DOUBTFUL_2_13.replace("established = false", 'established = "no"'))
    with pytest.raises(MatrixError, match=r"field 'established': expected true or false"):
        load_matrix(overlays=[tmp_path], use_cache=False)


# --- a +cuXYZ pin of a build that was never published ---------------------------------------------


def test_a_pin_of_a_build_that_does_not_exist_lists_the_builds_that_do():
    wanted = Constraints(frameworks=constraints(torch="==2.12.0").frameworks, variants=(("torch", "cu129"),))
    with pytest.raises(UnknownVersion) as caught:
        resolve(matrix(), wanted, Host())
    assert "torch 2.12.0+cu129: no such build was published" in str(caught.value)
    assert "torch 2.12.0 is built for cu126, cu130, cu132" in str(caught.value)
    assert caught.value.field == "frameworks.torch"


def test_a_pin_of_a_build_that_exists_resolves_to_it():
    wanted = Constraints(frameworks=constraints(torch="==2.12.1").frameworks, cuda=constraints(cuda="==12.9").cuda,
                         variants=(("torch", "cu129"),))
    result = resolve(matrix(), wanted, host(DRIVER_12_9, ["H100"]))
    assert result.ok and result.stack.cuda == "12.9" and result.stack.framework("torch") == "2.12.1"


def _cli(*args, cwd=None):
    proc = cudaenv("resolve", *args, "--json", env=without_target_overrides(), cwd=cwd, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def test_the_command_line_pin_of_a_missing_build_is_bad_input():
    code, result = _cli("--torch", "==2.12.0+cu129", "--driver", DRIVER_12_9)
    assert code == 2
    assert "cu126, cu130, cu132" in result["error"]["message"]


def test_the_config_pin_of_a_missing_build_names_the_file_and_key(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "==2.14.0+cu129"\n\n[target]\ndriver = "580.65.06"\n')
    code, result = _cli(cwd=tmp_path)
    assert code == 2
    message = result["error"]["message"]
    assert "cudaenv.toml" in message and "frameworks.torch" in message and "torch 2.14.0 is built for cu126, cu130, cu132" in message


def test_the_flag_survives_the_matrix_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDAENV_NO_CACHE", raising=False)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "torch.toml").write_text(DOUBTFUL_2_13)
    first = load_matrix(overlays=[overlay])  # parses and writes the cache
    assert list((tmp_path / "cache").glob("matrix-*"))
    cached = load_matrix(overlays=[overlay])  # read back from the cache
    for m in (first, cached):
        release = next(r for r in m.torch if r.version == "2.13.0")
        assert {v.tag: v.established for v in release.variants}["cu129"] is False


# --- an extra that cannot be installed: TensorFlow 2.15.0[and-cuda] ------------------------------
# Its and-cuda extra pins tensorrt-libs==8.6.1, which PyPI never had (only 9.x); TensorFlow published
# 2.15.0.post1 without the tensorrt pins for that reason (tensorflow/tensorflow#62520).


def test_tensorflow_2_15_0_runs_as_plain_tensorflow_on_the_cudnn_image_and_says_why():
    result = resolve(matrix(), constraints(tensorflow="==2.15.0"), host("550.54.15"))
    assert result.ok, result.problems
    stack = result.stack
    assert stack.requirements[0] == "tensorflow==2.15.0" and "and-cuda" not in " ".join(stack.requirements)
    assert not stack.brings_own_cuda and "cudnn" in stack.base_image
    caveats = [p for p in result.problems if p.code == "build-caveat"]
    assert len(caveats) == 1 and "tensorrt-libs==8.6.1" in caveats[0].message
    assert "2.15.0.post1" in caveats[0].message


def test_the_release_that_fixed_the_extra_keeps_it():
    result = resolve(matrix(), constraints(tensorflow="==2.15.0.post1"), host("550.54.15"))
    assert result.ok and result.stack.requirements[0] == "tensorflow[and-cuda]==2.15.0.post1"
    assert not [p for p in result.problems if p.code == "build-caveat"]


def test_the_wheels_flavor_says_why_it_cannot_have_2_15_0():
    result = resolve(matrix(), constraints(tensorflow="==2.15.0", flavor="wheels"), host("550.54.15"))
    assert not result.ok
    [problem] = [p for p in result.problems if not p.is_fix]
    assert problem.code == "flavor-unavailable" and "tensorrt-libs==8.6.1" in problem.message
