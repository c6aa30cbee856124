"""The compatibility matrix: sourced facts about drivers, CUDA, cuDNN, GPUs and framework builds.

``load_matrix()`` reads the shipped ``matrix/*.toml`` and then any overlay directories
(``CUDAENV_MATRIX_PATH``, else ``~/.config/cudaenv/matrix``): an overlay row with the same key as a
shipped row replaces it, a new key adds a row. Everything goes through the same validation, and
cross-references are checked on the merged result, so an overlay cannot break the resolver.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from cudaenv.errors import MatrixError
from cudaenv.versions import major_minor, numeric_key, specifier_contains

if TYPE_CHECKING:  # rows are built by the loader or the cache; this module only names their types
    from pathlib import Path

    from cudaenv.matrix import model

__all__ = ["Matrix", "MatrixError", "load_matrix", "overlay_dirs"]


def overlay_dirs() -> list[Path]:
    """User overlay directories, in the order they apply (later ones win)."""
    from pathlib import Path

    return [Path(p) for p in _overlay_paths()]


def _overlay_paths() -> list[str]:
    explicit = os.environ.get("CUDAENV_MATRIX_PATH")
    if explicit is not None:
        return [os.path.expanduser(p) for p in explicit.split(os.pathsep) if p]
    default = _default_overlay()
    return [default] if os.path.isdir(default) else []


def _default_overlay() -> str:
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config_home, "cudaenv", "matrix")


@dataclass(frozen=True)
class Matrix:
    # Rows default through a factory, not a class attribute, so that a matrix read from the cache
    # can leave a field undecoded until first use (``__getattr__`` below, ``cudaenv.matrix.cache``).
    cuda_majors: tuple[model.CudaMajor, ...] = field(default_factory=tuple)
    cuda_releases: tuple[model.CudaRelease, ...] = field(default_factory=tuple)
    driver_branches: tuple[model.DriverBranch, ...] = field(default_factory=tuple)
    architectures: tuple[model.Architecture, ...] = field(default_factory=tuple)
    gpus: tuple[model.Gpu, ...] = field(default_factory=tuple)
    cudnn: tuple[model.CudnnRelease, ...] = field(default_factory=tuple)
    torch: tuple[model.TorchRelease, ...] = field(default_factory=tuple)
    tensorflow: tuple[model.TensorflowRelease, ...] = field(default_factory=tuple)
    jax: tuple[model.JaxRelease, ...] = field(default_factory=tuple)
    mxnet: tuple[model.MxnetRelease, ...] = field(default_factory=tuple)
    images: tuple[model.BaseImage, ...] = field(default_factory=tuple)
    os_releases: tuple[model.OsRelease, ...] = field(default_factory=tuple)
    files: tuple[str, ...] = ()  # every file that contributed, shipped first
    revision: str = ""  # content hash of those files: what a lock records
    origins: dict = field(default_factory=dict, compare=False, repr=False)  # (attribute, key) -> file

    def __getattr__(self, name: str):
        """A field the cache has not decoded yet: decoded now, once (only called for names that
        are not set; a matrix built by ``__init__`` has every field set)."""
        pending = self.__dict__.get("_pending")
        if not pending or name not in pending:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = pending.pop(name)()
        self.__dict__[name] = value
        return value

    @cached_property
    def memo(self) -> dict:
        """Derived views (indexes the resolver builds) computed once per loaded matrix."""
        return {}

    def released_by(self, date: str | None) -> "Matrix":
        """The matrix as the indexes were on ``date`` (``[lock] exclude_newer``, YYYY-MM-DD or an
        RFC 3339 time): framework releases published after it are left out, as uv leaves out their
        files, so the resolver never picks a release the lock cannot install. A release without a
        recorded date stays. The revision is the matrix's own: a lock stays current."""
        if not date:
            return self
        day = date[:10]
        on_the_day = len(date.strip()) > 10  # a bare date is its midnight (uv): that day's uploads are after it
        key = f"released_by {day} {on_the_day}"
        if key not in self.memo:  # one filtered matrix per date, with its own memo of builds
            def published(release) -> str:  # TensorFlow and MXNet rows record no date yet: always kept
                return getattr(release, "released", None) or ""

            kept = {name: tuple(r for r in getattr(self, name)
                                if not published(r) or published(r)[:10] < day or (on_the_day and published(r)[:10] == day))
                    for name in ("torch", "tensorflow", "jax", "mxnet")}
            if all(len(kept[name]) == len(getattr(self, name)) for name in kept):
                self.memo[key] = self
            else:
                from dataclasses import replace

                self.memo[key] = replace(self, **kept)
                self.memo[key].memo[key] = self.memo[key]
        return self.memo[key]

    # --- CUDA ----------------------------------------------------------------------------------

    @cached_property
    def cuda_minors(self) -> tuple[str, ...]:
        """Every CUDA x.y with a release, ascending."""
        return tuple(sorted({r.xy for r in self.cuda_releases}, key=numeric_key))

    @cached_property
    def _releases_by_xy(self) -> dict[str, tuple[model.CudaRelease, ...]]:
        index: dict[str, list[model.CudaRelease]] = {}
        for release in self.cuda_releases:
            index.setdefault(release.xy, []).append(release)
        return {xy: tuple(rows) for xy, rows in index.items()}

    def cuda_releases_for(self, xy: str) -> tuple[model.CudaRelease, ...]:
        return self._releases_by_xy.get(xy, ())

    def cuda_release(self, version: str) -> model.CudaRelease | None:
        return next((r for r in self.cuda_releases if r.version == version), None)

    def cuda_major(self, major: int) -> model.CudaMajor | None:
        return next((m for m in self.cuda_majors if m.major == major), None)

    # --- GPUs ----------------------------------------------------------------------------------

    @cached_property
    def _gpu_index(self) -> dict[str, model.Gpu]:
        from cudaenv.matrix.gpus import normalize_gpu_name

        index: dict[str, model.Gpu] = {}
        for gpu in self.gpus:
            for name in (gpu.name, *gpu.aliases):
                index.setdefault(normalize_gpu_name(name), gpu)
        return index

    def find_gpu(self, name: str) -> model.Gpu | None:
        """A GPU by canonical name, alias or the name nvidia-smi reports, case-insensitively."""
        from cudaenv.matrix.gpus import match_gpu

        return match_gpu(name, self._gpu_index)

    def jetson_only(self, compute_capability: str) -> model.Gpu | None:
        """A Jetson-on-Jetson-Linux row (``l4t``) when every GPU with this compute capability is one
        (8.7 is Orin's alone, 7.2 Xavier's, 6.2 TX2's, 5.3 Nano's): a GPU known only by that
        capability is such a module, whatever its name or the CPU said beside it."""
        rows = [g for g in self.gpus if g.compute_capability == compute_capability]
        return rows[0] if rows and all(g.l4t for g in rows) else None

    def architecture_of(self, compute_capability: str) -> model.Architecture | None:
        return next((a for a in self.architectures if compute_capability in a.compute_capabilities), None)

    def driver_branch(self, branch: int) -> model.DriverBranch | None:
        return next((b for b in self.driver_branches if b.branch == branch), None)

    # --- cuDNN ---------------------------------------------------------------------------------

    def cudnn_builds(self, version_prefix: str) -> tuple[model.CudnnRelease, ...]:
        """cuDNN rows whose version starts with ``version_prefix`` ("8.9" or "9.1.0.70" -> 9.1.0)."""
        wanted = numeric_key(version_prefix)
        return tuple(
            r for r in self.cudnn
            if numeric_key(r.version)[: len(wanted)] == wanted[: len(numeric_key(r.version))]
        )

    def cudnn_supports_cuda(self, version_prefix: str, cuda_xy: str) -> bool | None:
        """Whether some build of that cuDNN supports CUDA x.y; None when the cuDNN is unknown."""
        builds = self.cudnn_builds(version_prefix)
        if not builds:
            return None
        return any(specifier_contains(b.cuda, cuda_xy) for b in builds)

    # --- frameworks and images -----------------------------------------------------------------

    @cached_property
    def _images_by_xy(self) -> dict[str, tuple[model.BaseImage, ...]]:
        index: dict[str, list[model.BaseImage]] = {}
        for image in self.images:
            if not image.superseded:  # its tags carry a later release's contents now: no image to pull
                index.setdefault(major_minor(image.cuda), []).append(image)
        return {xy: tuple(rows) for xy, rows in index.items()}

    def images_for(self, cuda_xy: str) -> tuple[model.BaseImage, ...]:
        """The image rows of that CUDA x.y a base can be (a superseded row is history only)."""
        return self._images_by_xy.get(cuda_xy, ())


def _sort_key(attribute: str):
    from packaging.version import Version

    by_version = {
        "cuda_releases": lambda r: numeric_key(r.version),
        "cudnn": lambda r: (numeric_key(r.version), str(r.cuda)),
        "torch": lambda r: Version(r.version),
        "tensorflow": lambda r: Version(r.version),
        "jax": lambda r: Version(r.version),
        "mxnet": lambda r: Version(r.version),
        "images": lambda r: numeric_key(r.cuda),
        "driver_branches": lambda r: r.branch,
        "cuda_majors": lambda r: r.major,
    }
    return by_version.get(attribute)


def _matrix_files(directory: Path) -> list[Path]:
    files = sorted(directory.glob("*.toml"))
    for path in files:
        if not path.is_file():  # a dangling link or a directory: the user meant a file here
            from cudaenv.errors import MatrixError

            raise MatrixError(f"{path}: cannot read this matrix file (not a regular file, or a link to nothing)")
    return files


def load_matrix(shipped: Path | None = None, overlays: list[Path] | None = None, *, use_cache: bool = True) -> Matrix:
    """Load, merge and validate the matrix (shipped directory first, then overlays in order).

    A validated matrix is cached per user (``cudaenv.matrix.cache``), keyed on every file's size
    and modification time, with its framework-build view precomputed.
    """
    from cudaenv.matrix import cache

    if shipped is None:
        from cudaenv.core.resources import data_path

        shipped = data_path("matrix")
    overlays = _overlay_paths() if overlays is None else overlays
    key = cache.cache_key([shipped, *overlays]) if use_cache and cache.enabled() else None
    if key is not None:
        cached = cache.read(key)
        if isinstance(cached, Matrix):
            return cached
    from pathlib import Path

    matrix = _load_uncached(Path(shipped), [Path(p) for p in overlays])
    if key is not None:
        from cudaenv.matrix.builds import every_build

        every_build(matrix)  # computed once, stored with the matrix
        cache.write(key, matrix)
    return matrix


def _load_uncached(shipped: Path, overlays: list[Path]) -> Matrix:
    import hashlib

    from cudaenv.matrix.load import FILES, load_file  # TOML parsing: only when the cache misses

    rows: dict[str, dict] = {}  # attribute -> {key: row}
    origins: dict = {}
    files: list[str] = []
    digest = hashlib.sha256()
    for index, directory in enumerate([shipped, *overlays]):
        if index > 0 and not directory.is_dir():
            raise MatrixError(f"{directory}: matrix overlay directory does not exist")
        paths = _matrix_files(directory)
        if index == 0:
            missing = sorted(set(FILES) - {p.name for p in paths})
            if missing:
                raise MatrixError(f"{directory}: shipped matrix is missing {', '.join(missing)}")
        for path in paths:
            data = path.read_bytes()
            digest.update(path.name.encode() + b"\0" + data + b"\0")
            files.append(str(path))
            loaded = load_file(path, data)
            for attribute, file_rows in loaded.items():
                spec = next(s for s in FILES[path.name].values() if s.attribute == attribute)
                bucket = rows.setdefault(attribute, {})
                for row in file_rows:
                    key = spec.key(row)
                    bucket[key] = row
                    origins[(attribute, key)] = str(path)
    merged = {}
    for attribute, bucket in rows.items():
        values = list(bucket.values())
        key = _sort_key(attribute)
        merged[attribute] = tuple(sorted(values, key=key) if key else values)
    matrix = Matrix(**merged, files=tuple(files), revision=digest.hexdigest()[:16], origins=origins)
    from cudaenv.matrix.validate import check_cross_references

    check_cross_references(matrix)
    return matrix
