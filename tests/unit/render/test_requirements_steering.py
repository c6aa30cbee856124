"""The image installs what the lock resolved, from where it resolved it: the requirement files'
--find-links and --extra-index-url reach the requirements layer through the lock, a local wheel
folder is bind-mounted from the build context, and the project's own code ("-e .") is installed
from /workspace after the copy, never pinned. Checked on the rendered Dockerfile, parsed by
BuildKit's own parser."""

from __future__ import annotations

import dockerfile
import pytest

from cudaenv.errors import UserError
from cudaenv.images.plan import plan_image
from cudaenv.project import load_project
from cudaenv.project.lock import make_lock, read_lock
from cudaenv.resolver.resolve import resolve
from cudaenv.hosts.target import project_target

from tests.unit.render.test_hostile_values_stay_quoted import MATRIX, project_dir

REQUIREMENTS = ("-f https://data.pyg.org/whl/torch-2.4.0+cu121.html\n--find-links ./wheels\n"
                "--extra-index-url https://download.pytorch.org/whl/cpu\n-e .\ntorch-scatter\n")


def locked_project(tmp_path, requirements=REQUIREMENTS):
    root = project_dir(tmp_path)
    (root / "wheels").mkdir()
    (root / "requirements.txt").write_text(requirements)
    text = (root / "cudaenv.toml").read_text().replace('name = "hostile"', 'name = "hostile"\nrequirements = ["requirements.txt"]')
    (root / "cudaenv.toml").write_text(text)
    project = load_project(root)
    stack = resolve(MATRIX, project.constraints, project_target(MATRIX, project).host).stack
    lock = make_lock(project, stack, matrix_revision=MATRIX.revision, target={}, pinned=["torch-scatter==2.1.2"])
    project.lock_path.write_text(lock.as_toml(), encoding="utf-8")
    return project


def runs(text: str) -> list[str]:
    return [" ".join((*command.flags, *command.value)) for command in dockerfile.parse_string(text)
            if command.cmd.upper() == "RUN"]


def test_the_lock_records_what_steers_the_install_and_reads_it_back(tmp_path):
    lock = read_lock(locked_project(tmp_path).lock_path)
    assert lock.find_links == ("https://data.pyg.org/whl/torch-2.4.0+cu121.html", "wheels")
    assert lock.extra_index_urls == ("https://download.pytorch.org/whl/cpu",)
    assert lock.own_code == (".",)
    assert lock.pinned == ("torch-scatter==2.1.2",)


def test_the_requirements_layer_installs_from_the_files_links_and_indexes(tmp_path):
    project = locked_project(tmp_path)
    text = plan_image(project, MATRIX, read_lock(project.lock_path), buildkit=True).dockerfile
    layer = next(run for run in runs(text) if "torch-scatter==2.1.2" in run)
    assert "--find-links https://data.pyg.org/whl/torch-2.4.0+cu121.html" in layer
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in layer
    assert "--mount=type=bind,source=wheels,target=/tmp/cudaenv-find-links/1" in layer
    assert "--find-links /tmp/cudaenv-find-links/1" in layer


def test_the_projects_own_code_installs_after_the_copy_without_dependencies(tmp_path):
    project = locked_project(tmp_path)
    text = plan_image(project, MATRIX, read_lock(project.lock_path), buildkit=True).dockerfile
    commands = [(c.cmd.upper(), " ".join(c.value)) for c in dockerfile.parse_string(text)]
    copy = next(i for i, (cmd, value) in enumerate(commands) if cmd == "COPY" and "/workspace/" in value)
    own = next(i for i, (cmd, value) in enumerate(commands) if cmd == "RUN" and "--editable /workspace/." in value)
    assert own > copy and "--no-deps" in commands[own][1]


def test_a_local_wheel_folder_needs_buildkit(tmp_path):
    project = locked_project(tmp_path)
    with pytest.raises(UserError, match="requirements.find_links: a folder in the project"):
        plan_image(project, MATRIX, read_lock(project.lock_path), buildkit=False)


@pytest.mark.parametrize("key, value", [
    ("find_links", "/etc"), ("find_links", "../x"), ("find_links", "x\nRUN id"), ("find_links", "w,target=/etc"),
    ("find_links", "it's"), ("extra_index_urls", "file:///etc"),
    ("extra_index_urls", "https://me:tok@host/simple"), ("own_code", "-e x"), ("own_code", "/abs"),
], ids=["absolute", "parent", "newline", "mount-csv", "quote", "file-url", "credentials", "option", "absolute-code"])
def test_a_hand_edited_steering_value_is_refused(tmp_path, key, value):
    import tomlkit

    from tests.support.lockfile import OneTarget

    project = locked_project(tmp_path)
    doc = tomlkit.parse(project.lock_path.read_text())
    OneTarget(doc)["requirements"][key] = [value]
    project.lock_path.write_text(tomlkit.dumps(doc))
    with pytest.raises(UserError, match=rf"requirements.{key}\[0\]"):
        read_lock(project.lock_path)
