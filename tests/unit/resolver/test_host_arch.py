"""The target's CPU architecture is a fact of the host (issue 35): declared (--arch, [target] arch),
detected (uname -m), or implied by a GPU that only comes with an Arm CPU (Grace superchips). The
resolver then chooses among builds and images published for that architecture; Jetson modules
before Thor (CUDA from Jetson Linux, not the server builds) are refused with that reason."""

from __future__ import annotations

import json

import pytest

from cudaenv.errors import MatrixError
from cudaenv.matrix import load_matrix
from cudaenv.resolver.check import check_stack
from cudaenv.resolver.model import Host, TargetGpu, arch_name
from cudaenv.resolver.resolve import resolve
from tests.support.cli import cudaenv, without_target_overrides
from tests.unit.resolver.helpers import constraints, host, matrix

ARM_HOSTED = ["GH200", "GB200", "GB300", "GB10", "Jetson AGX Orin", "Jetson Nano", "Jetson T5000"]


@pytest.mark.parametrize("name", ARM_HOSTED)
def test_grace_and_jetson_rows_are_marked_aarch64(name):
    assert matrix().find_gpu(name).host_arch == "aarch64"


@pytest.mark.parametrize("name", ["H100", "B200", "B300", "A100", "RTX 5090", "L40S"])
def test_gpus_sold_for_x86_hosts_are_x86_64(name):
    assert matrix().find_gpu(name).host_arch == "x86_64"


@pytest.mark.parametrize(("name", "l4t"), [("Jetson AGX Orin", True), ("Jetson Nano", True), ("Jetson TX2", True),
                                           ("Jetson Xavier NX", True), ("Jetson T5000", False), ("GH200", False)],
                         ids=["orin", "nano", "tx2", "xavier", "thor", "gh200"])
def test_jetson_modules_before_thor_run_jetson_linux_cuda(name, l4t):
    assert matrix().find_gpu(name).l4t is l4t


@pytest.mark.parametrize(("value", "arch"), [("aarch64", "aarch64"), ("arm64", "aarch64"), (" ARM64 ", "aarch64"),
                                             ("x86_64", "x86_64"), ("amd64", "x86_64"), ("ppc64le", None),
                                             ("", None), ("aarch64\n; x", None)],
                         ids=["aarch64", "arm64", "padded", "x86_64", "amd64", "ppc64le", "empty", "injected"])
def test_architecture_spellings(value, arch):
    assert arch_name(value) == arch


@pytest.mark.parametrize("name", ["GH200", "GB200", "GB10"])
def test_a_grace_gpu_implies_an_aarch64_host(name):
    assert host("580.65.06", [name]).platform == "aarch64"


def test_a_declared_architecture_wins_and_a_plain_gpu_implies_nothing():
    a100 = host("580.65.06", ["A100"])
    assert a100.platform == "x86_64"
    assert Host(a100.driver, a100.gpus, "aarch64").platform == "aarch64"  # an Arm server with a PCIe A100


def test_a_grace_gpu_declared_on_an_x86_64_host_is_a_mismatch_naming_both():
    gh200 = host("580.65.06", ["GH200"])
    result = resolve(matrix(), constraints(torch="any"), Host(gh200.driver, gh200.gpus, "x86_64"))
    assert not result.ok
    (problem,) = [p for p in result.problems if p.code == "host-arch-mismatch"]
    assert problem.message == ("GH200 (sm_90) only comes in aarch64 hosts (its CPU is part of the same superchip or "
                               "module), but the target's CPU is x86_64")
    assert "--arch aarch64" in problem.fix


@pytest.mark.parametrize("name", ["Jetson AGX Orin", "Jetson Nano"])
def test_a_jetson_module_on_jetson_linux_is_refused_with_that_reason(name):
    result = resolve(matrix(), constraints(torch="any"), host("540.4.0", [name]))
    assert not result.ok and [p.code for p in result.problems][0] == "host-platform-unsupported"
    assert "Jetson Linux (L4T, JetPack)" in result.problems[0].message


def test_the_refusal_does_not_need_a_driver():
    result = resolve(matrix(), constraints(torch="any"), host(None, ["Jetson AGX Orin"]))
    assert not result.ok and [p.code for p in result.problems] == ["host-platform-unsupported"]


def test_a_gpu_given_only_by_compute_capability_is_resolved_for_x86_64():
    gpu = TargetGpu("9.0", None, "hopper", False)  # host unknown: nothing implied
    result = resolve(matrix(), constraints(torch="any"), Host("580.65.06", (gpu,)))
    assert result.ok and result.stack.arch == "x86_64"


def test_check_says_why_an_x86_64_stack_cannot_run_on_a_grace_host():
    stack = resolve(matrix(), constraints(torch="==2.9.1"), host("580.65.06", ["H100"])).stack
    verdict = check_stack(matrix(), stack, host("580.65.06", ["GH200"]))
    assert not verdict.compatible
    assert "the stack is built for x86_64 and the host's CPU is aarch64: its image and wheels do not run there " \
           "(lock the project for that CPU: [target] arch = \"aarch64\" in cudaenv.toml, then `cudaenv lock`)" \
           in verdict.reasons


def _cli(*args):
    proc = cudaenv(*args, "--json", env=without_target_overrides(), timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def test_cudaenv_check_exits_1_and_names_the_host():
    # torch 2.3.1 has no aarch64 CUDA build: the stack the flags name is the x86_64 one
    code, result = _cli("check", "--torch", "2.3.1", "--cuda", "12.1", "--python", "3.11", "--driver", "580.65.06",
                        "--gpu", "GB200")
    assert code == 1 and result["compatible"] is False
    assert result["results"][0]["host"]["arch"] == "aarch64"
    assert result["results"][0]["reasons"][0].startswith("the stack is built for x86_64 and the host's CPU is aarch64")


@pytest.mark.parametrize("value", ["ppc64le", "arm", "x86"], ids=["ppc64le", "arm", "x86"])
def test_an_unknown_arch_flag_is_one_line_and_exit_2(value):
    proc = cudaenv("resolve", "--torch", "any", "--driver", "580.65.06", "--arch", value, "--json",
                   env=without_target_overrides(), timeout=120)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]["message"]  # the one JSON object, and nothing else on stdout
    assert error.startswith("--arch: expected a CPU architecture, x86_64 or aarch64") and repr(value) in error
    assert "Traceback" not in proc.stderr


def test_target_arch_in_the_configuration_is_read_and_checked(tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[frameworks]\ntorch = "any"\n[target]\ndriver = "580.65.06"\n'
                                           'gpus = ["A100"]\narch = "ppc64le"\n')
    proc = cudaenv("resolve", tmp_path, "--json", env=without_target_overrides(), timeout=120)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["field"] == "target.arch" and "ppc64le" in error["message"]


def test_host_arch_must_be_a_known_architecture(tmp_path):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nname = "Test GPU"\ncompute_capability = "9.0"\narchitecture = "hopper"\ndatacenter = true\n'
        'host_arch = "arm64"\nsource = "overlay test ; read 2026-11-24"\n')
    with pytest.raises(MatrixError, match=r"gpus.toml.*Test GPU.*field 'host_arch': expected 'x86_64' or 'aarch64'"):
        load_matrix(overlays=[tmp_path], use_cache=False)


def test_l4t_only_on_an_aarch64_row(tmp_path):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nname = "Test GPU"\ncompute_capability = "8.7"\narchitecture = "ampere"\ndatacenter = false\n'
        'l4t = true\nsource = "overlay test ; read 2026-11-28"\n')
    with pytest.raises(MatrixError, match=r"gpus.toml.*Test GPU.*field 'l4t'"):
        load_matrix(overlays=[tmp_path], use_cache=False)


def test_an_overlay_can_mark_its_own_gpu_aarch64(tmp_path):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nname = "Site Arm GPU"\ncompute_capability = "9.0"\narchitecture = "hopper"\ndatacenter = true\n'
        'host_arch = "aarch64"\nsource = "site inventory ; read 2026-11-24"\n')
    m = load_matrix(overlays=[tmp_path], use_cache=False)
    assert m.find_gpu("Site Arm GPU").host_arch == "aarch64"


def test_a_detected_grace_gpu_carries_its_host_arch():
    from cudaenv.hosts.detect import DetectedGpu
    from cudaenv.hosts.target import identify_gpu

    found = identify_gpu(matrix(), DetectedGpu(0, "NVIDIA GH200 480GB", "9.0"))
    assert found.host_arch == "aarch64"
    unknown = identify_gpu(matrix(), DetectedGpu(0, "Some Future GPU", "9.0"))
    assert unknown.host_arch is None  # not in the matrix: nothing known, nothing implied


def test_init_writes_the_declared_architecture_its_gpus_do_not_imply(tmp_path):
    # an A100 in an Arm server: `cudaenv lock` reads [target] only, so an arch left out of it
    # would lock (and build) the x86_64 stack for the aarch64 host init resolved for
    (tmp_path / "requirements.txt").write_text("numpy\n")
    proc = cudaenv("init", tmp_path, "--no-lock", "--driver", "595.45.04", "--gpu", "A100", "--arch", "arm64",
                   env=without_target_overrides(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '[target]\ndriver = "595.45.04"\ngpus = ["A100"]\narch = "aarch64"\n' in (tmp_path / "cudaenv.toml").read_text()
    code, result = _cli("resolve", tmp_path)  # what `cudaenv lock` resolves from the file
    assert code == 0 and result["stack"]["arch"] == "aarch64"


def test_init_leaves_out_an_architecture_the_gpus_imply(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\n")
    proc = cudaenv("init", tmp_path, "--no-lock", "--driver", "595.45.04", "--gpu", "GH200",
                   env=without_target_overrides(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "cudaenv.toml").read_text()
    assert 'gpus = ["GH200"]' in text and "arch =" not in text


@pytest.mark.parametrize("cc", ["8.7", "7.2", "6.2", "5.3"])
def test_a_capability_only_jetson_modules_have_is_refused_like_the_module(cc):
    # NVIDIA's CUDA GPUs pages list sm_87 for Jetson Orin alone (7.2 Xavier, 6.2 TX2, 5.3 Nano): a
    # GPU given by that capability runs Jetson Linux's CUDA, with or without --arch
    for arch in ((), ("--arch", "aarch64")):
        code, result = _cli("resolve", "--torch", "any", "--driver", "580.65.06", "--compute-capability", cc, *arch)
        assert code == 1 and result["problems"][0]["code"] == "host-platform-unsupported", result


def test_a_kubernetes_node_whose_gpu_product_is_not_in_the_matrix_but_has_orins_capability_is_refused():
    from cudaenv.cluster.facts import NodeFacts
    from cudaenv.cluster.verdicts import judge

    stack = resolve(matrix(), constraints(torch="==2.12.0"), Host("580.65.06", (), "aarch64")).stack
    facts = NodeFacts(name="orin", source="kubernetes", driver="580.65.06", product="Orin", compute_capability="8.7",
                      gpu_count=1, capacity=1, allocatable=1, labels="new", arch="aarch64")
    verdict = judge(matrix(), stack, facts)
    assert not verdict.compatible
    assert verdict.reasons[0].startswith("Orin (sm_87) is a Jetson module")


def test_a_capability_other_gpus_share_is_not_taken_for_a_jetson():
    code, result = _cli("resolve", "--torch", "any", "--driver", "580.65.06", "--compute-capability", "8.6",
                        "--arch", "aarch64")
    assert code == 0 and result["stack"]["arch"] == "aarch64"


# A lock's stack names its CPU (and the packages built from source, the OS Python, the init): read
# back by Stack.from_dict exactly as written, and anything else is refused naming the field.
_LOCKED = {"python": "3.12", "cuda": "13.0", "flavor": "runtime", "base_image": "nvidia/cuda:13.0.0-runtime-ubuntu24.04"}


def test_a_locked_stacks_optional_fields_read_back_as_written():
    from cudaenv.resolver.model import Stack

    data = dict(_LOCKED, arch="aarch64", init="dumb-init", python_packages=["python3.12-venv"],
                source_builds=["mypkg"])
    stack = Stack.from_dict(data)
    assert (stack.arch, stack.init, stack.python_packages, stack.source_builds) == (
        "aarch64", "dumb-init", ("python3.12-venv",), ("mypkg",))
    assert Stack.from_dict(stack.as_dict()) == stack
    plain = Stack.from_dict(dict(_LOCKED))
    assert (plain.arch, plain.init, plain.python_packages, plain.source_builds) == ("x86_64", "tini", (), ())


@pytest.mark.parametrize(("field", "value", "message"), [
    ("arch", "ppc64le", "stack.arch must be one of x86_64, aarch64, got 'ppc64le'"),
    ("arch", "arm64", "stack.arch must be one of x86_64, aarch64, got 'arm64'"),
    ("init", "systemd", "stack.init must be one of tini, dumb-init, got 'systemd'"),
    ("python_packages", ["python3.6", "bad name"],
     "stack.python_packages must be a list of Debian package names, got ['python3.6', 'bad name']"),
    ("python_packages", "python3.6", "stack.python_packages must be a list of Debian package names, got 'python3.6'"),
    ("source_builds", ["ok", "--no-deps x"], "stack.source_builds must be a list of package names, got ['ok', '--no-deps x']"),
    ("source_builds", "mypkg", "stack.source_builds must be a list of package names, got 'mypkg'"),
    ("source_builds", [3], "stack.source_builds must be a list of package names, got [3]"),
], ids=["arch-ppc", "arch-arm64-spelling", "init", "python-packages-name", "python-packages-string",
        "source-builds-option", "source-builds-string", "source-builds-number"])
def test_a_locked_stacks_field_is_refused_naming_it(field, value, message):
    from cudaenv.resolver.model import Stack

    with pytest.raises(ValueError) as caught:
        Stack.from_dict(dict(_LOCKED, **{field: value}))
    assert str(caught.value) == message
