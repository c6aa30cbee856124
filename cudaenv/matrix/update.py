"""``cudaenv matrix update``: compare the matrix with what PyPI published, per kind, as a diff.

Only fields that PyPI itself establishes are written — Python versions with published Linux
x86_64 wheels, first upload date, the ``nvidia-*`` pins and companion requirements from the wheel's
METADATA, a cuDNN build per CUDA major (``nvidia-cudnn-cuXX``), the torchvision releases whose
published requirement admits a torch release. Curated facts (CUDA variants and their index URLs,
SM lists, tested configurations) are left alone; a release new to the matrix gets a row with the
PyPI facts and a note saying what still needs a maintainer. Where PyPI cannot establish a fact at
all (a CUDA release's minimum driver, driver branches, cuDNN compute capabilities) the kind says
so in ``needs_source`` instead of guessing, and a release that cannot get a row without such a
fact (a new CUDA toolkit) is reported in ``skipped``. Files are edited with tomlkit, so comments
survive.
"""

from __future__ import annotations

import datetime
import difflib
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from packaging.version import Version
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
    "torch": Framework("torch", "torch.toml", "1.0.0", torch_facts, torch_new_row),
    "tensorflow": Framework("tensorflow", "tensorflow.toml", "1.0.0", tensorflow_facts, tensorflow_new_row),
}


@dataclass(frozen=True)
class UpdateResult:
    framework: str  # the kind: torch, tensorflow, jax, cuda, cudnn, driver
    path: Path
    old_text: str
    new_text: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    skipped: tuple[str, ...]  # new upstream releases that need curation before they can be added
    upstream: tuple[str, ...] = ()  # what PyPI published that the matrix lacks (added or skipped)
    needs_source: tuple[str, ...] = ()  # facts PyPI cannot establish: what is missing and where to read it

    @property
    def kind(self) -> str:
        return self.framework

    @property
    def behind(self) -> bool:
        """The matrix lacks something PyPI published: a diff to write or a release to curate."""
        return bool(self.diff or self.skipped)

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
    upstream = [f"{spec.package} {v}" for v in (*added, *skipped)]
    if name == "torch":
        changed += torchvision_ranges(releases, fetch, index, today, upstream)
    return UpdateResult(name, matrix_path, old_text, _spaced(tomlkit.dumps(doc)), tuple(added), tuple(changed),
                        tuple(skipped), upstream=tuple(upstream))


# --- torchvision: the companion PyPI pairs with each torch release --------------------------------

TORCHVISION_MINIMUM = "0.14.0"  # torchvision for torch 1.13, the oldest torch with a pinned companion on PyPI


def _torch_requirement(metadata: str) -> str | None:
    reqs = [r for r in pypi.requirements(metadata) if r.name == "torch"]
    return str(reqs[0].specifier) if reqs else None


def torchvision_ranges(releases: AoT, fetch: Fetch, index: str, today: str, upstream: list[str]) -> list[str]:
    """Fill ``torchvision`` (an exact ``torch==X`` pin) or ``torchvision_range`` for torch rows
    that have neither from the torchvision releases' own ``Requires-Dist: torch…``.

    Only torchvision releases uploaded on or after the torch release count: a torchvision wheel
    carries compiled operators built against the torch of its day, so an older torchvision whose
    ``torch>=X`` happens to admit a newer torch is not a published pairing.
    """
    from packaging.specifiers import SpecifierSet

    lacking = [row for row in releases if "torchvision" not in row and "torchvision_range" not in row]
    if not lacking:
        return []
    published = pypi.linux_wheels(pypi.project_json("torchvision", fetch, index), TORCHVISION_MINIMUM)
    floor = min((str(row.get("released", "")) for row in lacking), default="")
    candidates = {v: w for v, w in published.items() if pypi.first_upload(w) >= floor}
    with ThreadPoolExecutor(max_workers=8) as pool:
        specs = dict(zip(candidates, pool.map(lambda w: _torch_requirement(_metadata_of(w, fetch)), candidates.values())))
    changed = []
    for row in lacking:
        torch_version, released = str(row["version"]), str(row.get("released", ""))
        admits = [v for v, spec in specs.items()
                  if spec is not None and pypi.first_upload(candidates[v]) >= released
                  and SpecifierSet(spec).contains(torch_version, prereleases=True)]
        if not admits:
            continue
        exact = [v for v in admits if specs[v].replace(" ", "") == f"=={torch_version}"]
        if exact:
            _set(row, "torchvision", exact[-1])
            changed.append(f"{torch_version} (torchvision {exact[-1]}: pins torch=={torch_version})")
        else:
            ordered = sorted(admits, key=Version)
            spread = f"=={ordered[0]}" if len(ordered) == 1 else f">={ordered[0]},<={ordered[-1]}"
            _set(row, "torchvision_range", spread)
            changed.append(f"{torch_version} (torchvision_range {spread}: "
                           f"{', '.join(f'{v} requires torch{specs[v]}' for v in ordered)})")
        upstream.append(f"torchvision {', '.join(admits)} for torch {torch_version}")
        source = f"https://pypi.org/project/torchvision/#history (Requires-Dist of {', '.join(admits)}) ; read {today}"
        _set(row, "torchvision_source", source)
    return changed


# --- cuDNN: one row per release and CUDA-major build ----------------------------------------------

CUDNN_PACKAGES = {11: "nvidia-cudnn-cu11", 12: "nvidia-cudnn-cu12", 13: "nvidia-cudnn-cu13"}
CUDNN_MINIMUM = "9.0.0"  # older rows come from NVIDIA's support matrices, not from PyPI


def update_cudnn(matrix_path: Path, *, fetch: Fetch = pypi.http_fetch, index: str = "https://pypi.org",
                 today: str | None = None) -> UpdateResult:
    from packaging.specifiers import SpecifierSet

    today = today or datetime.date.today().isoformat()
    old_text = matrix_path.read_text(encoding="utf-8")
    doc = tomlkit.parse(old_text)
    releases: AoT = doc.setdefault("release", tomlkit.aot())
    have = [(str(r["version"]), SpecifierSet(str(r["cuda"]))) for r in releases]
    added, upstream, new_rows = [], [], []
    for major, package in CUDNN_PACKAGES.items():
        newest: dict[str, tuple[str, list[WheelFile]]] = {}
        for full, wheels in pypi.linux_wheels(pypi.project_json(package, fetch, index), CUDNN_MINIMUM).items():
            newest[".".join(full.split(".")[:3])] = (full, wheels)  # oldest first: the last build of x.y.z wins
        for xyz, (full, wheels) in newest.items():
            if any(v == xyz and spec.contains(f"{major}.0") for v, spec in have):
                continue
            uploaded = pypi.first_upload(wheels)
            new_rows.append((Version(xyz), major, {
                "version": xyz, "cuda": f">={major}.0,<{major + 1}",
                "source": f"https://pypi.org/project/{package}/{full}/ (uploaded {uploaded}) ; read {today}",
                "note": (f"added by `cudaenv matrix update`: no support matrix for this release could be read; cuda is "
                         f"the CUDA major of the published build ({package} {full}) and compute capabilities are left out"),
            }))
            upstream.append(f"{package} {full} ({uploaded})")
    for _version, major, row in sorted(new_rows, key=lambda item: (item[0], item[1])):
        table = tomlkit.table()
        for key, value in row.items():
            table[key] = value
        releases.append(table)
        added.append(f"{row['version']} (CUDA {major}.x)")
    unranged = [f"{r['version']} ({r['cuda']})" for r in releases if "min_compute_capability" not in r]
    needs = [f"compute capability range of {len(unranged)} cuDNN rows ({_few(unranged)}): NVIDIA's cuDNN support matrix "
             "for that release"] if unranged else []
    return UpdateResult("cudnn", matrix_path, old_text, _spaced(tomlkit.dumps(doc)), tuple(added), (), (),
                        upstream=tuple(upstream), needs_source=tuple(needs))


def _spaced(text: str) -> str:
    """A blank line before every appended ``[[release]]``, as the hand-written rows have."""
    return re.sub(r"(?<=[^\n])\n\[\[release\]\]\n", "\n\n[[release]]\n", text)


def _few(items: list[str], limit: int = 4) -> str:
    return ", ".join(items) if len(items) <= limit else ", ".join(items[:2]) + f", … {items[-1]}"


# --- CUDA toolkit releases: PyPI says a release exists, not what it needs -------------------------

CUDA_TOOLKIT = "cuda-toolkit"
CUDA_MINIMUM = "11.8.0"  # NVIDIA's cuda-toolkit metapackage starts here
CUDA_RUNTIMES = {"nvidia-cuda-runtime-cu12": "12.0.0", "nvidia-cuda-runtime": "13.0.0"}  # component wheels, x.y = toolkit x.y


def _pin(metadata: str, extra: str, name: str) -> str | None:
    reqs = [r for r in pypi.requirements(metadata, extra=extra) if r.name == name]
    return pypi.pinned_version(str(reqs[0].specifier)).rstrip(".*") if reqs else None


def update_cuda(matrix_path: Path, *, fetch: Fetch = pypi.http_fetch, index: str = "https://pypi.org",
                today: str | None = None) -> UpdateResult:
    """Never writes a row: a CUDA row needs the minimum driver (NVIDIA's release notes, Table 3) and the
    architectures ptxas accepts, which PyPI metadata does not state. New releases are reported with the
    component wheels a maintainer reads (``nvidia-cuda-nvcc`` for ptxas)."""
    text = matrix_path.read_text(encoding="utf-8")
    doc = tomlkit.parse(text)
    rows = list(doc.get("release", []))
    versions = {str(r["version"]) for r in rows}
    minors = {".".join(v.split(".")[:2]) for v in versions}
    skipped, upstream, needs = [], [], []
    toolkits = pypi.linux_wheels(pypi.project_json(CUDA_TOOLKIT, fetch, index), CUDA_MINIMUM, any_platform=True)
    for version, wheels in toolkits.items():
        if version in versions:
            continue
        metadata = pypi.wheel_metadata(wheels[0].url, fetch)
        runtime, nvcc = _pin(metadata, "cudart", "nvidia-cuda-runtime"), _pin(metadata, "nvcc", "nvidia-cuda-nvcc")
        uploaded = pypi.first_upload(wheels)
        upstream.append(f"{CUDA_TOOLKIT} {version} ({uploaded}" + (f"; cudart {runtime}" if runtime else "") + ")")
        skipped.append(version)
        needs.append(f"CUDA {version}: min_driver (NVIDIA's CUDA {'.'.join(version.split('.')[:2])} release notes, "
                     f"Table 3), compute capability range (ptxas --gpu-name of nvidia-cuda-nvcc {nvcc or '?'}), "
                     "forward_compat_branches (CUDA Compatibility guide)")
    for package, minimum in CUDA_RUNTIMES.items():
        seen: dict[str, str] = {}
        for version in pypi.linux_wheels(pypi.project_json(package, fetch, index), minimum):
            seen.setdefault(".".join(version.split(".")[:2]), version)
        for xy, version in seen.items():
            if xy not in minors and not any(v.startswith(xy + ".") for v in skipped):
                upstream.append(f"{package} {version} (CUDA {xy})")
                skipped.append(f"{xy} (only {package} {version}: no cuda-toolkit release names the toolkit version)")
    no_driver = [str(r["version"]) for r in rows if "min_driver" not in r]
    if no_driver:
        needs.append(f"min_driver of {len(no_driver)} CUDA rows ({_few(no_driver)}): NVIDIA's release notes, Table 3 "
                     "(until then the driver branch table decides)")
    return UpdateResult("cuda", matrix_path, text, text, (), (), tuple(skipped), upstream=tuple(upstream),
                        needs_source=tuple(needs))


# --- driver branches: nothing on PyPI; say what would need checking ------------------------------

def update_drivers(matrix_path: Path, cuda_path: Path, *, new_cuda: tuple[str, ...] = ()) -> UpdateResult:
    """PyPI publishes no driver data. What can be checked offline is reported: every CUDA x.y the matrix
    (or PyPI, ``new_cuda``) knows has a branch that runs it natively."""
    text = matrix_path.read_text(encoding="utf-8")
    branches = list(tomlkit.parse(text).get("branch", []))
    cuda_rows = tomlkit.parse(cuda_path.read_text(encoding="utf-8")).get("release", []) if cuda_path.is_file() else []
    minors = {".".join(str(r["version"]).split(".")[:2]) for r in cuda_rows}
    minors |= {".".join(v.split()[0].split(".")[:2]) for v in new_cuda if v[:1].isdigit()}
    newest = max((int(b["branch"]) for b in branches), default=0)
    needs = [f"driver branches newer than R{newest}, their max CUDA, architectures and end of life: NVIDIA's driver "
             "release notes and data-center support matrix (PyPI publishes no driver data)"]
    for xy in sorted(minors, key=numeric_key):
        if not any(numeric_key(str(b["max_cuda"])) >= numeric_key(xy) for b in branches):
            needs.append(f"CUDA {xy}: no branch in {matrix_path.name} runs it natively: the branch that first does "
                         "(NVIDIA's release notes, Table 3, or the driver's compat package)")
    untyped = [f"R{b['branch']}" for b in branches if "type" not in b]
    if untyped:
        needs.append(f"branch type of {len(untyped)} branches ({_few(untyped)}): NVIDIA's data-center driver documentation")
    return UpdateResult("driver", matrix_path, text, text, (), (), (), needs_source=tuple(needs))


# --- JAX: jax, jaxlib and the CUDA plugins ---------------------------------------------------------

JAX_MINIMUM = "0.2.0"
JAX_PLUGINS = {12: "jax-cuda12-plugin", 13: "jax-cuda13-plugin"}


def update_jax(matrix_path: Path, *, fetch: Fetch = pypi.http_fetch, index: str = "https://pypi.org",
               today: str | None = None) -> UpdateResult:
    """Python versions come from jaxlib's manylinux wheels (jax itself is ``py3-none-any``); a release
    new to the matrix gets a row without variants, since each variant's CUDA/cuDNN range comes from
    JAX's install docs at the tag. A CUDA plugin published for a release whose row has no variant
    using it is reported for curation."""
    today = today or datetime.date.today().isoformat()
    old_text = matrix_path.read_text(encoding="utf-8")
    doc = tomlkit.parse(old_text)
    releases: AoT = doc.setdefault("release", tomlkit.aot())
    by_version = {str(row["version"]): row for row in releases}
    jax = pypi.linux_wheels(pypi.project_json("jax", fetch, index), JAX_MINIMUM, any_platform=True)
    jaxlib = pypi.linux_wheels(pypi.project_json("jaxlib", fetch, index), JAX_MINIMUM)
    plugins = {major: set(pypi.linux_wheels(pypi.project_json(name, fetch, index), JAX_MINIMUM))
               for major, name in JAX_PLUGINS.items()}
    added, changed, skipped, upstream = [], [], [], []
    for version, wheels in jax.items():
        row = by_version.get(version)
        published_plugins = [JAX_PLUGINS[m] for m in JAX_PLUGINS if version in plugins[m]]
        if row is None:
            upstream.append(f"jax {version} ({pypi.first_upload(wheels)})")
            if version not in jaxlib:
                skipped.append(f"{version} (no manylinux x86_64 jaxlib {version} on PyPI)")
                continue
            table = tomlkit.table()
            for key, value in {
                "version": version, "jaxlib": version, "python": pypi.python_versions(jaxlib[version]),
                "released": pypi.first_upload(wheels),
                "source": f"https://pypi.org/project/jax/{version}/ ; https://pypi.org/project/jaxlib/{version}/#files ; read {today}",
                "note": ("added by `cudaenv matrix update`: CUDA variants (extras, CUDA/cuDNN ranges from the install "
                         f"docs at the tag, SM lists) still need a maintainer; on PyPI: {', '.join(published_plugins) or 'no CUDA plugin'}"),
            }.items():
                table[key] = value
            releases.append(table)
            added.append(version)
            continue
        lib = str(row.get("jaxlib", version))
        if lib in jaxlib:
            python = pypi.python_versions(jaxlib[lib])
            if python and _set(row, "python", python):
                changed.append(f"{version} (python)")
        packages = " ".join(p for variant in row.get("variant", []) for p in variant.get("packages", []))
        for name in published_plugins:
            if name not in packages:
                skipped.append(f"{version} ({name} {version} on PyPI, no variant uses it)")
                upstream.append(f"{name} {version}")
    return UpdateResult("jax", matrix_path, old_text, _spaced(tomlkit.dumps(doc)), tuple(added), tuple(changed), tuple(skipped),
                        upstream=tuple(upstream))


# --- every kind --------------------------------------------------------------------------------------

KIND_FILES = {"torch": "torch.toml", "tensorflow": "tensorflow.toml", "jax": "jax.toml", "cuda": "cuda.toml",
              "cudnn": "cudnn.toml", "driver": "drivers.toml"}


def update_kind(kind: str, directory: Path, *, fetch: Fetch | None = None, index: str = "https://pypi.org",
                today: str | None = None, new_cuda: tuple[str, ...] = ()) -> UpdateResult:
    """One kind's comparison; ``new_cuda`` (the cuda kind's ``skipped``) feeds the driver check."""
    fetch = pypi.index_only(fetch or pypi.http_fetch, index)  # looked up now, so a recorded PyPI can stand in
    path = directory / KIND_FILES[kind]
    if kind in FRAMEWORKS:
        return update_framework(kind, path, fetch=fetch, index=index, today=today)
    if kind == "jax":
        return update_jax(path, fetch=fetch, index=index, today=today)
    if kind == "cuda":
        return update_cuda(path, fetch=fetch, index=index, today=today)
    if kind == "cudnn":
        return update_cudnn(path, fetch=fetch, index=index, today=today)
    return update_drivers(path, directory / KIND_FILES["cuda"], new_cuda=new_cuda)


def check_updated(directory: Path, results: list[UpdateResult]) -> None:
    """Load the matrix exactly as ``load_matrix`` would with every new text in place, before any
    file is written: a MatrixError (naming file, row and field) when it would not load, so an
    update is written whole or not at all. A directory holding every matrix file is loaded as the
    shipped matrix; one holding some of them as an overlay over the shipped matrix."""
    import shutil
    import tempfile

    from cudaenv.matrix import load_matrix
    from cudaenv.matrix.load import FILES

    with tempfile.TemporaryDirectory(prefix="cudaenv-matrix-update-") as scratch:
        copy = Path(scratch)
        for path in sorted(directory.glob("*.toml")):
            shutil.copyfile(path, copy / path.name)
        for result in results:
            (copy / result.path.name).write_text(result.new_text, encoding="utf-8")
        if set(FILES) <= {p.name for p in copy.glob("*.toml")}:
            load_matrix(copy, overlays=[], use_cache=False)
        else:
            load_matrix(overlays=[copy], use_cache=False)
