"""Projects on one stack share its base image by identity, with real Docker builds on the stand-ins.

Each project's image starts FROM the stack base ``cudaenv-base:hash-<content hash>`` (layers 1-3:
OS essentials, uv and Python, framework wheels). The stacks here use stand-in torch releases
whose version is unique to this run, so their bases (and their content hashes) belong to this run
alone: ``cudaenv images --prune`` is only ever pointed at them (``--base``), and they are removed
when the module ends. The stand-in torch wheels come from a package index on loopback.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from cudaenv.errors import EngineError
from cudaenv.images.stackbase import LABEL_BASE_ID, LABEL_CONTENT_HASH
from tests.integration.test_build_images import cudaenv, layers, lock_project, remove_images, write_config
from tests.support.package_index import serve_index

pytestmark = [pytest.mark.docker, pytest.mark.registry]

RUN_ID = uuid.uuid4().hex[:8]
TORCH_SHARED = f"2.98.{int(RUN_ID[:5], 16)}"  # one stack, two projects
TORCH_ALONE = f"2.97.{int(RUN_ID[:5], 16)}"  # a stack whose only project image goes away
TORCH_REBUILT = f"2.95.{int(RUN_ID[:5], 16)}"  # a stack whose base is rebuilt on purpose
TORCH_HANDMADE = f"2.94.{int(RUN_ID[:5], 16)}"  # a stack whose base only a user's own image is built on


def torch_release(version: str) -> str:
    return f"""
[[release]]
version = "{version}"
python = ["3.11"]
source = "test fixture ; read 2026-11-24"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    served, stop = serve_index(tmp_path_factory.mktemp("sharing-index"))
    served.add("fixture-leaf", "2.0.1", files={"fixture_leaf/__init__.py": 'NAME = "leaf"\n'})
    for version in (TORCH_SHARED, TORCH_ALONE, TORCH_REBUILT, TORCH_HANDMADE):
        served.add("torch", version, files={"torch/__init__.py": f'__version__ = "{version}"\n'})
    overlay = tmp_path_factory.mktemp("sharing-overlay")
    (overlay / "torch.toml").write_text("".join(map(torch_release, (TORCH_SHARED, TORCH_ALONE, TORCH_REBUILT,
                                                                    TORCH_HANDMADE))))
    overrides = ("CUDAENV_PYTHON_INDEX", "CUDAENV_FRAMEWORK_INDEX", "CUDAENV_MATRIX_PATH", "CUDAENV_DRIVER_VERSION",
                 "CUDAENV_GPUS", "CUDAENV_UID", "CUDAENV_GID")
    yield dict({k: v for k, v in os.environ.items() if k not in overrides}, CUDAENV_MATRIX_PATH=str(overlay),
               CUDAENV_PYTHON_INDEX=served.url, CUDAENV_FRAMEWORK_INDEX=served.url)
    stop()


def make_project(root: Path, name: str, torch: str, requirements: str, registry: str) -> Path:
    root.mkdir(parents=True)
    write_config(root, name=name, registry=registry, flavor="wheels", cuda=None, driver="570.124.06",
                 frameworks={"torch": f"=={torch}"}, system_packages=())
    (root / "requirements.txt").write_text(requirements)
    (root / "main.py").write_text(f"print({name!r})\n")
    return root


def build_json(directory: Path, env: dict, tag: str, *extra: str) -> dict:
    proc = cudaenv("build", directory, "--network", "host", "--json", "-t", tag, *extra, env=env)
    assert proc.returncode == 0, f"build failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


def images_json(env: dict, *args: str) -> tuple[int, dict]:
    proc = cudaenv("images", "--json", *args, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def remove_base(engine, reference: str) -> None:
    info = engine.image_info(reference)
    if info is not None:
        for tag in info.tags:
            try:
                engine.remove_image(tag)
            except EngineError:  # a container of this run still holds it: the daemon keeps it
                pass


@pytest.fixture(scope="module")
def shared(engine, standins, env, tmp_path_factory):
    """Two projects on one stack, built one after the other; then the first again with --no-cache."""
    root = tmp_path_factory.mktemp("sharing")
    first = make_project(root / "first", f"share-a-{RUN_ID}", TORCH_SHARED, "fixture-leaf==2.0.1\n", standins.host)
    second = make_project(root / "second", f"share-b-{RUN_ID}", TORCH_SHARED, "", standins.host)
    for directory in (first, second):
        lock_project(directory, env, standins)
    tags = {name: f"cudaenv-test/sharing-{name}:{RUN_ID}" for name in ("first", "second", "first-no-cache")}
    results = {}
    try:
        results["first"] = build_json(first, env, tags["first"])
        results["second"] = build_json(second, env, tags["second"])
        results["first-no-cache"] = build_json(first, env, tags["first-no-cache"], "--no-cache")
        yield {"tags": tags, "results": results, "base": results["first"]["base"], "directories": (first, second)}
    finally:
        remove_images(engine, *tags.values())
        for result in results.values():
            remove_base(engine, result["base"]["reference"])


@pytest.fixture(scope="module")
def unused_base(engine, standins, env, tmp_path_factory, shared):
    """A stack base whose one project image was removed again: nothing uses it any more."""
    directory = make_project(tmp_path_factory.mktemp("alone") / "project", f"share-c-{RUN_ID}", TORCH_ALONE, "",
                             standins.host)
    lock_project(directory, env, standins)
    tag = f"cudaenv-test/sharing-alone:{RUN_ID}"
    result = build_json(directory, env, tag)
    remove_images(engine, tag)
    try:
        yield result["base"]
    finally:
        remove_base(engine, result["base"]["reference"])


@pytest.fixture(scope="module")
def hand_built(engine, standins, env, tmp_path_factory):
    """A base whose project image is gone again, and a user's own image built on it by hand
    (`FROM cudaenv-base:hash-…` and one RUN): it inherits every label of the base."""
    from cudaenv.engine import BuildRequest

    directory = make_project(tmp_path_factory.mktemp("handmade") / "project", f"share-e-{RUN_ID}", TORCH_HANDMADE,
                             "", standins.host)
    lock_project(directory, env, standins)
    tag = f"cudaenv-test/sharing-handmade-project:{RUN_ID}"
    mine = f"cudaenv-test/users-own-tool:{RUN_ID}"
    result = build_json(directory, env, tag)
    remove_images(engine, tag)
    base = result["base"]
    try:
        context = tmp_path_factory.mktemp("users-own-context")
        engine.build(BuildRequest(context=context, tags=(mine,), dockerfile_text=(
            f"FROM {base['reference']}\nRUN echo 'my own layer' > /users-own-file\n")))
        yield base, mine
    finally:
        remove_images(engine, mine)
        remove_base(engine, base["reference"])


def test_a_users_image_built_on_a_base_inherits_its_labels_but_is_no_base(engine, hand_built, env):
    base, mine = hand_built
    labels = engine.image_labels(mine)
    assert labels["io.cudaenv.project"] == "cudaenv-base" and labels[LABEL_CONTENT_HASH] == base["content_hash"]
    code, report = images_json(env, "--base", mine)
    assert code == 2 and "not a local cudaenv stack base" in report["error"]["message"]
    code, report = images_json(env, "--base", base["reference"])
    [stack] = report["stacks"]
    assert code == 0 and stack["used"] is True and stack["projects"] == []
    assert [other["image_id"] for other in stack["other_images"]] == [engine.image_info(mine).id]


def test_images_prune_keeps_a_users_image_and_the_base_it_is_built_on(engine, hand_built, env):
    base, mine = hand_built
    mine_id = engine.image_info(mine).id
    code, report = images_json(env, "--prune", "--base", base["reference"])
    assert code == 0 and report["pruned"] == [], report
    code, report = images_json(env, "--prune", "--base", mine)
    assert code == 2  # not a base: nothing to prune, and said so
    assert engine.image_info(mine).id == mine_id
    assert engine.image_info(base["reference"]).id == base["image_id"]


# --- sharing by identity ------------------------------------------------------------------------


def test_the_first_project_builds_the_stack_base_and_the_second_finds_it(shared):
    assert shared["results"]["first"]["base"]["how"] == "built"
    assert shared["results"]["second"]["base"]["how"] == "present"
    assert shared["base"]["reference"] == f"cudaenv-base:hash-{shared['base']['content_hash'][:16]}"


def test_two_projects_on_one_stack_start_from_the_same_base_image(engine, shared):
    first, second = (shared["results"][name] for name in ("first", "second"))
    assert first["base"]["image_id"] == second["base"]["image_id"]
    labels = [engine.image_labels(shared["tags"][name]) for name in ("first", "second")]
    assert labels[0][LABEL_BASE_ID] == labels[1][LABEL_BASE_ID] == first["base"]["image_id"]
    assert labels[0][LABEL_CONTENT_HASH] == labels[1][LABEL_CONTENT_HASH] == first["base"]["content_hash"]


def test_the_base_image_is_the_bottom_of_both_project_images_layer_for_layer(engine, shared):
    base = layers(engine, shared["base"]["reference"])
    assert len(base) >= 3  # the stand-in's own layer, essentials, Python, the framework
    for name in ("first", "second"):
        project = layers(engine, shared["tags"][name])
        assert project[: len(base)] == base and len(project) > len(base), name


def test_build_no_cache_rebuilds_the_project_layers_and_keeps_the_base(engine, shared):
    rebuilt = shared["results"]["first-no-cache"]
    assert rebuilt["base"]["how"] == "present"
    assert rebuilt["base"]["image_id"] == shared["base"]["image_id"]
    own = [step for step in rebuilt["steps"] if " FROM " not in step["step"]]
    assert own and not any(step["cached"] for step in own)  # --no-cache did rebuild the project's layers
    [start] = [step["step"] for step in rebuilt["steps"] if " FROM " in step["step"]]
    assert start.endswith(f"FROM docker.io/library/{shared['base']['reference']}")
    base = layers(engine, shared["base"]["reference"])
    before, after = layers(engine, shared["tags"]["first"]), layers(engine, shared["tags"]["first-no-cache"])
    assert after[: len(base)] == before[: len(base)] == base
    assert after[len(base):] != before[len(base):]
    assert layers(engine, shared["tags"]["second"])[: len(base)] == base  # the other project still shares it


def test_dockerfile_starts_from_the_base_and_says_how_it_is_made(shared, env):
    directory = shared["directories"][0]
    proc = cudaenv("dockerfile", directory, env=env)
    assert proc.returncode == 0, proc.stderr
    froms = [line for line in proc.stdout.splitlines() if line.startswith("FROM ")]
    assert froms == [f"FROM {shared['base']['reference']} AS base"]
    assert "`cudaenv dockerfile --base`" in proc.stdout and "--rebuild-base" in proc.stdout
    assert "uv venv" not in proc.stdout and "ca-certificates tini" not in proc.stdout  # layers 1-3 are the base's
    base = cudaenv("dockerfile", "--base", directory, env=env)
    assert base.returncode == 0, base.stderr
    assert f"torch=={TORCH_SHARED}" in base.stdout and "uv venv" in base.stdout and "ca-certificates tini" in base.stdout


# --- cudaenv images -------------------------------------------------------------------------------


def test_images_json_shows_one_base_with_its_projects_and_counts_it_once(engine, shared, env):
    code, report = images_json(env, "--base", shared["base"]["reference"])
    assert code == 0 and report["ok"] is True
    [stack] = report["stacks"]
    assert stack["image_id"] == shared["base"]["image_id"]
    assert isinstance(stack["stack"], dict) and stack["stack"]["python"]  # the label's object, not its text
    assert stack["bytes"] == engine.client.images.get(shared["base"]["reference"]).attrs["Size"]
    on_it = {tag for project in stack["projects"] for tag in project["tags"]}
    assert set(shared["tags"].values()) <= on_it
    own = sum(project["adds_bytes"] for project in stack["projects"])
    assert report["disk"]["distinct_bytes"] == stack["bytes"] + own
    assert report["disk"]["summed_bytes"] >= report["disk"]["distinct_bytes"] + 2 * stack["bytes"]


def test_images_reports_what_each_project_adds_on_top_of_the_base(engine, shared, env):
    _, report = images_json(env, "--base", shared["base"]["reference"])
    [stack] = report["stacks"]
    for project in stack["projects"]:
        size = engine.client.images.get(project["image_id"]).attrs["Size"]
        assert project["adds_bytes"] == size - stack["bytes"]


def test_images_prune_keeps_a_base_the_user_tagged(engine, unused_base, env):
    """`docker tag cudaenv-base:… mine:keep`: the user named it, so --prune removes neither the
    image nor any of its names, and the listing says why."""
    mine = f"cudaenv-test/mine:keep-{RUN_ID}"
    engine.client.images.get(unused_base["image_id"]).tag(mine)
    try:
        code, report = images_json(env, "--prune", "--base", unused_base["reference"])
        assert code == 0, report
        assert report["pruned"] == []
        info = engine.image_info(unused_base["image_id"])
        assert info is not None and mine in info.tags and unused_base["reference"] in info.tags
        listing = cudaenv("images", "--base", unused_base["reference"], env=env)
        assert f"also tagged {mine}: yours, so `cudaenv images --prune` keeps it" in listing.stdout
    finally:
        engine.remove_image(mine)


def test_images_prune_removes_the_unused_base_and_nothing_else(engine, shared, unused_base, env):
    code, report = images_json(env, "--prune", "--base", unused_base["reference"], "--base",
                               shared["base"]["reference"])
    assert code == 0, report
    assert [(p["image_id"], p["removed"]) for p in report["pruned"]] == [(unused_base["image_id"], True)]
    assert engine.image_info(unused_base["image_id"]) is None
    assert engine.image_info(shared["base"]["reference"]).id == shared["base"]["image_id"]
    for tag in shared["tags"].values():
        assert engine.image_labels(tag) is not None


def test_images_base_that_is_not_a_stack_base_is_bad_input(shared, env, standin_image):
    code, report = images_json(env, "--base", standin_image)
    assert code == 2
    assert "not a local cudaenv stack base" in report["error"]["message"]


def test_a_builder_that_cannot_see_the_local_base_gets_a_hint_naming_the_cause(engine, tmp_path):
    """What a buildx docker-container builder meets: FROM a stack base it cannot find (here: one
    that does not exist, so BuildKit looks for it upstream and fails as such a builder would)."""
    from cudaenv.images.build import pull_hint
    from cudaenv.engine import BuildRequest
    from cudaenv.errors import BuildError

    with pytest.raises(BuildError) as failed:
        engine.build(BuildRequest(context=tmp_path, tags=(f"cudaenv-test/no-base:{RUN_ID}",),
                                  dockerfile_text=f"FROM cudaenv-base:hash-{RUN_ID}00000000 AS base\n"))
    hint = pull_hint(f"{failed.value}\n{failed.value.log_tail}")
    assert hint is not None and "docker-container" in hint and "--standalone" in hint


LAYERDB = Path("/var/lib/docker/image/overlay2/layerdb/sha256")


def test_chain_ids_and_layer_sizes_are_the_ones_the_engine_stores(engine, shared):
    """Checked against dockerd's own layer store (overlay2, local daemon, readable as root): every
    computed chain ID is a layer there, with the size the accounting gave it."""
    if not os.access(LAYERDB, os.R_OK):
        pytest.skip(f"{LAYERDB} is not readable here (another storage driver, a remote daemon, or not root)")
    from cudaenv.images.accounting import layered

    for reference in (shared["base"]["reference"], shared["tags"]["first"]):
        image = layered(engine.image_info(reference))
        assert image.exact
        for chain_id, size in image.layers():
            stored = LAYERDB / chain_id.removeprefix("sha256:")
            assert stored.is_dir(), chain_id
            assert int((stored / "size").read_text()) == size


# --- rebuilding the base is its own choice ---------------------------------------------------------


@pytest.fixture(scope="module")
def rebuilt_base(engine, standins, env, tmp_path_factory):
    """One project built, then with --no-cache, then with --rebuild-base."""
    directory = make_project(tmp_path_factory.mktemp("rebuilt") / "project", f"share-d-{RUN_ID}", TORCH_REBUILT, "",
                             standins.host)
    lock_project(directory, env, standins)
    tags = [f"cudaenv-test/sharing-rebuilt:{RUN_ID}-{n}" for n in range(3)]
    results = []
    try:
        results.append(build_json(directory, env, tags[0]))
        results.append(build_json(directory, env, tags[1], "--no-cache"))
        results.append(build_json(directory, env, tags[2], "--rebuild-base"))
        yield tags, results
    finally:
        remove_images(engine, *tags)
        for result in results:
            remove_base(engine, result["base"]["reference"])
            remove_base(engine, result["base"]["image_id"])
            if engine.image_info(result["base"]["image_id"]) is not None:  # untagged by now: by ID
                try:
                    engine.remove_image(result["base"]["image_id"])
                except EngineError:
                    pass


def test_only_rebuild_base_makes_a_new_stack_base(rebuilt_base):
    _, (first, no_cache, rebuilt) = rebuilt_base
    assert [r["base"]["how"] for r in (first, no_cache, rebuilt)] == ["built", "present", "built"]
    assert no_cache["base"]["image_id"] == first["base"]["image_id"]
    assert rebuilt["base"]["image_id"] != first["base"]["image_id"]
    assert rebuilt["base"]["reference"] == first["base"]["reference"]  # same content hash, new build of it


def test_images_shows_the_older_project_image_still_on_the_replaced_base(engine, rebuilt_base, env):
    tags, (first, _, rebuilt) = rebuilt_base
    old, new = first["base"]["image_id"], rebuilt["base"]["image_id"]
    assert engine.image_labels(tags[2])[LABEL_BASE_ID] == new
    _, report = images_json(env, "--base", old, "--base", new)
    on = {stack["image_id"]: {t for p in stack["projects"] for t in p["tags"]} for stack in report["stacks"]}
    assert on == {old: {tags[0], tags[1]}, new: {tags[2]}}
