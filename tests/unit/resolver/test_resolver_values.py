"""The resolver's values (cudaenv.resolver.model) on hand-written inputs: what a project asks for and
how flags override it, the target host, problems, and a stack as the lock stores it -- every field
that later steps (build, check, export, the JSON output) read (issue 25 §3)."""

from __future__ import annotations

import pytest

from cudaenv.resolver.model import Constraints, Host, Problem, Resolution, Stack, TargetGpu
from cudaenv.versions import parse_specifier as spec

# --- constraints -------------------------------------------------------------------------------


def test_a_framework_spec_is_found_by_its_name():
    """`torch>=2.4` in the project is the spec the torch candidates are filtered with; a framework
    the project does not name has none."""
    asked = Constraints(frameworks=(("torch", spec(">=2.4")), ("torchvision", spec("==0.21.0"))))
    assert asked.spec("torch") == spec(">=2.4")
    assert asked.spec("torchvision") == spec("==0.21.0")
    assert asked.spec("jax") is None


@pytest.mark.parametrize(("names", "frameworks"), [
    (("torchvision",), ("torch",)),
    (("keras", "jaxlib"), ("tensorflow", "jax")),
    (("mxnet", "torch", "jax"), ("torch", "jax", "mxnet")),
    (("torchaudio", "torch"), ("torch",)),
    (("numpy",), ()),
], ids=["companion-brings-its-framework", "two-companions", "fixed-order", "no-duplicate", "not-a-framework"])
def test_the_frameworks_a_project_uses_include_those_its_companions_belong_to(names, frameworks):
    """Naming torchvision alone means a torch stack; the frameworks come in one fixed order (torch,
    tensorflow, jax, mxnet) whatever order the project lists them in."""
    asked = Constraints(frameworks=tuple((n, spec(">=0")) for n in names))
    assert asked.framework_names == frameworks


PROJECT = Constraints(python=spec("3.11"), frameworks=(("torch", spec(">=2.4")), ("jax", spec(">=0.4"))),
                      cuda=spec("12.4"), cudnn=spec("9.1"), flavor="devel", os="ubuntu22.04",
                      variants=(("torch", "cu124"), ("jax", "cuda12")), framework_index="pypi")


@pytest.mark.parametrize(("flags", "changed"), [
    (Constraints(python=spec("3.12")), {"python": spec("3.12")}),
    (Constraints(cuda=spec("12.6")), {"cuda": spec("12.6")}),
    (Constraints(cudnn=spec("9.5")), {"cudnn": spec("9.5")}),
    (Constraints(flavor="runtime"), {"flavor": "runtime"}),
    (Constraints(os="ubuntu24.04"), {"os": "ubuntu24.04"}),
    (Constraints(framework_index="https://download.pytorch.org/whl/cu126"),
     {"framework_index": "https://download.pytorch.org/whl/cu126"}),
    (Constraints(frameworks=(("torch", spec("==2.6.0")),)),
     {"frameworks": (("jax", spec(">=0.4")), ("torch", spec("==2.6.0"))), "variants": (("jax", "cuda12"),)}),
    (Constraints(variants=(("jax", "cuda13"),)),
     {"variants": (("torch", "cu124"), ("jax", "cuda12"), ("jax", "cuda13"))}),
], ids=["python", "cuda", "cudnn", "flavor", "os", "index", "framework", "variant"])
def test_a_flag_replaces_exactly_the_field_it_names(flags, changed):
    """`--python 3.12` changes the Python and nothing else; a framework flag replaces that framework's
    spec and drops the project's local-build pin of it (the pin belonged to the old spec)."""
    merged = PROJECT.merged(flags)
    fields = ("python", "frameworks", "cuda", "cudnn", "flavor", "os", "variants", "framework_index")
    assert {f: getattr(merged, f) for f in fields} == {f: changed.get(f, getattr(PROJECT, f)) for f in fields}


def test_open_constraints_take_the_flags_as_they_are():
    """A project that pins nothing gets the flags' values, a set field never lost to an open one."""
    flags = Constraints(python=spec("3.12"), cuda=spec("12.6"), cudnn=spec("9.5"), flavor="wheels", os="ubuntu24.04",
                        frameworks=(("torch", spec("==2.6.0")),), variants=(("torch", "cu126"),),
                        framework_index="pypi")
    assert Constraints().merged(flags) == flags
    assert Constraints().merged(Constraints()) == Constraints()


# --- the host ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("gpu", "label"), [
    (TargetGpu("8.0", "A100"), "A100 (sm_80)"),
    (TargetGpu("12.0"), "sm_120"),
], ids=["named", "capability-only"])
def test_a_gpu_is_labelled_by_name_and_sm(gpu, label):
    """Messages name a GPU the way the user gave it, with its sm_XY."""
    assert gpu.label == label


@pytest.mark.parametrize(("gpus", "datacenter"), [
    ((), False),
    ((TargetGpu("8.0", datacenter=True),), True),
    ((TargetGpu("8.0", datacenter=True), TargetGpu("8.9")), False),
], ids=["no-gpu", "all", "mixed"])
def test_forward_compatibility_needs_every_gpu_to_be_data_center(gpus, datacenter):
    """cuda-compat works on data-center GPUs only: one consumer card (or no GPU to vouch for) rules it out."""
    assert Host("535.104.05", gpus).all_datacenter is datacenter


# --- problems and resolutions --------------------------------------------------------------------


def test_a_problem_is_a_fix_when_its_code_says_so_and_its_json_leaves_out_an_empty_fix():
    """`fix-...` problems are suggestions, not reasons; the JSON carries "fix" only when there is one."""
    reason = Problem("driver-too-old", "driver 470 runs CUDA <= 11.4")
    fix = Problem("fix-driver", "upgrade the driver", fix="550.54.15")
    assert (reason.is_fix, fix.is_fix) == (False, True)
    assert Problem("driver-fix", "m").is_fix is False
    assert reason.as_dict() == {"code": "driver-too-old", "message": "driver 470 runs CUDA <= 11.4"}
    assert fix.as_dict() == {"code": "fix-driver", "message": "upgrade the driver", "fix": "550.54.15"}
    assert Problem("c", "m", fix="").as_dict() == {"code": "c", "message": "m"}


def test_the_reasons_of_a_refusal_leave_out_the_suggested_fixes():
    """`cudaenv resolve` explains a "no" by its reasons; the fixes are printed apart."""
    problems = (Problem("driver-too-old", "too old"), Problem("fix-driver", "upgrade"), Problem("gpu", "no sm_35"))
    refused = Resolution(None, (), problems)
    assert refused.ok is False and refused.reasons == ("too old", "no sm_35")
    assert refused.as_dict() == {"ok": False, "stack": None, "valid_cuda": [],
                                 "problems": [{"code": "driver-too-old", "message": "too old"},
                                              {"code": "fix-driver", "message": "upgrade"},
                                              {"code": "gpu", "message": "no sm_35"}]}


# --- a stack as the lock stores it ---------------------------------------------------------------

LOCKED = {
    "python": "3.12", "cuda": "12.4", "cuda_release": "12.4.1", "cudnn": "9.1", "cudnn_version": "9.1.0.70",
    "frameworks": {"torch": "2.6.0", "torchvision": "0.21.0"},
    "requirements": ["torch==2.6.0+cu124", "torchvision==0.21.0+cu124"],
    "index_urls": ["https://download.pytorch.org/whl/cu124"], "find_links": ["https://f.example/wheels/"],
    "flavor": "runtime", "base_image": "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04",
    "driver_compatibility": "native", "min_driver": "550.54.14", "min_driver_compat": "525.60.13",
    "compute_capabilities": ["8.0", "9.0"], "brings_own_cuda": False,
    "nvidia_requires": {"nvidia-nccl-cu12": "2.21.5", "nvidia-cublas-cu12": "12.4.5.8"},
    "gpu_targets": {"torch": {"sass": ["8.0", "9.0"], "ptx": ["9.0"]}, "torchvision": {"sass": ["8.0"]},
                    "jax": {"ptx": ["9.0"]}},
}


def test_a_locked_stack_reads_every_field_it_records():
    """The lock is the only record of a build: every field comes back as written, the NVIDIA pins
    in name order, a GPU target without sass or ptx as an empty list."""
    stack = Stack.from_dict(LOCKED)
    assert stack == Stack(
        python="3.12", cuda="12.4", cuda_release="12.4.1", cudnn="9.1", cudnn_version="9.1.0.70",
        frameworks=(("torch", "2.6.0"), ("torchvision", "0.21.0")),
        requirements=("torch==2.6.0+cu124", "torchvision==0.21.0+cu124"),
        index_urls=("https://download.pytorch.org/whl/cu124",), find_links=("https://f.example/wheels/",),
        flavor="runtime", base_image="nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", driver_compatibility="native",
        min_driver="550.54.14", min_driver_compat="525.60.13", compute_capabilities=("8.0", "9.0"),
        brings_own_cuda=False,
        nvidia_requires=(("nvidia-cublas-cu12", "12.4.5.8"), ("nvidia-nccl-cu12", "2.21.5")),
        gpu_targets=(("torch", ("8.0", "9.0"), ("9.0",)), ("torchvision", ("8.0",), ()), ("jax", (), ("9.0",))),
    )
    assert stack.framework("torchvision") == "0.21.0" and stack.framework("jax") is None
    assert stack.as_dict() == {**LOCKED, "nvidia_requires": dict(sorted(LOCKED["nvidia_requires"].items())),
                               "gpu_targets": {"torch": {"sass": ["8.0", "9.0"], "ptx": ["9.0"]},
                                               "torchvision": {"sass": ["8.0"], "ptx": []},
                                               "jax": {"sass": [], "ptx": ["9.0"]}}}


def test_a_lock_with_only_the_required_keys_reads_as_a_stack_with_nothing_else():
    """TOML has no null: a lock leaves out what a stack does not have (no cuDNN, no find-links, no GPU
    targets), and every such field reads back empty."""
    stack = Stack.from_dict({k: LOCKED[k] for k in ("python", "cuda", "flavor", "base_image")})
    assert stack == Stack(python="3.12", cuda="12.4", cuda_release="12.4", cudnn=None, cudnn_version=None,
                          frameworks=(), requirements=(), index_urls=(), find_links=(), flavor="runtime",
                          base_image="nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", driver_compatibility=None,
                          min_driver=None, min_driver_compat=None, compute_capabilities=(), brings_own_cuda=False)


def test_a_resolution_with_a_stack_prints_the_stack():
    """`cudaenv resolve --json` carries the chosen stack as the lock would store it."""
    stack = Stack.from_dict(LOCKED)
    assert Resolution(stack, ("12.4",), ()).as_dict() == {"ok": True, "stack": stack.as_dict(), "valid_cuda": ["12.4"],
                                                          "problems": []}


def test_a_lock_without_the_toolkit_release_reads_the_cuda_in_its_place():
    """Locks written before cuda_release was recorded name only x.y: that is the best release known."""
    data = {k: v for k, v in LOCKED.items() if k != "cuda_release"}
    assert Stack.from_dict(data).cuda_release == "12.4"
    assert Stack.from_dict({**LOCKED, "brings_own_cuda": 1}).brings_own_cuda is True


@pytest.mark.parametrize(("data", "error", "message"), [
    ("stack", TypeError, "a stack is a table, not str"),
    ({**LOCKED, "python": 3.12}, ValueError, "stack.python must be a string, got 3.12"),
    ({**LOCKED, "base_image": None}, ValueError, "stack.base_image must be a string, got None"),
    ({**LOCKED, "frameworks": "torch"}, ValueError, "stack.frameworks must be a table"),
    ({**LOCKED, "nvidia_requires": "nccl"}, ValueError, "stack.nvidia_requires must be a table"),
    ({**LOCKED, "gpu_targets": ["torch"]}, ValueError, "stack.gpu_targets must be a table"),
    ({**LOCKED, "nvidia_requires": []}, ValueError, None),  # empty: read as none
    ({**LOCKED, "gpu_targets": {"torch": "8.0"}}, ValueError, "stack.gpu_targets entries must be tables"),
], ids=["not-a-table", "python-number", "base-image-missing", "frameworks-string", "requires-string", "targets-list",
        "empty-list", "target-string"])
def test_what_is_not_a_stack_is_refused_with_one_line_naming_the_key(data, error, message):
    """A hand-edited or foreign lock is bad input (exit 2) with a message naming the key; an empty
    list where a table belongs is as empty as an empty table."""
    if message is None:
        assert Stack.from_dict(data).nvidia_requires == ()
        return
    with pytest.raises(error) as caught:
        Stack.from_dict(data)
    assert str(caught.value) == message
