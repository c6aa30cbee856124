"""Which files of a build context `cudaenv build` warns about (``cudaenv.secrets.context``): a name
that looks like a secret and no rule keeps out, or a file a default rule keeps out that the
project's own .dockerignore takes back. Rule by rule, on real directory trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.secrets.context import SECRET_IGNORES, _ignored_by_default, secret_looking_files


def tree(root: Path, *paths: str) -> Path:
    for relative in paths:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return root


@pytest.mark.parametrize("relative", [".env", "app/.env", ".env.local", "prod.env", ".netrc", "a/b/_netrc", ".pypirc",
                                      ".npmrc", ".git-credentials", "tls/server.pem", "server.key", "cert.p12", "c.pfx",
                                      "k.jks", "k.keystore", "id_rsa", "home/.ssh/id_ed25519.pub", ".aws/credentials",
                                      ".azure/x", ".config/gcloud/creds.json", "x/.docker/config.json", ".kube/config",
                                      ".ssh/known_hosts", "id_dsa", "id_ecdsa"],
                         ids=lambda p: p.replace("/", "_").replace(".", "dot"))
def test_a_default_rule_keeps_each_kind_of_secret_out(relative):
    assert _ignored_by_default(relative)


@pytest.mark.parametrize("relative", ["train.py", "environment.yml", "keys.txt", "docs/env.md", ".envrc", "key.py",
                                      "kube/config", "aws/credentials"],
                         ids=lambda p: p.replace("/", "_").replace(".", "dot"))
def test_ordinary_project_files_are_not_ignored(relative):
    assert not _ignored_by_default(relative)


def test_every_default_rule_is_a_pattern_at_any_depth():
    assert all(rule.startswith("**/") for rule in SECRET_IGNORES)


def test_a_secret_looking_name_no_rule_covers_is_warned_about(tmp_path):
    root = tree(tmp_path, "api_token.txt", "config/Service-Account.json", "db_password", "my-private_key.txt",
                "notes/credentials.md", "train.py", "secrets/README")
    assert secret_looking_files(root) == ["api_token.txt", "db_password", "my-private_key.txt",  # top folder first
                                          "config/Service-Account.json", "notes/credentials.md"]


def test_a_default_ignored_file_is_warned_about_only_when_taken_back(tmp_path):
    root = tree(tmp_path, ".env", "deploy/server.pem", "deploy/other.pem", "keys/id_rsa")
    assert secret_looking_files(root) == []
    assert secret_looking_files(root, "# keep the cert\n!deploy/server.pem\n") == ["deploy/server.pem"]
    assert secret_looking_files(root, "!**/*.pem\n") == ["deploy/other.pem", "deploy/server.pem"]
    assert secret_looking_files(root, "!/.env\n") == [".env"]
    assert secret_looking_files(root, "!id_rsa\n") == ["keys/id_rsa"]  # a name rule takes it back anywhere


def test_a_file_the_project_ignores_itself_is_no_warning(tmp_path):
    root = tree(tmp_path, "api_token.txt", "private/secret.txt", "deep/a/token.json")
    assert secret_looking_files(root, "api_token.txt\n/private/*\ntoken.json\n") == []


def test_tool_folders_are_not_scanned(tmp_path):
    root = tree(tmp_path, ".git/secret", ".venv/lib/token.py", "venv/token", "node_modules/x/token.js",
                "__pycache__/token.pyc", ".mypy_cache/token", ".pytest_cache/token", "src/token.py")
    assert secret_looking_files(root) == ["src/token.py"]


def test_the_scan_stops_after_its_limit(tmp_path, monkeypatch):
    import cudaenv.secrets.context as context

    monkeypatch.setattr(context, "_SCAN_LIMIT", 3)
    root = tree(tmp_path, "a_token", "b_token", "c_token", "d_token", "e_token")
    assert secret_looking_files(root) == ["a_token", "b_token", "c_token"]
