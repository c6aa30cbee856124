"""doctor on CDI: which specs offer which GPUs, stale specs, and the setup that loses GPUs on reload.
Each answer is a whole Check (name, verdict, detail, fix): what the user reads is the contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.hosts import cdi
from cudaenv.hosts.detect import DetectedGpu
from cudaenv.run.doctor import Check, cdi_check, reload_safety_check

H100 = DetectedGpu(0, "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-11111111-2222-3333-4444-555555555555")
GENERATE = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"


def spec_dir(tmp_path: Path, names=("0", "all"), node="/dev/null", file="nvidia.yaml", directory="cdi") -> Path:
    where = tmp_path / directory
    where.mkdir(exist_ok=True)
    devices = "".join(f"- name: '{n}'\n  containerEdits:\n    deviceNodes:\n    - path: {node}\n" for n in names)
    (where / file).write_text(f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n{devices}")
    return where


def test_a_current_spec_is_reported_with_its_devices_in_index_order_and_whether_docker_reads_it(tmp_path):
    directory = spec_dir(tmp_path, names=("all", "10", "2", "GPU-11111111-2222-3333-4444-555555555555", "0", "0:1"))
    gpus = tuple(DetectedGpu(i, "NVIDIA H100", "9.0") for i in range(11))
    offered = f"{directory / 'nvidia.yaml'} offer 0, 2, 10, 0:1, GPU-11111111-2222-3333-4444-555555555555, all"
    assert cdi_check((H100,) + gpus[1:], {"CDISpecDirs": [str(directory)]}, dirs=[directory]) == Check(
        "CDI specs", True, f"{offered}; Docker injects them (CDI enabled)")
    assert cdi_check((H100,) + gpus[1:], {"CDISpecDirs": []}, dirs=[directory]) == Check(
        "CDI specs", True, f"{offered}; Docker does not read them (CDI not enabled) and uses the legacy NVIDIA hook")
    assert cdi_check((H100,) + gpus[1:], None, dirs=[directory]) == Check("CDI specs", True, offered)


def test_without_dirs_doctor_reads_the_specifications_default_directories(tmp_path, monkeypatch):
    directory = spec_dir(tmp_path)
    monkeypatch.setattr(cdi, "SPEC_DIRS", (str(tmp_path / "etc-cdi"), str(directory)))
    assert cdi_check((H100,), None) == Check("CDI specs", True, f"{directory / 'nvidia.yaml'} offer 0, all")
    assert cdi_check((), None, dirs=[]) == Check(
        "CDI specs", True, "no NVIDIA GPU spec in ; none needed on a host without GPUs")


def test_a_gpu_host_without_a_spec_is_told_how_to_generate_one(tmp_path):
    assert cdi_check((H100,), None, dirs=[tmp_path / "a", tmp_path / "b"]) == Check(
        "CDI specs", False, f"no NVIDIA GPU spec in {tmp_path / 'a'} and {tmp_path / 'b'}: Podman, and Docker with CDI, "
                            "cannot give containers GPUs (only Docker's legacy NVIDIA hook can)",
        f"`{GENERATE}` (NVIDIA Container Toolkit 1.14 or newer)")


def test_a_host_without_gpus_needs_no_spec(tmp_path):
    assert cdi_check((), None, dirs=[tmp_path / "none"]) == Check(
        "CDI specs", True, f"no NVIDIA GPU spec in {tmp_path / 'none'}; none needed on a host without GPUs")


def test_a_spec_naming_gpus_the_driver_no_longer_has_is_stale(tmp_path):
    directory = spec_dir(tmp_path, names=("0", "1", "GPU-gone", "gpu-x", "all"))
    spec_dir(tmp_path, names=("0:1",), file="b.yaml")
    assert cdi_check((H100,), None, dirs=[directory]) == Check(
        "CDI specs", False,
        f"stale: nvidia.com/gpu=1 (the driver has no such GPU); nvidia.com/gpu=GPU-gone (the driver has no such GPU) "
        f"in {directory / 'b.yaml'}, {directory / 'nvidia.yaml'}: containers asking for them fail to start",
        f"regenerate the spec: `{GENERATE}`")


def test_a_spec_whose_device_nodes_are_gone_is_stale_once_per_device(tmp_path):
    gone = tmp_path / "nvidia0"
    directory = tmp_path / "cdi"
    directory.mkdir()
    (directory / "nvidia.yaml").write_text(
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n  containerEdits:\n    deviceNodes:\n"
        f"    - path: {gone}\n    - path: {gone}-caps\n")
    check = cdi_check((H100,), None, dirs=[directory])
    assert check.detail == (f"stale: nvidia.com/gpu=0 ({gone}, {gone}-caps missing) in {directory / 'nvidia.yaml'}: "
                            "containers asking for them fail to start")


def test_a_gpu_by_uuid_is_current_while_the_driver_has_it(tmp_path):
    assert cdi_check((H100,), None, dirs=[spec_dir(tmp_path, names=(H100.uuid,))]).ok


@pytest.mark.parametrize("count, tail", [(1, ""), (2, " (and 1 more)"), (3, " (and 2 more)")])
def test_broken_spec_files_are_a_failed_check_naming_the_first(tmp_path, count, tail):
    directory = tmp_path / "cdi"
    directory.mkdir()
    for number in range(count):
        (directory / f"{number}.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia\ndevices: [{name: '0', containerEdits: {env: [A=1]}}]\n")
    assert cdi_check((H100,), None, dirs=[directory]) == Check(
        "CDI specs", False, f"{directory / '0.yaml'}: kind: expected vendor/class such as 'nvidia.com/gpu', "
                            f"got 'nvidia'{tail}",
        f"fix or remove the file; to write a fresh one: `{GENERATE}`")


RELOAD = Check(
    "GPUs across daemon-reload", False,
    "Docker uses the systemd cgroup driver with the legacy NVIDIA hook: running containers lose their GPUs after "
    "`systemctl daemon-reload` (\"Failed to initialize NVML: Unknown Error\")",
    f"switch to CDI: `{GENERATE}`, then `sudo nvidia-ctk runtime configure --runtime=docker --cdi.enabled && "
    "sudo systemctl restart docker (Docker 25 or newer; it sets \"features\": {\"cdi\": true} in "
    "/etc/docker/daemon.json)`")


def test_systemd_cgroups_with_the_legacy_hook_warn_that_a_reload_loses_gpus():
    assert reload_safety_check({"CgroupDriver": "systemd", "CDISpecDirs": []}, (H100,)) == RELOAD
    assert reload_safety_check({"CgroupDriver": "systemd"}, (H100,)) == RELOAD


def test_cdi_enabled_without_an_nvidia_spec_still_uses_the_legacy_hook_and_is_warned(tmp_path):
    assert reload_safety_check({"CgroupDriver": "systemd", "CDISpecDirs": [str(tmp_path)]}, (H100,)) == RELOAD


def test_docker_injecting_nvidia_gpus_through_cdi_is_safe_across_a_reload(tmp_path):
    directory = spec_dir(tmp_path)
    assert reload_safety_check({"CgroupDriver": "systemd", "CDISpecDirs": [str(directory)]}, (H100,)) is None


@pytest.mark.parametrize("info, gpus", [
    ({"CgroupDriver": "cgroupfs"}, (H100,)),
    ({}, (H100,)),
    ({"CgroupDriver": "systemd"}, ()),
    (None, (H100,)),
], ids=["cgroupfs", "unknown-driver", "no-gpus", "no-docker"])
def test_no_reload_warning_with_cdi_with_cgroupfs_or_without_gpus(info, gpus):
    assert reload_safety_check(info, gpus) is None


def test_a_device_path_cannot_forge_a_line_of_the_report(tmp_path):
    check = cdi_check((H100,), None, dirs=[spec_dir(tmp_path, node='"/dev/x\\n✓ CDI specs: all good"')])
    assert "\n" not in check.detail and "/dev/x\\n✓ CDI specs: all good missing" in check.detail


def test_doctor_reads_the_cdi_specs_once_for_its_whole_report(monkeypatch):
    from cudaenv.matrix import load_matrix
    from cudaenv.run import doctor

    reads = []
    real = cdi.read_specs
    monkeypatch.setattr(cdi, "read_specs", lambda *a, **k: reads.append(a) or real(*a, **k))
    doctor.run_checks(load_matrix())
    assert len(reads) == 1
