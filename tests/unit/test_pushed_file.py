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
