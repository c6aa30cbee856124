"""How the project's own .dockerignore changes what `cudaenv build` warns about
(``cudaenv.secrets.context.secret_looking_files``): the rules Docker reads the way it reads them
(a comment is only a line starting with ``#``, a ``!`` rule that names a folder takes back all it
holds, a trailing ``/`` is dropped), on real directory trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.secrets.context import secret_looking_files


def tree(root: Path, *paths: str) -> Path:
    for relative in paths:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return root


# Docker matches a `!` rule against the file and each folder above it (moby patternmatcher,
# MatchesOrParentMatches), and cleans a rule's trailing `/` away: each of these rules puts the
# credentials back into the image, so the build must warn about them.
@pytest.mark.parametrize("rule, expected", [
    ("!.aws", [".aws/credentials"]),
    ("!.aws/", [".aws/credentials"]),
    ("!/.aws/", [".aws/credentials"]),
    ("!**/.aws", [".aws/credentials"]),
    ("!.ssh", [".ssh/id_ed25519"]),
    ("!home", ["home/.kube/config"]),
    ("!home/.kube", ["home/.kube/config"]),
    ("!.env/", [".env"]),
], ids=["folder", "folder-slash", "rooted-folder-slash", "any-depth-folder", "ssh-folder", "outer-folder",
        "nested-folder", "file-slash"])
def test_a_rule_taking_back_a_folder_or_with_a_trailing_slash_is_warned_about(tmp_path, rule, expected):
    root = tree(tmp_path, ".aws/credentials", ".ssh/id_ed25519", "home/.kube/config", ".env", "train.py")
    assert secret_looking_files(root, rule + "\n") == expected


def test_a_rule_for_another_folder_takes_nothing_back(tmp_path):
    root = tree(tmp_path, ".aws/credentials", "home/.kube/config", "src/.env")
    assert secret_looking_files(root, "!src/data\n!home/.kub\n!.aw\n") == []


def test_an_any_depth_rule_naming_a_path_takes_that_path_back_at_the_top(tmp_path):
    root = tree(tmp_path, "config/.env", "other/.env")
    assert secret_looking_files(root, "!**/config/.env\n") == ["config/.env"]


def test_a_plain_name_rule_takes_the_name_back_in_every_folder(tmp_path):
    # Docker would take back only the top one; the warning errs on the side of saying more
    root = tree(tmp_path, "a/b/.env.local", "a/.env.production")
    assert secret_looking_files(root, "!.env.local\n") == ["a/b/.env.local"]


def test_a_lone_bang_line_takes_nothing_back(tmp_path):
    root = tree(tmp_path, ".env", "keys/id_rsa")
    assert secret_looking_files(root, "!\n!/\n") == []


def test_a_rule_for_a_name_starting_with_x_is_read_whole(tmp_path):
    # an X.509 certificate: a default rule keeps *.pem out; the project takes it back by name
    root = tree(tmp_path, "X509.pem", "509.pem")
    assert secret_looking_files(root, "!X509.pem\n") == ["X509.pem"]
    assert secret_looking_files(root, "!/X509.pem\n") == ["X509.pem"]


def test_a_project_rule_keeps_out_a_secret_looking_name_starting_with_x(tmp_path):
    root = tree(tmp_path, "XSRF_TOKEN.txt", "api_token.txt")
    assert secret_looking_files(root, "XSRF_TOKEN.txt\n") == ["api_token.txt"]
    assert secret_looking_files(root, "/XSRF_TOKEN.txt\n/api_token.txt\n") == []


def test_a_comment_line_is_no_rule_even_when_it_reads_like_one(tmp_path):
    # an editor's autosave copy of a token file: its name starts with '#', like a comment
    root = tree(tmp_path, "#api_token.txt#")
    assert secret_looking_files(root, "#*\n#api_token.txt#\n\n") == ["#api_token.txt#"]
    assert secret_looking_files(root, "\n\n") == ["#api_token.txt#"]
    assert secret_looking_files(root) == ["#api_token.txt#"]


def test_a_bang_rule_takes_files_back_and_never_keeps_one_out(tmp_path):
    root = tree(tmp_path, "!api_token")
    assert secret_looking_files(root, "!*token\n") == ["!api_token"]


def test_a_file_the_project_ignores_does_not_end_the_scan_of_its_folder(tmp_path):
    root = tree(tmp_path, "a_token", "b_token", "sub/c_token")
    assert secret_looking_files(root, "a_token\n") == ["b_token", "sub/c_token"]
