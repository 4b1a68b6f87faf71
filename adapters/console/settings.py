"""The console's settings, read with the service's (`ServiceSettings` inherits them): off unless a token or a
user list is set."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from adapters.console.auth import Network, parse_networks


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
    # The reverse proxies in front of the console (comma-separated IPs or CIDR networks): only a request from
    # one of them has its `X-Forwarded-For` read for the client's address (login slow-down, logs). Empty: the
    # peer's address is the client's, whatever the header says.
    panicbot_trusted_proxies: str = ""

    @field_validator("panicbot_trusted_proxies")
    @classmethod
    def _networks(cls, value: str) -> str:
        parse_networks(value)  # a ValueError names the bad entry
        return value

    @property
    def trusted_proxies(self) -> tuple[Network, ...]:
        return parse_networks(self.panicbot_trusted_proxies)

    @property
    def console_enabled(self) -> bool:
        return bool(self.panicbot_console_token or self.panicbot_console_users)
