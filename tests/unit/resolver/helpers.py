"""Shorthand for resolver tests: constraints and a host from keyword arguments."""

from __future__ import annotations

from functools import lru_cache

from cudaenv.matrix import load_matrix
from cudaenv.resolver.model import Constraints, Host, TargetGpu
from cudaenv.resolver.resolve import resolve
from cudaenv.versions import parse_specifier

FRAMEWORK_KEYS = ("torch", "torchvision", "torchaudio", "tensorflow", "keras", "jax", "mxnet")


@lru_cache(maxsize=1)
def matrix():
    return load_matrix(overlays=[])


def spec(text: str | None):
    if text is None:
        return None
    from packaging.specifiers import SpecifierSet

    return SpecifierSet() if text == "any" else parse_specifier(text)


def target_gpu(name: str) -> TargetGpu:
    """A GPU by name, as --gpu makes it (the matrix's row: capability, host CPU, Jetson or not)."""
    from cudaenv.hosts.target import gpu_by_name

    return gpu_by_name(matrix(), name)


def constraints(**kw) -> Constraints:
    frameworks = tuple((k, spec(kw[k])) for k in FRAMEWORK_KEYS if k in kw)
    return Constraints(python=spec(kw.get("python")), frameworks=frameworks, cuda=spec(kw.get("cuda")),
                       cudnn=spec(kw.get("cudnn")), flavor=kw.get("flavor", "auto"), os=kw.get("os"))


def host(driver=None, gpus=()) -> Host:
    return Host(driver, tuple(target_gpu(g) for g in gpus))


def resolve_case(driver=None, gpus=(), **kw):
    return resolve(matrix(), constraints(**kw), host(driver, gpus))


def codes(resolution) -> list[str]:
    return [p.code for p in resolution.problems if not p.code.startswith("fix-")]
