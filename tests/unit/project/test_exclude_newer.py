"""[lock] exclude_newer: a lock made against the package index as it was on a date (uv's
--exclude-newer), so the same inputs give the same lock next month — what the real-projects corpus
relies on, offered to users too. CUDAENV_EXCLUDE_NEWER sets it for a whole CI run."""

from __future__ import annotations

import datetime

import pytest

from cudaenv.project.config import ConfigError, parse_config
from cudaenv.project.lock import exclude_newer_for
from tests.support.cli import cudaenv as run_cli, isolated_env


def parsed(tmp_path, lock_table: dict):
    return parse_config(tmp_path, {"lock": lock_table}, "cudaenv.toml", None)


@pytest.mark.parametrize("value", ["2026-11-20", "2026-11-20T00:00:00Z", "2026-11-20T12:30:00+01:00",
                                   "2026-11-20 12:30:00.123456789Z", "2026-11-20T23:59:59.5-08:00",
                                   datetime.date(2026, 11, 20)])
def test_a_date_or_a_timestamp_with_its_offset_is_accepted(tmp_path, value):
    assert parsed(tmp_path, {"exclude_newer": value}).exclude_newer.startswith("2026-11-20")


@pytest.mark.parametrize("value", ["last week", "2026-13-01", "2026-11-20T00:00:00", 20261120, "2026-11-20; rm -rf /",
                                   datetime.datetime(2026, 11, 20),
                                   # the grammar fits, the clock or calendar does not: uv refused these at lock time
                                   "2026-11-20T25:99:99Z", "2026-11-20T10:60:00Z", "2026-11-20T10:00:00+25:00",
                                   "2026-02-30T00:00:00Z", "2026-02-30"])
def test_anything_else_is_bad_input_naming_the_field(tmp_path, value):
    with pytest.raises(ConfigError) as caught:
        parsed(tmp_path, {"exclude_newer": value})
    assert "lock.exclude_newer" in str(caught.value) and "2026-11-20" in str(caught.value)


def test_unset_means_the_index_as_it_is_now(tmp_path):
    assert parse_config(tmp_path, {}, "cudaenv.toml", None).exclude_newer is None
    assert parsed(tmp_path, {"exclude_newer": ""}).exclude_newer is None


UTC = datetime.timezone.utc


@pytest.mark.parametrize("value, expected", [
    ("2026-11-20", "2026-11-20"),
    (" 2026-11-20T00:00:00Z ", "2026-11-20T00:00:00Z"),
    ("2026-11-20 12:30:00.123456789Z", "2026-11-20 12:30:00.123456789Z"),
    ("2026-11-20T23:59:59.5-08:00", "2026-11-20T23:59:59.5-08:00"),
    (datetime.date(2026, 2, 28), "2026-02-28"),
    (datetime.datetime(2026, 11, 20, 6, 0, tzinfo=UTC), "2026-11-20T06:00:00Z"),
    (datetime.datetime(2026, 11, 20, 6, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     "2026-11-20T06:00:00+02:00"),
], ids=["date", "utc-z", "nanoseconds", "offset-fraction", "toml-date", "toml-utc", "toml-offset"])
def test_the_value_uv_gets_is_the_text_or_the_rfc_3339_form(tmp_path, value, expected):
    """Text is passed as written (trimmed); a TOML date-time becomes RFC 3339, UTC as Z."""
    assert parsed(tmp_path, {"exclude_newer": value}).exclude_newer == expected


def test_the_refusals_say_what_is_expected_and_what_was_given(tmp_path):
    messages = {}
    for value in ("2026-02-30", "2026-11-20T10:60:00Z", datetime.datetime(2026, 11, 20, 6, 0),
                  "2026-11-20" + " " * 54):
        with pytest.raises(ConfigError) as caught:
            parsed(tmp_path, {"exclude_newer": value})
        messages[str(value).strip()] = str(caught.value)
    expected = "expected a date like 2026-11-20 or an RFC 3339 timestamp like 2026-11-20T00:00:00Z, got "
    assert messages["2026-02-30"].endswith(f"lock.exclude_newer: {expected}'2026-02-30'")
    assert messages["2026-11-20T10:60:00Z"].endswith(f"lock.exclude_newer: {expected}'2026-11-20T10:60:00Z'")
    assert messages["2026-11-20 06:00:00"].endswith(
        "lock.exclude_newer: expected a date like 2026-11-20 or a timestamp with its offset (2026-11-20T00:00:00Z), "
        "got '2026-11-20T06:00:00' (no offset)")
    # 64 characters or more is no date however it is padded (the length is checked before the grammar);
    # 63 still is
    assert messages["2026-11-20"].endswith(f"lock.exclude_newer: {expected}{'2026-11-20' + ' ' * 54!r}")
    assert parsed(tmp_path, {"exclude_newer": "2026-11-20" + " " * 53}).exclude_newer == "2026-11-20"


def test_the_environment_overrides_the_configuration(tmp_path, monkeypatch):
    project = parsed(tmp_path, {"exclude_newer": "2026-01-01"})
    monkeypatch.delenv("CUDAENV_EXCLUDE_NEWER", raising=False)
    assert exclude_newer_for(project) == "2026-01-01"
    monkeypatch.setenv("CUDAENV_EXCLUDE_NEWER", "2025-06-30")
    assert exclude_newer_for(project) == "2025-06-30"
    monkeypatch.setenv("CUDAENV_EXCLUDE_NEWER", "yesterday")
    with pytest.raises(ConfigError, match="CUDAENV_EXCLUDE_NEWER"):
        exclude_newer_for(project)


def test_the_lock_digest_changes_with_it(tmp_path):
    from cudaenv.project.lock import inputs_hash

    assert inputs_hash(parsed(tmp_path, {"exclude_newer": "2026-01-01"})) != \
        inputs_hash(parsed(tmp_path, {"exclude_newer": "2026-01-02"}))


@pytest.mark.network
def test_the_lock_pins_what_the_index_had_on_that_date(tmp_path):
    """six 1.9.0 was uploaded on 2015-01-02: a lock as of 2015-01-01 pins 1.8.0."""
    (tmp_path / "requirements.txt").write_text("six\n")
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "old"\npython = "3.11"\nrequirements = ["requirements.txt"]\n'
                                           '\n[target]\ndriver = "550.54.15"\ngpus = ["A100"]\n\n'
                                           '[lock]\nexclude_newer = 2015-01-01\n')
    proc = run_cli("lock", tmp_path, env=isolated_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"six==1.8.0"' in (tmp_path / "cudaenv.lock").read_text()


@pytest.mark.parametrize("name, value", [("CUDAENV_EXCLUDE_NEWER", "2026-11-20T25:99:99Z"),
                                         ("CUDAENV_PYTHON_INDEX", "file:///etc"),
                                         ("CUDAENV_FRAMEWORK_INDEX", "nonsense")],
                         ids=["exclude-newer", "python-index", "framework-index"])
def test_a_bad_override_is_one_line_of_bad_input_before_any_progress(tmp_path, name, value):
    """`lock` used to say "locking …" first and fail after: two lines, the first one a promise."""
    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "p"\npython = "3.11"\n')
    result = run_cli("lock", tmp_path, env=isolated_env(**{name: value}))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"cudaenv: error: {name}: expected " + result.stderr.split(": expected ", 1)[1].rstrip("\n")]
    assert repr(value) in result.stderr and not (tmp_path / "cudaenv.lock").exists()


class _Python310DateTime(datetime.datetime):
    """datetime as Python 3.10 reads ISO text (cudaenv supports 3.10; the suite runs on 3.11+): its
    documented format is YYYY-MM-DD[*HH[:MM[:SS[.fff[fff]]]][+HH:MM[:SS[.ffffff]]]], so no "Z" and a
    fraction of 3 or 6 digits only (https://docs.python.org/3.10/library/datetime.html#datetime.datetime.fromisoformat)."""

    @classmethod
    def fromisoformat(cls, text):
        import re

        fraction = re.search(r"\.([0-9]+)", text)
        if text.endswith(("Z", "z")) or (fraction and len(fraction.group(1)) not in (3, 6)):
            raise ValueError(f"Invalid isoformat string: {text!r}")
        return super().fromisoformat(text)


@pytest.mark.parametrize("value", ["2026-11-20T00:00:00Z", "2026-11-20 12:30:00.123456789Z", "2026-11-20T23:59:59.5-08:00",
                                   "2026-11-20T10:00Z"], ids=["z", "nanoseconds-z", "one-digit-fraction", "minutes-z"])
def test_timestamps_are_checked_the_same_on_python_3_10(tmp_path, monkeypatch, value):
    """The clock check drops the fraction and spells Z as +00:00 before asking fromisoformat, so a
    Python 3.10 runtime accepts what uv accepts, as 3.11 does."""
    monkeypatch.setattr(datetime, "datetime", _Python310DateTime)
    assert parsed(tmp_path, {"exclude_newer": value}).exclude_newer == value


def test_the_matrix_as_of_a_date_leaves_out_the_releases_published_after_it():
    from cudaenv.matrix import load_matrix

    matrix = load_matrix(overlays=[])
    newest = max(r.released for r in matrix.torch)
    before = matrix.released_by("2025-06-01")
    assert before.torch and all(r.released < "2025-06-01" for r in before.torch if r.released)
    assert before.revision == matrix.revision  # a lock made under a cutoff stays current
    assert matrix.released_by(newest) is not matrix  # a bare date: that day's uploads come after its midnight
    assert matrix.released_by(f"{newest}T23:59:59Z") is matrix
    assert matrix.released_by(None) is matrix and before is matrix.released_by("2025-06-01")


def test_a_cutoff_keeps_the_resolver_from_choosing_a_release_the_lock_cannot_install(tmp_path):
    from packaging.version import Version

    from cudaenv.hosts.target import project_target
    from cudaenv.matrix import load_matrix
    from cudaenv.project.config import load_project, resolve_project

    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "p"\n\n[frameworks]\ntorch = ">=2.4"\n\n'
                                           '[target]\ndriver = "580.65.06"\n\n[lock]\nexclude_newer = "2025-06-01"\n')
    matrix = load_matrix(overlays=[])
    project = load_project(tmp_path)
    stack = resolve_project(matrix, project, project_target(matrix, project).host).stack
    torch = dict(stack.frameworks)["torch"]
    assert Version(torch) < Version("2.8") and next(r for r in matrix.torch if r.version == torch).released < "2025-06-01"


def test_a_pin_published_after_the_cutoff_says_so(tmp_path):
    from cudaenv.hosts.target import project_target
    from cudaenv.matrix import load_matrix
    from cudaenv.project.config import load_project, resolve_project

    (tmp_path / "cudaenv.toml").write_text('[project]\nname = "p"\n\n[frameworks]\ntorch = "==2.9.0"\n\n'
                                           '[target]\ndriver = "580.65.06"\n\n[lock]\nexclude_newer = "2025-06-01"\n')
    matrix = load_matrix(overlays=[])
    project = load_project(tmp_path)
    with pytest.raises(ConfigError, match=r"frameworks.torch: the pinned release was published after the index "
                                          r"cutoff 2025-06-01"):
        resolve_project(matrix, project, project_target(matrix, project).host)
