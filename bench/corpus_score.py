"""Issue 23's score: how much of the real-projects corpus `cudaenv init` gets right, per host.

    python bench/corpus_score.py                       # both hosts, every project
    python bench/corpus_score.py --host r550-a100      # one host
    python bench/corpus_score.py whisper alphafold     # some projects
    python bench/corpus_score.py --json                # one JSON object on stdout

A project scores when cudaenv ends with a lock that installs from wheels and makes sense, where the
oracle (tests/fixtures/real-projects/ORACLE.toml, from `uv pip compile --only-binary :all:` at a fixed
date) found a wheel-only stack, or with a clean refusal where it found none. Goal: >= 90% on both hosts
with PyPI as the only index. Needs PyPI; set UV_CACHE_DIR to reuse downloads between runs. Each
failure is listed with the issue class it belongs to (1/2 index and wheels' CUDA, 3 detection,
4 init writes what it resolved, 5 unasked companions, 6 unusual sources, 7 matrix floor, 24 wheels only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.real_projects import HOSTS, run_corpus  # noqa: E402

GOAL = 0.90


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*", help="project names (default: all)")
    parser.add_argument("--host", choices=sorted(HOSTS), action="append", help="a host (default: both)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", action="store_true", dest="as_json")
    args = parser.parse_args()
    report = {"goal": GOAL, "hosts": {}}
    for host in args.host or sorted(HOSTS):
        started = time.monotonic()
        results = run_corpus(host, args.projects or None, workers=args.workers)
        passed = sum(1 for _, verdict in results if verdict.passed)
        report["hosts"][host] = {
            "score": round(passed / len(results), 3) if results else None, "passed": passed, "total": len(results),
            "seconds": round(time.monotonic() - started, 1),
            "failure_classes": dict(Counter(v.failure_class or "?" for _, v in results if not v.passed)),
            "projects": {o.project: {"passed": v.passed, "oracle": v.expected, "cudaenv": v.got, "exit": o.exit_code,
                                     "class": v.failure_class, "why": v.why,
                                     "frameworks": (o.stack or {}).get("frameworks"), "python": (o.stack or {}).get("python"),
                                     "cuda": (o.stack or {}).get("cuda"), "seconds": round(o.seconds, 1)}
                         for o, v in results},
        }
        if not args.as_json:
            entry = report["hosts"][host]
            print(f"{host}: {passed}/{len(results)} = {entry['score']:.0%} (goal {GOAL:.0%}), {entry['seconds']} s")
            for outcome, verdict in results:
                mark = "✓" if verdict.passed else "✗"
                detail = "" if verdict.passed else f"  [class {verdict.failure_class}] {verdict.why}"
                print(f"  {mark} {outcome.project:38} oracle {verdict.expected:6} cudaenv {verdict.got:6}{detail}")
            print(f"  failures by class: {entry['failure_classes']}")
    if args.as_json:
        print(json.dumps(report))
    scores = [h["score"] for h in report["hosts"].values() if h["score"] is not None]
    return 0 if scores and min(scores) >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
