"""``cudaenv matrix update``: refresh the PyPI-derived fields of framework rows, as a diff.

Only fields that PyPI itself establishes are written — Python versions with published Linux
x86_64 wheels, first upload date, the ``nvidia-*`` pins and companion requirements from the wheel's
METADATA. Curated facts (CUDA variants and their index URLs, SM lists, tested configurations)
are left alone; a release new to the matrix gets a row with the PyPI facts and a note saying what
still needs a maintainer. The file is edited in place with tomlkit, so comments survive.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from tomlkit.items import AoT, Table

from cudaenv.matrix import pypi
from cudaenv.matrix.pypi import Fetch, WheelFile
from cudaenv.versions import numeric_key


@dataclass(frozen=True)
class Framework:
    """How one framework's rows are refreshed from PyPI."""

    package: str  # PyPI project
    file: str  # matrix file
    minimum: str  # oldest release the matrix covers
    facts: Callable[[str, list[WheelFile], Fetch, str], dict]
    new_row: Callable[[str, dict, str], dict | None]  # None: cannot add without curation


def _source(package: str, version: str, today: str) -> str:
    return f"https://pypi.org/project/{package}/{version}/#files (Linux x86_64 wheel tags and METADATA) ; read {today}"


def _metadata_of(wheels: list[WheelFile], fetch: Fetch) -> str:
    newest = max(wheels, key=lambda w: numeric_key(w.python or "0.0"))
    return pypi.wheel_metadata(newest.url, fetch)


def torch_facts(version: str, wheels: list[WheelFile], fetch: Fetch, today: str) -> dict:
    pins = pypi.nvidia_pins(pypi.requirements(_metadata_of(wheels, fetch)))
    facts = {"python": pypi.python_versions(wheels), "released": pypi.first_upload(wheels),
             "pypi_source": _source("torch", version, today)}
    if pins:
        facts["pypi_requires"] = pins
        cuda = pypi.cuda_of_pins(pins)
        if cuda:
            facts["pypi_cuda"] = cuda
    return facts


def torch_new_row(version: str, facts: dict, today: str) -> dict:
    row = {"version": version, **{k: v for k, v in facts.items() if k != "pypi_requires"}}
    row["source"] = _source("torch", version, today)
    row["note"] = ("added by `cudaenv matrix update`: CUDA variants (index URLs, cuDNN, SM lists) and "
                   "torchvision/torchaudio still need a maintainer")
    if "pypi_requires" in facts:
        row["pypi_requires"] = facts["pypi_requires"]
    return row


def tensorflow_facts(version: str, wheels: list[WheelFile], fetch: Fetch, today: str) -> dict:
    metadata = _metadata_of(wheels, fetch)
    facts: dict = {"python": pypi.python_versions(wheels), "pypi_source": _source("tensorflow", version, today)}
    keras = [r for r in pypi.requirements(metadata) if r.name == "keras"]
    if keras and str(keras[0].specifier):
        facts["keras"] = str(keras[0].specifier)
    pins = pypi.nvidia_pins(pypi.requirements(metadata, extra="and-cuda"))
    if pins:
        facts["and_cuda"] = pins
    return facts


def tensorflow_new_row(version: str, facts: dict, today: str) -> dict | None:
    pins = facts.get("and_cuda") or {}
    cuda = pypi.cuda_of_pins(pins)
    cudnn = next((pypi.pinned_version(s) for n, s in pins.items() if n.startswith("nvidia-cudnn")), None)
    if not cuda or not cudnn:
        return None  # CUDA and cuDNN must come from TensorFlow's tested configurations: curate by hand
    row = {"version": version, **{k: v for k, v in facts.items() if k != "and_cuda"}}
    row.update(cuda=cuda, cudnn=".".join(cudnn.split(".")[:2]), source=_source("tensorflow", version, today),
               note="added by `cudaenv matrix update`: cuda/cudnn from the and-cuda pins; compute capabilities not curated yet")
    row["and_cuda"] = pins
    return row


FRAMEWORKS: dict[str, Framework] = {
    "torch": Framework("torch", "torch.toml", "1.12.0", torch_facts, torch_new_row),
    "tensorflow": Framework("tensorflow", "tensorflow.toml", "2.4.0", tensorflow_facts, tensorflow_new_row),
}


@dataclass(frozen=True)
class UpdateResult:
    framework: str
    path: Path
    old_text: str
    new_text: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    skipped: tuple[str, ...]  # new releases that need curation before they can be added

    @property
    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.old_text.splitlines(keepends=True), self.new_text.splitlines(keepends=True),
            fromfile=f"a/{self.path.name}", tofile=f"b/{self.path.name}",
        ))


def _same(old, new) -> bool:
    """Equal as data: specifiers compare as sets (``<2.7,>=2.6.0`` is ``>=2.6.0,<2.7``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, str) and isinstance(new, str) and old != new:
        from cudaenv.versions import parse_specifier

        a, b = parse_specifier(old), parse_specifier(new)
        return a is not None and a == b
    return old == new


def _set(table: Table, key: str, value) -> bool:
    """Set a field if it differs; returns whether it changed (source dates alone do not count)."""
    current = table.get(key)
    plain = current.unwrap() if hasattr(current, "unwrap") else current
    if plain is not None and _same(plain, value):
        return False
    if isinstance(value, dict):
        inline = tomlkit.table()
        for k, v in value.items():
            inline[k] = v
        table[key] = inline
    else:
        table[key] = value
    return True


def _reread(current, fresh: str, today: str) -> str:
    """Keep a curated source text and move its read date; fall back to the generated one."""
    text = str(current) if current is not None else ""
    if " ; read " in text:
        return text.rsplit(" ; read ", 1)[0] + f" ; read {today}"
    return fresh


def update_framework(name: str, matrix_path: Path, *, fetch: Fetch = pypi.http_fetch,
                     index: str = "https://pypi.org", today: str | None = None,
                     progress: Callable[[str], None] | None = None) -> UpdateResult:
    spec = FRAMEWORKS[name]
    today = today or datetime.date.today().isoformat()
    old_text = matrix_path.read_text(encoding="utf-8")
    doc = tomlkit.parse(old_text)
    releases: AoT = doc.setdefault("release", tomlkit.aot())
    by_version = {str(row["version"]): row for row in releases}
    published = pypi.linux_wheels(pypi.project_json(spec.package, fetch, index), spec.minimum)
    added, changed, skipped = [], [], []

    def facts_of(item: tuple[str, list[WheelFile]]) -> dict:
        if progress:
            progress(f"{spec.package} {item[0]}")
        return spec.facts(item[0], item[1], fetch, today)

    with ThreadPoolExecutor(max_workers=8) as pool:  # one METADATA read per release, network-bound
        all_facts = list(pool.map(facts_of, published.items()))
    for version, facts in zip(published, all_facts):
        row = by_version.get(version)
        if row is None:
            new = spec.new_row(version, facts, today)
            if new is None:
                skipped.append(version)
                continue
            table = tomlkit.table()
            for key, value in new.items():
                _set(table, key, value)
            releases.append(table)
            added.append(version)
            continue
        differs = [key for key, value in facts.items() if key != "pypi_source" and _set(row, key, value)]
        if differs:
            _set(row, "pypi_source", _reread(row.get("pypi_source"), facts["pypi_source"], today))
            changed.append(f"{version} ({', '.join(differs)})")
    return UpdateResult(name, matrix_path, old_text, tomlkit.dumps(doc), tuple(added), tuple(changed), tuple(skipped))
