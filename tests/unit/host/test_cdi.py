"""CDI specs as nvidia-ctk writes them: which GPUs they offer, by which names, and which are stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaenv.hosts import cdi

# The shape `nvidia-ctk cdi generate` writes (index and UUID names, plus "all"), trimmed to what matters.
NVIDIA_CTK_SPEC = """\
---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: "1"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia1
- name: GPU-4ad3a4b2-0c7e-1a3b-9f21-7c4e1b2a9d01
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: "0:1"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia-caps/nvidia-cap12
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/nvidia1
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def gpus(tmp_path: Path, text: str = NVIDIA_CTK_SPEC) -> dict[str, cdi.CdiDevice]:
    write(tmp_path / "etc", "nvidia.yaml", text)
    return cdi.read_specs([tmp_path / "etc"]).of_kind()


def test_reads_every_device_of_an_nvidia_ctk_spec_with_its_host_nodes(tmp_path):
    devices = gpus(tmp_path)
    assert sorted(devices) == ["0", "0:1", "1", "GPU-4ad3a4b2-0c7e-1a3b-9f21-7c4e1b2a9d01", "all"]
    assert devices["1"].device_nodes == ("/dev/nvidia1",)
    assert devices["1"].qualified == "nvidia.com/gpu=1"
    assert devices["all"].spec == str(tmp_path / "etc" / "nvidia.yaml")


def test_a_json_spec_reads_the_same_as_yaml(tmp_path):
    spec = {"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu",
            "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/nv0"}]}}]}
    write(tmp_path / "run", "nvidia.json", json.dumps(spec))
    devices = cdi.read_specs([tmp_path / "run"]).of_kind()
    assert devices["0"].device_nodes == ("/dev/nv0",)  # the host's path, which staleness checks


def test_the_later_directory_wins_for_the_same_device(tmp_path):
    write(tmp_path / "etc", "a.yaml", NVIDIA_CTK_SPEC)
    write(tmp_path / "run", "b.yaml", NVIDIA_CTK_SPEC.replace("/dev/nvidia1\n- name: GPU", "/dev/nvidia9\n- name: GPU"))
    devices = cdi.read_specs([tmp_path / "etc", tmp_path / "run"]).of_kind()
    assert devices["1"].device_nodes == ("/dev/nvidia9",)
    assert devices["1"].spec.endswith("b.yaml")


def test_other_kinds_and_other_files_are_not_gpus(tmp_path):
    write(tmp_path / "etc", "nvidia.yaml", NVIDIA_CTK_SPEC)
    write(tmp_path / "etc", "fpga.yaml", "cdiVersion: 0.5.0\nkind: vendor.com/fpga\ndevices:\n- name: '0'\n  containerEdits: {env: [A=1]}\n")
    write(tmp_path / "etc", "README.txt", "not a spec")
    specs = cdi.read_specs([tmp_path / "etc"])
    assert len(specs.files) == 2 and not specs.problems
    assert "0" in specs.of_kind("vendor.com/fpga")
    assert specs.of_kind()["0"].kind == "nvidia.com/gpu"


def test_a_missing_directory_is_no_specs_and_no_problem(tmp_path):
    specs = cdi.read_specs([tmp_path / "absent"])
    assert specs == cdi.CdiSpecs()


@pytest.mark.parametrize("text, expected", [
    ("cdiVersion: [", "not valid YAML"),
    ("- a list", "expected a CDI spec"),
    ("kind: nvidia.com/gpu\ndevices: [{name: '0', containerEdits: {env: [A=1]}}]\n", "cdiVersion: expected a version string"),
    ("cdiVersion: 0.5.0\nkind: nvidia\ndevices: [{name: '0', containerEdits: {env: [A=1]}}]\n", "kind: expected vendor/class"),
    ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu/x\ndevices: [{name: '0', containerEdits: {env: [A=1]}}]\n", "kind: expected vendor/class"),
    ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n", "devices: expected a list of at least one device"),
    ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: 'a b', containerEdits: {env: [A=1]}}]\n", "devices[1].name: expected a name of letters"),
    ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: '0', containerEdits: {env: [A=1]}}, {name: '$(id)', containerEdits: {env: [A=1]}}]\n", "devices[2].name"),
    ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: '0', containerEdits: {env: [A=1]}}, {name: '0', containerEdits: {env: [A=1]}}]\n", "'0' is declared twice"),
])
def test_a_bad_spec_is_one_line_naming_the_file_and_field_and_offers_nothing(tmp_path, text, expected):
    write(tmp_path / "etc", "bad.yaml", text)
    specs = cdi.read_specs([tmp_path / "etc"])
    assert specs.devices == ()
    (problem,) = specs.problems
    assert problem.startswith(str(tmp_path / "etc" / "bad.yaml") + ": ") and "\n" not in problem
    assert expected in problem


def test_unreadable_and_non_utf8_specs_are_problems_not_crashes(tmp_path):
    write(tmp_path / "etc", "latin.yaml", "").write_bytes(b"kind: \xe9\xff\n")
    specs = cdi.read_specs([tmp_path / "etc"])
    assert specs.problems == (f"{tmp_path / 'etc' / 'latin.yaml'}: unreadable: not UTF-8",)


def test_all_gpus_is_the_all_device_when_the_spec_has_one(tmp_path):
    assert cdi.device_names(gpus(tmp_path), count=-1) == ("nvidia.com/gpu=all",)
    assert cdi.device_names(gpus(tmp_path)) == ("nvidia.com/gpu=all",)


def test_all_gpus_without_an_all_device_is_every_gpu_by_index_in_index_order(tmp_path):
    text = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n" + "".join(f"- name: '{i}'\n  containerEdits: {{env: [A=1]}}\n" for i in (10, 2, 0, 1))
    assert cdi.device_names(gpus(tmp_path, text), count=-1) == tuple(f"nvidia.com/gpu={i}" for i in (0, 1, 2, 10))


def test_a_count_takes_the_first_gpus_by_index_not_mig_devices_or_uuids(tmp_path):
    assert cdi.device_names(gpus(tmp_path), count=1) == ("nvidia.com/gpu=0",)
    assert cdi.device_names(gpus(tmp_path), count=2) == ("nvidia.com/gpu=0", "nvidia.com/gpu=1")


def test_a_count_above_the_gpus_by_index_is_refused_with_what_there_is(tmp_path):
    with pytest.raises(cdi.CdiError, match=r"--gpus 3: .* offer 2 GPUs by index \(0, 1\)"):
        cdi.device_names(gpus(tmp_path), count=3)


def test_device_ids_map_by_their_names_once_each_in_the_order_asked(tmp_path):
    uuid = "GPU-4ad3a4b2-0c7e-1a3b-9f21-7c4e1b2a9d01"
    assert cdi.device_names(gpus(tmp_path), device_ids=("1", uuid, "1", "0:1")) == (
        "nvidia.com/gpu=1", f"nvidia.com/gpu={uuid}", "nvidia.com/gpu=0:1")


def test_a_device_id_the_spec_lacks_is_refused_naming_what_it_offers_and_the_fix(tmp_path):
    with pytest.raises(cdi.CdiError) as caught:
        cdi.device_names(gpus(tmp_path), device_ids=("0", "GPU-deadbeef"))
    message = str(caught.value)
    assert "'GPU-deadbeef' is not a nvidia.com/gpu device" in message and "'0'" not in message.split(" is not")[0]
    assert "it offers: 0, 0:1, 1, GPU-4ad3a4b2-0c7e-1a3b-9f21-7c4e1b2a9d01, all" in message
    assert "nvidia-ctk cdi generate" in message


def test_no_gpu_devices_is_refused_with_how_to_generate_a_spec():
    with pytest.raises(cdi.CdiError, match=r"no nvidia.com/gpu devices in the CDI specs .*nvidia-ctk cdi generate"):
        cdi.device_names({}, count=-1)


def test_stale_devices_are_those_whose_host_nodes_are_gone(tmp_path):
    present = {"/dev/nvidia0"}
    stale = cdi.stale_devices(gpus(tmp_path), exists=present.__contains__)
    assert {(device.name, missing) for device, missing in stale} == {
        ("1", ("/dev/nvidia1",)), ("0:1", ("/dev/nvidia-caps/nvidia-cap12",)), ("all", ("/dev/nvidia1",))}


def test_a_docker_daemon_injects_cdi_only_when_its_info_lists_spec_dirs():
    assert cdi.daemon_cdi_dirs({"CDISpecDirs": ["/etc/cdi", "/var/run/cdi"]}) == ("/etc/cdi", "/var/run/cdi")
    assert cdi.daemon_cdi_dirs({"CDISpecDirs": []}) == ()
    assert cdi.daemon_cdi_dirs({"ID": "x"}) == ()  # Docker before 25: no CDI
    assert cdi.daemon_cdi_dirs(None) == ()
    assert cdi.daemon_cdi_dirs({"CDISpecDirs": "/etc/cdi"}) == ()


@pytest.mark.parametrize("kind, value, expected", [
    ("none", None, ()),
    ("all", None, ("nvidia.com/gpu=all",)),
    ("auto", None, ("nvidia.com/gpu=all",)),
    ("count", 2, ("nvidia.com/gpu=0", "nvidia.com/gpu=1")),
    ("auto", 1, ("nvidia.com/gpu=0",)),
    ("ids", ("1", "GPU-ab", "1"), ("nvidia.com/gpu=1", "nvidia.com/gpu=GPU-ab")),
])
def test_an_export_for_a_host_this_machine_cannot_see_uses_nvidia_ctks_default_names(kind, value, expected):
    assert cdi.request_names(kind, value) == expected


def test_an_export_checks_the_names_against_this_hosts_specs(tmp_path):
    assert cdi.request_names("count", 1, gpus(tmp_path)) == ("nvidia.com/gpu=0",)
    with pytest.raises(cdi.CdiError, match="'7' is not a nvidia.com/gpu device"):
        cdi.request_names("ids", ("7",), gpus(tmp_path))


def test_a_device_id_outside_the_cdi_name_grammar_never_reaches_a_file_and_is_bad_input():
    from cudaenv.errors import UserError

    with pytest.raises(UserError, match=r"'0 --privileged' is not a CDI device name") as caught:
        cdi.request_names("ids", ("0 --privileged",))
    assert caught.value.exit_code == 2


def test_an_index_written_with_a_leading_zero_is_that_index():
    assert cdi.request_names("ids", ("01", "2")) == ("nvidia.com/gpu=1", "nvidia.com/gpu=2")
    assert cdi.request_names("ids", ("01", "1")) == ("nvidia.com/gpu=1",)  # the same GPU named twice: once


def test_export_gpu_access_legacy_or_no_gpus_means_no_cdi():
    from cudaenv.export.gpu_access import cdi_specs_for

    assert cdi_specs_for("legacy", True) is None
    assert cdi_specs_for("cdi", False) is None
    assert isinstance(cdi_specs_for("cdi", True), dict)


def only_problem(tmp_path, text, name="bad.yaml"):
    write(tmp_path / "etc", name, text)
    specs = cdi.read_specs([tmp_path / "etc"])
    assert specs.devices == ()
    (problem,) = specs.problems
    return problem.removeprefix(str(tmp_path / "etc" / name) + ": ")


def test_yaml_and_json_errors_say_what_and_where(tmp_path):
    assert only_problem(tmp_path, "cdiVersion: [") == (
        "not valid YAML: expected the node content, but found '<stream end>' (line 1, column 14)")
    assert only_problem(tmp_path / "j", '{"cdiVersion":', name="bad.json") == (
        "not valid JSON: Expecting value: line 1 column 15 (char 14)")


def test_a_json_spec_is_read_as_json_which_allows_tabs_that_yaml_refuses(tmp_path):
    spec = '{\n\t"cdiVersion": "0.5.0",\n\t"kind": "nvidia.com/gpu",\n\t"devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}]\n}\n'
    write(tmp_path / "etc", "nvidia.json", spec)
    assert list(cdi.read_specs([tmp_path / "etc"]).of_kind()) == ["0"]


def test_bad_kinds_and_names_are_quoted_and_shortened_in_the_message(tmp_path):
    assert only_problem(tmp_path, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu!\ndevices: [{name: '0', containerEdits: {env: [A=1]}}]\n") == (
        "kind: expected vendor/class such as 'nvidia.com/gpu', got 'nvidia.com/gpu!'")
    assert only_problem(tmp_path, "cdiVersion: 0.5.0\nkind: nvidia!/gpu\ndevices: [{name: '0', containerEdits: {env: [A=1]}}]\n").startswith("kind: ")
    long_name = "x" * 59 + "!" + "y" * 10
    assert only_problem(tmp_path, f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{{name: '{long_name}', containerEdits: {{env: [A=1]}}}}]\n") == (
        f"devices[1].name: expected a name of letters, digits, '_', '.', ':' or '-', got '{long_name[:60]}'")
    assert only_problem(tmp_path, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: ['0']\n") == (
        "devices[1].name: expected a name of letters, digits, '_', '.', ':' or '-', got a NoneType")


def test_a_device_node_without_a_usable_path_is_left_out(tmp_path):
    text = ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n  containerEdits:\n    deviceNodes:\n"
            "    - path: 5\n    - hostPath: ''\n      path: /dev/nvidia0\n    - x\n")
    assert gpus(tmp_path, text)["0"].device_nodes == ("/dev/nvidia0",)


def test_a_huge_file_is_not_read_and_the_next_file_still_is(tmp_path):
    write(tmp_path / "etc", "a.yaml", "#" * (cdi.MAX_SPEC_BYTES + 1))
    write(tmp_path / "etc", "b.yaml", NVIDIA_CTK_SPEC)
    specs = cdi.read_specs([tmp_path / "etc"])
    assert specs.problems == (f"{tmp_path / 'etc' / 'a.yaml'}: larger than 4 MiB: not a CDI spec",)
    assert "0" in specs.of_kind()


def test_every_message_names_the_spec_files_or_the_default_directories(tmp_path):
    write(tmp_path / "etc", "a.yaml", NVIDIA_CTK_SPEC)
    write(tmp_path / "etc", "b.yaml", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: '7', containerEdits: {env: [A=1]}}]\n")
    devices = cdi.read_specs([tmp_path / "etc"]).of_kind()
    with pytest.raises(cdi.CdiError) as caught:
        cdi.device_names(devices, device_ids=("8", "9"))
    assert str(caught.value).startswith(f"--gpus: '8', '9' is not a nvidia.com/gpu device in the CDI specs "
                                        f"({tmp_path / 'etc' / 'a.yaml'}, {tmp_path / 'etc' / 'b.yaml'}) (it offers: ")
    with pytest.raises(cdi.CdiError) as caught:
        cdi.device_names({}, count=1)
    assert str(caught.value) == ("no nvidia.com/gpu devices in the CDI specs (/etc/cdi and /var/run/cdi): "
                                 "generate a spec with `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`")


def test_all_without_an_all_device_or_index_names_is_refused_naming_what_there_is(tmp_path):
    devices = gpus(tmp_path, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: GPU-ab, containerEdits: {env: [A=1]}}]\n")
    with pytest.raises(cdi.CdiError) as caught:
        cdi.device_names(devices, count=-1)
    assert str(caught.value) == (f"--gpus all: the CDI specs ({tmp_path / 'etc' / 'nvidia.yaml'}) have no 'all' device "
                                 "and no GPU named by index (it offers: GPU-ab)")
    with pytest.raises(cdi.CdiError, match=r"offer 0 GPUs by index \(none\)$"):
        cdi.device_names(devices, count=1)


def test_a_count_of_zero_is_no_gpu_and_one_too_many_says_gpu_in_the_singular(tmp_path):
    devices = gpus(tmp_path, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: '0', containerEdits: {env: [A=1]}}, {name: all, containerEdits: {env: [A=1]}}]\n")
    assert cdi.device_names(devices, count=0) == ()
    assert cdi.request_names("count", 0) == ()
    with pytest.raises(cdi.CdiError, match=r"--gpus 2: .* offer 1 GPU by index \(0\)$"):
        cdi.device_names(devices, count=2)


def test_empty_spec_dirs_in_a_daemons_info_are_not_dirs():
    assert cdi.daemon_cdi_dirs({"CDISpecDirs": ["", "/etc/cdi", 5]}) == ("/etc/cdi",)


def test_a_control_character_is_a_yaml_reader_error_reported_without_a_position(tmp_path):
    assert only_problem(tmp_path, "cdiVersion: 0.5.0\x07\n") == "not valid YAML: ReaderError"


def test_a_long_kind_is_shortened_in_the_message(tmp_path):
    kind = "v" * 70 + "!/gpu"
    assert only_problem(tmp_path, f"cdiVersion: 0.5.0\nkind: {kind}\ndevices: [{{name: '0', containerEdits: {{env: [A=1]}}}}]\n") == (
        f"kind: expected vendor/class such as 'nvidia.com/gpu', got '{kind[:60]}'")


def test_a_spec_of_exactly_the_size_limit_is_read(tmp_path):
    text = NVIDIA_CTK_SPEC + "#"
    write(tmp_path / "etc", "nvidia.yaml", text + "x" * (cdi.MAX_SPEC_BYTES - len(text.encode())))
    assert (tmp_path / "etc" / "nvidia.yaml").stat().st_size == cdi.MAX_SPEC_BYTES
    assert "all" in cdi.read_specs([tmp_path / "etc"]).of_kind()


def test_after_an_unreadable_file_or_a_missing_directory_the_rest_is_still_read(tmp_path):
    write(tmp_path / "etc", "a.yaml", "").write_bytes(b"\xff")
    write(tmp_path / "etc", "b.yaml", NVIDIA_CTK_SPEC)
    specs = cdi.read_specs([tmp_path / "missing", tmp_path / "etc"])
    assert specs.files == (str(tmp_path / "etc" / "b.yaml"),)
    assert "0" in specs.of_kind()


def test_a_file_the_os_refuses_is_a_problem_with_the_os_reason(tmp_path, monkeypatch):
    write(tmp_path / "etc", "nvidia.yaml", NVIDIA_CTK_SPEC)

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", refuse)  # root reads every file: the refusal is simulated
    assert cdi.read_specs([tmp_path / "etc"]).problems == (
        f"{tmp_path / 'etc' / 'nvidia.yaml'}: unreadable: Permission denied",)


# What the engines' own CDI library refuses or ignores, cudaenv refuses or ignores too (found by an
# attack on this reader: each case is a spec Podman 4.3 answered "unresolvable CDI devices" for).
EDITS = "  containerEdits: {env: [A=1]}\n"


@pytest.mark.parametrize("text, expected", [
    (f"cdiVersion: banana\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n{EDITS}",
     "cdiVersion: expected a version string such as \"0.5.0\", got 'banana'"),
    (f"cdiVersion: 0.5\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n{EDITS}",
     "cdiVersion: expected a version string such as \"0.5.0\", got a float"),
    (f"cdiVersion: 0.5.0\nfoo: 1\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n{EDITS}",
     "foo: not a CDI spec field (the engines refuse the whole file)"),
    ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n",
     "devices[1].containerEdits: expected device nodes, mounts, env or hooks (the engines refuse a device without any)"),
], ids=["version", "version-number", "unknown-field", "no-edits"])
def test_specs_the_engines_refuse_are_problems(tmp_path, text, expected):
    assert only_problem(tmp_path, text) == expected


def test_a_yml_file_is_ignored_as_the_engines_ignore_it(tmp_path):
    write(tmp_path / "etc", "nvidia.yml", NVIDIA_CTK_SPEC)
    assert cdi.read_specs([tmp_path / "etc"]) == cdi.CdiSpecs()


def test_the_same_device_in_two_files_of_one_directory_is_offered_by_neither(tmp_path):
    write(tmp_path / "etc", "a.yaml", NVIDIA_CTK_SPEC)
    write(tmp_path / "etc", "b.yaml", f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '1'\n{EDITS}")
    specs = cdi.read_specs([tmp_path / "etc"])
    assert "1" not in specs.of_kind() and "0" in specs.of_kind()
    assert specs.problems == (f"{tmp_path / 'etc' / 'b.yaml'}: nvidia.com/gpu=1 is also declared in "
                              f"{tmp_path / 'etc' / 'a.yaml'}: the engines offer neither; keep one",)


def test_an_unquoted_number_is_a_name_as_the_engines_read_it(tmp_path):
    assert list(gpus(tmp_path, f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: 7\n{EDITS}")) == ["7"]


def test_a_name_of_thousands_of_digits_is_no_gpu_index_and_crashes_nothing(tmp_path):
    devices = gpus(tmp_path, f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n{EDITS}"
                             f"- name: '{'1' * 5000}'\n{EDITS}")
    assert cdi.device_names(devices, count=1) == ("nvidia.com/gpu=0",)
    assert cdi.device_names(devices, count=-1) == ("nvidia.com/gpu=0",)


def test_a_billion_laughs_spec_is_described_by_type_not_expanded(tmp_path):
    """Ten levels of ten aliases each: 10**10 strings if anything expanded them (str() of the value
    would); the reader answers by the value's type, at once."""
    levels = "".join(f"- &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]\n" for n in range(1, 11))
    text = (f"cdiVersion: 0.5.0\nannotations:\n  x:\n  - &l0 laugh\n" + "".join("  " + line for line in
            levels.splitlines(keepends=True)) + f"kind: *l10\ndevices:\n- name: '0'\n{EDITS}")
    assert only_problem(tmp_path, text) == "kind: expected vendor/class such as 'nvidia.com/gpu', got a list"
    named = text.replace("kind: *l10", "kind: nvidia.com/gpu").replace("- name: '0'", "- name: *l10")
    assert only_problem(tmp_path / "n", named) == (
        "devices[1].name: expected a name of letters, digits, '_', '.', ':' or '-', got a list")
