"""Issue 23: `cudaenv init` on dependency files people actually have (tests/fixtures/real-projects).

For each project and each of the issue's hosts (an A100 on driver 550.54.15, an RTX 4090 on
580.65.06; PyPI the only index, also for the framework), init must end with a lock that installs from
wheels and makes sense where the oracle (ORACLE.toml, `uv pip compile --only-binary :all:` at a
fixed date, never cudaenv) found one, or refuse cleanly where it found none. The whole corpus runs
once per host, a few projects at a time; each project is then its own test. Needs PyPI (CI reaches
it); uv's cache (UV_CACHE_DIR) and the fixed date keep reruns short and repeatable.

The known failures are marked xfail(strict=False) with the reason; bench/corpus_score.py prints the
score per host.
"""

from __future__ import annotations

import pytest

from tests.support.real_projects import HOSTS, projects, run_corpus

pytestmark = [pytest.mark.network]

# (host, project) -> reason: the known failures after issues 23 and 24 were merged (bench/corpus_score.py).
FLOOR = ("class 7: torch ~=1.7.1 is below the matrix floor (torch 1.12.0); the answer says so, but rows for older "
         "releases were not added, so this stays a failure after merging")
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("r550-a100", "clip"): FLOOR,
    ("r580-rtx4090", "clip"): FLOOR,
}

_RESULTS: dict[str, dict] = {}


def corpus_results(host: str) -> dict:
    if host not in _RESULTS:
        _RESULTS[host] = {outcome.project: (outcome, verdict) for outcome, verdict in run_corpus(host)}
    return _RESULTS[host]


def _cases():
    for host in sorted(HOSTS):
        for name in projects():
            reason = KNOWN_FAILURES.get((host, name))
            marks = [pytest.mark.xfail(strict=False, reason=reason)] if reason else []
            yield pytest.param(host, name, marks=marks, id=f"{host}-{name}")


@pytest.mark.parametrize(("host", "name"), list(_cases()))
def test_init_on_a_real_project_agrees_with_the_oracle(host, name):
    outcome, verdict = corpus_results(host)[name]
    assert verdict.passed, (f"{name} on {host}: oracle says {verdict.expected}, cudaenv did {verdict.got} "
                            f"(exit {outcome.exit_code}): {verdict.why}\n{outcome.output[-3000:]}")


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_every_refusal_is_one_line_first(host):
    """A refusal's first line is cudaenv's own answer (an error line, or a resolver verdict), not uv's."""
    for outcome, _verdict in corpus_results(host).values():
        if outcome.exit_code in (1, 2):
            assert not outcome.first_line.startswith(("error:", "  cause:", "Traceback")), \
                f"{outcome.project}: {outcome.first_line}"
