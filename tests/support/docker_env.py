"""Is a Docker engine reachable? Asked once per test session, through the SDK."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def docker_unreachable_reason() -> str | None:
    try:
        import docker

        docker.from_env(timeout=10).ping()
    except Exception as exc:  # any failure to talk to the engine is a reason, reported verbatim
        return f"{type(exc).__name__}: {exc}"
    return None
