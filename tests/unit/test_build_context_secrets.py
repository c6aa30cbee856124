"""Files that commonly hold secrets never enter the build context, and look-alikes are reported."""

from __future__ import annotations

import fnmatch

import pytest

from cudaenv.images.render import render_dockerignore
from cudaenv.secrets.context import SECRET_IGNORES, secret_looking_files

COMMON_SECRETS = [".env", "config/.env.production", ".netrc", "certs/server.pem", "tls/server.key",
                  ".ssh/id_ed25519", "id_rsa", ".aws/credentials", ".config/gcloud/application_default_credentials.json",
                  ".docker/config.json", ".kube/config", ".pypirc", ".git-credentials"]


def covered(path: str, patterns) -> bool:
    """A file is excluded when a pattern matches it or one of its parent directories."""
    parts = path.split("/")
    for pattern in patterns:
        tail = pattern[3:] if pattern.startswith("**/") else pattern
        depth = tail.count("/") + 1
        if any(fnmatch.fnmatchcase("/".join(parts[i:i + depth]), tail) for i in range(len(parts) - depth + 1)):
            return True
    return False


@pytest.mark.parametrize("path", COMMON_SECRETS)
def test_the_generated_dockerignore_keeps_common_secret_files_out(path):
    rules = [line for line in render_dockerignore(None).splitlines() if line and not line.startswith("#")]
    assert covered(path, rules), path


def test_a_project_rule_comes_after_the_secret_rules_so_it_can_take_one_back_deliberately():
    text = render_dockerignore("!certs/public.pem\n")
    assert text.index(SECRET_IGNORES[-1]) < text.index("!certs/public.pem")


def test_build_secrets_in_the_project_come_last_so_no_rule_takes_them_back():
    text = render_dockerignore("!corp-ca.crt\n", secrets=["corp-ca.crt"])
    assert text.rstrip().splitlines()[-1] == "corp-ca.crt"


def test_secret_looking_names_not_covered_by_a_rule_are_reported(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "api_token.txt").write_text("x")
    (tmp_path / "service-account.json").write_text("{}")
    (tmp_path / "train.py").write_text("")
    (tmp_path / ".env").write_text("KEY=1")  # covered by default: not reported
    assert secret_looking_files(tmp_path) == ["service-account.json", "src/api_token.txt"]


def test_a_default_ignored_file_taken_back_by_the_project_is_reported(tmp_path):
    (tmp_path / ".env").write_text("KEY=1")
    assert secret_looking_files(tmp_path, "!.env\n") == [".env"]


def test_a_file_the_project_ignores_itself_is_not_reported(tmp_path):
    (tmp_path / "my_secret.yaml").write_text("x")
    assert secret_looking_files(tmp_path, "my_secret.yaml\n") == []
    assert secret_looking_files(tmp_path) == ["my_secret.yaml"]
