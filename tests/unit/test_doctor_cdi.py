"""doctor on CDI: which specs offer which GPUs, stale specs, and the setup that loses GPUs on reload."""

from __future__ import annotations

from pathlib import Path

from cudaenv.hosts.detect import DetectedGpu
from cudaenv.run.doctor import cdi_check, reload_safety_check

H100 = DetectedGpu(0, "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-11111111-2222-3333-4444-555555555555")


def spec_dir(tmp_path: Path, names=("0", "all"), node="/dev/null") -> Path:
    directory = tmp_path / "cdi"
    directory.mkdir()
    devices = "".join(f"- name: '{n}'\n  containerEdits:\n    deviceNodes:\n    - path: {node}\n" for n in names)
    (directory / "nvidia.yaml").write_text(f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n{devices}")
    return directory


def test_a_current_spec_is_reported_with_its_devices_and_whether_docker_reads_it(tmp_path):
    directory = spec_dir(tmp_path)
    check = cdi_check((H100,), {"CDISpecDirs": [str(directory)]}, dirs=[directory])
    assert check.ok and check.fix is None
    assert check.detail == f"{directory / 'nvidia.yaml'} offer 0, all; Docker injects them (CDI enabled)"
    check = cdi_check((H100,), {"CDISpecDirs": []}, dirs=[directory])
    assert check.ok and check.detail.endswith("Docker does not read them (CDI not enabled) and uses the legacy NVIDIA hook")


def test_a_gpu_host_without_a_spec_is_told_how_to_generate_one(tmp_path):
    check = cdi_check((H100,), None, dirs=[tmp_path / "none"])
    assert not check.ok
    assert "no NVIDIA GPU spec" in check.detail
    assert check.fix.startswith("`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`")


def test_a_host_without_gpus_needs_no_spec(tmp_path):
    check = cdi_check((), None, dirs=[tmp_path / "none"])
    assert check.ok and "none needed" in check.detail


def test_a_spec_naming_a_gpu_the_driver_no_longer_has_is_stale(tmp_path):
    check = cdi_check((H100,), None, dirs=[spec_dir(tmp_path, names=("0", "1", "all"))])
    assert not check.ok
    assert "nvidia.com/gpu=1 (the driver has no such GPU)" in check.detail
    assert "nvidia.com/gpu=0 " not in check.detail
    assert "regenerate the spec" in check.fix


def test_a_spec_whose_device_nodes_are_gone_is_stale(tmp_path):
    check = cdi_check((H100,), None, dirs=[spec_dir(tmp_path, node=str(tmp_path / "nvidia0"))])
    assert not check.ok
    assert f"nvidia.com/gpu=0 ({tmp_path / 'nvidia0'} missing)" in check.detail


def test_a_gpu_by_uuid_is_current_while_the_driver_has_it(tmp_path):
    assert cdi_check((H100,), None, dirs=[spec_dir(tmp_path, names=(H100.uuid,))]).ok


def test_a_broken_spec_file_is_a_failed_check_naming_it(tmp_path):
    directory = tmp_path / "cdi"
    directory.mkdir()
    (directory / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia\ndevices: [{name: '0'}]\n")
    check = cdi_check((H100,), None, dirs=[directory])
    assert not check.ok and check.detail.startswith(f"{directory / 'nvidia.yaml'}: kind: expected vendor/class")


def test_systemd_cgroups_with_the_legacy_hook_warn_that_a_reload_loses_gpus():
    check = reload_safety_check({"CgroupDriver": "systemd", "CDISpecDirs": []}, (H100,))
    assert check is not None and not check.ok
    assert "daemon-reload" in check.detail and "Failed to initialize NVML" in check.detail
    assert "--cdi.enabled" in check.fix and "nvidia-ctk cdi generate" in check.fix


def test_no_reload_warning_with_cdi_with_cgroupfs_or_without_gpus():
    assert reload_safety_check({"CgroupDriver": "systemd", "CDISpecDirs": ["/etc/cdi"]}, (H100,)) is None
    assert reload_safety_check({"CgroupDriver": "cgroupfs"}, (H100,)) is None
    assert reload_safety_check({"CgroupDriver": "systemd"}, ()) is None
    assert reload_safety_check(None, (H100,)) is None
