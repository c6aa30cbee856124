"""A real distribution registry (Debian's ``docker-registry``) on a loopback port.

Started fully detached (own session, stdin from /dev/null, output to a log file) so it can never
hold the test command's output open, and stopped when the context exits.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalRegistry:
    host: str  # "127.0.0.1:PORT", usable as an image-reference prefix
    root: Path
    log: Path
    auth: tuple[str, str] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def _request(self, path: str, *, method: str = "GET", accept: str | None = None):
        request = urllib.request.Request(self.url + path, method=method)
        if accept:
            request.add_header("Accept", accept)
        if self.auth:
            import base64

            token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        return urllib.request.urlopen(request, timeout=10)

    def tags(self, repository: str) -> list[str]:
        try:
            with self._request(f"/v2/{repository}/tags/list") as response:
                return sorted(json.load(response).get("tags") or [])
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise

    def manifest_digest(self, repository: str, tag: str) -> str | None:
        accept = ", ".join(
            [
                "application/vnd.docker.distribution.manifest.v2+json",
                "application/vnd.oci.image.manifest.v1+json",
                "application/vnd.docker.distribution.manifest.list.v2+json",
                "application/vnd.oci.image.index.v1+json",
            ]
        )
        try:
            with self._request(f"/v2/{repository}/manifests/{tag}", method="HEAD", accept=accept) as response:
                return response.headers.get("Docker-Content-Digest")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    @classmethod
    @contextlib.contextmanager
    def start(cls, root: Path, *, htpasswd: Path | None = None, auth: tuple[str, str] | None = None) -> Iterator["LocalRegistry"]:
        binary = shutil.which("docker-registry")
        if binary is None:
            raise RuntimeError("docker-registry is not installed (scripts/test.sh installs Debian's docker-registry)")
        port = free_loopback_port()
        storage = root / "storage"
        storage.mkdir(parents=True, exist_ok=True)
        config = root / "config.yml"
        lines = [
            "version: 0.1",
            "log:",
            "  level: info",
            "storage:",
            "  filesystem:",
            f"    rootdirectory: {storage}",
            "  delete:",
            "    enabled: true",
            "http:",
            f"  addr: 127.0.0.1:{port}",
        ]
        if htpasswd is not None:
            lines += ["auth:", "  htpasswd:", "    realm: cudaenv-test", f"    path: {htpasswd}"]
        config.write_text("\n".join(lines) + "\n")
        log = root / "registry.log"
        with open(log, "wb") as log_file:
            proc = subprocess.Popen(
                [binary, "serve", str(config)], stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        registry = cls(host=f"127.0.0.1:{port}", root=root, log=log, auth=auth)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(f"{registry.url}/v2/", timeout=2).close()
                    break
                except urllib.error.HTTPError as exc:
                    if exc.code == 401:  # answering, and asking for credentials
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"docker-registry did not start; log:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)
            yield registry
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
