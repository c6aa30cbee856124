"""The independent oracle for the real-projects corpus: can each project be installed from wheels alone?

Run once by hand (it needs PyPI) and commit what it writes: ``tests/fixtures/real-projects/ORACLE.toml``.
It never calls cudaenv: it reads each project's dependency files with a few lines of its own and asks
``uv pip compile --only-binary :all: --python-platform x86_64-manylinux_2_28 --exclude-newer DATE`` for
each Python from the newest down, so its verdict cannot inherit one of cudaenv's mistakes.

    python scripts/corpus_oracle.py            # every project
    python scripts/corpus_oracle.py whisper    # one

PyPI is the only index it may reach (github.com for git and every other host go to a refused loopback
port, as behind a PyPI-only mirror; tests/support/real_projects.py runs cudaenv the same way).

A verdict is ``lock`` (the newest Python that compiles, and the framework versions uv chose) or
``refuse`` (with uv's reason at the newest and at the oldest Python tried, and its class).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "real-projects"
EXCLUDE_NEWER = "2026-11-20T00:00:00Z"  # the index as it was then: runs are reproducible
PLATFORM = "x86_64-manylinux_2_28"
PYTHONS = ("3.14", "3.13", "3.12", "3.11", "3.10", "3.9", "3.8")
FRAMEWORKS = ("torch", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "tf-keras", "keras")
CONDA_TO_PYPI = {"pytorch": "torch"}
CONDA_SKIP = {"python", "pip", "cudatoolkit", "pytorch-mutex", "cuda-version"}


def _conda_line(item: str) -> str | None:
    match = re.match(r"^([A-Za-z0-9_.-]+)\s*(?:(==|>=|<=|>|<|=)\s*([^\s=]+))?", item.split("::")[-1])
    if not match or match.group(1).lower() in CONDA_SKIP:
        return None
    name = CONDA_TO_PYPI.get(match.group(1).lower(), match.group(1))
    op, version = match.group(2), match.group(3)
    if not op:
        return name
    if op == "=":
        return f"{name}=={version}" if version.count(".") >= 2 else f"{name}=={version}.*"
    return f"{name}{op}{version}"


def inputs(project: Path, tmp: Path) -> tuple[list[str], str | None]:
    """The files to hand uv (requirements files as they are; pyproject and conda lists as .in files)
    and the project's own Python bound, if any."""
    files, python = [], None
    for path in sorted(project.glob("requirements*.txt")):
        included = any(f"-r {path.name}" in other.read_text() for other in project.glob("requirements*.txt")
                       if other != path)
        if not included:
            files.append(str(path))
    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        data = tomllib.loads(pyproject.read_text()).get("project", {})
        python = data.get("requires-python")
        target = tmp / "pyproject.in"
        target.write_text("".join(f"{line}\n" for line in data.get("dependencies", [])))
        files.append(str(target))
    for name in ("environment.yml", "environment.yaml"):
        env = project / name
        if env.is_file():
            lines = []
            for item in yaml.safe_load(env.read_text()).get("dependencies", []):
                if isinstance(item, dict):
                    lines += [str(line) for line in item.get("pip", [])]
                elif (line := _conda_line(str(item))) is not None:
                    lines.append(line)
            # conda's pip step reads its list from a file beside the environment file: `-r x.txt`
            # and `-e .` in it are relative to the environment file's folder
            target = project / ".oracle-environment.in"
            target.write_text("".join(f"{line}\n" for line in lines))
            files.append(str(target))
    return files, python


def classify(stderr: str) -> str:
    """Why uv said no, in the corpus's words (the failure classes the harness expects a refusal for)."""
    text = stderr.lower()
    if "git" in text and ("failed to fetch" in text or "failed to clone" in text or "git operation failed" in text
                          or "failed to download and build" in text and "git+" in text):
        return "git-unreachable"
    if "editable" in text or "-e git" in text or "unsupported url prefix" in text:
        return "editable-url"
    if "only-binary" in text or "no-binary" in text or "has no usable wheels" in text or "no wheels" in text \
            or "only has source distributions" in text or "building source distributions is disabled" in text:
        return "no-wheel"
    return "unsatisfiable"


def compile_once(files: list[str], python: str, cwd: Path) -> subprocess.CompletedProcess:
    from uv import find_uv_bin

    argv = [find_uv_bin(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--only-binary", ":all:",
            "--python-platform", PLATFORM, "--python-version", python, "--exclude-newer", EXCLUDE_NEWER, *files]
    env = dict(os.environ, UV_NO_CONFIG="1", NO_COLOR="1", UV_DEFAULT_INDEX="https://pypi.org/simple",
               UV_PYTHON_DOWNLOADS="never",  # wheels only: no interpreter is needed, none is fetched
               # github.com unreachable for git, as behind a PyPI-only mirror (the harness does the same)
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="url.https://127.0.0.1:1/.insteadOf",
               GIT_CONFIG_VALUE_0="https://github.com/", GIT_TERMINAL_PROMPT="0",
               # PyPI is the only index: any other host in a file goes to a refused proxy
               HTTPS_PROXY="http://127.0.0.1:1", HTTP_PROXY="http://127.0.0.1:1",
               NO_PROXY="pypi.org,files.pythonhosted.org,127.0.0.1,localhost")
    env.pop("UV_INDEX", None)
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def verdict(project: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
        try:
            return _verdict(project, Path(tmp))
        finally:
            (project / ".oracle-environment.in").unlink(missing_ok=True)


def _verdict(project: Path, tmp: Path) -> dict:
    files, requires = inputs(project, tmp)
    first_error = last_error = None
    for python in PYTHONS:
        if requires and not _admits(requires, python):
            continue
        proc = compile_once(files, python, project)
        if proc.returncode == 0:
            pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", proc.stdout, re.M))
            found = {name: pins[name] for name in FRAMEWORKS if name in pins}
            return {"verdict": "lock", "python": python, "frameworks": found}
        if first_error is None:
            first_error = proc.stderr
        last_error = proc.stderr
        if classify(proc.stderr) in ("git-unreachable", "editable-url"):
            break  # the same at every Python
    return {"verdict": "refuse", "reason": classify(last_error or ""), "uv_newest": _why(first_error),
            "uv_oldest": _why(last_error)}


def _why(stderr: str | None) -> str:
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    return next((line for line in lines if "No solution" not in line), lines[0] if lines else "")[:300]


def _admits(spec: str, python: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(spec).contains(f"{python}.0", prereleases=True)


def main(names: list[str]) -> None:
    import tomlkit

    out_path = CORPUS / "ORACLE.toml"
    doc = tomlkit.parse(out_path.read_text()) if out_path.is_file() else tomlkit.document()
    if "exclude_newer" not in doc:
        doc.add(tomlkit.comment("Written by scripts/corpus_oracle.py (uv pip compile --only-binary :all:), never by cudaenv."))
        doc["exclude_newer"] = EXCLUDE_NEWER
        doc["platform"] = PLATFORM
        doc["pythons"] = list(PYTHONS)
    projects = doc.setdefault("project", tomlkit.table())
    chosen = [p for p in sorted(CORPUS.iterdir()) if p.is_dir() and (not names or p.name in names)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=6) as pool:  # uv waits on the network, not the CPU
        results = dict(zip((p.name for p in chosen), pool.map(verdict, chosen)))
    for name in sorted(results):
        print(name, results[name], flush=True)
        table = tomlkit.table()
        for key, value in results[name].items():
            table[key] = value
        projects[name] = table
    sorted_projects = tomlkit.table()
    for name in sorted(projects):
        sorted_projects[name] = projects[name]
    doc["project"] = sorted_projects
    out_path.write_text(tomlkit.dumps(doc))


if __name__ == "__main__":
    main(sys.argv[1:])
