"""Version vocabulary shared by the matrix, the resolver and the CLI.

Three kinds of numbers appear everywhere and must never be confused:

* dotted numerics — NVIDIA driver versions (``535.104.05``), CUDA releases (``12.4.1``), compute
  capabilities (``8.6``), Python minors (``3.11``). They compare component by component as
  integers and keep their original spelling for display (``535.104.05`` is not ``535.104.5``).
* framework versions (``2.6.0``, ``2.15.0.post1``) — PEP 440, through ``packaging``.
* specifiers (``>=12.1,<13``) — PEP 440 ``SpecifierSet`` applied to either kind.
"""

from __future__ import annotations

import re
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

# ASCII digits only (`\d` admits "²" and "٥", which int() or latin-1 then refuse), and bounded:
# a component of thousands of digits is bad input, not a version (int() refuses > 4300 digits).
_NUMERIC = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,12}){0,7}$")
MAX_VERSION_TEXT = 200


def is_numeric(text: str, parts: int | None = None, min_parts: int = 1) -> bool:
    if not isinstance(text, str) or not _NUMERIC.fullmatch(text):
        return False
    count = text.count(".") + 1
    return count >= min_parts and (parts is None or count == parts)


@lru_cache(maxsize=8192)
def numeric_key(text: str) -> tuple[int, ...]:
    """``"535.104.05"`` -> ``(535, 104, 5)``: the ordering key of a dotted numeric version.
    Cached: the resolver compares the same few hundred matrix versions thousands of times."""
    return tuple(int(part) for part in text.split("."))


# An NVIDIA Linux driver version as nvidia-smi prints it: a branch of three or four digits, then
# one or two numeric parts (418.39, 535.104.05, 580.65.06). "1.0" or "535.104.05.1" is a typo.
_DRIVER = re.compile(r"^[1-9][0-9]{2,3}\.[0-9]{1,3}(\.[0-9]{1,3})?$")


def is_driver_version(text: str) -> bool:
    return isinstance(text, str) and _DRIVER.fullmatch(text) is not None


def major_minor(text: str) -> str:
    """``"12.4.1"`` -> ``"12.4"``."""
    parts = text.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else f"{parts[0]}.0"


def driver_branch(driver: str) -> int:
    """The driver branch (major number): ``"535.104.05"`` -> ``535``."""
    return numeric_key(driver)[0]


def parse_version(text: str) -> Version | None:
    if not isinstance(text, str) or len(text) > MAX_VERSION_TEXT or not text.isascii():
        return None
    try:
        return Version(text)
    except (InvalidVersion, TypeError, ValueError):  # ValueError: int() of a huge component
        return None


# what a user may write for each kind of constraint, for error messages: a bare version or a range
SPECIFIER_EXAMPLES = {
    "python": ('3.11', '>=3.10,<3.13'),
    "cuda": ('12.4', '>=12.1,<13'),
    "version": ('12.4', '>=12.1,<13'),  # [cuda] version
    "cudnn": ('9', '>=8.9,<10'),
    "tensorflow": ('2.15.1', '>=2.15,<2.17'),
    "keras": ('3.5.0', '>=3'),
    "jax": ('0.4.30', '>=0.4.30,<0.5'),
    "mxnet": ('1.9.1', '>=1.8'),
    "torchvision": ('0.19.1', '>=0.19'),
    "torchaudio": ('2.4.1', '>=2.4'),
}


def specifier_example(key: str) -> str:
    """``"a version such as 3.11 or a PEP 440 specifier such as '>=3.10,<3.13'"`` for ``key``
    (frameworks: torch-like versions)."""
    bare, spec = SPECIFIER_EXAMPLES.get(key.lstrip("-").rsplit(".", 1)[-1], ("2.6.0", ">=2.4,<2.7"))
    return f"a version such as {bare} or a PEP 440 specifier such as '{spec}'"


def parse_specifier(text: str) -> SpecifierSet | None:
    """A PEP 440 specifier; a bare version (``"2.6"``, ``"2.6.0"``) means ``==`` that version,
    and a bare major (``"9"``) the whole series (``==9.*``): ``--cudnn 9`` means any cuDNN 9."""
    if not isinstance(text, str) or len(text) > MAX_VERSION_TEXT or not text.isascii():
        return None
    text = text.strip()
    if text and text.isdigit():
        text = f"=={text}.*"
    elif text and (text[0].isdigit()):
        text = f"=={text}"
    try:
        spec = SpecifierSet(text)
        for item in spec:  # make a huge number fail here, not later inside a comparison
            if not item.version.endswith(".*"):
                Version(item.version)
        return spec
    except (InvalidSpecifier, InvalidVersion, TypeError, ValueError):
        return None


def specifier_contains(spec: SpecifierSet, version: str) -> bool:
    """Whether ``version`` satisfies ``spec``, pre-releases allowed (``"12.4"`` in ``>=12.1``)."""
    return spec.contains(version, prereleases=True)


def contains_at_clause_precision(spec: SpecifierSet, version: str) -> bool:
    """Whether ``version`` satisfies every clause of ``spec``, each compared at its own precision:
    ``==9.5`` and ``>=8.9`` name a series (9.5.1.17 is in ``==9.5``; 8.9.6.50 is not ``>8.9``),
    ``==8.9.6`` a release of it, ``<8.9.6.50`` or ``!=8.9.6.50`` one build. How cuDNN versions are
    asked for: a plain PEP 440 comparison would put 8.9.6.50 outside ``==8.9`` and, compared by
    major.minor only, inside ``!=8.9.6.50``."""
    release = Version(version).release
    for clause in spec:
        if clause.version.endswith(".*"):
            ok = clause.contains(version, prereleases=True)
        else:
            precision = len(Version(clause.version).release)
            ok = clause.contains(".".join(str(part) for part in release[:precision]), prereleases=True)
        if not ok:
            return False
    return True


def split_local_build(text: str) -> tuple[str, str | None]:
    """``"==2.0.1+cu118"`` -> (``"==2.0.1"``, ``"11.8"``): a pin copied from PyTorch's install page
    names the build variant in its local version; it pins the version and that CUDA. Other text
    comes back unchanged with None."""
    # cu92 .. cu132, in any case (PEP 440 local labels are case-insensitive): torch 1.x had cu90 and cu92 builds
    match = re.fullmatch(r"\s*(==)?\s*([0-9][0-9A-Za-z.!]*)\+cu([0-9]{1,2})([0-9])\s*", text or "", re.IGNORECASE)
    if not match:
        return text, None
    return f"=={match.group(2)}", f"{int(match.group(3))}.{match.group(4)}"


# PEP 508 marker variables of a Linux CPython image (x86_64 unless the target's platform is given):
# the one environment init, the lock, the matrix reader and the resolver evaluate markers in
LINUX_X86_64 = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
                "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def marker_holds(marker, python: str, machine: str = "x86_64") -> bool:
    """The marker on the image's platform for CPython ``python``: X.Y.0, as uv's --python-version
    reads it (so init and the lock agree); nothing is taken from the machine cudaenv runs on."""
    env = dict(LINUX_X86_64, platform_machine=machine, python_version=python, python_full_version=f"{python}.0",
               implementation_version=f"{python}.0", platform_release="", platform_version="")
    try:
        return marker.evaluate(env)
    except Exception:  # noqa: BLE001 - an undefined comparison is no match, as in pip
        return False
