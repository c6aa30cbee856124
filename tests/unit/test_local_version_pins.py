"""A pin copied from PyTorch's install page (`torch==2.0.1+cu118`) is accepted on the command line
and in cudaenv.toml, and pins that build variant (its CUDA)."""

from __future__ import annotations

import json

import pytest

from cudaenv.versions import split_local_build

from tests.support.cli import cudaenv, without_target_overrides


@pytest.mark.parametrize("text,expected", [("==2.0.1+cu118", ("==2.0.1", "11.8")), ("2.0.1+cu117", ("==2.0.1", "11.7")),
                                           ("2.9.1+cu130", ("==2.9.1", "13.0")), (">=2.4", (">=2.4", None)),
                                           ("2.0.1+cpu", ("2.0.1+cpu", None)), ("==1.7.1+cu92", ("==1.7.1", "9.2")),
                                           ("1.0.0+CU90", ("==1.0.0", "9.0")), ("==1.7.1+cu101", ("==1.7.1", "10.1"))])
def test_split_local_build(text, expected):
    assert split_local_build(text) == expected


def resolve(*args, cwd=None):
    proc = cudaenv("resolve", *args, "--json", env=without_target_overrides(), cwd=cwd, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("pin,cuda", [("==2.0.1+cu118", "11.8"), ("==2.0.1+cu117", "11.7")])
def test_the_flag_pins_the_variant(pin, cuda):
    code, result = resolve("--torch", pin, "--driver", "535.104.05", "--gpu", "A100")
    assert code == 0 and result["stack"]["cuda"] == cuda and result["stack"]["frameworks"]["torch"] == "2.0.1"


def test_the_config_pins_the_variant(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "==2.0.1+cu117"\n\n[target]\ndriver = "535.104.05"\n')
    code, result = resolve(cwd=tmp_path)
    assert code == 0 and result["stack"]["cuda"] == "11.7"


@pytest.mark.parametrize("cuda", [">=12.6", ">=12"], ids=["from-the-pin-on", "a-whole-major"])
def test_a_cuda_range_beside_the_pin_keeps_the_pinned_build(tmp_path, cuda):
    """``torch==2.10.0+cu126`` with ``cuda = ">=12.6"``: the range admits the cu128 and cu130 builds
    too, but the pin names cu126, and that is the build the stack must install (R580 would otherwise
    take the newest, CUDA 13.0)."""
    (tmp_path / "cudaenv.toml").write_text(f'[frameworks]\ntorch = "==2.10.0+cu126"\n\n[cuda]\nversion = "{cuda}"\n'
                                           '\n[target]\ndriver = "580.65.06"\ngpus = ["A100"]\n')
    code, result = resolve(cwd=tmp_path)
    assert code == 0, result
    assert result["stack"]["cuda"] == "12.6"
    assert result["stack"]["index_urls"][0] == "https://download.pytorch.org/whl/cu126"


def test_pins_naming_two_builds_of_one_release_are_explained_as_such(tmp_path):
    """torch +cu126 beside torchvision +cu128 in cudaenv.toml: no environment holds both builds, and
    the answer says so (not that torch's metadata excludes torchvision 0.25.0, which it does not)."""
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "==2.10.0+cu126"\ntorchvision = "==0.25.0+cu128"\n'
                                           '\n[target]\ndriver = "580.65.06"\n')
    code, result = resolve(cwd=tmp_path)
    assert code == 1
    assert [(p["code"], p["message"]) for p in result["problems"]] == [
        ("conflicting-pins", "the pins name different builds of torch (torch +cu126, torchvision +cu128): "
                             "one environment installs one build"),
        ("fix-relax-pin", "relax the torch pin (2.10.0+cu126): torch 2.10.0 fits this host"),
        ("fix-relax-pin", "relax the torchvision pin (0.25.0+cu128): torch 2.10.0 fits this host, with the "
                          "torchvision it pairs with")]


def test_a_local_version_on_a_companion_without_per_cuda_builds_is_bad_input():
    """keras has no +cuXYZ builds (TensorFlow's metadata names a range of it): one line, exit 2, not
    a traceback from relaxing the pin later."""
    proc = cudaenv("resolve", "--keras", "==2.15.0+cu122", "--driver", "580.65.06", "--gpu", "A100", "--json",
                   env=without_target_overrides(), timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["message"] == ("keras 2.15.0+cu122: keras is not built per CUDA, so no local version names one "
                                "of its builds (pin keras without +cu122)")
    assert error["field"] == "frameworks.keras"


def test_a_flag_that_replaces_a_pinned_build_takes_no_cuda_from_the_pin_it_replaced(tmp_path):
    """cudaenv.toml pins torch 2.10.0+cu126; ``--torch 2.15`` replaces that pin, and with it the build
    it named: 2.15.0 resolves on its own CUDA, not under a CUDA 12.6 left behind by the old pin."""
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "==2.10.0+cu126"\n\n[target]\ndriver = "580.65.06"\n'
                                           'gpus = ["A100"]\n')
    code, result = resolve("--torch", "2.15", cwd=tmp_path)
    assert code == 0, result
    assert result["stack"]["frameworks"]["torch"].startswith("2.15") and result["stack"]["cuda"] != "12.6"


@pytest.mark.parametrize(("pin", "cuda"), [("==1.7.1+cu92", "9.2"), ("1.7.1+CU101", "10.1")])
def test_a_torch_1x_pin_from_pytorchs_previous_versions_page_pins_its_build(pin, cuda):
    """https://pytorch.org/get-started/previous-versions/#v171 lists torch==1.7.1+cu92: a one-digit
    CUDA major is a build too (cu90, cu92), and a label in capitals is the same label (PEP 440)."""
    code, result = resolve("--torch", pin, "--driver", "450.80.02", "--gpu", "V100")
    assert code == 0 and result["stack"]["cuda"] == cuda and result["stack"]["frameworks"]["torch"] == "1.7.1"
