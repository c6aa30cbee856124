"""Host detection (cudaenv.hosts.detect) and the target it becomes (cudaenv.hosts.target), through the real code
paths: a stand-in nvidia-smi first on PATH printing recorded outputs of real drivers (R470 without
compute_cap, R535, R580), recorded /proc and /sys files under a temporary root, and NVML absent
(nvidia-ml-py is not installed here; the tests also hide it, so a GPU host with NVML behaves the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cudaenv.hosts.detect import DetectedGpu, HostDetectionError, HostInfo, detect, from_kernel, from_nvml, from_nvidia_smi
from cudaenv.matrix import load_matrix
from cudaenv.hosts.target import host_from_detection, resolve_target
from tests.unit.host import (
    FULL_QUERY,
    R470_QUERY,
    RECORDED_HOSTS,
    FakeSmi,
    fixture,
    install_fake_nvidia_smi,
    kernel_tree,
    path_without_nvidia_smi,
)


@pytest.fixture(autouse=True)
def isolated_host(monkeypatch):
    """No NVML, no nvidia-smi on PATH, no declared host in the environment."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    monkeypatch.setenv("PATH", path_without_nvidia_smi())
    monkeypatch.delenv("CUDAENV_DRIVER_VERSION", raising=False)
    monkeypatch.delenv("CUDAENV_GPUS", raising=False)


@pytest.fixture
def empty_root(tmp_path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """install(**kwargs) -> FakeSmi, put first on PATH."""

    def install(**kwargs) -> FakeSmi:
        fake = install_fake_nvidia_smi(tmp_path / "smi", **kwargs)
        monkeypatch.setenv("PATH", fake.env_path(path_without_nvidia_smi()))
        return fake

    return install


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


# --- nvidia-smi ----------------------------------------------------------------------------------


def test_r580_h100_is_read_from_nvidia_smi_with_every_field(smi, empty_root):
    smi(**RECORDED_HOSTS["r580-h100"])
    info = detect(empty_root)

    assert (info.driver, info.source) == ("580.159.04", "nvidia-smi")
    assert info.gpus == (DetectedGpu(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0",
                                     memory_mib=81559, uuid="GPU-4fada327-7bd1-c7ab-1946-201922c931dc"),)


def test_cuda_version_comes_from_the_nvidia_smi_header(smi, empty_root):
    smi(**RECORDED_HOSTS["r580-h100"])
    assert detect(empty_root).cuda_driver_version == "13.0"


def test_two_gpus_of_one_machine_are_two_entries_with_their_own_uuids(smi, empty_root):
    smi(**RECORDED_HOSTS["r535-a100x2"])
    info = detect(empty_root)

    assert info.driver == "535.54.03"
    assert [g.index for g in info.gpus] == [0, 1]
    assert {g.name for g in info.gpus} == {"NVIDIA A100-SXM4-80GB"}
    assert len({g.uuid for g in info.gpus}) == 2
    assert all(g.compute_capability == "8.0" and g.memory_mib == 81920 for g in info.gpus)


@pytest.mark.parametrize("error_stream", ["stdout", "stderr"])
def test_r470_nvidia_smi_is_asked_again_without_compute_cap(smi, empty_root, error_stream):
    fake = smi(**RECORDED_HOSTS["r470-k80"], error_stream=error_stream)
    info = detect(empty_root)

    assert fake.calls() == [FULL_QUERY, R470_QUERY, ""]
    assert info.driver == "470.42.01"
    assert [(g.index, g.name, g.memory_mib) for g in info.gpus] == [(0, "Tesla K80", 11441), (1, "Tesla K80", 11441)]


def test_r470_gpus_have_no_reported_compute_capability_and_a_note_says_so(smi, empty_root):
    smi(**RECORDED_HOSTS["r470-k80"])
    info = detect(empty_root)

    assert [g.compute_capability for g in info.gpus] == [None, None]
    assert any("compute capability" in note for note in info.notes)


def test_r470_header_reports_cuda_11_4(smi, empty_root):
    smi(**RECORDED_HOSTS["r470-k80"])
    assert detect(empty_root).cuda_driver_version == "11.4"


def test_r470_gpus_take_their_compute_capability_from_the_matrix_by_name(smi, empty_root, matrix):
    smi(**RECORDED_HOSTS["r470-k80"])
    host, unidentified = host_from_detection(matrix, detect(empty_root))

    assert host.driver == "470.42.01" and unidentified == ()
    assert [(g.name, g.compute_capability, g.architecture) for g in host.gpus] == [("K80", "3.7", "kepler")] * 2


def test_a_board_nobody_can_identify_is_reported_not_silently_dropped(matrix):
    from cudaenv.hosts.detect import DetectedGpu, HostInfo

    info = HostInfo(driver="470.42.01", source="nvidia-smi",
                    gpus=(DetectedGpu(0, "Tesla K80", None), DetectedGpu(1, "NVIDIA Mystery Board", None)))
    host, unidentified = host_from_detection(matrix, info)
    assert [g.name for g in host.gpus] == ["K80"]
    assert unidentified == ("NVIDIA Mystery Board",)


def test_malformed_nvidia_smi_output_is_a_clear_error_quoting_the_line(smi, empty_root):
    smi(**RECORDED_HOSTS["malformed"])
    with pytest.raises(HostDetectionError) as caught:
        detect(empty_root)

    message = str(caught.value)
    assert "wanted 6 fields" in message
    assert "GPU-513536b6-7d19-9063-b049-1e69664bb298" in message  # the offending line, quoted
    assert caught.value.exit_code == 1


def test_nvidia_smi_failing_otherwise_is_an_error_with_its_exit_status_and_last_line(smi, empty_root):
    smi(header="smi-header-r535.txt")  # answers no --query-gpu: the stand-in exits 2 with a message
    with pytest.raises(HostDetectionError, match=r"nvidia-smi exited 2: stand-in nvidia-smi: no recorded output"):
        from_nvidia_smi()


def test_nvidia_smi_that_cannot_reach_the_driver_means_no_driver(smi, empty_root):
    fake = smi(no_driver=True)
    info = detect(empty_root)

    assert info == HostInfo(driver=None, source=None)
    assert len(fake.calls()) == 1


def test_when_nvidia_smi_cannot_reach_the_driver_the_kernel_file_still_gives_the_version(smi, tmp_path):
    smi(no_driver=True)
    info = detect(kernel_tree(tmp_path / "root", proc="proc-version-r535.txt"))

    assert (info.driver, info.source) == ("535.183.06", "proc")


def test_nvidia_smi_wins_over_the_kernel_files(smi, tmp_path):
    smi(**RECORDED_HOSTS["r580-h100"])
    info = detect(kernel_tree(tmp_path / "root", proc="proc-version-r535.txt"))

    assert (info.driver, info.source) == ("580.159.04", "nvidia-smi")


# --- NVML ----------------------------------------------------------------------------------------


def test_nvml_gives_nothing_without_nvidia_ml_py():
    assert from_nvml() is None


def test_detect_falls_back_from_missing_nvml_to_nvidia_smi(smi, empty_root):
    fake = smi(**RECORDED_HOSTS["r580-h100"])
    assert detect(empty_root).source == "nvidia-smi"
    assert fake.calls(), "nvidia-smi was never asked"


# --- /proc and /sys ------------------------------------------------------------------------------


@pytest.mark.parametrize(("proc", "driver", "module"), [
    ("proc-version-r470.txt", "470.141.03", "proprietary"),
    ("proc-version-r535.txt", "535.183.06", "proprietary"),
    ("proc-version-r535-empty-gcc.txt", "535.183.01", "proprietary"),
    ("proc-version-r580-open.txt", "580.95.05", "open"),
    ("proc-version-r580-proprietary.txt", "580.173.02", "proprietary"),
])
def test_without_nvidia_smi_the_proc_file_gives_driver_and_kernel_module(tmp_path, proc, driver, module):
    info = detect(kernel_tree(tmp_path / "root", proc=proc))
    assert (info.driver, info.source, info.kernel_module) == (driver, "proc", module)


def test_sysfs_version_is_used_when_proc_is_absent(tmp_path):
    info = from_kernel(kernel_tree(tmp_path / "root", sysfs="sys-module-version-r535.txt"))
    assert (info.driver, info.source, info.kernel_module) == ("535.146.02", "sysfs", None)


def test_proc_and_sysfs_of_one_machine_agree_and_proc_is_read(tmp_path):
    root = kernel_tree(tmp_path / "root", proc="proc-version-r535-146.txt", sysfs="sys-module-version-r535.txt")
    info = from_kernel(root)

    assert info.source == "proc"
    assert info.driver == fixture("sys-module-version-r535.txt").read_text().strip()


def test_garbled_proc_file_is_a_clear_error_quoting_the_line(tmp_path):
    with pytest.raises(HostDetectionError, match=r"cannot read the driver version from 'NVRM version: .*Release Build'"):
        detect(kernel_tree(tmp_path / "root", proc="proc-version-garbled.txt"))


def test_nothing_at_all_is_no_driver_not_an_error(empty_root):
    info = detect(empty_root)
    assert info == HostInfo(driver=None, source=None)
    assert info.gpus == ()


# --- the target host: detected unless declared ---------------------------------------------------


def test_undeclared_target_is_detected_and_names_its_source(smi, matrix):
    smi(**RECORDED_HOSTS["r580-h100"])
    target = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=())

    assert target.origin == "detected via nvidia-smi"
    assert target.host.driver == "580.159.04"
    assert [(g.name, g.compute_capability, g.datacenter) for g in target.host.gpus] == [("H100", "9.0", True)]


def test_declared_driver_overrides_detection_and_turns_it_off(smi, matrix):
    fake = smi(**RECORDED_HOSTS["r580-h100"])
    target = resolve_target(matrix, driver="550.54.15", gpus=(), compute_capabilities=())

    assert (target.origin, target.host.driver, target.host.gpus) == ("declared", "550.54.15", ())
    assert fake.calls() == []


def test_declared_gpu_alone_turns_detection_off(smi, matrix):
    fake = smi(**RECORDED_HOSTS["r580-h100"])
    target = resolve_target(matrix, driver=None, gpus=("T4",), compute_capabilities=())

    assert (target.origin, target.host.driver) == ("declared", None)
    assert [g.name for g in target.host.gpus] == ["T4"]
    assert fake.calls() == []


def test_environment_driver_overrides_detection(smi, matrix, monkeypatch):
    fake = smi(**RECORDED_HOSTS["r580-h100"])
    monkeypatch.setenv("CUDAENV_DRIVER_VERSION", "535.104.05")
    target = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=())

    assert (target.origin, target.host.driver) == ("declared", "535.104.05")
    assert fake.calls() == []


def test_environment_gpus_override_detection(smi, matrix, monkeypatch):
    fake = smi(**RECORDED_HOSTS["r580-h100"])
    monkeypatch.setenv("CUDAENV_GPUS", "A100; T4")
    target = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=())

    assert [g.name for g in target.host.gpus] == ["A100", "T4"]
    assert target.host.driver is None
    assert fake.calls() == []


def test_driver_flag_beats_the_environment(matrix, monkeypatch):
    monkeypatch.setenv("CUDAENV_DRIVER_VERSION", "535.104.05")
    target = resolve_target(matrix, driver="550.54.15", gpus=(), compute_capabilities=())
    assert target.host.driver == "550.54.15"


def test_gpu_flag_beats_the_environment(matrix, monkeypatch):
    monkeypatch.setenv("CUDAENV_GPUS", "T4")
    target = resolve_target(matrix, driver=None, gpus=("H100",), compute_capabilities=())
    assert [g.name for g in target.host.gpus] == ["H100"]


def test_detection_off_never_runs_nvidia_smi(smi, matrix):
    fake = smi(**RECORDED_HOSTS["r580-h100"])
    target = resolve_target(matrix, driver=None, gpus=(), compute_capabilities=(), detect=False)

    assert (target.origin, target.host.driver, target.host.gpus) == ("unknown", None, ())
    assert fake.calls() == []


# --- what a mutation audit found untested ---------------------------------------------------------


@pytest.mark.parametrize("reported, cuda", [(12020, "12.2"), (13000, "13.0"), (12090, "12.9"), (11040, "11.4"),
                                            (13010, "13.1")], ids=["12020", "13000", "12090", "11040", "13010"])
def test_nvml_reports_the_drivers_cuda_as_major_times_1000_plus_minor_times_10(tmp_path, monkeypatch, reported, cuda):
    """nvmlSystemGetCudaDriverVersion: 12020 is CUDA 12.2, never 12.20 (NVML's header documents it)."""
    import json

    recording = json.loads((Path(__file__).parents[2] / "fixtures" / "nvml" / "h100-r580-recorded.json").read_text())
    recording["cuda_driver_version"] = reported
    (tmp_path / "nvml.json").write_text(json.dumps(recording))
    monkeypatch.delitem(sys.modules, "pynvml")  # the stand-in raises nvidia-ml-py's own error types
    monkeypatch.setenv("CUDAENV_NVML_MODULE", str(Path(__file__).parents[2] / "support" / "fake_nvml.py"))
    monkeypatch.setenv("CUDAENV_FAKE_NVML_RECORDING", str(tmp_path / "nvml.json"))
    info = from_nvml()
    assert info.cuda_driver_version == cuda and info.driver == "580.159.04" and info.source == "nvml"
    assert [g.compute_capability for g in info.gpus] == ["9.0"]


@pytest.mark.parametrize("header, cuda", [
    ("| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |", "13.0"),
    ("| NVIDIA-SMI 610.43.02              Driver Version: 610.43.02      CUDA UMD Version: 13.3 |", "13.3"),
], ids=["r580", "r610-umd"])
def test_the_header_gives_the_drivers_cuda_before_and_from_r610(header, cuda):
    from cudaenv.hosts.detect import _CUDA_VERSION

    assert _CUDA_VERSION.search(header).group(1) == cuda


def test_a_board_reporting_na_for_its_compute_capability_is_identified_by_name(matrix):
    from cudaenv.hosts.detect import QUERY_FIELDS, parse_smi_csv

    driver, gpus = parse_smi_csv("0, NVIDIA H100 80GB HBM3, [N/A], 81559, GPU-0f2e, 580.159.04\n", QUERY_FIELDS)
    assert driver == "580.159.04" and gpus[0].compute_capability is None
    host, unknown = host_from_detection(matrix, HostInfo(driver=driver, source="nvidia-smi", gpus=gpus))
    assert [g.compute_capability for g in host.gpus] == ["9.0"] and unknown == ()
    _, unknown = host_from_detection(matrix, HostInfo(driver=driver, source="nvidia-smi", gpus=(
        DetectedGpu(index=0, name="Mystery Board 9000", compute_capability=None, memory_mib=None, uuid=None),)))
    assert unknown == ("Mystery Board 9000",)  # said, never a traceback


# --- nvidia-smi's CSV and the kernel's files, rule by rule ------------------------------------------


def test_each_smi_field_is_read_or_left_unknown(matrix):
    from cudaenv.hosts.detect import QUERY_FIELDS, parse_smi_csv

    driver, gpus = parse_smi_csv("x, NVIDIA A100-SXM4-80GB, 8, 81920.5, , 535.104.05\n"
                                 "1, NVIDIA A100-SXM4-80GB, 8.0, [N/A], GPU-1, 535.104.12\n", QUERY_FIELDS)
    assert driver == "535.104.05"  # the oldest a machine reports
    assert [(g.index, g.compute_capability, g.memory_mib, g.uuid) for g in gpus] == [
        (0, None, 81920, None), (1, "8.0", None, "GPU-1")]


@pytest.mark.parametrize("driver", ["535", "[N/A]", ""], ids=["one-part", "na", "empty"])
def test_a_driver_version_smi_cannot_give_is_a_clear_error(driver):
    from cudaenv.hosts.detect import QUERY_FIELDS, parse_smi_csv

    with pytest.raises(HostDetectionError) as caught:
        parse_smi_csv(f"0, NVIDIA H100, 9.0, 81559, GPU-0, {driver}\n", QUERY_FIELDS)
    assert str(caught.value) == f"nvidia-smi reported driver version {driver!r}, expected one like 535.104.05"


def test_a_proc_file_without_the_nvrm_line_says_so(tmp_path):
    from cudaenv.hosts.detect import parse_proc_version

    with pytest.raises(HostDetectionError) as caught:
        parse_proc_version("GCC version: gcc 12\n")
    assert str(caught.value) == "/proc/driver/nvidia/version: no 'NVRM version:' line"


def test_a_sysfs_version_that_is_no_driver_version_is_a_clear_error(tmp_path):
    sysfs = tmp_path / "sys" / "module" / "nvidia"
    sysfs.mkdir(parents=True)
    (sysfs / "version").write_text("banana\n")
    with pytest.raises(HostDetectionError) as caught:
        from_kernel(tmp_path)
    assert str(caught.value) == f"{sysfs / 'version'}: expected a driver version like 535.104.05, got 'banana'"


def test_kernel_files_with_undecodable_bytes_still_read(tmp_path):
    proc = tmp_path / "proc" / "driver" / "nvidia"
    proc.mkdir(parents=True)
    (proc / "version").write_bytes(b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 \xff\n")
    assert from_kernel(tmp_path).driver == "535.104.05"


def test_nvml_memory_is_whole_mib_and_its_errors_are_said(tmp_path, monkeypatch):
    import json

    recording = json.loads((Path(__file__).parents[2] / "fixtures" / "nvml" / "h100-r580-recorded.json").read_text())
    (tmp_path / "nvml.json").write_text(json.dumps(recording))
    monkeypatch.delitem(sys.modules, "pynvml")
    monkeypatch.setenv("CUDAENV_NVML_MODULE", str(Path(__file__).parents[2] / "support" / "fake_nvml.py"))
    monkeypatch.setenv("CUDAENV_FAKE_NVML_RECORDING", str(tmp_path / "nvml.json"))
    info = from_nvml()
    assert all(isinstance(g.memory_mib, int) for g in info.gpus) and info.gpus[0].memory_mib > 1000


def test_fields_smi_was_not_asked_for_take_their_defaults():
    from cudaenv.hosts.detect import parse_smi_csv

    driver, gpus = parse_smi_csv("GPU-1, 535.104.05\n", ("uuid", "driver_version"))
    assert driver == "535.104.05" and [(g.index, g.name, g.uuid) for g in gpus] == [(0, "?", "GPU-1")]
    _, gpus = parse_smi_csv("3, NVIDIA A100, 8.0, 100, GPU-3, 535.104.05\n",
                            ("index", "name", "compute_cap", "memory.total", "uuid", "driver_version"))
    assert gpus[0].index == 3


def test_the_oldest_driver_is_taken_by_number_not_by_text():
    from cudaenv.hosts.detect import QUERY_FIELDS, parse_smi_csv

    driver, _ = parse_smi_csv("0, A, 8.0, 1, G0, 535.104.05\n1, A, 8.0, 1, G1, 535.54.03\n", QUERY_FIELDS)
    assert driver == "535.54.03"
    assert parse_smi_csv("", QUERY_FIELDS) == (None, ())
    assert parse_smi_csv("0, A, 8.0, 1, G0, 535.104\n", QUERY_FIELDS)[0] == "535.104"  # two parts are a version


def test_an_smi_line_with_too_few_fields_is_quoted_word_for_word():
    from cudaenv.hosts.detect import parse_smi_csv

    with pytest.raises(HostDetectionError) as caught:
        parse_smi_csv("0, A\n", ("index", "name", "driver_version"))
    assert str(caught.value) == ("nvidia-smi printed an unexpected line (wanted 3 fields index, name, driver_version): "
                                 "'0, A'")


def test_an_nvrm_line_ending_at_its_version_reads():
    from cudaenv.hosts.detect import parse_proc_version

    assert parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05\n") == ("535.104.05",
                                                                                                   "proprietary")


@pytest.mark.parametrize("text, driver", [("535.104\n", "535.104"), ("535\n", None), ("53\xff5.1\n", None)],
                         ids=["two-parts", "one-part", "undecodable"])
def test_a_sysfs_version_needs_two_parts(tmp_path, text, driver):
    sysfs = tmp_path / "sys" / "module" / "nvidia"
    sysfs.mkdir(parents=True)
    (sysfs / "version").write_bytes(text.encode("latin-1"))
    if driver is not None:
        assert from_kernel(tmp_path).driver == driver
    else:
        with pytest.raises(HostDetectionError, match="expected a driver version like 535.104.05"):
            from_kernel(tmp_path)


def test_an_nvidia_smi_that_cannot_start_is_a_clear_error(tmp_path):
    with pytest.raises(HostDetectionError, match=r"^nvidia-smi failed to run: \[Errno 2\]"):
        from_nvidia_smi(str(tmp_path / "no-such-nvidia-smi"))
