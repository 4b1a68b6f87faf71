"""Discord settings from the environment, read once at start-up and passed down (never at import time)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from adapters.catalog_settings import CatalogSettings
from adapters.settings import SettingsError, load_settings

__all__ = ["DEFAULT_DISCORD_API_URL", "DiscordSettings", "SettingsError", "load_discord_settings"]

DEFAULT_DISCORD_API_URL = "https://discord.com/api/v10"


def _int_list(value: object, what: str) -> object:
    if not isinstance(value, str):
        return value
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        # The message never quotes the value: a token pasted into the wrong variable must not be shown.
        raise ValueError(f"must be a comma-separated list of {what}")
    return [int(part) for part in parts]


class DiscordSettings(CatalogSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    discord_token: SecretStr = Field(description="the bot token from the developer portal (Bot page)")
    discord_help_channel_ids: Annotated[frozenset[int], NoDecode] = frozenset()
    discord_api_url: str = DEFAULT_DISCORD_API_URL
    discord_shard_count: int | None = Field(default=None, ge=1)
    discord_shard_ids: Annotated[tuple[int, ...] | None, NoDecode] = None
    discord_auto_reply_cooldown_seconds: float = Field(default=600.0, ge=0)

    @field_validator("discord_help_channel_ids", mode="before")
    @classmethod
    def _channel_ids(cls, value: object) -> object:
        return _int_list(value, "channel ids")

    @field_validator("discord_shard_ids", mode="before")
    @classmethod
    def _shard_ids(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return _int_list(value, "shard numbers")

    @field_validator("discord_token")
    @classmethod
    def _token_shape(cls, value: SecretStr) -> SecretStr:
        token = value.get_secret_value().strip()
        if not token:
            raise ValueError("is empty")
        if token.lower().startswith("bot "):
            raise ValueError("must be the bare bot token, without the 'Bot ' prefix")
        if any(character.isspace() for character in token):
            raise ValueError("must not contain spaces or line breaks")
        return SecretStr(token)

    @field_validator("discord_api_url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        # discord.py joins Route.BASE and "/users/@me": no trailing slash.
        return value.rstrip("/")

    @model_validator(mode="after")
    def _shards_fit(self) -> DiscordSettings:
        ids = self.discord_shard_ids
        if ids is None:
            return self
        if self.discord_shard_count is None:
            raise ValueError("DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT (the total number of shards)")
        if not ids or len(set(ids)) != len(ids) or any(i >= self.discord_shard_count for i in ids):
            raise ValueError("DISCORD_SHARD_IDS must be distinct shard numbers below DISCORD_SHARD_COUNT")
        return self

    @property
    def sharded(self) -> bool:
        return self.discord_shard_count is not None


def load_discord_settings() -> DiscordSettings:
    """Settings from the environment, or a SettingsError naming the variable (never its value)."""
    return load_settings(DiscordSettings)
