"""`cudaenv run --jupyter` for real: JupyterLab is installed in a layer of its own after the
frameworks (PyPI, through the host's CA bundle as a user behind a TLS-intercepting proxy would),
the server answers on the printed 127.0.0.1 URL with its token, refuses without it, and the port
is published on loopback only."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
import uuid
from functools import partial

import pytest
from tests.support.cli import cudaenv as run_cli

pytestmark = [pytest.mark.docker, pytest.mark.registry, pytest.mark.network]


cudaenv = partial(run_cli, timeout=1200)


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, ConnectionError, OSError):  # not listening yet
        return 0


def test_jupyterlab_answers_on_the_printed_url_with_its_token(tmp_path, standins, engine, host_ca_bundle):
    standins.provide("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
    name = f"jupyter-{uuid.uuid4().hex[:6]}"
    root = tmp_path / "proj"
    root.mkdir()
    root.chmod(0o777)
    ca = f'ca_cert = "{host_ca_bundle}"\n' if host_ca_bundle else ""
    (root / "cudaenv.toml").write_text(
        f'[project]\nname = "{name}"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n'
        f'[build]\nflavor = "runtime"\nbase_registry = "{standins.host}"\n{ca}\n[run]\njupyter = true\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_") or k == "CUDAENV_CACHE_DIR"}
    env.update(CUDAENV_MATRIX_PATH="")
    container = None
    try:
        built = cudaenv("build", root, "--network", "host", "--json", env=env)
        assert built.returncode == 0, built.stderr[-3000:]
        steps = [s["step"] for s in json.loads(built.stdout)["steps"]]
        assert any("jupyterlab==" in step for step in steps)
        started = cudaenv("run", root, "--jupyter", "--gpus", "none", env=env)
        assert started.returncode == 0, started.stderr[-2000:]
        url = started.stdout.strip()
        match = re.fullmatch(r"http://127\.0\.0\.1:([0-9]+)/lab\?token=(\S+)", url)
        assert match, url
        container = re.search(r"cudaenv stop (\S+)`", started.stderr).group(1)
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            status = get(url) if status != 200 else status
            if status == 200:
                break
            time.sleep(1)
        logs = engine.client.containers.get(container).logs().decode(errors="replace")[-3000:]
        assert status == 200, f"JupyterLab never answered 200 on {url} (last: {status}):\n{logs}"
        port = match.group(1)
        assert get(f"http://127.0.0.1:{port}/api/contents?token=wrong") == 403  # the token is required
        bindings = engine.client.containers.get(container).attrs["HostConfig"]["PortBindings"]["8888/tcp"]
        assert bindings == [{"HostIp": "127.0.0.1", "HostPort": port}]  # never on the network
    finally:
        if container:
            cudaenv("stop", root, env=env)
        for image in engine.client.images.list(name=f"cudaenv/{name}"):
            for tag in image.tags:
                engine.remove_image(tag, force=True)
