"""Slack settings from the environment, read once at start-up and passed down (never at import time)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from adapters.catalog_settings import CatalogSettings
from adapters.settings import SettingsError, load_settings

__all__ = ["DEFAULT_SLACK_API_URL", "SettingsError", "SlackSettings", "load_slack_settings"]

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
# Public (C) and private (G) channel ids: upper-case letters and digits.
_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,}")


class SlackSettings(CatalogSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: SecretStr = Field(description="xoxb-... bot token")
    slack_signing_secret: SecretStr | None = Field(default=None, description="needed in HTTP mode")
    slack_app_token: SecretStr | None = Field(default=None, description="xapp-... token for Socket Mode")
    slack_auto_reply_channels: Annotated[frozenset[str], NoDecode] = frozenset()
    slack_api_url: str = DEFAULT_SLACK_API_URL
    slack_auto_reply_cooldown_seconds: float = Field(default=600.0, ge=0)

    @field_validator("slack_auto_reply_channels", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            channels = frozenset(part.strip() for part in value.split(",") if part.strip())
            # Events name channels by id: a name (#general) would silently never match. Never quoted back.
            if not all(_CHANNEL_ID.fullmatch(channel) for channel in channels):
                raise ValueError("must be channel ids (C0123456789, from the channel's details), not names")
            return channels
        return value

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token_shape(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().startswith("xoxb-"):
            raise ValueError("must be a bot token starting with xoxb-")
        return value

    @field_validator("slack_app_token")
    @classmethod
    def _app_token_shape(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith("xapp-"):
            raise ValueError("must be an app-level token starting with xapp-")
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value if value.endswith("/") else value + "/"


def load_slack_settings(*, http_mode: bool = False) -> SlackSettings:
    """Settings from the environment, or a SettingsError naming the variable (never its value)."""
    settings = load_settings(SlackSettings)
    if http_mode and settings.slack_signing_secret is None:
        raise SettingsError("SLACK_SIGNING_SECRET is not set (HTTP mode verifies every request with it)")
    if not http_mode and settings.slack_app_token is None and settings.slack_signing_secret is None:
        raise SettingsError("set SLACK_APP_TOKEN for Socket Mode, or SLACK_SIGNING_SECRET and use --http")
    return settings
