"""Facts about framework releases read from PyPI: what was actually published.

Wheel tags give the Python versions; the wheel's own METADATA gives the ``nvidia-*`` pins and
companion requirements. METADATA comes from the PEP 658 ``.metadata`` file where the index serves
one, else from the wheel itself through HTTP range requests (the zip's central directory, then one
member) — a few hundred kilobytes instead of a gigabyte-sized wheel.

Network access goes through a ``Fetch`` callable so parsers are tested on stored fixtures.
"""

from __future__ import annotations

import json
import re
import struct
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cudaenv import __version__
from cudaenv.errors import CudaenvError
from cudaenv.versions import LINUX_X86_64, numeric_key

USER_AGENT = f"cudaenv/{__version__} (matrix update)"


class FetchError(CudaenvError):
    pass


# (url, byte range or None) -> bytes; a range is (start, end) inclusive, or (-n, None) for the last n bytes
Fetch = Callable[[str, "tuple[int, int | None] | None"], bytes]


# Where an index keeps its files when that is not the index's own host (PyPI's JSON API links
# files.pythonhosted.org; TestPyPI its own files host). Any other index serves files itself.
FILE_HOSTS = {"pypi.org": ("files.pythonhosted.org",), "test.pypi.org": ("test-files.pythonhosted.org",)}


def index_hosts(index: str) -> tuple[str, ...]:
    """The hosts (with port, as ``netloc`` spells them) an index's answers may send cudaenv to."""
    netloc = urllib.parse.urlsplit(index).netloc.lower()
    return (netloc, *FILE_HOSTS.get(netloc, ()))


def check_index_url(url: str, index: str) -> str:
    """``url`` when it is https on the index's own hosts; a FetchError otherwise. The index's JSON
    names the URLs cudaenv reads next: a hostile or broken one must not point it at ``file://``,
    at plain http, or at another host (an internal service, a credentials endpoint)."""
    parts = urllib.parse.urlsplit(url)
    allowed = index_hosts(index)
    if parts.scheme != "https" or parts.username is not None or parts.password is not None \
            or parts.netloc.lower() not in allowed:
        shown = url if len(url) <= 120 else url[:100] + "…"
        raise FetchError(f"{shown!r}: the index named a URL that is not https on its own hosts "
                         f"({', '.join(allowed)}); refusing to read it")
    return url


def index_only(fetch: "Fetch", index: str) -> "Fetch":
    """``fetch`` restricted to https URLs on the index's own hosts (``check_index_url``)."""

    def guarded(url: str, byte_range=None) -> bytes:
        return fetch(check_index_url(url, index), byte_range)

    return guarded


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect may not leave https (urllib would follow one to plain http)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urllib.parse.urlsplit(newurl).scheme != "https":
            raise FetchError(f"{req.full_url}: redirected to {newurl[:100]!r}, which is not https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def http_fetch(url: str, byte_range: tuple[int, int | None] | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if byte_range is not None:
        start, end = byte_range
        request.add_header("Range", f"bytes={start}" if end is None and start < 0 else f"bytes={start}-{'' if end is None else end}")
    opener = urllib.request.build_opener(_HttpsOnlyRedirects) if url.startswith("https://") else None
    try:
        with (opener.open(request, timeout=60) if opener else urllib.request.urlopen(request, timeout=60)) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url}: HTTP {exc.code}") from exc
    except OSError as exc:
        raise FetchError(f"{url}: {exc}") from exc


@dataclass(frozen=True)
class WheelFile:
    filename: str
    url: str
    upload_time: str
    python: str | None  # "3.11" for cp311-cp311; None for py3-none / abi3 wheels


def project_json(name: str, fetch: Fetch = http_fetch, index: str = "https://pypi.org") -> dict:
    """PyPI's JSON for a project, with every file URL made absolute (mirrors serve relative ones)."""
    url = f"{index}/pypi/{name}/json"
    try:
        data = json.loads(fetch(url, None))
    except ValueError as exc:  # not JSON, not UTF-8, or a number past Python's digit limit
        raise FetchError(f"{url}: not the JSON of a project ({str(exc)[:80]})") from exc
    releases = data.get("releases", {}) if isinstance(data, dict) else None
    if not isinstance(releases, dict) or not all(
            isinstance(files, list) and all(isinstance(item, dict) and isinstance(item.get("filename"), str)
                                            and isinstance(item.get("url"), str) for item in files)
            for files in releases.values()):
        raise FetchError(f"{url}: expected PyPI's project JSON (releases: version -> files with filename and url)")
    for files in releases.values():
        for item in files:
            item["url"] = urllib.parse.urljoin(url, item["url"])
    return data


def _is_linux_x86_64(filename: str) -> bool:
    return filename.endswith(".whl") and "linux" in filename and "x86_64" in filename


def _python_of(filename: str) -> str | None:
    try:
        _name, _version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    for tag in tags:
        # cp311-cp311 (cp36-cp36m before 3.8, cp27-cp27mu for Linux's wide-unicode Python 2.7) is a
        # CPython build; cp313-cp313t is free-threaded and cp3x-cp3xd a debug build: neither is the
        # interpreter a plain `python3.x` runs
        if tag.interpreter.startswith("cp") and tag.abi in (tag.interpreter, tag.interpreter + "m",
                                                            tag.interpreter + "mu"):
            digits = tag.interpreter[2:]
            return f"{digits[0]}.{digits[1:]}"
    return None


def linux_wheels(project: dict, minimum: str | None = None, *, any_platform: bool = False) -> dict[str, list[WheelFile]]:
    """Final releases (>= minimum) with their non-yanked manylinux x86_64 wheels, oldest first.

    Versions are keyed in PEP 440's normal form (an index's ``"2.99.0 "`` is ``2.99.0``; local
    versions, which PyPI never publishes, are left out), and every upload time must be an ISO 8601
    date or time: these strings are written into the matrix as they are returned here.

    ``any_platform`` keeps every non-yanked wheel: metapackages (``cuda-toolkit``) and pure-Python
    releases (``jax``) publish one ``py3-none-any`` wheel, which still says the release exists."""
    out: dict[str, list[WheelFile]] = {}
    floor = Version(minimum) if minimum else None
    for version, files in project.get("releases", {}).items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if parsed.is_prerelease or parsed.is_devrelease or parsed.local is not None or (floor and parsed < floor):
            continue
        wheels = [
            WheelFile(f["filename"], f["url"], _upload_time(f, version), _python_of(f["filename"]))
            for f in files
            if (_is_linux_x86_64(f["filename"]) or (any_platform and f["filename"].endswith(".whl"))) and not f.get("yanked")
        ]
        if wheels:
            out.setdefault(str(parsed), []).extend(wheels)
    return dict(sorted(out.items(), key=lambda item: Version(item[0])))


_ISO_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"
                       r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?")


def _upload_time(file: dict, version: str) -> str:
    """The file's upload time, checked: an ISO 8601 date or time whose date exists."""
    import datetime

    value = file.get("upload_time_iso_8601") or file.get("upload_time", "")
    if isinstance(value, str) and _ISO_TIME.fullmatch(value):
        try:
            datetime.date.fromisoformat(value[:10])
            return value
        except ValueError:
            pass
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:50] + "…"
    raise FetchError(f"release {version!r}, file {str(file.get('filename'))[:80]!r}: upload time {shown} is not an "
                     "ISO 8601 date or time")


def python_versions(wheels: list[WheelFile]) -> list[str]:
    found = {w.python for w in wheels if w.python}
    return sorted(found, key=numeric_key)


def first_upload(wheels: list[WheelFile]) -> str:
    return min(w.upload_time for w in wheels)[:10]


# --- METADATA ----------------------------------------------------------------------------------

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"


def _central_directory(url: str, fetch: Fetch) -> tuple[bytes, int]:
    """The zip's central directory bytes and its offset, from the wheel's tail."""
    tail = fetch(url, (-65536, None))
    at = tail.rfind(_EOCD)
    if at < 0:
        raise FetchError(f"{url}: no zip end-of-central-directory record in the last 64 KiB")
    size, offset = struct.unpack("<II", tail[at + 12: at + 20])
    locator = tail.rfind(_EOCD64_LOCATOR, 0, at)
    if offset == 0xFFFFFFFF or size == 0xFFFFFFFF:
        if locator < 0:
            raise FetchError(f"{url}: zip64 archive without a zip64 locator")
        (eocd64_offset,) = struct.unpack("<Q", tail[locator + 8: locator + 16])
        record = fetch(url, (eocd64_offset, eocd64_offset + 55))
        size, offset = struct.unpack("<QQ", record[40:56])
    return fetch(url, (offset, offset + size - 1)), offset


def _member_from_zip(url: str, wanted: Callable[[str], bool], fetch: Fetch) -> tuple[str, bytes]:
    directory, _ = _central_directory(url, fetch)
    pos = 0
    while directory.startswith(_CENTRAL, pos):
        (method, _t, _d, _crc, csize, usize, nlen, elen, clen) = struct.unpack("<HHHIIIHHH", directory[pos + 10: pos + 34])
        (local_offset,) = struct.unpack("<I", directory[pos + 42: pos + 46])
        name = directory[pos + 46: pos + 46 + nlen].decode("utf-8", "replace")
        if wanted(name):
            if csize == 0xFFFFFFFF or local_offset == 0xFFFFFFFF:
                extra = directory[pos + 46 + nlen: pos + 46 + nlen + elen]
                csize, local_offset = _zip64_sizes(extra, usize, csize, local_offset)
            header = fetch(url, (local_offset, local_offset + 29))
            lnlen, lelen = struct.unpack("<HH", header[26:30])
            start = local_offset + 30 + lnlen + lelen
            data = fetch(url, (start, start + csize - 1)) if csize else b""
            if method == 8:
                data = zlib.decompress(data, -15)
            elif method != 0:
                raise FetchError(f"{url}: {name} uses unsupported zip compression {method}")
            return name, data
        pos += 46 + nlen + elen + clen
    raise FetchError(f"{url}: no matching member in the wheel")


def _zip64_sizes(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int]:
    """Compressed size and local-header offset from a zip64 extra field.

    The field holds, in this order, only the values whose 32-bit fields overflowed:
    uncompressed size, compressed size, local header offset.
    """
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack("<HH", extra[pos: pos + 4])
        if tag == 1:
            body = extra[pos + 4: pos + 4 + length]
            values = list(struct.unpack(f"<{len(body) // 8}Q", body[: len(body) // 8 * 8]))
            if usize == 0xFFFFFFFF and values:
                values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
            if offset == 0xFFFFFFFF and values:
                offset = values.pop(0)
            return csize, offset
        pos += 4 + length
    return csize, offset


def wheel_metadata(url: str, fetch: Fetch = http_fetch) -> str:
    """A wheel's METADATA: PEP 658 first, else read out of the wheel by range requests."""
    try:
        return fetch(url + ".metadata", None).decode("utf-8")
    except FetchError:
        pass
    _name, data = _member_from_zip(url, lambda n: n.endswith(".dist-info/METADATA") and n.count("/") == 1, fetch)
    return data.decode("utf-8")


def requirements(metadata: str, *, extra: str | None = None) -> list[Requirement]:
    """Requires-Dist entries that apply on Linux x86_64 (with ``extra`` selected), markers evaluated."""
    out = []
    for line in HeaderParser().parsestr(metadata).get_all("Requires-Dist") or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None:
            environment = dict(LINUX_X86_64, python_version="3.11", python_full_version="3.11.0", extra=extra or "")
            if not req.marker.evaluate(environment):
                continue
            if extra is not None and "extra" not in str(req.marker):
                continue
        elif extra is not None:
            continue
        out.append(req)
    return out


def nvidia_pins(reqs: list[Requirement]) -> dict[str, str]:
    """The CUDA library requirements: every ``nvidia-*`` package, and NVIDIA's ``cuda-toolkit``
    metapackage that pins the runtime from PyTorch 2.11 on (extras dropped: ``cuda-toolkit[cudart]``)."""
    return {r.name: str(r.specifier) for r in reqs if r.name.startswith("nvidia-") or r.name == "cuda-toolkit"}


def pinned_version(spec: str) -> str:
    """The version a pin names first: ``==9.1.0.70`` -> ``9.1.0.70``, ``>=12.6,<13`` -> ``12.6``."""
    return spec.lstrip("=<>~!").split(",")[0]


def cuda_of_pins(pins: dict[str, str]) -> str | None:
    """CUDA x.y from an ``nvidia-cuda-runtime-cuXX`` pin: ``==12.4.127`` -> ``12.4``."""
    for name, spec in pins.items():
        if name.startswith("nvidia-cuda-runtime") or name == "cuda-toolkit":
            parts = pinned_version(spec).split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                return f"{parts[0]}.{parts[1]}"
    return None
