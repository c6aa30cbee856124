"""Asking a registry what it has, over the Docker Registry HTTP API v2.

`cudaenv publish` must skip images the registry already has ("ask the registry, not the local
cache"), and a project build looks for a published base there. Credentials come from Docker's
own configuration (``docker login``: config.json auths, credential stores and helpers, read
through the docker SDK), else ``CUDAENV_REGISTRY_USER`` / ``CUDAENV_REGISTRY_PASSWORD``. They are
sent only in Authorization headers and never printed: error messages carry status codes only.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.parse
from dataclasses import dataclass

from cudaenv.errors import CudaenvError
from cudaenv.core.references import names_registry

MANIFEST_TYPES = ", ".join([
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
])


class RegistryError(CudaenvError):
    """The registry refused or could not be reached (exit 1). ``transient`` says whether trying
    again may help (unreachable, HTTP 5xx) — decided from the failure, not from its wording."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class RegistryAuthError(RegistryError):
    """The registry rejected the credentials (or none were given)."""


@dataclass(frozen=True)
class Reference:
    registry: str  # host[:port]
    repository: str  # path below the registry
    tag: str

    @classmethod
    def parse(cls, text: str) -> "Reference":
        name, _, tag = text.rpartition(":")
        if not name or "/" in tag:
            name, tag = text, "latest"
        first, _, rest = name.partition("/")
        if not rest or not names_registry(first):
            raise RegistryError(f"{text!r}: expected a reference with a registry, like registry.example.com/team/image:tag")
        return cls(first, rest, tag)

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"


def is_loopback(registry: str) -> bool:
    host = registry.rsplit(":", 1)[0] if registry.count(":") == 1 else registry
    return host in ("localhost",) or host.startswith("127.") or host == "[::1]"


def scheme(registry: str) -> str:
    """Docker talks plain HTTP to loopback registries (insecure by default) and HTTPS elsewhere."""
    return "http" if is_loopback(registry) else "https"


def credentials(registry: str) -> tuple[str, str] | None:
    """(username, password) for a registry from Docker's configuration or the environment."""
    user, password = os.environ.get("CUDAENV_REGISTRY_USER"), os.environ.get("CUDAENV_REGISTRY_PASSWORD")
    if user and password:
        return user, password
    try:
        import docker.auth

        config = docker.auth.load_config()
        auth = docker.auth.resolve_authconfig(config, registry)
    except Exception:  # an unreadable docker config must not break an anonymous registry
        return None
    if auth and auth.get("username") and auth.get("password"):
        return auth["username"], auth["password"]
    return None


class RegistryClient:
    def __init__(self, registry: str, auth: tuple[str, str] | None = None, *, timeout: float = 30) -> None:
        self.registry = registry
        self.base = f"{scheme(registry)}://{registry}"
        self.auth = auth if auth is not None else credentials(registry)
        self.timeout = timeout
        self._bearer: dict[str, str] = {}

    def _open(self, request):
        import urllib.request  # with http.client and ssl: only for commands that reach a registry

        return urllib.request.urlopen(request, timeout=self.timeout)

    def _basic(self) -> str | None:
        if not self.auth:
            return None
        return "Basic " + base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()

    def _token(self, challenge: str) -> str:
        """Bearer token flow: fetch a token from the realm the registry named."""
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = params.pop("realm", None)
        if realm is None:
            raise RegistryError(f"{self.registry}: unsupported authentication challenge")
        import urllib.error
        import urllib.request

        key = json.dumps(params, sort_keys=True)
        if key in self._bearer:
            return self._bearer[key]
        request = urllib.request.Request(f"{realm}?{urllib.parse.urlencode(params)}")
        basic = self._basic()
        realm_host = urllib.parse.urlsplit(realm)
        # credentials go to a token service over HTTPS, or to the (loopback) registry itself
        if basic and (realm_host.scheme == "https" or realm_host.netloc == self.registry):
            request.add_header("Authorization", basic)
        try:
            with self._open(request) as response:
                data = json.load(response)
        except urllib.error.HTTPError as exc:
            raise RegistryAuthError(f"{self.registry}: the registry's token service refused the credentials "
                                    f"(HTTP {exc.code}); run `docker login {self.registry}`") from exc
        token = data.get("token") or data.get("access_token")
        self._bearer[key] = token
        return token

    def request(self, method: str, path: str, *, accept: str | None = None, data: bytes | None = None,
                content_type: str | None = None):
        import urllib.error
        import urllib.request

        url = f"{self.base}/v2/{path}"
        headers = {"Accept": accept} if accept else {}
        if content_type:
            headers["Content-Type"] = content_type
        authorization = self._basic()
        for _attempt in range(2):
            request = urllib.request.Request(url, method=method, headers=dict(headers), data=data)
            if authorization:
                request.add_header("Authorization", authorization)
            try:
                return self._open(request)
            except urllib.error.HTTPError as exc:
                if exc.code != 401:
                    raise
                challenge = exc.headers.get("WWW-Authenticate", "")
                if challenge.lower().startswith("bearer") and not (authorization or "").startswith("Bearer"):
                    authorization = "Bearer " + self._token(challenge)
                    continue
                raise RegistryAuthError(
                    f"{self.registry}: authentication required or refused (HTTP 401); "
                    + ("the credentials were rejected" if self.auth else "no credentials found")
                    + f" — run `docker login {self.registry}` or set CUDAENV_REGISTRY_USER/CUDAENV_REGISTRY_PASSWORD"
                ) from exc
        raise RegistryAuthError(f"{self.registry}: authentication failed")

    def manifest_digest(self, repository: str, tag: str) -> str | None:
        """The digest of repository:tag, or None when the registry does not have it."""
        import urllib.error

        try:
            with self.request("HEAD", f"{repository}/manifests/{tag}", accept=MANIFEST_TYPES) as response:
                return response.headers.get("Docker-Content-Digest") or "present"
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise RegistryError(f"{self.registry}: asking for {repository}:{tag} failed (HTTP {exc.code})",
                                transient=exc.code >= 500) from exc
        except OSError as exc:
            raise RegistryError(f"{self.registry}: unreachable ({exc.__class__.__name__}: "
                                f"{getattr(exc, 'reason', exc)})", transient=True) from exc


    def get_manifest(self, repository: str, reference: str) -> tuple[bytes, str]:
        """The manifest ``repository:reference`` (a tag or digest) as the registry stores it: its
        exact bytes (what its digest is of) and media type."""
        import urllib.error

        try:
            with self.request("GET", f"{repository}/manifests/{reference}", accept=MANIFEST_TYPES) as response:
                return response.read(), response.headers.get("Content-Type", "").split(";")[0].strip()
        except urllib.error.HTTPError as exc:
            raise RegistryError(f"{self.registry}: reading {repository}:{reference} failed (HTTP {exc.code})",
                                transient=exc.code >= 500) from exc
        except OSError as exc:
            raise RegistryError(f"{self.registry}: unreachable ({exc.__class__.__name__})", transient=True) from exc

    def put_manifest(self, repository: str, tag: str, body: bytes, media_type: str) -> str:
        """Store ``body`` as ``repository:tag``; the digest of those bytes (which the registry says
        back, and which is checked against them)."""
        import hashlib
        import urllib.error

        digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
        try:
            with self.request("PUT", f"{repository}/manifests/{tag}", data=body, content_type=media_type) as response:
                said = response.headers.get("Docker-Content-Digest")
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace").strip()
            raise RegistryError(f"{self.registry}: writing {repository}:{tag} failed (HTTP {exc.code}: {detail})",
                                transient=exc.code >= 500) from exc
        except OSError as exc:
            raise RegistryError(f"{self.registry}: unreachable ({exc.__class__.__name__})", transient=True) from exc
        if said and said != digest:
            raise RegistryError(f"{self.registry}: stored {repository}:{tag} as {said}, not as the {digest} written")
        return digest


def push_auth_config(registry: str) -> dict | None:
    """The auth_config the docker SDK's push wants, from the same sources."""
    found = credentials(registry)
    return {"username": found[0], "password": found[1]} if found else None


# words in the *engine's* own error text (never our message, which holds hosts and hashes)
TRANSIENT_WORDS = ("timeout", "timed out", "connection reset", "connection refused", "unexpected eof",
                   "tls handshake", "temporarily unavailable", "bad gateway", "service unavailable",
                   "gateway timeout", "too many requests")


def engine_error_is_transient(message: str) -> bool:
    """Whether an engine's push or pull error is worth trying again (a network hiccup, HTTP 5xx/429)."""
    text = message.lower()
    return any(word in text for word in TRANSIENT_WORDS) or bool(re.search(r"\b(502|503|504|429)\b", text))
