"""GitHub settings: an app or a token, the webhook secret always; every problem names the variable and
never shows its value."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.github.settings import SettingsError, load_github_settings
from tests.adapters.github.fake_github import new_private_key, pem
from tests.adapters.github.test_app import GITHUB_VARIABLES
from tests.support.local_only import isolate

SECRET = "webhook-secret-do-not-show"
TOKEN = "ghp_NotARealTokenDoNotShow000000000000"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    isolate(monkeypatch, *GITHUB_VARIABLES)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    return monkeypatch


def problem(env: pytest.MonkeyPatch) -> str:
    with pytest.raises(SettingsError) as failure:
        load_github_settings()
    message = str(failure.value)
    assert SECRET not in message and TOKEN not in message and "PRIVATE KEY" not in message
    return message


def test_a_token_for_one_repository(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_TOKEN", TOKEN)
    env.setenv("GITHUB_AUTO_REPLY_REPOS", "tracel-ai/burn, Tracel-AI/cubecl")
    settings = load_github_settings()
    assert not settings.app_mode
    assert settings.github_auto_reply_repos == {"tracel-ai/burn", "tracel-ai/cubecl"}
    assert settings.github_api_url == "https://api.github.com"
    assert not settings.github_auto_reply_pull_requests


def test_an_app_with_its_key_inline_or_in_a_file(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = pem(new_private_key())
    env.setenv("GITHUB_APP_ID", "4242")
    env.setenv("GITHUB_PRIVATE_KEY", key.replace("\n", "\\n"))
    assert load_github_settings().app_mode
    env.delenv("GITHUB_PRIVATE_KEY")
    path = tmp_path / "app.pem"
    path.write_text(key, encoding="utf-8")
    env.setenv("GITHUB_PRIVATE_KEY_FILE", str(path))
    assert load_github_settings().github_app_id == 4242


def test_the_webhook_secret_is_required(env: pytest.MonkeyPatch) -> None:
    env.delenv("GITHUB_WEBHOOK_SECRET")
    env.setenv("GITHUB_TOKEN", TOKEN)
    assert "GITHUB_WEBHOOK_SECRET is not set" in problem(env)


def test_credentials_problems_name_the_variable(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert "GITHUB_TOKEN" in problem(env) and "GITHUB_APP_ID" in problem(env)
    env.setenv("GITHUB_APP_ID", "4242")
    assert "GITHUB_PRIVATE_KEY" in problem(env)
    env.setenv("GITHUB_PRIVATE_KEY", "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----")
    assert "GITHUB_PRIVATE_KEY is not a PEM private key" in problem(env)
    env.setenv("GITHUB_TOKEN", TOKEN)
    assert "not both" in problem(env)
    env.delenv("GITHUB_TOKEN")
    env.delenv("GITHUB_PRIVATE_KEY")
    env.setenv("GITHUB_PRIVATE_KEY_FILE", str(tmp_path / "missing.pem"))
    assert "GITHUB_PRIVATE_KEY_FILE cannot be read" in problem(env)


def test_malformed_values_are_named_not_shown(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_TOKEN", TOKEN)
    env.setenv("GITHUB_AUTO_REPLY_REPOS", f"tracel-ai/burn,{SECRET}")
    assert "GITHUB_AUTO_REPLY_REPOS must be a comma-separated list of owner/name" in problem(env)
    env.setenv("GITHUB_AUTO_REPLY_REPOS", "tracel-ai/burn")
    env.setenv("GITHUB_API_URL", "api.github.com")
    assert "GITHUB_API_URL must be an http(s) URL" in problem(env)
    env.delenv("GITHUB_API_URL")
    env.setenv("GITHUB_TOKEN", "two words")
    assert "GITHUB_TOKEN must not contain spaces" in problem(env)
