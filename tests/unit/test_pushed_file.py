"""cudaenv.pushed.json: the recorded digest of a pushed project image."""
import pytest

from cudaenv.errors import UserError
from cudaenv.images.push import PUSHED_FILE, PushedImage, record, recorded

DIGEST = "sha256:" + "ab" * 32


def test_recorded_round_trips_and_names_the_image_by_digest(tmp_path):
    pushed = PushedImage("registry.example.com/ml/detector:v1", DIGEST)
    record(tmp_path, pushed)
    assert recorded(tmp_path) == pushed
    assert recorded(tmp_path).by_digest == f"registry.example.com/ml/detector@{DIGEST}"


def test_never_pushed_is_none(tmp_path):
    assert recorded(tmp_path) is None


def test_a_tampered_digest_is_a_user_error_naming_the_field(tmp_path):
    (tmp_path / PUSHED_FILE).write_text('{"reference": "127.0.0.1:5000/a:b", "digest": "latest"}')
    with pytest.raises(UserError, match="field 'digest'"):
        recorded(tmp_path)


def test_an_index_records_the_targets_it_serves_and_reads_them_back(tmp_path):
    pushed = PushedImage("127.0.0.1:5000/team/fleet:0123456789ab", DIGEST, ("hopper", "grace"))
    record(tmp_path, pushed)
    assert recorded(tmp_path) == pushed
    assert '"targets": [\n    "hopper",\n    "grace"\n  ]' in (tmp_path / PUSHED_FILE).read_text()


@pytest.mark.parametrize("targets", ['"grace"', '["Grace"]', '["a b"]', '[1]', '["-x"]'],
                         ids=["not-a-list", "upper-case", "space", "number", "leading-dash"])
def test_targets_that_are_no_target_names_are_a_user_error_naming_the_field(tmp_path, targets):
    (tmp_path / PUSHED_FILE).write_text(f'{{"reference": "127.0.0.1:5000/a:b", "digest": "{DIGEST}", '
                                        f'"targets": {targets}}}')
    with pytest.raises(UserError, match="field 'targets'"):
        recorded(tmp_path)


class _Project:
    def __init__(self, root, several):
        self.root, self.several_targets = root, several


@pytest.mark.parametrize(("targets", "several", "asked", "found"), [
    ((), False, None, True),  # a one-target project's push: its image
    ((), True, "grace", False),  # a record of no named target is nobody's default among several
    (("hopper", "grace"), True, "grace", True),  # the index serves the targets it names
    (("hopper", "grace"), True, "older", False),
    (("hopper", "grace"), True, None, False),
], ids=["one-target", "unnamed-record", "in-the-index", "not-in-the-index", "no-target-asked"])
def test_an_export_takes_the_recorded_image_only_for_a_target_it_serves(tmp_path, targets, several, asked, found):
    from cudaenv.cli.export_lock import recorded_image

    record(tmp_path, PushedImage("127.0.0.1:5000/team/fleet:t", DIGEST, targets))
    assert (recorded_image(_Project(tmp_path, several), asked) is not None) is found
