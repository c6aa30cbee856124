"""A resolved stack as the lock stores it and reads it back, and the JSON of a resolution: the
values every later step (build, check, export) rebuilds the stack from."""

from __future__ import annotations

import pytest

from cudaenv.resolver.model import Problem, Resolution, Stack
from tests.unit.resolver.helpers import resolve_case


@pytest.fixture(scope="module")
def stacks():
    """A wheels stack with GPU targets and nvidia pins, and a runtime stack on the system cuDNN."""
    wheels = resolve_case(driver="550.54.15", gpus=["A100"], torch="2.6").stack
    runtime = resolve_case(driver="535.104.05", gpus=["A100"], tensorflow="==2.11.*").stack
    return wheels, runtime


def test_a_stack_survives_its_dict_unchanged(stacks):
    for stack in stacks:
        assert Stack.from_dict(stack.as_dict()) == stack


def test_the_dict_is_plain_json_data(stacks):
    wheels, _ = stacks
    data = wheels.as_dict()
    assert data["frameworks"] == dict(wheels.frameworks) and data["flavor"] == "wheels"
    assert data["gpu_targets"] == {n: {"sass": list(s), "ptx": list(p)} for n, s, p in wheels.gpu_targets}
    assert data["nvidia_requires"] == dict(wheels.nvidia_requires) and data["brings_own_cuda"] is True
    assert [type(data[k]) for k in ("requirements", "index_urls", "find_links", "compute_capabilities")] == [list] * 4
    assert (data["cuda"], data["cuda_release"], data["python"]) == (wheels.cuda, wheels.cuda_release, wheels.python)
    assert (data["cudnn"], data["cudnn_version"], data["base_image"]) == (wheels.cudnn, wheels.cudnn_version,
                                                                          wheels.base_image)
    assert (data["driver_compatibility"], data["min_driver"], data["min_driver_compat"]) == (
        wheels.driver_compatibility, wheels.min_driver, wheels.min_driver_compat)


def test_a_lock_written_without_optional_keys_still_reads(stacks):
    wheels, _ = stacks
    data = {k: v for k, v in wheels.as_dict().items() if v is not None}
    minimal = {k: data[k] for k in ("python", "cuda", "flavor", "base_image")}
    stack = Stack.from_dict(minimal)
    assert (stack.cuda_release, stack.frameworks, stack.gpu_targets, stack.brings_own_cuda) == (
        wheels.cuda, (), (), False)
    assert (stack.cudnn, stack.driver_compatibility, stack.requirements, stack.nvidia_requires) == (None, None, (), ())


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("python"), "stack.python must be a string, got None"),
    (lambda d: d.update(cuda=12.4), "stack.cuda must be a string, got 12.4"),
    (lambda d: d.update(flavor=None), "stack.flavor must be a string, got None"),
    (lambda d: d.update(base_image=["x"]), "stack.base_image must be a string, got ['x']"),
    (lambda d: d.update(frameworks=["torch"]), "stack.frameworks must be a table"),
    (lambda d: d.update(nvidia_requires="x"), "stack.nvidia_requires must be a table"),
    (lambda d: d.update(gpu_targets=[1]), "stack.gpu_targets must be a table"),
    (lambda d: d.update(gpu_targets={"torch": ["8.0"]}), "stack.gpu_targets entries must be tables"),
])
def test_what_is_not_a_stack_is_refused_naming_the_key(stacks, edit, message):
    data = stacks[0].as_dict()
    edit(data)
    with pytest.raises(ValueError) as caught:
        Stack.from_dict(data)
    assert str(caught.value) == message


def test_a_stack_that_is_not_a_table_is_a_type_error():
    with pytest.raises(TypeError, match="a stack is a table, not list"):
        Stack.from_dict([])


def test_a_resolution_as_json(stacks):
    wheels, _ = stacks
    problems = (Problem("minor-version-compatibility", "m"), Problem("fix-driver", "upgrade", fix="550"))
    data = Resolution(wheels, ("12.4", "12.6"), problems).as_dict()
    assert data == {"ok": True, "stack": wheels.as_dict(), "valid_cuda": ["12.4", "12.6"],
                    "problems": [{"code": "minor-version-compatibility", "message": "m"},
                                 {"code": "fix-driver", "message": "upgrade", "fix": "550"}]}
    refused = Resolution(None, (), problems)
    assert refused.as_dict()["stack"] is None and refused.ok is False and refused.reasons == ("m",)


def test_find_links_and_partial_gpu_targets_read_back():
    data = {"python": "3.11", "cuda": "12.4", "flavor": "runtime", "base_image": "b", "find_links": ["https://f.example/"],
            "gpu_targets": {"torch": {"sass": ["8.0"]}, "jax": {"ptx": ["9.0"]}}}
    stack = Stack.from_dict(data)
    assert stack.find_links == ("https://f.example/",)
    assert stack.gpu_targets == (("torch", ("8.0",), ()), ("jax", (), ("9.0",)))


def test_flags_replace_exactly_the_fields_they_name():
    from cudaenv.resolver.model import Constraints
    from cudaenv.versions import parse_specifier as spec

    project = Constraints(python=spec("3.11"), frameworks=(("torch", spec(">=2.4")), ("jax", spec(">=0.4"))),
                          cuda=spec("12.4"), cudnn=spec("9.1"), flavor="devel", os="ubuntu22.04",
                          variants=(("torch", "cu124"), ("jax", "cuda12")))
    assert project.merged(Constraints()) == project  # no flag: the project decides everything
    flags = Constraints(python=spec("3.12"), frameworks=(("torch", spec("==2.6.0")),), cuda=spec("12.6"),
                        cudnn=spec("9.5"), variants=(("torch", "cu126"),))
    merged = project.merged(flags)
    assert (merged.python, merged.cuda, merged.cudnn) == (spec("3.12"), spec("12.6"), spec("9.5"))
    assert merged.frameworks == (("jax", spec(">=0.4")), ("torch", spec("==2.6.0")))
    assert merged.variants == (("jax", "cuda12"), ("torch", "cu126"))
    assert (merged.flavor, merged.os) == ("devel", "ubuntu22.04")
