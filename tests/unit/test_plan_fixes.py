"""`plan` offers, for each project that cannot run, the same fixes `resolve` offers for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def cli(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDAENV_DRIVER_VERSION", "CUDAENV_GPUS")}
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], capture_output=True, text=True, env=env, timeout=120)


def test_plan_lists_the_fixes_resolve_offers(tmp_path):
    for name, spec in (("new", ">=2.9"), ("old", ">=2.0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cudaenv.toml").write_text(f'[frameworks]\ntorch = "{spec}"\n')
    host = ("--driver", "470.82.01", "--gpu", "A100")
    planned = cli("plan", str(tmp_path / "new"), str(tmp_path / "old"), *host)
    resolved = json.loads(cli("resolve", str(tmp_path / "new"), *host, "--json").stdout)
    fixes = [p["message"] for p in resolved["problems"] if p["code"].startswith("fix-")]
    assert planned.returncode == 1 and len(fixes) == 2
    for fix in fixes:
        assert f"→ {fix}" in planned.stdout
