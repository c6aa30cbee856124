"""A real PEP 503 package index on loopback, serving wheels the tests build.

Locks and image builds resolve against it instead of the live network: ``uv pip compile`` reads
its simple pages, and a build run with ``--network host`` installs from it inside a container.
Wheels are made here with zipfile (a valid ``*.dist-info`` with METADATA, WHEEL and RECORD), so a
test can publish a stand-in ``torch`` or a project dependency with exactly the metadata it needs.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import re
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(directory: Path, name: str, version: str, *, requires: list[str] = (), files: dict[str, str] | None = None,
                requires_python: str | None = None, tag: str = "py3-none-any") -> Path:
    """A wheel ``name-version-<tag>.whl`` with the given Requires-Dist. ``tag`` says which Pythons and
    platforms installers take it for (``cp39-cp39-manylinux_2_17_x86_64``: CPython 3.9 on glibc
    >= 2.17 only); its contents are Python files whatever the tag."""
    dist = name.replace("-", "_")
    module_files = files if files is not None else {f"{dist}/__init__.py": f'__version__ = "{version}"\n'}
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        metadata.append(f"Requires-Python: {requires_python}")
    metadata += [f"Requires-Dist: {r}" for r in requires]
    contents = {
        **module_files,
        f"{dist}-{version}.dist-info/METADATA": "\n".join(metadata) + "\n",
        f"{dist}-{version}.dist-info/WHEEL": (f"Wheel-Version: 1.0\nGenerator: cudaenv-tests\n"
                                               f"Root-Is-Purelib: {'true' if tag.endswith('-none-any') else 'false'}\n"
                                               f"Tag: {tag}\n"),
    }
    record_name = f"{dist}-{version}.dist-info/RECORD"
    lines = [_record_line(path, text.encode()) for path, text in contents.items()] + [f"{record_name},,"]
    contents[record_name] = "\n".join(lines) + "\n"
    path = directory / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in contents.items():
            wheel.writestr(member, text)
    return path


@dataclass
class LocalIndex:
    root: Path
    port: int = 0
    wheels: list[Path] = field(default_factory=list)
    handler: type | None = None  # the request handler class (its ``refused`` counts 401 answers)
    yanked: dict[str, str] = field(default_factory=dict)  # wheel file name -> PEP 592 reason (data-yanked)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    def add(self, name: str, version: str, *, yanked: str | None = None, **kwargs) -> Path:
        """Publish a wheel; ``yanked``: PyPI's reason, served as PEP 592's data-yanked attribute."""
        wheel = build_wheel(self.root / "files", name, version, **kwargs)
        self.wheels.append(wheel)
        if yanked is not None:
            self.yanked[wheel.name] = yanked
        self._write_pages()
        return wheel

    def _write_pages(self) -> None:
        projects: dict[str, list[Path]] = {}
        for wheel in self.wheels:
            projects.setdefault(normalize(wheel.name.split("-")[0]), []).append(wheel)
        simple = self.root / "simple"
        simple.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
        (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        for project, wheels in projects.items():
            page = simple / project
            page.mkdir(exist_ok=True)
            anchors = "".join(
                f'<a href="../../files/{html.escape(w.name)}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}"'
                + (f' data-yanked="{html.escape(self.yanked[w.name])}"' if w.name in self.yanked else "")
                + f">{html.escape(w.name)}</a>\n" for w in sorted(wheels)
            )
            (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{anchors}</body></html>\n")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


class _BasicAuthHandler(_QuietHandler):
    """HTTP basic auth in front of every page and file, as a private index (devpi, Artifactory) asks."""

    expected = ""  # "Basic <base64 user:password>", set per server
    refused = 0

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != self.expected:
            type(self).refused += 1
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="cudaenv-test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    do_HEAD = do_GET


def serve_index(root: Path, *, auth: tuple[str, str] | None = None):
    """Start serving ``root`` on a loopback port (behind basic auth when ``auth`` is given);
    returns (LocalIndex, stop function)."""
    import base64

    (root / "files").mkdir(parents=True, exist_ok=True)
    index = LocalIndex(root)
    index._write_pages()
    base = _QuietHandler
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        base = type("_Auth", (_BasicAuthHandler,), {"expected": f"Basic {token}", "refused": 0})
    index.handler = base

    def handler(*args, **kwargs):
        return base(*args, directory=str(root), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    index.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return index, stop


# A matrix overlay (torch.toml) of two stand-in torch releases whose wheels the loopback index can
# serve: 2.98.0 for Python 3.9-3.11, 2.99.0 for 3.11-3.13 (the newest is 3.13). For the tests of
# which Python the whole project installs on.
TORCH_OVERLAY = """
[[release]]
version = "2.98.0"
python = ["3.9", "3.10", "3.11"]
source = "test fixture ; read 2026-11-26"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]

[[release]]
version = "2.99.0"
python = ["3.11", "3.12", "3.13"]
source = "test fixture ; read 2026-11-26"

[[release.variant]]
cuda = "12.8"
index_url = "https://download.pytorch.org/whl/cu128"
compute_capabilities = ["8.0", "9.0"]
"""
