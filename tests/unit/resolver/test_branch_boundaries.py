"""The edges of the driver-branch rules, taken from drivers.toml itself: a GPU runs on the first
branch that lists its architecture and on the last one; past the last one, the CUDA fix names only
what that branch cannot run; and the series fix for a cuDNN build that no image carries any more."""

from __future__ import annotations

from cudaenv.resolver.resolve import host_problems, own_indexes
from tests.unit.resolver.helpers import host, matrix, resolve_case


def branches_listing(architecture: str) -> list[int]:
    return sorted(row.branch for row in matrix().driver_branches if architecture in row.architectures)


def a_driver_of(branch: int) -> str:
    """A driver version on ``branch`` (the branch's number is all the rule reads)."""
    return f"{branch}.10.01"


def test_a_gpu_runs_on_the_first_branch_that_lists_its_architecture_not_on_the_one_before():
    first = branches_listing("hopper")[0]
    before = max(row.branch for row in matrix().driver_branches if row.branch < first)
    assert not [p for p in host_problems(matrix(), host(a_driver_of(first), ["H100"]))
                if p.code == "driver-predates-architecture"]
    refused = [p for p in host_problems(matrix(), host(a_driver_of(before), ["H100"]))
               if p.code == "driver-predates-architecture"]
    assert len(refused) == 1 and f"need driver branch R{first} or newer" in refused[0].message


def test_a_gpu_runs_on_the_last_branch_that_lists_its_architecture_not_on_the_one_after():
    last = branches_listing("kepler")[-1]
    after = min(row.branch for row in matrix().driver_branches if row.branch > last)
    assert not host_problems(matrix(), host(a_driver_of(last), ["K80"]))
    refused = host_problems(matrix(), host(a_driver_of(after), ["K80"]))
    assert [p.code for p in refused] == ["driver-drops-architecture"]
    assert f"the last driver branch that does is R{last}" in refused[0].message


def test_past_the_last_branch_a_cuda_pin_that_branch_runs_gets_no_cuda_fix():
    """K80 on R535: R470 is its last branch and runs CUDA up to its max_cuda. A pin of exactly that
    CUDA needs no relaxing (the driver is the fix); a newer pin is relaxed to it."""
    last = branches_listing("kepler")[-1]
    newest = matrix().driver_branch(last).max_cuda
    kept = resolve_case(cuda=f"=={newest}", driver="535.104.05", gpus=["K80"])
    assert not kept.ok and not [p for p in kept.problems if p.code == "fix-cuda"]
    relaxed = resolve_case(cuda="==12.0", driver="535.104.05", gpus=["K80"])
    assert [p.message for p in relaxed.problems if p.code == "fix-cuda"] == [
        f"relax the cuda constraint (12.0): on R{last} a stack needs CUDA {newest} or older"]


def test_a_driver_older_than_a_gpu_with_a_cuda_pin_gets_the_driver_fix_not_a_cuda_fix():
    """H100 on R470 (before Hopper's first branch): Hopper has no last branch, so the CUDA pin is
    not what blocks it."""
    result = resolve_case(cuda="==12.4", driver="470.82.01", gpus=["H100"])
    assert not result.ok
    assert "driver-predates-architecture" in [p.code for p in result.problems]
    assert not [p for p in result.problems if p.code == "fix-cuda"]


def test_a_three_part_cudnn_release_no_image_carries_is_offered_its_series():
    result = resolve_case(cudnn="8.0.2", driver="535.104.05", gpus=["A100"])
    assert not result.ok
    assert [p.fix for p in result.problems if p.code == "fix-cudnn"][0] == "allow cudnn 8.0"


def test_no_series_is_offered_when_no_image_carries_the_series_either():
    """cuDNN 7.6 has no CUDA 12.2 image: relaxing 7.6.5.32 to 7.6 would not help, so it is not offered."""
    result = resolve_case(cuda="==12.2", cudnn="7.6.5.32", driver="535.104.05")
    assert not result.ok
    assert not [p for p in result.problems if "to its series" in p.message]


def test_the_own_indexes_are_every_framework_build_s_index_once_in_order():
    """What ``framework_index_mirrors`` may name: the torch rows' index URLs, each once. JAX's
    ``index_url`` is a find-links page (pip --find-links), not an index, so it is not one of them."""
    m = matrix()
    listed = {v.index_url for r in m.torch for v in r.variants if v.index_url}
    indexes = own_indexes(m)
    assert list(indexes) == sorted(listed) and len(listed) > 10
    jax_pages = {v.index_url for r in m.jax for v in r.variants if v.index_url}
    assert jax_pages and not jax_pages & set(indexes)


def test_every_gpu_of_a_mixed_host_is_weighed_for_the_cuda_fix():
    """A supported GPU, or one the driver is too old for, does not end the search: the K80 after it
    still gets its last branch's CUDA fix (R535 runs the A100; R495 predates the H100)."""
    last = branches_listing("kepler")[-1]
    newest = matrix().driver_branch(last).max_cuda
    expected = [f"relax the cuda constraint (12.0): on R{last} a stack needs CUDA {newest} or older"]
    for driver, gpus in (("535.104.05", ["A100", "K80"]), ("495.29.05", ["H100", "K80"])):
        result = resolve_case(cuda="==12.0", driver=driver, gpus=gpus)
        assert [p.message for p in result.problems if p.code == "fix-cuda"] == expected, (driver, gpus)


def test_an_index_is_named_by_its_url_and_pypi_by_its_name():
    from cudaenv.resolver.resolve import PYPI, index_text

    assert index_text(PYPI) == "PyPI"
    assert index_text("https://download.pytorch.org/whl/cu124") == "https://download.pytorch.org/whl/cu124"


def test_a_gpu_known_only_by_compute_capability_finds_its_architecture_s_branches():
    """``--compute-capability 3.7`` names no model: its architecture comes from the matrix (Kepler),
    and with it the last branch, in the problem and in the CUDA fix."""
    from cudaenv.resolver.model import Host, TargetGpu
    from cudaenv.resolver.resolve import resolve
    from tests.unit.resolver.helpers import constraints

    last = branches_listing("kepler")[-1]
    sm37 = Host("535.104.05", (TargetGpu("3.7"),))
    [problem] = host_problems(matrix(), sm37)
    assert problem.message == ("driver 535.104.05 (R535) no longer supports Kepler GPUs such as sm_37; "
                               f"the last driver branch that does is R{last}")
    result = resolve(matrix(), constraints(cuda="==12.0"), sm37)
    assert [p.code for p in result.problems if p.code == "fix-cuda"] == ["fix-cuda"]
