"""``cudaenv matrix``: look at the compatibility data the resolver decides from."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from cudaenv.cli.output import emit_json, json_option, short_list, table
from cudaenv.errors import UserError
from cudaenv.matrix import Matrix, load_matrix
from cudaenv.matrix.model import row_as_dict
from cudaenv.versions import is_driver_version, is_numeric, major_minor, numeric_key


@dataclass(frozen=True)
class Kind:
    attribute: str
    key: Callable[[Any], str]  # what `show` matches and listings are keyed by
    headers: tuple[str, ...]
    cells: Callable[[Any], tuple]


def _variants(release) -> str:
    return short_list([getattr(v, "tag", None) or getattr(v, "extra", None) or getattr(v, "package", "") for v in release.variants], 8)


def _py(values) -> str:
    values = sorted(values, key=numeric_key)
    return f"{values[0]}–{values[-1]}" if len(values) > 1 else (values[0] if values else "-")


KINDS: dict[str, Kind] = {
    "cuda": Kind("cuda_releases", lambda r: r.version, ("version", "released", "min driver", "compute capability", "forward compat"),
                 lambda r: (r.version, r.released, r.min_driver, f"{r.min_compute_capability}–{r.max_compute_capability}",
                            short_list(r.forward_compat_branches))),
    "driver": Kind("driver_branches", lambda r: str(r.branch), ("branch", "type", "max CUDA", "architectures", "EOL"),
                   lambda r: (f"R{r.branch}", r.type, r.max_cuda, ", ".join(r.architectures), r.eol)),
    "gpu": Kind("gpus", lambda r: r.name, ("name", "compute capability", "architecture", "data center"),
                lambda r: (r.name, r.compute_capability, r.architecture, "yes" if r.datacenter else "no")),
    "architecture": Kind("architectures", lambda r: r.name, ("name", "compute capabilities"),
                         lambda r: (r.name, ", ".join(r.compute_capabilities))),
    "cudnn": Kind("cudnn", lambda r: r.version, ("version", "CUDA", "compute capability"),
                  lambda r: (r.version, str(r.cuda), f"{r.min_compute_capability or '?'}–{r.max_compute_capability or '?'}")),
    "torch": Kind("torch", lambda r: r.version, ("version", "python", "CUDA builds", "PyPI wheel", "torchvision", "torchaudio"),
                  lambda r: (r.version, _py(r.python), _variants(r), r.pypi_cuda and f"cu{r.pypi_cuda.replace('.', '')}",
                             r.torchvision or r.torchvision_range, r.torchaudio)),
    "tensorflow": Kind("tensorflow", lambda r: r.version, ("version", "python", "CUDA", "cuDNN", "keras"),
                       lambda r: (r.version, _py(r.python), r.cuda, r.cudnn, r.keras)),
    "jax": Kind("jax", lambda r: r.version, ("version", "jaxlib", "python", "CUDA extras"),
                lambda r: (r.version, r.jaxlib, _py(r.python), _variants(r))),
    "mxnet": Kind("mxnet", lambda r: r.version, ("version", "python", "CUDA packages"),
                  lambda r: (r.version, _py(r.python), _variants(r))),
    "image": Kind("images", lambda r: r.cuda, ("CUDA", "tag version", "OS", "cuDNN tags"),
                  lambda r: (r.cuda, r.tag_version, short_list(r.os, 4), short_list([f"{c.tag} ({c.version})" for c in r.cudnn], 3))),
}

KIND_NAMES = click.Choice(sorted(KINDS), case_sensitive=False)


@click.group("matrix")
def matrix() -> None:
    """Look at the compatibility matrix: CUDA, drivers, GPUs, cuDNN, frameworks, base images.

    The matrix ships with cudaenv; extra TOML files in ~/.config/cudaenv/matrix/ (or the
    directories in CUDAENV_MATRIX_PATH) add or replace rows. Every row names its source.
    """


def _rows(m: Matrix, kind: str) -> tuple:
    return getattr(m, KINDS[kind].attribute)


@matrix.command("list")
@click.argument("kind", type=KIND_NAMES)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of the rows on stdout.")
def list_rows(kind: str, as_json: bool) -> None:
    """List every row of one KIND (cuda, driver, gpu, cudnn, torch, tensorflow, jax, mxnet, image)."""
    kind = kind.lower()
    m = load_matrix()
    rows = _rows(m, kind)
    if as_json:
        emit_json([_with_identity(kind, row_as_dict(r)) for r in rows])
        return
    spec = KINDS[kind]
    click.echo(table(spec.headers, [spec.cells(r) for r in rows]))


def _with_identity(kind: str, data: dict) -> dict:
    """Listings promise a ``version`` (or ``name`` for GPUs and architectures) on every object."""
    if kind == "driver":
        data = {"version": f"R{data['branch']}", **data}
    elif kind == "image":
        data = {"version": data["cuda"], **data}
    return data


def _find(m: Matrix, kind: str, wanted: str):
    rows = _rows(m, kind)
    spec = KINDS[kind]
    for row in rows:
        if spec.key(row).lower() == wanted.lower():
            return row
    if kind in {"gpu"}:
        gpu = m.find_gpu(wanted)
        if gpu is not None:
            return gpu
    if kind in {"torch", "tensorflow", "jax", "mxnet"}:  # the spelling --torch accepts: 2.6 means ==2.6 (2.6.0)
        from packaging.version import Version

        from cudaenv.versions import parse_specifier, specifier_contains

        requested = parse_specifier(wanted)
        matches = [r for r in rows if requested is not None and specifier_contains(requested, spec.key(r))]
        if matches:
            return max(matches, key=lambda r: Version(spec.key(r)))
    if kind in {"cuda", "image", "cudnn"} and is_numeric(wanted):
        matches = [r for r in rows if spec.key(r).startswith(wanted + ".")]
        if matches:
            return max(matches, key=lambda r: numeric_key(spec.key(r)))
    known = [spec.key(r) for r in rows]
    near = difflib.get_close_matches(wanted, known, n=3, cutoff=0.5)
    hint = f"; nearest: {', '.join(near)}" if near else ""
    raise UserError(f"unknown {kind} {wanted!r} in the matrix{hint} (see `cudaenv matrix list {kind}`)")


@matrix.command("show")
@click.argument("kind", type=KIND_NAMES)
@click.argument("name")
@json_option
def show(kind: str, name: str, as_json: bool) -> None:
    """Show one row: `show torch 2.6.0`, `show gpu "NVIDIA A100-SXM4-80GB"`, `show driver 535.104.05`.

    For a driver version, shows the highest CUDA it runs natively and through minor-version
    compatibility, and the GPU architectures its branch supports.
    """
    kind = kind.lower()
    m = load_matrix()
    if kind == "driver" and "." in name:
        _show_driver(m, name, as_json)
        return
    if kind == "driver":
        name = name.upper().removeprefix("R")
    row = _find(m, kind, name)
    data = _with_identity(kind, row_as_dict(row))
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            click.echo(f"{key}:")
            for item in value:
                click.echo("  - " + "; ".join(f"{k}: {_plain(v)}" for k, v in item.items()))
        else:
            click.echo(f"{key}: {_plain(value)}")


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _show_driver(m: Matrix, driver: str, as_json: bool) -> None:
    from cudaenv.resolver.driver import driver_support

    if not is_driver_version(driver):
        raise UserError(f"driver version {driver!r} is not a version like 535.104.05")
    support = driver_support(m, driver)
    branch = m.driver_branch(support.branch)
    data = {
        "version": driver,
        "branch": support.branch,
        "max_cuda_native": support.max_native_cuda,
        "max_cuda_minor_version": support.max_minor_version_cuda,
        "architectures": list(support.architectures),
        "branch_type": branch.type if branch else None,
        "eol": branch.eol if branch else None,
        "source": branch.source if branch else None,
    }
    if as_json:
        emit_json(data)
        return
    click.echo(f"driver {driver} (branch R{support.branch}{', ' + branch.type if branch and branch.type else ''})")
    click.echo(f"  runs CUDA up to {support.max_native_cuda or 'none known'} natively")
    if support.max_minor_version_cuda and support.max_minor_version_cuda != support.max_native_cuda:
        click.echo(f"  and up to {support.max_minor_version_cuda} through minor-version compatibility "
                   f"(CUDA {major_minor(support.max_minor_version_cuda).split('.')[0]}.x, no PTX JIT of newer PTX)")
    if branch:
        click.echo(f"  GPU architectures: {', '.join(branch.architectures)}")
        if branch.eol:
            click.echo(f"  end of life: {branch.eol}")
    else:
        click.echo(f"  branch R{support.branch} is not in the matrix: architecture support unknown")


@matrix.command("check")
@json_option
def check(as_json: bool) -> None:
    """Load and validate the shipped matrix and every overlay; print what was loaded."""
    m = load_matrix()
    counts = {kind: len(_rows(m, kind)) for kind in KINDS}
    if as_json:
        emit_json({"ok": True, "revision": m.revision, "files": list(m.files), "rows": counts})
        return
    click.echo(f"matrix revision {m.revision}: {len(m.files)} files valid")
    for path in m.files:
        click.echo(f"  {path}")
    click.echo("  " + ", ".join(f"{n} {k}" for k, n in counts.items()))


UPDATE_KINDS = ("cuda", "cudnn", "driver", "torch", "tensorflow", "jax")  # cuda before driver: new toolkits feed its check


@matrix.command("update")
@click.argument("kinds", nargs=-1, type=click.Choice(UPDATE_KINDS))
@click.option("--write", is_flag=True, help="Write the changes (default: only show the diff).")
@click.option("--check", is_flag=True, help="Exit 1 when PyPI published something the matrix lacks (for a scheduled CI job).")
@click.option("--matrix-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory whose matrix files are updated (default: the shipped matrix; "
                   "an overlay directory such as ~/.config/cudaenv/matrix works too).")
@click.option("--index", default="https://pypi.org", show_default=True, help="PyPI-compatible index to read.")
@json_option
def update(kinds: tuple[str, ...], write: bool, check: bool, matrix_dir: Path | None, index: str, as_json: bool) -> None:
    """Compare the matrix with what PyPI published, per KIND (default: all), and show the diff.

    \b
    torch, tensorflow  Python versions (wheel tags), nvidia-* pins (METADATA), new releases;
                       torch also the torchvision releases whose requirement admits it
    jax                jax/jaxlib releases, Python versions, CUDA plugins without a variant
    cudnn              nvidia-cudnn-cu11/12/13 builds missing a row (written)
    cuda               cuda-toolkit / nvidia-cuda-runtime* releases missing a row (reported:
                       a row needs NVIDIA's minimum driver, which PyPI does not state)
    driver             nothing on PyPI: lists what needs NVIDIA's documents

    Curated fields are left alone. What PyPI cannot establish is listed under "needs a primary
    source". With --check, exit 1 when something published is missing from the matrix.
    """
    from cudaenv.matrix.pypi import FetchError
    from cudaenv.matrix.update import KIND_FILES, update_kind
    from cudaenv.project.locate import is_index_url
    from cudaenv.core.resources import matrix_dir as shipped_dir

    if not is_index_url(index) or not index.startswith("https://"):
        raise UserError(f"--index {index!r}: expected an https:// URL of a PyPI-compatible index (what it "
                        "answers is written into the matrix, so it is read over TLS only)")
    index = index.rstrip("/")
    directory = matrix_dir or shipped_dir()
    chosen = [k for k in UPDATE_KINDS if k in kinds] if kinds else list(UPDATE_KINDS)
    for kind in chosen:
        path = directory / KIND_FILES[kind]
        if not path.is_file():
            raise UserError(f"{path}: no such matrix file (pass --matrix-dir DIR holding {KIND_FILES[kind]})")

    reports, wrote, new_cuda = [], [], ()
    for kind in chosen:
        click.echo(f"{kind}: reading {index} …" if kind != "driver" else "driver: PyPI has no driver data; checking drivers.toml against cuda.toml …", err=True)
        try:
            result = update_kind(kind, directory, index=index, new_cuda=new_cuda)
        except FetchError as exc:  # exit 2, so that --check's 1 always means "behind PyPI"
            raise UserError(f"--index {index}: cannot read what the index published ({exc})") from exc
        if kind == "cuda":
            new_cuda = result.skipped
        reports.append(result)
    if write and any(r.diff for r in reports):
        from cudaenv.errors import MatrixError
        from cudaenv.matrix.update import check_updated
        from cudaenv.project.lock import write_atomically

        changed = [r for r in reports if r.diff]
        try:  # all or nothing: the whole new matrix must load before any file is written
            check_updated(directory, changed)
        except MatrixError as exc:
            raise UserError(f"the updated matrix would not load, so nothing was written: {exc}") from exc
        for result in changed:
            write_atomically(result.path, result.new_text)  # a reader never sees half a file
            wrote.append(str(result.path))
    if not as_json:
        for result in reports:
            _print_update(result, write)
    behind = any(r.behind for r in reports)
    if as_json:
        emit_json({"ok": not (check and behind), "behind": behind, "wrote": wrote, "kinds": [{
            "kind": r.kind, "file": str(r.path), "new_upstream": list(r.upstream), "added": list(r.added),
            "changed": list(r.changed), "not_added": list(r.skipped), "needs_primary_source": list(r.needs_source),
            "diff": r.diff,
        } for r in reports]})
    elif check:
        click.echo("matrix is behind PyPI (see above)" if behind else "matrix is up to date with PyPI "
                   "(what PyPI cannot tell is listed under 'needs a primary source')", err=True)
    if check and behind:
        click.get_current_context().exit(1)


def _print_update(result, write: bool) -> None:
    """The diff on stdout (it can be piped to `git apply`); the per-kind summary on stderr."""
    if result.diff:
        click.echo(result.diff, nl=False)
    verb = "wrote" if write else "would write"
    lines = [f"{result.kind} ({result.path.name}): "
             + (f"{verb} {len(result.added)} added, {len(result.changed)} changed" if result.diff else "nothing to write")]
    for label, items in (("new on PyPI", result.upstream), ("added", result.added), ("changed", result.changed),
                         ("not added (needs curation)", result.skipped), ("needs a primary source", result.needs_source)):
        if items:
            lines.append(f"  {label}:")
            lines += [f"    - {item}" for item in items]
    click.echo("\n".join(lines), err=True)
