"""The plan of several projects on one host (shared base images first), the JSON it and a host
verdict print, and nvcc's own capability range (the devel-flavor caveat)."""

from __future__ import annotations

from cudaenv.resolver.check import Verdict, check_stack
from cudaenv.resolver.gpu import toolkit_range, toolkit_supports
from cudaenv.resolver.plan import plan
from tests.unit.resolver.helpers import constraints, host, matrix, resolve_case


def test_projects_that_can_share_a_base_image_are_planned_onto_it():
    on = host("570.124.06", ["A100"])
    projects = [("a", constraints(cuda="12.4", flavor="runtime")), ("b", constraints(cuda=">=12.4,<12.7",
                                                                                     flavor="runtime"))]
    result = plan(matrix(), projects, on)
    [(base, names)] = result.groups
    assert names == ("a", "b") and result.projects[1].stack.base_image == base
    assert result.ok and result.driver_upgrade is None
    own = resolve_case(driver="570.124.06", gpus=["A100"], cuda=">=12.4,<12.7", flavor="runtime").stack
    assert own.base_image != base  # alone, b would have taken a newer CUDA: the plan shares instead


def test_the_plan_as_json_names_groups_projects_and_the_upgrade():
    on = host("470.82.01", ["RTX 3090"])
    result = plan(matrix(), [("old", constraints(torch="2.0.1")), ("new", constraints(torch="2.9.0"))], on)
    data = result.as_dict()
    assert data["ok"] is False and data["driver_upgrade"] == result.driver_upgrade is not None
    assert data["distinct_bases"] == len(result.groups) == 1
    assert data["groups"] == [{"base_image": result.projects[0].stack.base_image, "projects": ["old"]}]
    old, new = data["projects"]
    assert (old["name"], old["ok"], old["stack"]) == ("old", True, result.projects[0].stack.as_dict())
    assert old["valid_cuda"] == list(result.projects[0].resolution.valid_cuda)
    assert (new["name"], new["ok"], new["stack"]) == ("new", False, None)
    assert new["problems"] == [p.as_dict() for p in result.projects[1].resolution.problems] and new["problems"]


def test_groups_are_largest_first_then_by_base_name():
    on = host("550.54.15", ["A100"])
    projects = [("x", constraints(cuda="12.1", flavor="runtime")), ("y", constraints(cuda="12.4", flavor="runtime")),
                ("z", constraints(cuda="12.4", flavor="runtime"))]
    groups = plan(matrix(), projects, on).groups
    assert [names for _, names in groups] == [("y", "z"), ("x",)]


def test_a_verdict_as_json():
    verdict = Verdict(True, "native", (), ("c",))
    assert verdict.as_dict() == {"compatible": True, "mode": "native", "reasons": [], "caveats": ["c"]}
    stack = resolve_case(driver="550.54.15", gpus=["A100"], torch="2.6").stack
    refused = check_stack(matrix(), stack, host("470.82.01", ["A100"])).as_dict()
    assert refused["compatible"] is False and refused["mode"] is None and refused["reasons"]


def test_nvcc_targets_the_capabilities_of_its_newest_release_inclusive():
    low, high = toolkit_range(matrix(), "12.4")
    assert toolkit_supports(matrix(), "12.4", low) and toolkit_supports(matrix(), "12.4", high)
    assert not toolkit_supports(matrix(), "12.4", "12.1") and not toolkit_supports(matrix(), "12.4", "3.0")
    assert toolkit_supports(matrix(), "99.9", "8.0") is False  # no such CUDA: nothing to target


def test_devel_images_say_when_nvcc_cannot_target_the_gpu_natively():
    stack = resolve_case(driver="570.124.06", cuda="==12.4", flavor="devel").stack
    verdict = check_stack(matrix(), stack, host("570.124.06", ["RTX 5090"]))
    assert not toolkit_supports(matrix(), "12.4", "12.0")
    assert verdict.compatible and [c for c in verdict.caveats if c.startswith("nvcc")] == [
        "nvcc of CUDA 12.4 cannot target RTX 5090 (sm_120) natively; code compiled in this image runs on it only "
        "as PTX the driver JIT-compiles (build with compute_90 PTX, e.g. -gencode arch=compute_90,code=compute_90)"]
    on_a100 = check_stack(matrix(), stack, host("570.124.06", ["A100"]))
    assert on_a100.compatible and not any(c.startswith("nvcc") for c in on_a100.caveats)


def test_the_devel_caveat_names_binary_compatibility_only_within_one_major():
    """CUDA 11.7's nvcc stops at sm_87: its sm_87 code runs on an RTX 4090 (sm_89) by the SASS rule
    X.y -> X.z; an sm_120 GPU of a newer major gets no such code, only PTX (the old wording promised
    binary compatibility there too)."""
    assert toolkit_range(matrix(), "11.7")[1] == "8.7"
    stack = resolve_case(driver="570.124.06", cuda="==11.7", flavor="devel").stack
    verdict = check_stack(matrix(), stack, host("570.124.06", ["RTX 4090"]))
    assert [c for c in verdict.caveats if c.startswith("nvcc")] == [
        "nvcc of CUDA 11.7 cannot target RTX 4090 (sm_89) natively; code compiled in this image for sm_87 runs on "
        "it by binary compatibility"]


def _stack_on(base: str, torch: str = "2.6.0"):
    from cudaenv.resolver.model import Stack

    return Stack.from_dict({"python": "3.12", "cuda": "12.4", "flavor": "runtime", "base_image": base,
                            "frameworks": {"torch": torch}})


def test_a_tie_between_bases_goes_to_the_one_most_projects_would_pick_anyway():
    """Both projects can use either base (a 2-2 tie): each prefers the 12.4 one, so the plan shares
    that, not the other one that merely sorts last by name."""
    from cudaenv.resolver.model import Resolution
    from cudaenv.resolver.plan import _choose_shared

    preferred, other = "nvidia/cuda:12.4.1-runtime-ubuntu22.04", "nvidia/cuda:12.6.3-runtime-ubuntu22.04"
    options = (_stack_on(preferred), _stack_on(other))
    resolutions = {name: Resolution(options[0], ("12.4", "12.6"), (), alternatives=options) for name in ("p", "q")}
    assert {name: s.base_image for name, s in _choose_shared(resolutions).items()} == {"p": preferred, "q": preferred}


def test_groups_of_the_same_size_are_ordered_by_base_image_not_by_project_name():
    """Equal groups print in base-image order: project z's CUDA 12.1 base before project a's 12.4."""
    on = host("550.54.15", ["A100"])
    projects = [("a", constraints(cuda="12.4", flavor="runtime")), ("z", constraints(cuda="12.1", flavor="runtime"))]
    groups = plan(matrix(), projects, on).groups
    assert [names for _, names in groups] == [("z",), ("a",)]
    assert [base for base, _ in groups] == sorted(base for base, _ in groups)


def test_each_planned_project_gets_the_warnings_of_its_own_stack():
    """On R535 a CUDA 12.4 project runs through minor-version compatibility and is told so; a CUDA 12.2
    project beside it runs natively and gets no such warning."""
    on = host("535.104.05", ["A100"])
    projects = [("new", constraints(cuda="12.4", flavor="runtime")), ("old", constraints(cuda="12.2", flavor="runtime"))]
    new, old = plan(matrix(), projects, on).projects
    assert [p.code for p in new.problems] == ["minor-version-compatibility"]
    assert [p.code for p in old.problems] == []


def test_a_project_refused_outside_the_matrix_keeps_its_reason_and_asks_for_no_driver_upgrade():
    """A project with no Python every requirement has wheels for cannot be fixed by a driver: the plan
    shows its own reason and proposes no upgrade, while the other projects are planned as usual."""
    from cudaenv.resolver.model import Problem, Resolution

    on = host("535.104.05", ["A100"])
    why = Resolution(None, (), (Problem("no-python", "no Python has wheels for every requirement"),))
    projects = [("fits", constraints(cuda="12.2", flavor="runtime")), ("wheel-less", constraints(cuda="12.2", flavor="runtime"))]
    result = plan(matrix(), projects, on, refused={"wheel-less": why})
    fits, refused = result.projects
    assert fits.stack is not None and refused.stack is None and refused.resolution is why
    assert refused.problems == why.problems
    assert result.ok is False and result.driver_upgrade is None
    assert [names for _, names in result.groups] == [("fits",)]



def test_projects_on_a_host_without_a_gpu_are_planned_onto_their_cpu_stacks():
    from cudaenv.resolver.model import Host

    cpu = Host(cpu=True)  # a CPU resolution carries no alternatives: its own stack is its one option
    result = plan(matrix(), [("a", constraints(torch=">=2.6")), ("b", constraints(torch=">=2.6")),
                             ("c", constraints(torch=">=2.6", python="3.12"))], cpu)
    a, b, c = result.projects
    assert result.ok and a.stack.cpu and c.stack.cpu and c.stack.python == "3.12"
    assert result.groups == ((a.stack.base_image, ("a", "b")), (c.stack.base_image, ("c",)))
    assert a.stack.base_image != c.stack.base_image
