"""Run `cudaenv init` on the real-projects corpus and hold each outcome against the oracle.

The corpus (tests/fixtures/real-projects) is dependency files people wrote; ORACLE.toml says, for
each, what `uv pip compile --only-binary :all:` found on PyPI at a fixed date (written by
scripts/corpus_oracle.py, never by cudaenv). An outcome passes when cudaenv

- wrote a lock the oracle's own question accepts (every pin installable from wheels for the lock's
  Python and platform, at the same date) that makes sense for the project (it runs the framework the
  project uses; it adds no torchvision/torchaudio the project never named; one tensorflow
  distribution), where the oracle found a wheel-only stack; or
- refused cleanly (exit 1 or 2, no traceback, nothing written), where the oracle found none.

Used by tests/integration/test_real_projects.py and bench/corpus_score.py. Hosts are the issue's:
an A100 on driver 550.54.15 and an RTX 4090 on 580.65.06, PyPI as the only index (also for the
framework, CUDAENV_FRAMEWORK_INDEX). Every other host is made unreachable, as behind a PyPI-only
company mirror (git's github.com and any --extra-index-url or --find-links host go to a refused
loopback port), so a run gives the oracle's answers wherever it runs, GitHub's CI included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tests.support.cli import cudaenv as run_cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "real-projects"
PYPI = "https://pypi.org/simple"
HOSTS = {
    "r550-a100": ("550.54.15", ("A100",)),
    "r580-rtx4090": ("580.65.06", ("RTX 4090",)),
}
TF_FAMILY = {"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly", "tf-nightly-cpu",
             "tf-nightly-gpu"}


@dataclass(frozen=True)
class Outcome:
    project: str
    host: str
    exit_code: int
    first_line: str
    stack: dict | None
    pinned: tuple[str, ...]
    installable: bool | None  # None: no lock to check
    install_error: str
    seconds: float
    output: str


@dataclass(frozen=True)
class Verdict:
    passed: bool
    expected: str  # "lock" or "refuse" (the oracle's)
    got: str  # "lock" or "refuse"
    why: str  # for a failure: what is wrong, and the issue class it belongs to
    failure_class: str | None = None


def oracle() -> dict:
    return tomllib.loads((CORPUS / "ORACLE.toml").read_text(encoding="utf-8"))


def projects() -> list[str]:
    return sorted(oracle()["project"])


def kinds() -> dict[str, str]:
    """project -> torch | tensorflow | jax | mixed, from SOURCES.md."""
    found = {}
    for line in (CORPUS / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[1] in ("torch", "tensorflow", "jax", "mixed"):
            found.setdefault(cells[0], cells[1])
    return found


def environment(cache: Path | None = None) -> dict:
    """A clean environment: no CUDAENV_* from the caller, the oracle's date, PyPI for everything."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "UV_", "GIT_CONFIG"))}
    env.update(CUDAENV_MATRIX_PATH="", CUDAENV_EXCLUDE_NEWER=oracle()["exclude_newer"],
               CUDAENV_FRAMEWORK_INDEX=PYPI, UV_PYTHON_DOWNLOADS="never", NO_COLOR="1",
               # git: github.com is a refused loopback port, as behind a PyPI-only mirror
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="url.https://127.0.0.1:1/.insteadOf",
               GIT_CONFIG_VALUE_0="https://github.com/", GIT_TERMINAL_PROMPT="0",
               # every other host (an --extra-index-url, a --find-links page) goes to a refused proxy
               HTTPS_PROXY="http://127.0.0.1:1", HTTP_PROXY="http://127.0.0.1:1",
               NO_PROXY="pypi.org,files.pythonhosted.org,127.0.0.1,localhost")
    for name in ("https_proxy", "http_proxy", "no_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    if cache is not None:
        env["UV_CACHE_DIR"] = str(cache)
    elif os.environ.get("UV_CACHE_DIR"):
        env["UV_CACHE_DIR"] = os.environ["UV_CACHE_DIR"]
    return env


def _installable(lock: dict, env: dict, workdir: Path) -> tuple[bool, str]:
    """The oracle's own question about the lock's pins: wheels only, the lock's Python and platform."""
    from uv import find_uv_bin

    requirements = lock.get("requirements", {})
    pins = requirements.get("pinned", [])
    pinned = workdir / "pinned.txt"
    pinned.write_text("".join(f"{p}\n" for p in pins))
    argv = [find_uv_bin(), "pip", "compile", "--quiet", "--no-header", "--only-binary", ":all:", "--python-version",
            lock["stack"]["python"], "--python-platform", requirements.get("platform") or "x86_64-manylinux_2_28",
            "--exclude-newer", oracle()["exclude_newer"], str(pinned)]
    check_env = dict(env, UV_NO_CONFIG="1", UV_DEFAULT_INDEX=PYPI)
    proc = subprocess.run(argv, capture_output=True, text=True, env=check_env, timeout=600)
    return proc.returncode == 0, proc.stderr.strip()


def run_init(name: str, host: str, workdir: Path, env: dict) -> Outcome:
    driver, gpus = HOSTS[host]
    project = workdir / name
    shutil.copytree(CORPUS / name, project)
    argv = ["init", str(project), "--driver", driver]
    for gpu in gpus:
        argv += ["--gpu", gpu]
    started = time.monotonic()
    proc = run_cli(*argv, env=env, timeout=900)
    seconds = time.monotonic() - started
    output = proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("pinning ")]
    first = lines[0] if lines else next((line for line in proc.stdout.splitlines() if line.strip()), "")
    lock_path = project / "cudaenv.lock"
    if proc.returncode == 0 and lock_path.is_file():
        from tests.support.lockfile import lock_view

        lock = lock_view(lock_path)  # through cudaenv's own reader, whatever the lock format's layout
        ok, error = _installable(lock, env, project)
        return Outcome(name, host, 0, first, lock.get("stack"), tuple(lock["requirements"]["pinned"]), ok, error,
                       seconds, output)
    return Outcome(name, host, proc.returncode, first, None, (), None, "", seconds, output)


def _named(name: str) -> set[str]:
    """Every distribution name the project's files mention (for "did it ask for torchvision?")."""
    text = "\n".join(p.read_text(encoding="utf-8-sig", errors="replace") for p in (CORPUS / name).rglob("*")
                     if p.is_file())  # nested files too: requirements/base.txt
    return {re.sub(r"[-_.]+", "-", n).lower() for n in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", text)}


def judge(outcome: Outcome, expected: dict, kind: str) -> Verdict:
    want = expected["verdict"]
    if outcome.exit_code == 0 and outcome.stack is not None:
        got = "lock"
        frameworks = dict(outcome.stack.get("frameworks", {}))
        if want == "refuse":  # the oracle found no wheel-only stack: a lock left something out, or builds it
            if not outcome.installable:
                return Verdict(False, want, got, "locked what does not install from wheels: "
                               f"{outcome.install_error.splitlines()[-1:]}", "24")
            conda = any((CORPUS / outcome.project / n).is_file() for n in ("environment.yml", "environment.yaml"))
            return Verdict(False, want, got, "the lock leaves out requirements the oracle could not install"
                           + (" (environment.yml's pip list is not locked)" if conda else ""),
                           "conda-pip" if conda else "other")
        if not outcome.installable:
            last = outcome.install_error.splitlines()[-1:] if outcome.install_error else []
            return Verdict(False, want, got, f"the lock does not install from wheels: {last}", "24")
        uses = {"torch": {"torch"}, "tensorflow": {"tensorflow"}, "jax": {"jax"}}.get(kind)
        if uses and not uses & set(frameworks):
            return Verdict(False, want, got, f"a {kind} project locked with frameworks {sorted(frameworks)}", "3")
        if kind == "mixed" and not frameworks:
            return Verdict(False, want, got, "a framework project locked as a plain CUDA runtime", "3")
        named = _named(outcome.project)
        unasked = [c for c in ("torchvision", "torchaudio") if c in frameworks and c not in named]
        if unasked:
            return Verdict(False, want, got, f"the stack adds {', '.join(unasked)}, which the project never named", "5")
        names = {re.sub(r"[-_.]+", "-", re.split(r"[\[=<>!~ ;]", p, 1)[0]).lower() for p in outcome.pinned}
        if len(names & TF_FAMILY) > 1:
            return Verdict(False, want, got, f"two tensorflow distributions: {sorted(names & TF_FAMILY)}", "3")
        return Verdict(True, want, got, "")
    got = "refuse"
    if re.search(r'File "[^"]*cudaenv/', outcome.output):  # cudaenv's own traceback (a build's, quoted by uv, is not)
        return Verdict(False, want, got, "a traceback", "6")
    if outcome.exit_code not in (1, 2):
        return Verdict(False, want, got, f"exit {outcome.exit_code}", "6")
    if want == "refuse":
        return Verdict(True, want, got, "")
    return Verdict(False, want, got, outcome.first_line[:240], failure_class(outcome.output))


def failure_class(output: str) -> str:
    """Which of the issue's classes a refusal of an installable project belongs to (best effort)."""
    text = output
    if re.search(r"carries CUDA [0-9.]+, but the stack is CUDA", text):
        return "1/2"
    if "matches no release in the matrix" in text:
        return "7"
    if "has no wheel" in text or "no usable wheels" in text or "only has source" in text:
        return "24"
    if "git" in text and "cannot be reached" in text:
        return "6"
    if "cannot be resolved together with" in text:
        return "1/4/5/24"
    return "other"


def run_corpus(host: str, names: list[str] | None = None, *, workers: int = 4,
               cache: Path | None = None) -> list[tuple[Outcome, Verdict]]:
    """Every project (or ``names``) on ``host``, a few at a time: init waits on PyPI, not the CPU."""
    expected, kind_of = oracle()["project"], kinds()
    chosen = names or projects()
    env = environment(cache)
    with tempfile.TemporaryDirectory(prefix=f"corpus-{host}-") as tmp:
        def one(name: str) -> tuple[Outcome, Verdict]:
            outcome = run_init(name, host, Path(tmp), env)
            return outcome, judge(outcome, expected[name], kind_of.get(name, "mixed"))

        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, chosen))
