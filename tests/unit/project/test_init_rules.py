"""The rules of ``cudaenv init`` (cudaenv.project.init): what it reads from the detected project as
constraints, and the commented configuration it writes, word for word: the user reads and edits
that file, and ``cudaenv lock`` reads it back."""

from __future__ import annotations

from dataclasses import replace

import pytest
import tomlkit
from packaging.specifiers import SpecifierSet

from cudaenv.matrix import load_matrix
from cudaenv.project.detect import Detected
from cudaenv.project.init import _range_for, constraints_from_detected, render_config
from cudaenv.resolver.model import Constraints, Host, TargetGpu
from cudaenv.resolver.resolve import resolve


@pytest.fixture(scope="module")
def stack():
    """A resolved stack, with the fields init writes fixed (the shipped matrix moves on)."""
    resolved = resolve(load_matrix(overlays=[]), Constraints(), Host(driver="550.54.15")).stack
    return replace(resolved, python="3.12", cuda="12.4", cudnn="9.1", cudnn_version="9.1.0.70", flavor="wheels",
                   frameworks=(("torch", "2.6.0"), ("torchvision", "0.21.0")))


# --- constraints from what was detected ----------------------------------------------------------


def test_detected_frameworks_python_and_cuda_become_constraints():
    detected = Detected(frameworks={"torch": ">=2.4", "torchvision": ""}, python="3.11", cuda=">=12.1")
    plan = constraints_from_detected(detected)
    assert plan.constraints == Constraints(python=SpecifierSet("==3.11"),
                                           frameworks=(("torch", SpecifierSet(">=2.4")),
                                                       ("torchvision", SpecifierSet())),
                                           cuda=SpecifierSet(">=12.1"))
    assert plan.framework_specs == {"torch": ">=2.4", "torchvision": ""}


def test_nothing_detected_constrains_nothing():
    plan = constraints_from_detected(Detected(frameworks={"jax": ""}))
    assert plan.constraints == Constraints(python=None, frameworks=(("jax", SpecifierSet()),), cuda=None)
    assert plan.framework_specs == {"jax": ""}


def test_an_empty_python_or_cuda_detection_constrains_nothing():
    """A conda ``python=*`` is detected as "": no Python constraint, not an empty one (which
    messages would name as "Python ")."""
    plan = constraints_from_detected(Detected(frameworks={"torch": ""}, python="", cuda=""))
    assert plan.constraints.python is None and plan.constraints.cuda is None


def test_a_framework_specifier_that_cannot_be_read_is_left_unconstrained_and_unwritten():
    plan = constraints_from_detected(Detected(frameworks={"torch": ">=two", "jax": "==0.4.30"}))
    assert plan.constraints.frameworks == (("torch", SpecifierSet()), ("jax", SpecifierSet("==0.4.30")))
    assert plan.framework_specs == {"torch": "", "jax": "==0.4.30"}


@pytest.mark.parametrize("version, written", [
    ("2.6.0", ">=2.6,<3"), ("2.10.1", ">=2.10,<3"), ("0.4.30", ">=0.4,<1"), ("10.0", ">=10.0,<11"),
], ids=["torch", "two-digit-minor", "zero-major", "two-digit-major"])
def test_an_unpinned_framework_is_written_from_its_resolved_minor_below_the_next_major(version, written):
    assert _range_for(version) == written


# --- the configuration written --------------------------------------------------------------------

BUILD_AND_RUN = """[build]
flavor = "auto" # auto | wheels | runtime | devel (resolved: wheels)
system_packages = []
# base_registry = ""   # mirror or private registry prefix for base images
# ca_cert = ""         # CA bundle for builds behind a TLS-intercepting proxy
# python_index = ""    # a PyPI mirror (credentials: CUDAENV_PYTHON_INDEX_USERNAME/_PASSWORD or ~/.netrc)
# framework_index = "" # where framework wheels come from: PyPI, PyTorch's whl/cu126, or a mirror
# framework_index_mirrors = "" # for a mirror: "pypi" or the PyTorch index it mirrors

[run]
gpus = "all" # all | none | auto | a count | device indices or UUIDs
shm_size = "8g" # PyTorch DataLoader workers need shared memory
command = []
"""

HEADER = """# cudaenv.toml: what this project needs from CUDA. Written by `cudaenv init`;
# edit freely, then run `cudaenv lock`. Schema: see cudaenv's README (Configuration).
"""


def test_a_project_that_names_only_its_frameworks_gets_every_other_setting_as_a_comment(stack):
    detected = Detected(frameworks={"torch": "", "torchvision": ""}, requirement_files=["requirements.txt"])
    text = render_config("My Project", detected, constraints_from_detected(detected), stack, Host(),
                         ["requirements.txt"])
    assert text == HEADER + """
[project]
name = "my-project" # image name
requirements = ["requirements.txt"]
# python = "3.12"   # optional; unset, cudaenv picks the newest Python the frameworks support (now 3.12, recorded in cudaenv.lock)

[frameworks]
torch = ">=2.6,<3" # resolved: 2.6.0
torchvision = "any" # resolved: 0.21.0

[cuda]
# version = ">=12.4"   # optional; resolved: CUDA 12.4
# cudnn = ">=9.1"   # optional; resolved: cuDNN 9.1.0.70

[target]
# driver = "535.104.05"   # the host(s) the stack must run on
# gpus = ["A100"]

""" + BUILD_AND_RUN


def test_what_the_project_and_host_say_is_written_as_settings(stack):
    detected = Detected(frameworks={"torch": ">=2.4", "torchvision": "", "torchaudio": "==2.6.0"}, python=">=3.10",
                        cuda=">=12.1", requirement_files=["requirements.txt", "dev.txt"])
    host = Host("550.54.15", (TargetGpu("8.0", "NVIDIA A100-SXM4-80GB"), TargetGpu("12.0", "Mystery Board"),
                              TargetGpu("9.0", None)))
    text = render_config("p", detected, constraints_from_detected(detected), replace(stack, cudnn=None), host,
                         ["requirements.txt", "dev.txt"], known_gpu=lambda name: name != "Mystery Board")
    assert text == HEADER + """
[project]
name = "p" # image name
python = ">=3.10" # detected
requirements = ["requirements.txt", "dev.txt"]

[frameworks]
torch = ">=2.4" # resolved: 2.6.0
torchvision = "any" # resolved: 0.21.0
torchaudio = "==2.6.0" # follows torch

[cuda]
version = ">=12.1" # named by the requirements (a +cu118 build, a jax[cuda12] extra)

[target]
driver = "550.54.15"
gpus = ["NVIDIA A100-SXM4-80GB"]
compute_capabilities = ["12.0", "9.0"]

""" + BUILD_AND_RUN


def test_without_a_gpu_lookup_every_named_gpu_is_written_by_name(stack):
    detected = Detected(frameworks={"torch": ""})
    host = Host(None, (TargetGpu("8.0", "A100"), TargetGpu("9.0", None)))
    target = tomlkit.parse(render_config("p", detected, constraints_from_detected(detected), stack, host,
                                         [])).unwrap()["target"]
    assert target == {"gpus": ["A100"], "compute_capabilities": ["9.0"]}


def test_only_gpus_the_matrix_knows_means_no_compute_capabilities_line(stack):
    detected = Detected(frameworks={"torch": ""})
    host = Host(None, (TargetGpu("8.0", "A100"),))
    text = render_config("p", detected, constraints_from_detected(detected), stack, host, [])
    assert 'gpus = ["A100"]' in text and "compute_capabilities" not in text


def test_a_framework_the_stack_did_not_resolve_is_written_as_any_following_itself(stack):
    detected = Detected(frameworks={"torch": "", "jax": ""})
    written = tomlkit.parse(render_config("p", detected, constraints_from_detected(detected), stack, Host(), []))
    assert written.unwrap()["frameworks"] == {"torch": ">=2.6,<3", "jax": "any"}
    assert 'jax = "any" # follows jax' in tomlkit.dumps(written)


def test_an_unpinned_companion_the_stack_did_not_resolve_follows_its_framework(stack):
    detected = Detected(frameworks={"torch": "", "torchaudio": ""})
    text = render_config("p", detected, constraints_from_detected(detected), stack, Host(), [])
    assert 'torchaudio = "any" # follows torch' in text
