"""One lock, one stack per target: format 2 written and read back by the reader every command uses,
shared entries stored once, an older (format 1) lock still read, and a stale target named."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import tomlkit

from cudaenv.errors import UserError
from cudaenv.hosts.target import project_target
from cudaenv.project import load_project
from cudaenv.project.lock import (LOCK_FORMAT, LockFile, current_lock, current_locks, lock_targets, make_lock,
                                  read_lock, read_lock_file)
from cudaenv.project.config import resolve_project
from tests.support.cli import cudaenv as run_cli, isolated_env
from tests.support.lockfile import lock_view
from tests.unit.resolver.helpers import matrix
from tests.support.targets import THREE_TARGETS

THREE = THREE_TARGETS
PINS = ["filelock==3.16.1"]


def project_in(root: Path, text: str = THREE):
    root.mkdir(parents=True, exist_ok=True)
    (root / "cudaenv.toml").write_text(text)
    return load_project(root)


def views(project, pins=PINS) -> list:
    """Each target's part of a lock as `cudaenv lock` makes it, with ``pins`` in place of uv's."""
    out = []
    for declared in project.named_targets:
        target = project_target(matrix(), project, declared.name)
        stack = resolve_project(matrix(), project, target.host).stack
        pinned = list(pins) + ([f"torch=={stack.framework('torch')}+cpu"] if stack.cpu else [])
        out.append(make_lock(project, stack, matrix_revision=matrix().revision, target=target.as_dict(),
                             pinned=pinned, name=declared.name))
    return out


def write(project, locks) -> LockFile:
    whole = LockFile.of(locks)
    project.lock_path.write_text(whole.as_toml())
    return whole


# --- the file ------------------------------------------------------------------------------------------


def test_three_targets_lock_into_one_file_that_reads_back_as_written(tmp_path):
    project = project_in(tmp_path / "p")
    whole = write(project, views(project))
    again = read_lock_file(project.lock_path)
    assert again == whole and again.format == LOCK_FORMAT == 2
    assert again.names == ("laptop", "a100", "h100")
    laptop, a100, h100 = again.targets
    assert laptop.resolved_stack().cpu and laptop.target == {"driver": "", "gpus": "none", "origin": "declared"}
    assert (a100.stack["cuda"], h100.stack["cuda"]) == ("12.6", "13.0")  # three stacks: none of them alike
    assert len(again.shared) == 3


def test_targets_that_resolve_alike_share_one_entry_stored_once(tmp_path):
    project = project_in(tmp_path / "p", THREE + '\n[targets.a100-new]\ndriver = "580.65.06"\ngpus = ["A100"]\n')
    whole = write(project, views(project))
    text = project.lock_path.read_text()
    h100, newer = whole.target("h100"), whole.target("a100-new")
    assert h100.entry_id() == newer.entry_id() and h100.stack == newer.stack
    assert whole.shared[h100.entry_id()] == ("h100", "a100-new")
    assert text.count(f"[stacks.{h100.entry_id()}.stack]") == 1 and text.count("[stacks.") == 2 * 3
    document = tomlkit.parse(text)
    assert document["targets"]["a100-new"]["stack"] == document["targets"]["h100"]["stack"] == h100.entry_id()
    assert read_lock_file(project.lock_path) == whole


def test_an_entry_key_says_what_it_is_and_changes_with_its_content(tmp_path):
    project = project_in(tmp_path / "p")
    laptop, a100, _ = views(project)
    assert laptop.entry_id().startswith("cpu-py") and a100.entry_id().startswith("cu126-py")
    assert replace(a100, pinned=("filelock==3.16.0",)).entry_id() != a100.entry_id()
    assert replace(a100, name="other", target={}).entry_id() == a100.entry_id()  # the target is not the entry


def test_a_lock_of_several_targets_is_read_by_name_never_picked_silently(tmp_path):
    project = project_in(tmp_path / "p")
    write(project, views(project))
    assert read_lock(project.lock_path, "a100").stack["cuda"] == "12.6"
    with pytest.raises(UserError) as caught:
        read_lock(project.lock_path)
    assert "holds several targets (laptop, a100, h100)" in str(caught.value)
    with pytest.raises(UserError, match=r"no target 'h200' in the lock \(targets: laptop, a100, h100\)"):
        read_lock(project.lock_path, "h200")
    with pytest.raises(UserError, match="names several targets"):
        current_lock(project, matrix())


@pytest.mark.parametrize("edit, said", [
    (lambda d: d["targets"]["a100"].__setitem__("stack", "nope"), "targets.a100.stack: names no entry of [stacks] ('nope')"),
    (lambda d: d["targets"].__setitem__("Bad Name", {"stack": "x"}), "targets.'Bad Name': not a target name"),
    (lambda d: d.__delitem__("targets"), "targets: no [targets.NAME] table"),
    (lambda d: d["targets"].__setitem__("a100", 3), "targets.a100: expected a table, got 3"),
])
def test_a_damaged_target_table_is_refused_naming_it(tmp_path, edit, said):
    project = project_in(tmp_path / "p")
    doc = tomlkit.parse(write(project, views(project)).as_toml())
    edit(doc)
    project.lock_path.write_text(tomlkit.dumps(doc))
    with pytest.raises(UserError) as caught:
        read_lock_file(project.lock_path)
    assert str(caught.value).startswith(f"{project.lock_path}: {said}")


# --- an older lock ---------------------------------------------------------------------------------------


def format_1(view) -> str:
    """A lock as cudaenv wrote it before targets had names: [target], [stack], [requirements]."""
    doc = tomlkit.document()
    doc["format"], doc["cudaenv"] = 1, view.cudaenv
    doc["matrix_revision"], doc["inputs_hash"] = view.matrix_revision, view.inputs_hash
    doc["inputs"] = dict(view.inputs)
    doc["target"] = {k: v if v is not None else "" for k, v in view.target.items()}
    entry = view.entry()
    doc["stack"], doc["requirements"] = entry["stack"], entry["requirements"]
    return tomlkit.dumps(doc)


def test_a_format_1_lock_is_read_as_the_target_default_with_one_note(tmp_path, capsys):
    project = project_in(tmp_path / "p", '[frameworks]\ntorch = "==2.6.0"\n[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n')
    (view,) = views(project)
    project.lock_path.write_text(format_1(view))
    whole = read_lock_file(project.lock_path)
    assert whole.format == 1 and whole.names == ("default",) and whole.targets[0] == view
    read_lock_file(project.lock_path)
    err = capsys.readouterr().err
    assert err == (f"cudaenv: note: {project.lock_path} is lock format 1 (one target, read as 'default'); "
                   "`cudaenv lock` rewrites it as format 2\n")
    assert current_locks(project, matrix())[1] == [] and current_lock(project, matrix())[1] == []


def test_a_format_1_lock_is_the_one_target_of_a_project_that_named_it_since(tmp_path, capsys):
    project = project_in(tmp_path / "p", '[frameworks]\ntorch = "==2.6.0"\n[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n')
    (view,) = views(project)
    project.lock_path.write_text(format_1(view))
    renamed = project_in(tmp_path / "p", '[frameworks]\ntorch = "==2.6.0"\n[targets.cluster]\ndriver = "550.54.15"\n'
                                         'gpus = ["A100"]\n')
    assert current_lock(renamed, matrix()) == (view, [])


def test_a_format_1_lock_of_a_project_with_several_targets_names_the_missing_ones(tmp_path, capsys):
    project = project_in(tmp_path / "p")
    project.lock_path.write_text(format_1(views(project)[1]))
    reasons = current_locks(project, matrix())[1]
    assert "target laptop: not in the lock (a target added since it was written)" in reasons
    assert "target h100: not in the lock (a target added since it was written)" in reasons


# --- which target went stale -------------------------------------------------------------------------------


def test_a_current_lock_of_three_targets_has_no_reason(tmp_path):
    project = project_in(tmp_path / "p")
    write(project, views(project))
    assert current_locks(project, matrix())[1] == []
    assert current_lock(project, matrix(), "laptop")[1] == []


@pytest.mark.parametrize("old, new, said", [
    ('driver = "535.104.05"', 'driver = "550.54.15"', ["target a100: its declaration changed (driver 535.104.05 -> 550.54.15)"]),
    ('gpus = ["H100"]', 'gpus = ["H200"]', ["target h100: its declaration changed (gpus ['H100'] -> ['H200'])"]),
    ('gpus = "none"', 'gpus = "none"\narch = "aarch64"', ["target laptop: its declaration changed (arch unset -> aarch64)",
                                                          "target laptop: the configuration no longer resolves to any stack"]),
    ('driver = "580.65.06"', 'driver = "570.86.15"', ["target h100: its declaration changed (driver 580.65.06 -> 570.86.15)",
                                                      "target h100: the resolved stack changed (cuda, cuda_release, "
                                                      "driver_compatibility, gpu_targets, compute_capabilities, frameworks, "
                                                      "index_urls, min_driver, min_driver_compat, python, base_image, "
                                                      "requirements)"]),
])
def test_lock_check_names_the_target_that_went_stale_and_no_other(tmp_path, old, new, said):
    project = project_in(tmp_path / "p")
    write(project, views(project))
    edited = project_in(tmp_path / "p", THREE.replace(old, new, 1))
    reasons = current_locks(edited, matrix())[1]
    assert reasons[:1] == said[:1]
    assert {r.split(":")[0] for r in reasons} == {said[0].split(":")[0]}


def test_a_target_added_or_dropped_is_named(tmp_path):
    project = project_in(tmp_path / "p")
    write(project, views(project))
    added = project_in(tmp_path / "p", THREE + '\n[targets.t4]\ndriver = "535.104.05"\ngpus = ["T4"]\n')
    assert current_locks(added, matrix())[1] == ["target t4: not in the lock (a target added since it was written)"]
    dropped = project_in(tmp_path / "p", THREE.split("[targets.h100]")[0])
    assert current_locks(dropped, matrix())[1] == ["target h100: in the lock, but the configuration no longer names it"]


def test_what_every_target_shares_is_said_once_and_of_no_target(tmp_path):
    project = project_in(tmp_path / "p")
    write(project, views(project))
    edited = project_in(tmp_path / "p", THREE.replace('torch = ">=2.6"', 'torch = ">=2.6"\ntorchvision = "any"'))
    reasons = current_locks(edited, matrix())[1]
    assert reasons[0] == "the configuration in cudaenv.toml changed since the lock was written"
    assert not any(r.startswith("target") and "configuration in" in r for r in reasons)


def test_a_cpu_targets_pins_that_bring_cuda_make_it_stale(tmp_path):
    project = project_in(tmp_path / "p")
    locks = views(project)
    locks[0] = replace(locks[0], pinned=locks[0].pinned + ("nvidia-cublas-cu12==12.4.5.8",))
    write(project, locks)
    assert current_locks(project, matrix())[1] == [
        "target laptop: the locked packages contradict the locked stack: nvidia-cublas-cu12==12.4.5.8 carries a "
        "CUDA library, but the stack is a CPU-only stack"]


# --- locking: nothing resolved or pinned twice ---------------------------------------------------------


def test_targets_describing_the_same_host_are_resolved_and_pinned_once(tmp_path, monkeypatch):
    import cudaenv.project.lock as lock_module

    project = project_in(tmp_path / "p", THREE + '\n[targets.also-h100]\ndriver = "580.65.06"\ngpus = ["H100"]\n')
    made = {view.name: view for view in views(project)}
    calls = []

    def fake_lock_project(project, matrix, constraints=None, target_name=None, *, compiled=None):
        calls.append(target_name)
        return "resolution", made[target_name]

    monkeypatch.setattr(lock_module, "lock_project", fake_lock_project)
    results, whole = lock_targets(project, matrix())
    assert calls == ["laptop", "a100", "h100"]
    assert whole.names == ("laptop", "a100", "h100", "also-h100") and whole.target("also-h100").name == "also-h100"
    assert whole.target("also-h100").entry_id() == whole.target("h100").entry_id()
    assert list(results) == ["laptop", "a100", "h100", "also-h100"]


def test_a_target_without_a_stack_leaves_no_lock(tmp_path, monkeypatch):
    import cudaenv.project.lock as lock_module

    project = project_in(tmp_path / "p")
    made = {view.name: view for view in views(project)}
    monkeypatch.setattr(lock_module, "lock_project", lambda p, m, c=None, target_name=None, *, compiled=None:
                        ("no", None if target_name == "a100" else made[target_name]))
    results, whole = lock_targets(project, matrix())
    assert whole is None and results == {"laptop": "no", "a100": "no", "h100": "no"}


def test_a_stack_two_targets_share_is_compiled_once(tmp_path):
    from cudaenv.project.lock import wheel_inputs

    project = project_in(tmp_path / "p")
    stack = resolve_project(matrix(), project, project_target(matrix(), project, "h100").host).stack
    compiled = {stack: ["filelock==3.16.1"]}
    inputs = wheel_inputs(project, stack, compiled=compiled)
    assert inputs.compile(stack) == ["filelock==3.16.1"]  # from the run's memo: uv is not asked again


# --- end to end, with the real uv against a loopback index --------------------------------------------


def env_for(index, tmp_path):
    return isolated_env(CUDAENV_PYTHON_INDEX=index.url, CUDAENV_FRAMEWORK_INDEX=index.url,
                        UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_PYTHON_DOWNLOADS="never")


@pytest.fixture
def torch_index(package_index):
    for version in ("2.14.1", "2.15.0"):
        package_index.add("torch", version, requires=["filelock"])
    package_index.add("torch", "2.9.1+cpu", requires=["filelock"])
    package_index.add("filelock", "3.16.1")
    return package_index


def test_a_laptop_an_a100_and_an_h100_lock_into_one_lock_with_three_stacks(tmp_path, torch_index):
    root = tmp_path / "p"
    project_in(root)
    env = env_for(torch_index, tmp_path)
    proc = run_cli("lock", root, "--json", env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["ok"] and list(answer["targets"]) == ["laptop", "a100", "h100"]
    assert [answer["targets"][n]["stack"].get("cuda") for n in ("laptop", "a100", "h100")] == [None, "12.6", "13.0"]
    assert len(answer["stacks"]) == 3
    laptop = lock_view(root / "cudaenv.lock", "laptop")
    assert laptop["stack"]["device"] == "cpu" and "torch==2.9.1+cpu" in laptop["requirements"]["pinned"]
    assert not any(pin.startswith("nvidia-") for pin in laptop["requirements"]["pinned"])
    assert lock_view(root / "cudaenv.lock", "h100")["requirements"]["pinned"] == ["filelock==3.16.1", "torch==2.15.0"]
    check = run_cli("lock", root, "--check", "--json", env=env, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout) == {"ok": True, "lock": str(root / "cudaenv.lock"), "stale": [], "stale_targets": []}


def test_lock_check_json_names_the_stale_target(tmp_path, torch_index):
    root = tmp_path / "p"
    project_in(root)
    env = env_for(torch_index, tmp_path)
    assert run_cli("lock", root, env=env, timeout=300).returncode == 0
    (root / "cudaenv.toml").write_text(THREE.replace("535.104.05", "550.54.15"))
    check = run_cli("lock", root, "--check", "--json", env=env, timeout=300)
    assert check.returncode == 1
    assert json.loads(check.stdout)["stale_targets"] == ["a100"]
    text = run_cli("lock", root, "--check", env=env, timeout=300)
    assert text.stdout == (f"✗ {root / 'cudaenv.lock'}: target a100: its declaration changed "
                           "(driver 535.104.05 -> 550.54.15)\n")


def test_a_cpu_target_whose_index_serves_only_cuda_builds_is_refused_naming_the_cpu_build(tmp_path, package_index):
    """The stack names the CPU index's build (torch==2.9.1+cpu): PyPI's CUDA build of the same
    release never satisfies it, whatever the index serves."""
    package_index.add("torch", "2.9.1", requires=["nvidia-cublas-cu12==12.8.4.1"])
    package_index.add("nvidia-cublas-cu12", "12.8.4.1")
    root = tmp_path / "p"
    project_in(root, '[frameworks]\ntorch = "==2.9.1"\n[targets.laptop]\ngpus = "none"\n')
    proc = run_cli("lock", root, env=env_for(package_index, tmp_path), timeout=300)
    assert proc.returncode != 0 and not (root / "cudaenv.lock").exists()
    assert "cannot be resolved together with torch==2.9.1+cpu" in proc.stderr


def test_a_cpu_target_whose_requirements_bring_cuda_libraries_is_refused(tmp_path, package_index):
    package_index.add("torch", "2.9.1+cpu")
    package_index.add("gpu-helper", "1.0", requires=["nvidia-cublas-cu12==12.8.4.1"])
    package_index.add("nvidia-cublas-cu12", "12.8.4.1")
    root = tmp_path / "p"
    root.mkdir()
    (root / "requirements.txt").write_text("gpu-helper==1.0\n")
    project_in(root, '[project]\nrequirements = ["requirements.txt"]\n[frameworks]\ntorch = "==2.9.1"\n'
                     '[targets.laptop]\ngpus = "none"\n')
    proc = run_cli("lock", root, env=env_for(package_index, tmp_path), timeout=300)
    assert proc.returncode != 0 and not (root / "cudaenv.lock").exists()
    assert "bring CUDA into a CPU-only stack: nvidia-cublas-cu12==12.8.4.1 carries a CUDA library" in proc.stderr


def test_a_gpu_target_whose_index_serves_only_a_cpu_build_is_refused(tmp_path, package_index):
    package_index.add("torch", "2.6.0+cpu")
    root = tmp_path / "p"
    project_in(root, '[frameworks]\ntorch = "==2.6.0"\n[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n')
    proc = run_cli("lock", root, env=env_for(package_index, tmp_path), timeout=300)
    assert proc.returncode != 0 and not (root / "cudaenv.lock").exists()
    assert "torch==2.6.0+cpu carries a CPU-only build" in proc.stderr


def test_lock_rewrites_a_format_1_lock_with_a_note(tmp_path, torch_index):
    root = tmp_path / "p"
    project = project_in(root, '[frameworks]\ntorch = "==2.14.1"\n[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n')
    (view,) = views(project)
    project.lock_path.write_text(format_1(view))
    proc = run_cli("lock", root, "--json", env=env_for(torch_index, tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (f"cudaenv: note: {project.lock_path} was lock format 1; rewritten as format 2 (targets: default)"
            in proc.stderr.splitlines())
    assert set(json.loads(proc.stdout)) == {"ok", "lock", "stack", "pinned", "warnings"}  # the one-target shape
    assert read_lock_file(project.lock_path).format == 2


# --- what a CPU stack is not made into yet -------------------------------------------------------------


@pytest.mark.parametrize("args, what", [
    (("check", "--driver", "550.54.15", "--gpu", "A100"), "a host check"),
])
def test_a_cpu_stack_is_refused_in_one_line_where_only_gpu_stacks_are_made_yet(tmp_path, args, what):
    project = project_in(tmp_path / "p", '[frameworks]\ntorch = ">=2.6"\n[targets.laptop]\ngpus = "none"\n')
    write(project, views(project))
    proc = run_cli(args[0], project.root, *args[1:], env=isolated_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"cudaenv: error: {project.lock_path}: target laptop has no GPU (a CPU-only stack): {what} "
                           "is not made for a CPU stack yet; `cudaenv resolve` and `cudaenv lock` serve it\n")


def test_a_gpu_stack_is_made_as_before(tmp_path):
    _, a100, _ = views(project_in(tmp_path / "p"))
    assert a100.gpu_stack("an image").cuda == "12.6"
