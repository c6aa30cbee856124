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


def test_plan_names_each_stack_base_and_a_lock_that_pins_something_else(tmp_path):
    """Projects share disk through their stack bases (one per distinct stack), not through the
    upstream image under them; and where a project's lock pins another stack than the plan, the
    plan says what the lock has and how to follow the plan."""
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cudaenv.toml").write_text(
            f'[project]\nname = "{name}"\npython = "3.10"\n\n[cuda]\nversion = "12.4"\n\n[build]\nflavor = "runtime"\n')
    (tmp_path / "c" / "cudaenv.toml").write_text((tmp_path / "c" / "cudaenv.toml").read_text().replace("3.10", "3.11"))
    locked = cli("lock", str(tmp_path / "a"))  # a CUDA-only project locks offline
    assert locked.returncode == 0, locked.stderr
    config = tmp_path / "a" / "cudaenv.toml"
    config.write_text(config.read_text().replace('python = "3.10"', 'python = "3.11"'))
    host = ("--driver", "550.54.15", "--gpu", "A100")
    planned = json.loads(cli("plan", *(str(tmp_path / n) for n in "abc"), *host, "--json").stdout)
    by_name = {p["name"]: p for p in planned["projects"]}
    assert by_name["a"]["lock_differs"] == "Python 3.10"
    assert by_name["b"]["lock_differs"] is None and by_name["c"]["lock_differs"] is None  # b and c have no lock
    assert planned["stack_bases"] == 2  # a and c on Python 3.11, b on 3.10
    assert by_name["a"]["stack_base"] == by_name["c"]["stack_base"] != by_name["b"]["stack_base"]
    assert by_name["a"]["stack_base"].startswith("cudaenv-base:")
    text = cli("plan", *(str(tmp_path / n) for n in "abc"), *host).stdout
    assert "2 stack base(s) for 3 project(s)" in text
    assert f"its cudaenv.lock has Python 3.10: `cudaenv lock {tmp_path / 'a'}` to follow this plan" in text
