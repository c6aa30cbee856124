"""A real build from a package index that needs a password, and a search for that password in
everything the image and cudaenv leave behind: every file of every layer, the history, the
configuration and labels, the lock, and the CLI's own output.

The password reaches cudaenv only through the environment (CUDAENV_PYTHON_INDEX_USERNAME /
_PASSWORD); uv gets it as a private netrc while locking, and the build as a BuildKit secret.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import uuid

import pytest

from tests.integration.test_build_images import build, cudaenv, lock_project, remove_images, write_config
from tests.support.package_index import serve_index

pytestmark = [pytest.mark.docker, pytest.mark.registry]

PASSWORD = f"pw-{uuid.uuid4().hex}"  # unique: a hit can only be this test's secret
USER = "builder"


@pytest.fixture(scope="module")
def private_index(tmp_path_factory):
    served, stop = serve_index(tmp_path_factory.mktemp("private-index"), auth=(USER, PASSWORD))
    served.add("private-lib", "1.0.0", files={"private_lib/__init__.py": "VALUE = 42\n"})
    yield served
    stop()


@pytest.fixture(scope="module")
def built_with_password(tmp_path_factory, standins, engine, private_index):
    directory = tmp_path_factory.mktemp("authbuild") / "project"
    directory.mkdir()
    name = f"authbuild-{uuid.uuid4().hex[:8]}"
    write_config(directory, name=name, registry=standins.host)
    (directory / "requirements.txt").write_text("private-lib==1.0.0\n")
    (directory / "main.py").write_text("import private_lib\nprint(private_lib.VALUE)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k in ("CUDAENV_CACHE_DIR",)}
    env.update(CUDAENV_PYTHON_INDEX=private_index.url, CUDAENV_PYTHON_INDEX_USERNAME=USER,
               CUDAENV_PYTHON_INDEX_PASSWORD=PASSWORD, CUDAENV_MATRIX_PATH=str(tmp_path_factory.mktemp("no-overlays")))
    lock_output = cudaenv("lock", directory, env=env)
    assert lock_output.returncode == 0, lock_output.stderr
    lock_project(directory, env, standins)  # provides the base image the lock names
    tag = f"cudaenv-test/authbuild:{uuid.uuid4().hex[:8]}"
    result = build(directory, env, tag)
    verbose = cudaenv("build", directory, "--network", "host", "-v", "-t", tag, env=env)
    yield {"tag": tag, "directory": directory, "result": result, "outputs": [lock_output, verbose]}
    remove_images(engine, tag)


def test_the_private_index_really_refuses_requests_without_the_password(private_index):
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{private_index.url}/private-lib/", timeout=10)
    assert caught.value.code == 401


def test_the_build_installed_the_package_from_the_private_index(engine, built_with_password):
    from cudaenv.engine import ContainerSpec

    run = engine.run(ContainerSpec(image=built_with_password["tag"], command=("python", "main.py"), init=False),
                     timeout=120)
    assert run.exit_code == 0 and run.output.strip() == "42"


def test_no_layer_file_history_entry_label_or_config_holds_the_password(engine, built_with_password):
    tag = built_with_password["tag"]
    saved = subprocess.run(["docker", "save", tag], capture_output=True, timeout=600, check=True).stdout
    needle = PASSWORD.encode()
    scanned = 0
    with tarfile.open(fileobj=io.BytesIO(saved)) as image:
        for member in image.getmembers():
            if not member.isfile():
                continue
            blob = image.extractfile(member).read()
            assert needle not in blob, f"{member.name} of the saved image holds the password"
            if blob[:2] == b"\x1f\x8b" or member.name.endswith(("layer.tar", ".tar")) or len(blob) > 512 and \
                    tarfile.is_tarfile(io.BytesIO(blob)):
                try:
                    layer = tarfile.open(fileobj=io.BytesIO(blob))
                except tarfile.TarError:
                    continue
                with layer:
                    for entry in layer.getmembers():
                        if entry.isfile():
                            scanned += 1
                            assert needle not in layer.extractfile(entry).read(), \
                                f"{entry.name} in layer {member.name} holds the password"
    assert scanned > 1000  # every file of every layer was read (a Debian base alone has thousands)
    history = subprocess.run(["docker", "history", "--no-trunc", "--format", "{{json .}}", tag],
                             capture_output=True, text=True, check=True).stdout
    assert PASSWORD not in history and "private-lib" in (built_with_password["directory"] / "cudaenv.lock").read_text()
    assert PASSWORD not in json.dumps(engine.client.images.get(tag).attrs)  # config, env, labels


def test_the_lock_and_the_cli_output_never_show_the_password(built_with_password):
    assert PASSWORD not in (built_with_password["directory"] / "cudaenv.lock").read_text()
    assert PASSWORD not in json.dumps(built_with_password["result"])
    for output in built_with_password["outputs"]:
        assert PASSWORD not in output.stdout + output.stderr
