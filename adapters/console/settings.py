"""The console's settings, read with the service's (`ServiceSettings` inherits them): off unless a token or a
user list is set."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConsoleSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    # One shared token (compared in constant time); or users, each `name:<argon2 hash>`, separated by spaces,
    # newlines or `;` (`panicbot console --hash-token` prints a hash). Either one turns the console on.
    panicbot_console_token: SecretStr | None = None
    panicbot_console_users: SecretStr | None = None
    # Signs session cookies and CSRF tokens. Unset: a random key per process (sessions end at a restart, and
    # replicas behind one address need a shared key).
    panicbot_console_secret: SecretStr | None = None
    panicbot_console_session_hours: float = Field(default=12.0, gt=0)
    # Records drafted in the console are appended here (JSONL, schema v2), never to the live catalog.
    panicbot_console_drafts: str = "drafts.jsonl"

    @property
    def console_enabled(self) -> bool:
        return bool(self.panicbot_console_token or self.panicbot_console_users)
