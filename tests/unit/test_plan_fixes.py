"""`plan` offers, for each project that cannot run, the same fixes `resolve` offers for it."""

from __future__ import annotations

import json

from tests.support.cli import cudaenv, without_target_overrides


def cli(*args):
    return cudaenv(*args, env=without_target_overrides(), timeout=120)


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
    assert (f"its cudaenv.lock has Python 3.10; to follow this plan, pin Python 3.11 in its cudaenv.toml (where it "
            f"does not already) and run `cudaenv lock {tmp_path / 'a'}`") in text


def test_following_the_plans_advice_makes_the_lock_agree(tmp_path):
    """The plan may choose another stack than `cudaenv lock` does on its own (to share a base):
    pinning what the plan names and locking again makes the two agree."""
    target = '[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n'
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "cudaenv.toml").write_text(f'[project]\nname = "a"\npython = "3.11"\n\n[cuda]\nversion = '
                                                 f'">=12.1,<12.5"\n\n[build]\nflavor = "runtime"\n\n{target}')
    (tmp_path / "b" / "cudaenv.toml").write_text('[project]\nname = "b"\npython = "3.11"\n\n[cuda]\nversion = "12.1"\n\n'
                                                 '[build]\nflavor = "runtime"\n')
    assert cli("lock", str(tmp_path / "a")).returncode == 0
    host = ("--driver", "550.54.15", "--gpu", "A100")
    planned = json.loads(cli("plan", str(tmp_path / "a"), str(tmp_path / "b"), *host, "--json").stdout)
    [a] = [p for p in planned["projects"] if p["name"] == "a"]
    assert a["lock_differs"] is not None and a["stack"]["cuda"] == "12.1"  # shared with b; the lock took newer
    text = cli("plan", str(tmp_path / "a"), str(tmp_path / "b"), *host).stdout
    pinned = a["stack"]["cuda"]
    assert f"pin CUDA {pinned} in its cudaenv.toml" in text
    config = tmp_path / "a" / "cudaenv.toml"
    config.write_text(config.read_text().replace('">=12.1,<12.5"', f'"{pinned}"'))
    assert cli("lock", str(tmp_path / "a")).returncode == 0
    again = json.loads(cli("plan", str(tmp_path / "a"), str(tmp_path / "b"), *host, "--json").stdout)
    assert [p["lock_differs"] for p in again["projects"] if p["name"] == "a"] == [None]


def test_a_lock_for_another_cpu_is_named_by_the_plan(tmp_path):
    """A project locked for a Grace host (an aarch64 image) does not run on the plan's x86_64 host,
    whatever its CUDA and Python: the plan says so instead of passing it over in silence."""
    (tmp_path / "arm").mkdir()
    (tmp_path / "arm" / "cudaenv.toml").write_text(
        '[project]\nname = "arm"\npython = "3.11"\n\n[cuda]\nversion = "12.4"\n\n[build]\nflavor = "runtime"\n\n'
        '[target]\ndriver = "550.54.15"\ngpus = ["A100"]\narch = "aarch64"\n')
    locked = cli("lock", str(tmp_path / "arm"))  # a CUDA-only project locks offline
    assert locked.returncode == 0, locked.stderr
    host = ("--driver", "550.54.15", "--gpu", "A100", "--arch", "x86_64")
    planned = json.loads(cli("plan", str(tmp_path / "arm"), *host, "--json").stdout)
    assert planned["projects"][0]["lock_differs"] == "an aarch64 stack"
    text = cli("plan", str(tmp_path / "arm"), *host).stdout
    assert 'its cudaenv.lock has an aarch64 stack; to follow this plan, pin [target] arch = "x86_64"' in text
