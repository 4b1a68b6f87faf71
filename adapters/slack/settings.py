"""Slack settings from the environment, read once at start-up and passed down (never at import time)."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_SLACK_API_URL = "https://slack.com/api/"


class SettingsError(Exception):
    """A missing or malformed setting: the message names the variable and never shows its value."""


class SlackSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: SecretStr = Field(description="xoxb-... bot token")
    slack_signing_secret: SecretStr | None = Field(default=None, description="needed in HTTP mode")
    slack_app_token: SecretStr | None = Field(default=None, description="xapp-... token for Socket Mode")
    slack_auto_reply_channels: Annotated[frozenset[str], NoDecode] = frozenset()
    slack_api_url: str = DEFAULT_SLACK_API_URL
    slack_auto_reply_cooldown_seconds: float = Field(default=600.0, ge=0)
    panicbot_catalog: str = ""

    @field_validator("slack_auto_reply_channels", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(part.strip() for part in value.split(",") if part.strip())
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

    @property
    def catalog_paths(self) -> list[str]:
        return [part for part in self.panicbot_catalog.split(os.pathsep) if part.strip()]


def load_slack_settings(*, http_mode: bool = False) -> SlackSettings:
    """Settings from the environment, or a SettingsError naming the variable (never its value)."""
    try:
        settings = SlackSettings()  # type: ignore[call-arg]  # pydantic-settings fills fields from the env
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            variable = str(error["loc"][0]).upper() if error["loc"] else "settings"
            reason = (
                "is not set" if error["type"] == "missing" else error["msg"].removeprefix("Value error, ")
            )
            problems.append(f"{variable} {reason}")
        raise SettingsError("; ".join(problems)) from None
    if http_mode and settings.slack_signing_secret is None:
        raise SettingsError("SLACK_SIGNING_SECRET is not set (HTTP mode verifies every request with it)")
    if not http_mode and settings.slack_app_token is None and settings.slack_signing_secret is None:
        raise SettingsError("set SLACK_APP_TOKEN for Socket Mode, or SLACK_SIGNING_SECRET and use --http")
    return settings
