"""GitHub settings from the environment, read once at start-up and passed down (never at import time).

Either a GitHub App (`GITHUB_APP_ID` with `GITHUB_PRIVATE_KEY` or `GITHUB_PRIVATE_KEY_FILE`) or a token for a
single repository (`GITHUB_TOKEN`); the webhook secret is always required."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from adapters.catalog_settings import CatalogSettings
from adapters.settings import SettingsError, load_settings

__all__ = ["DEFAULT_GITHUB_API_URL", "GitHubSettings", "SettingsError", "load_github_settings"]

DEFAULT_GITHUB_API_URL = "https://api.github.com"
# owner/name as GitHub allows them: an owner of letters, digits and single hyphens, a name of those and . _
_REPO = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,33}")
# A private key file holds a few kilobytes; anything far larger is not one.
_MAX_KEY_FILE_BYTES = 64 * 1024


class GitHubSettings(CatalogSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    github_webhook_secret: SecretStr = Field(description="the app's (or webhook's) secret; signs deliveries")
    github_app_id: int | None = Field(default=None, ge=1)
    github_private_key: SecretStr | None = None  # PEM; `\n` escapes are read as line breaks
    github_private_key_file: str | None = None
    github_token: SecretStr | None = None  # a token for one repository instead of an app
    github_auto_reply_repos: Annotated[frozenset[str], NoDecode] = frozenset()
    github_auto_reply_pull_requests: bool = False
    github_app_slug: str = "panicbot"  # answers `@<slug>` in comments
    github_api_url: str = DEFAULT_GITHUB_API_URL

    @field_validator("github_auto_reply_repos", mode="before")
    @classmethod
    def _repos(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if not all(_REPO.fullmatch(part) for part in parts):
            # The message never quotes the value: a secret pasted into the wrong variable must not be shown.
            raise ValueError("must be a comma-separated list of owner/name repositories")
        return frozenset(part.lower() for part in parts)  # GitHub's names are case-insensitive

    @field_validator("github_webhook_secret", "github_token")
    @classmethod
    def _no_blanks(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        secret = value.get_secret_value().strip()
        if not secret:
            raise ValueError("is empty")
        if any(character.isspace() for character in secret):
            raise ValueError("must not contain spaces or line breaks")
        return SecretStr(secret)

    @field_validator("github_app_slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        slug = value.strip().lower().removeprefix("@")
        if not _SLUG.fullmatch(slug):
            raise ValueError("must be the app's slug (lower-case letters, digits and hyphens)")
        return slug

    @field_validator("github_api_url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @property
    def app_mode(self) -> bool:
        return self.github_app_id is not None


def _private_key_text(settings: GitHubSettings) -> str:
    if settings.github_private_key is not None:
        if settings.github_private_key_file:
            raise SettingsError("set GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_FILE, not both")
        # One-line environments (.env files, some orchestrators) carry the PEM's line breaks as `\n`.
        return settings.github_private_key.get_secret_value().replace("\\n", "\n")
    if not settings.github_private_key_file:
        raise SettingsError(
            "GITHUB_PRIVATE_KEY (or GITHUB_PRIVATE_KEY_FILE) is not set (GITHUB_APP_ID needs it)"
        )
    path = Path(settings.github_private_key_file)
    try:
        if path.stat().st_size > _MAX_KEY_FILE_BYTES:
            raise SettingsError("GITHUB_PRIVATE_KEY_FILE is not a private key file (too large)")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"GITHUB_PRIVATE_KEY_FILE cannot be read ({exc.__class__.__name__})") from None


def read_private_key(settings: GitHubSettings) -> RSAPrivateKey:
    """The app's RSA private key; a SettingsError names the variable, never the key."""
    variable = "GITHUB_PRIVATE_KEY" if settings.github_private_key is not None else "GITHUB_PRIVATE_KEY_FILE"
    text = _private_key_text(settings)
    try:
        key = load_pem_private_key(text.strip().encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise SettingsError(f"{variable} is not a PEM private key without a passphrase") from None
    if not isinstance(key, RSAPrivateKey):
        raise SettingsError(f"{variable} is not an RSA key (GitHub Apps sign with RS256)")
    return key


def load_github_settings() -> GitHubSettings:
    """Settings from the environment, or a SettingsError naming the variable (never its value)."""
    settings = load_settings(GitHubSettings)
    has_key = settings.github_private_key is not None or bool(settings.github_private_key_file)
    if settings.app_mode and settings.github_token is not None:
        raise SettingsError("set GITHUB_APP_ID (a GitHub App) or GITHUB_TOKEN (one repository), not both")
    if not settings.app_mode and settings.github_token is None:
        if has_key:
            raise SettingsError("GITHUB_APP_ID is not set (the private key belongs to an app)")
        raise SettingsError("set GITHUB_APP_ID with GITHUB_PRIVATE_KEY (a GitHub App), or GITHUB_TOKEN")
    if settings.app_mode:
        read_private_key(settings)  # a bad key stops start-up now, not at the first delivery
    return settings
