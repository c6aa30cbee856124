"""The scheduled workflow that keeps the matrix current (actionlint itself runs over every workflow in
tests/integration/test_ci_setup.py): daily and on demand, least privilege, only GITHUB_TOKEN."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[3] / ".github" / "workflows" / "matrix-update.yml"


def load() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def test_runs_daily_and_on_demand():
    triggers = load()["on"]
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    (cron,) = [entry["cron"] for entry in triggers["schedule"]]
    minute, hour, day, month, weekday = cron.split()
    assert (day, month, weekday) == ("*", "*", "*") and minute.isdigit() and hour.isdigit()


def test_permissions_are_read_only_except_what_the_pull_request_needs():
    data = load()
    assert data["permissions"] == {"contents": "read"}
    (job,) = data["jobs"].values()
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_no_secret_beyond_the_workflow_token():
    text = WORKFLOW.read_text()
    assert "secrets." not in text and "github.token" in text


def test_runs_the_updater_with_check_and_write_and_opens_a_pull_request():
    (job,) = load()["jobs"].values()
    scripts = "\n".join(step.get("run", "") for step in job["steps"])
    assert "cudaenv matrix update --write --check" in scripts
    assert "gh pr create" in scripts and "gh pr edit" in scripts
    assert '"$status" -gt 1' in scripts  # a failed run (exit 2) fails the job instead of opening a PR
