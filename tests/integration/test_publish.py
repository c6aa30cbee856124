"""`cudaenv publish` against real registries on loopback (Debian's docker-registry).

This module runs its own registry rather than the suite's shared one: publishing into the shared
registry's root would make every other module's project build (base_registry = standins.host)
start FROM a published base, and the tests here need namespaces that start empty. The stand-in
(debootstrapped Debian + python3.11) is served under the upstream nvidia/cuda names the
selection asks for, and builds fetch them with ``--base-registry``. Only runtime stacks without
a framework are built, so nothing reaches PyPI; the apt step fetches ca-certificates and tini
from Debian's mirror over plain http. A second registry, with htpasswd authentication, checks
credentials. Every image this module creates is removed when it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.cli import cudaenv
from tests.support.registry import LocalRegistry
from tests.support.standins import StandinRegistry

pytestmark = [pytest.mark.docker, pytest.mark.registry]

CUDA_12_4 = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
CUDA_12_3 = "nvidia/cuda:12.3.2-runtime-ubuntu22.04"
CUDA_12_2 = "nvidia/cuda:12.2.2-runtime-ubuntu22.04"  # CUDA 12.1's base is never served here
TAGS_12_4 = ["cuda12.4-runtime-py3.11-ubuntu22.04", "cuda12.4.1-runtime-py3.11-ubuntu22.04"]
TAGS_12_3 = ["cuda12.3-runtime-py3.11-ubuntu22.04", "cuda12.3.2-runtime-py3.11-ubuntu22.04"]
CONTENT_HASH_LABEL = "io.cudaenv.content-hash"


def readable(tags: list[str]) -> list[str]:
    return sorted(t for t in tags if not t.startswith("hash-"))


def hash_tags(tags: list[str]) -> list[str]:
    return sorted(t for t in tags if t.startswith("hash-"))


def remove_local_images(engine, prefix: str) -> None:
    """Untag (and so delete, where nothing else holds them) every local image named under ``prefix``."""
    import docker.errors

    for image in engine.client.images.list():
        for tag in image.tags:
            if tag.startswith(prefix):
                try:
                    engine.client.images.remove(tag)
                except docker.errors.APIError:
                    pass


@pytest.fixture(scope="module")
def served(engine, standin_image, tmp_path_factory):
    """This module's registry, serving the stand-in as nvidia/cuda 12.4.1 and uv."""
    with LocalRegistry.start(tmp_path_factory.mktemp("publish-registry")) as registry:
        standins = StandinRegistry(engine, registry, standin_image)
        try:
            standins.provide_uv()
            standins.provide(CUDA_12_4)
            yield standins
        finally:
            remove_local_images(engine, f"{registry.host}/")


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory) -> dict[str, str]:
    """The environment for cudaenv: no registry credentials, and an empty Docker config so no
    `docker login` of this machine takes part."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDAENV_REGISTRY_USER", "CUDAENV_REGISTRY_PASSWORD")}
    env["DOCKER_CONFIG"] = str(tmp_path_factory.mktemp("docker-config"))
    return env


def publish_json(served, cli_env, *args) -> tuple[subprocess.CompletedProcess, dict]:
    proc = cudaenv("publish", *args, "--base-registry", served.host, "--json", env=cli_env)
    try:
        payload = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"publish --json did not print one JSON object (exit {proc.returncode}):\n"
                    f"{proc.stdout}\n{proc.stderr[-3000:]}")
    return proc, payload


# --- publish, then look at the registry ----------------------------------------------------


@pytest.fixture(scope="module")
def published(served, cli_env) -> dict:
    """CUDA 12.4 / Python 3.11 published to <registry>/team; its JSON result."""
    proc, payload = publish_json(served, cli_env, "--registry", f"{served.host}/team", "--cuda", "12.4",
                                 "--python", "3.11")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [result] = payload["results"]
    assert result["status"] == "pushed", result
    return result


def test_publish_pushes_the_readable_tags_and_the_hash_tag(served, published):
    tags = served.registry.tags("team/cudaenv-base")
    assert readable(tags) == TAGS_12_4
    assert hash_tags(tags) == [f"hash-{published['content_hash'][:16]}"]


def test_every_published_tag_names_the_reported_digest(served, published):
    assert published["digest"].startswith("sha256:")
    digests = {tag: served.registry.manifest_digest("team/cudaenv-base", tag)
               for tag in served.registry.tags("team/cudaenv-base")}
    assert set(digests.values()) == {published["digest"]}, digests


def test_published_base_pulls_back_from_the_registry(engine, served, published):
    repository = f"{served.host}/team/cudaenv-base"
    hash_tag = f"hash-{published['content_hash'][:16]}"
    for tag in served.registry.tags("team/cudaenv-base"):
        engine.client.images.remove(f"{repository}:{tag}")
    assert engine.image_labels(f"{repository}:{hash_tag}") is None

    pulled = engine.client.images.pull(repository, tag=hash_tag)

    assert pulled.labels[CONTENT_HASH_LABEL] == published["content_hash"]
    assert f"{repository}@{published['digest']}" in pulled.attrs["RepoDigests"]


def test_published_base_holds_the_python_venv_and_tini(engine, served, published):
    image = f"{served.host}/team/cudaenv-base:hash-{published['content_hash'][:16]}"
    output = engine.client.containers.run(
        image, ["bash", "-c", "command -v tini && /opt/venv/bin/python -c 'import sys; print(sys.prefix)'"],
        remove=True).decode()
    assert output.split() == ["/usr/bin/tini", "/opt/venv"]


def test_second_publish_skips_everything_the_registry_has(served, cli_env, published):
    proc, payload = publish_json(served, cli_env, "--registry", f"{served.host}/team", "--cuda", "12.4",
                                 "--python", "3.11")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [(r["status"], r["digest"]) for r in payload["results"]] == [("skipped", published["digest"])]
    assert "building" not in proc.stderr
    assert served.registry.manifest_digest("team/cudaenv-base", TAGS_12_4[0]) == published["digest"]


def test_publish_through_another_mirror_with_a_ca_cert_finds_the_same_hash(served, cli_env, published, tmp_path):
    ca = tmp_path / "corporate-ca.pem"
    ca.write_text("not read: the image is already published\n")
    proc = cudaenv("publish", "--registry", f"{served.host}/team", "--cuda", "12.4", "--python", "3.11",
                   "--base-registry", "mirror.invalid:5000/dockerhub", "--ca-cert", ca, "--json", env=cli_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["status"] for r in json.loads(proc.stdout)["results"]] == ["skipped"]


# --- dry run ---------------------------------------------------------------------------------


def test_dry_run_prints_images_and_tags_without_building_or_pushing(engine, served, cli_env):
    # CUDA 12.1's base is not served: building it would fail, so exit 0 means nothing was built.
    proc = cudaenv("publish", "--registry", f"{served.host}/dryrun", "--cuda", ">=12.1,<12.3", "--python", "3.11",
                   "--base-registry", served.host, "--dry-run", env=cli_env)
    assert proc.returncode == 0, proc.stderr
    repository = f"{served.host}/dryrun/cudaenv-base"
    for tag in ("cuda12.1.1-runtime-py3.11-ubuntu22.04", "cuda12.1-runtime-py3.11-ubuntu22.04",
                "cuda12.2.2-runtime-py3.11-ubuntu22.04", "cuda12.2-runtime-py3.11-ubuntu22.04"):
        assert f"{repository}:{tag}" in proc.stdout
    assert proc.stdout.count(f"{repository}:hash-") == 2
    assert served.registry.tags("dryrun/cudaenv-base") == []
    assert not [t for i in engine.client.images.list() for t in i.tags if t.startswith(repository)]


def test_dry_run_json_is_one_object_listing_each_image_with_its_tags(served, cli_env):
    proc = cudaenv("publish", "--registry", f"{served.host}/dryrun", "--cuda", "12.4", "--python", "3.11",
                   "--dry-run", "--json", env=cli_env)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["dry_run"] is True
    [image] = payload["images"]
    repository = f"{served.host}/dryrun/cudaenv-base"
    assert image["image"] == f"{repository}:{TAGS_12_4[1]}"
    assert readable([t.split(":")[-1] for t in image["tags"]]) == TAGS_12_4
    assert image["tags"][-1] == f"{repository}:hash-{image['content_hash'][:16]}"
    assert served.registry.tags("dryrun/cudaenv-base") == []


# --- failures ----------------------------------------------------------------------------------


def test_one_failed_image_does_not_stop_the_others(served, cli_env):
    served.provide(CUDA_12_2)  # CUDA 12.1's base stays unserved, so its build fails first
    proc = cudaenv("publish", "--registry", f"{served.host}/partial", "--cuda", ">=12.1,<12.3", "--python", "3.11",
                   "--base-registry", served.host, env=cli_env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["IMAGE", "RESULT", "DETAIL"]
    row_12_1 = next(line for line in lines if "cuda12.1.1-runtime-py3.11-ubuntu22.04" in line)
    row_12_2 = next(line for line in lines if "cuda12.2.2-runtime-py3.11-ubuntu22.04" in line)
    assert row_12_1.split()[1] == "failed" and "nvidia/cuda:12.1.1-runtime-ubuntu22.04" in row_12_1
    assert row_12_2.split()[1] == "pushed"
    assert lines[-1] == "1 pushed, 0 skipped, 1 failed"
    tags = served.registry.tags("partial/cudaenv-base")
    assert readable(tags) == ["cuda12.2-runtime-py3.11-ubuntu22.04", "cuda12.2.2-runtime-py3.11-ubuntu22.04"]
    assert len(hash_tags(tags)) == 1


# --- --from-projects -------------------------------------------------------------------------


def locked_project(root: Path, cli_env, *, name: str, cuda: str, driver: str) -> Path:
    directory = root / name
    directory.mkdir()
    (directory / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "{cuda}"\n\n'
        f'[target]\ndriver = "{driver}"\n\n[build]\nflavor = "runtime"\n')
    proc = cudaenv("lock", directory, env=cli_env)
    assert proc.returncode == 0, proc.stderr
    return directory


@pytest.fixture(scope="module")
def from_projects(served, cli_env, tmp_path_factory) -> dict:
    """Three locked projects, two on the same base (locked for different drivers), published."""
    served.provide(CUDA_12_3)
    root = tmp_path_factory.mktemp("projects")
    projects = [locked_project(root, cli_env, name="native-12-4", cuda="12.4", driver="550.54.15"),
                locked_project(root, cli_env, name="minor-12-4", cuda="12.4", driver="535.104.05"),
                locked_project(root, cli_env, name="native-12-3", cuda="12.3", driver="550.54.15")]
    proc, payload = publish_json(served, cli_env, "--registry", f"{served.host}/fromprojects",
                                 *[a for p in projects for a in ("--from-projects", p)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return payload


def test_from_projects_publishes_exactly_the_bases_the_locks_use(served, from_projects):
    assert sorted(r["status"] for r in from_projects["results"]) == ["pushed", "pushed"]
    tags = served.registry.tags("fromprojects/cudaenv-base")
    assert readable(tags) == sorted(TAGS_12_3 + TAGS_12_4)
    assert len(hash_tags(tags)) == 2


def test_from_projects_hashes_match_the_same_bases_selected_by_flags(served, cli_env, from_projects):
    expected = []
    for cuda in ("12.3", "12.4"):
        proc = cudaenv("publish", "--registry", f"{served.host}/fromprojects", "--cuda", cuda, "--python", "3.11",
                       "--dry-run", "--json", env=cli_env)
        assert proc.returncode == 0, proc.stderr
        expected += [i["tags"][-1].rsplit(":", 1)[1] for i in json.loads(proc.stdout)["images"]]
    assert hash_tags(served.registry.tags("fromprojects/cudaenv-base")) == sorted(expected)


def test_from_projects_without_a_lock_is_a_usage_error(served, cli_env, tmp_path):
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "unlocked"\npython = "3.11"\n')
    proc = cudaenv("publish", "--registry", f"{served.host}/unlocked", "--from-projects", tmp_path, env=cli_env)
    assert proc.returncode == 2
    assert "no cudaenv.lock" in proc.stderr and "cudaenv lock" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- a project build on the published base ------------------------------------------------


@pytest.fixture(scope="module")
def project_on_published_base(engine, served, cli_env, tmp_path_factory):
    """A project whose base_registry is <registry>/shared: a prefix that serves the published base
    but neither nvidia/cuda nor uv, so the build can only succeed FROM the published base."""
    proc, payload = publish_json(served, cli_env, "--registry", f"{served.host}/shared", "--cuda", "12.4",
                                 "--python", "3.11")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [result] = payload["results"]
    directory = tmp_path_factory.mktemp("on-published-base")
    (directory / "cudaenv.toml").write_text(
        '[project]\nname = "on-published-base"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        '[target]\ndriver = "550.54.15"\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{served.host}/shared"\n\n'
        '[run]\ncommand = ["python", "main.py"]\nulimits = { memlock = 8388608 }\n')
    (directory / "main.py").write_text("print('on the published base')\n")
    tag = f"cudaenv-test/on-published-base:{uuid.uuid4().hex[:10]}"
    try:
        # --rebuild-base: a base with this content hash may already be here (another module built
        # the same stack); the published one is pulled in its place either way
        yield {"directory": directory, "published": result, "tag": tag,
               "build": cudaenv("build", directory, "-t", tag, "--rebuild-base", env=cli_env)}
    finally:
        remove_local_images(engine, tag)
        base = engine.image_info(f"cudaenv-base:hash-{result['content_hash'][:16]}")
        for name in base.tags if base else ():
            remove_local_images(engine, name)


def test_dockerfile_starts_from_the_stack_base_the_registry_publishes(served, cli_env, project_on_published_base):
    proc = cudaenv("dockerfile", project_on_published_base["directory"], env=cli_env)
    assert proc.returncode == 0, proc.stderr
    froms = [line for line in proc.stdout.splitlines() if line.startswith("FROM ")]
    content_hash = project_on_published_base["published"]["content_hash"]
    assert froms == [f"FROM cudaenv-base:hash-{content_hash[:16]} AS base"]  # the same name, built or pulled
    assert f"pulled from {served.host}/shared/cudaenv-base when published there" in proc.stdout


def test_project_builds_from_the_published_base_without_the_upstream_images(served, project_on_published_base):
    build = project_on_published_base["build"]
    assert build.returncode == 0, build.stderr[-3000:]
    assert f"pulling the published stack base {served.host}/shared/cudaenv-base:hash-" in build.stderr
    assert served.registry.tags("shared/nvidia/cuda") == []
    assert served.registry.tags("shared/astral-sh/uv") == []


def test_the_pulled_base_is_the_published_image_itself(engine, served, project_on_published_base):
    content_hash = project_on_published_base["published"]["content_hash"]
    local = engine.client.images.get(f"cudaenv-base:hash-{content_hash[:16]}")
    assert f"{served.host}/shared/cudaenv-base@{project_on_published_base['published']['digest']}" in local.attrs[
        "RepoDigests"]
    base_layers = local.attrs["RootFS"]["Layers"]
    project_layers = engine.client.images.get(project_on_published_base["tag"]).attrs["RootFS"]["Layers"]
    assert project_layers[: len(base_layers)] == base_layers


def test_project_image_inherits_the_published_base_content_hash(engine, project_on_published_base):
    assert project_on_published_base["build"].returncode == 0, project_on_published_base["build"].stderr[-3000:]
    labels = engine.image_labels(project_on_published_base["tag"])
    assert labels[CONTENT_HASH_LABEL] == project_on_published_base["published"]["content_hash"]
    assert labels["io.cudaenv.project"] == "on-published-base"


# --- an authenticated registry ---------------------------------------------------------------

AUTH_USER = "ci-publisher"


@pytest.fixture(scope="module")
def auth_registry(engine, tmp_path_factory):
    """A second registry that requires htpasswd (bcrypt) credentials."""
    import bcrypt  # the test extra's htpasswd hashing; the registry accepts only bcrypt

    password = f"pw-{uuid.uuid4().hex}"
    root = tmp_path_factory.mktemp("auth-registry")
    htpasswd = root / "htpasswd"
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    htpasswd.write_text(f"{AUTH_USER}:{hashed}\n")
    with LocalRegistry.start(root, htpasswd=htpasswd, auth=(AUTH_USER, password)) as registry:
        try:
            yield registry
        finally:
            remove_local_images(engine, f"{registry.host}/")


def with_credentials(cli_env, user: str, password: str) -> dict[str, str]:
    return dict(cli_env, CUDAENV_REGISTRY_USER=user, CUDAENV_REGISTRY_PASSWORD=password)


@pytest.fixture(scope="module")
def published_with_credentials(served, cli_env, auth_registry) -> subprocess.CompletedProcess:
    env = with_credentials(cli_env, *auth_registry.auth)
    return cudaenv("publish", "--registry", f"{auth_registry.host}/team", "--cuda", "12.4", "--python", "3.11",
                   "--base-registry", served.host, env=env)


def test_authenticated_registry_accepts_good_credentials(auth_registry, published_with_credentials):
    proc = published_with_credentials
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == "1 pushed, 0 skipped, 0 failed"
    assert readable(auth_registry.tags("team/cudaenv-base")) == TAGS_12_4


def test_credentials_never_appear_in_output(auth_registry, published_with_credentials):
    password = auth_registry.auth[1]
    assert published_with_credentials.returncode == 0, published_with_credentials.stderr[-3000:]
    assert password not in published_with_credentials.stdout
    assert password not in published_with_credentials.stderr


def test_credentials_never_reach_the_published_image(engine, auth_registry, published_with_credentials):
    assert published_with_credentials.returncode == 0, published_with_credentials.stderr[-3000:]
    image = f"{auth_registry.host}/team/cudaenv-base:{TAGS_12_4[0]}"
    recorded = json.dumps(engine.client.api.inspect_image(image)) + json.dumps(engine.client.api.history(image))
    assert auth_registry.auth[1] not in recorded


def test_authenticated_registry_rejects_bad_credentials_clearly(served, cli_env, auth_registry):
    wrong = f"wrong-{uuid.uuid4().hex}"
    proc = cudaenv("publish", "--registry", f"{auth_registry.host}/rejected", "--cuda", "12.4", "--python", "3.11",
                   "--base-registry", served.host, env=with_credentials(cli_env, AUTH_USER, wrong))
    assert proc.returncode == 1
    [row] = [line for line in proc.stdout.splitlines() if "cuda12.4.1-runtime-py3.11-ubuntu22.04" in line]
    assert row.split()[1] == "failed"
    assert "credentials were rejected" in row and f"docker login {auth_registry.host}" in row
    assert wrong not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert auth_registry.tags("rejected/cudaenv-base") == []


def test_authenticated_registry_without_credentials_says_how_to_log_in(served, cli_env, auth_registry):
    proc = cudaenv("publish", "--registry", f"{auth_registry.host}/anonymous", "--cuda", "12.4", "--python", "3.11",
                   "--base-registry", served.host, env=cli_env)
    assert proc.returncode == 1
    assert "no credentials found" in proc.stdout
    assert "CUDAENV_REGISTRY_USER/CUDAENV_REGISTRY_PASSWORD" in proc.stdout
    assert auth_registry.tags("anonymous/cudaenv-base") == []
