"""The chat platforms panicbot can serve, and what `panicbot serve` offers each one (`Host`). The service
and the CLI loop over `REGISTRY`; a platform's module is imported only when it is served, so `panicbot
lookup` never loads a chat SDK."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from adapters.local_memory import FeedbackStore
from adapters.observe import Observer
from bot import Lookup


@dataclass(frozen=True)
class ServeOptions:
    """What `panicbot serve` was asked besides the platforms: `http` serves a platform's webhooks on the
    service's port (Slack's `--http`) instead of a socket it opens itself."""

    http: bool = False


class Host(Protocol):
    """The running service, as a platform sees it while it starts."""

    @property
    def live(self) -> Lookup:
        """The catalog serving now (hot-reloaded)."""

    @property
    def observer(self) -> Observer:
        """Metrics and storage, for lookups, replies, votes and API errors."""

    @property
    def feedback(self) -> FeedbackStore:
        """Where votes go."""

    @property
    def web_app(self) -> web.Application:
        """The service's HTTP application (`/healthz` ...), for webhooks."""

    @property
    def http_read_timeout(self) -> float:
        """How long a webhook client gets to send a request."""

    def shared_state(
        self, prefix: str, cooldown_seconds: float, more: Callable[[Any, str], dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Dedupe, cooldown and rate limit for a `ChatState` (Redis-backed with REDIS_URL)."""

    def ready_when(self, name: str, check: Callable[[], bool]) -> None:
        """`/readyz` reports `name` ready while `check()` is true."""

    def on_stop(self, drain: Callable[[float], Awaitable[None]], *, before_close: bool = False) -> None:
        """Let work in flight finish at shutdown: before connections close, or after the HTTP server."""

    def on_close(self, close: Callable[[], Awaitable[Any]]) -> None:
        """Close a connection at shutdown."""

    def run_for_life(self, work: Awaitable[None], name: str) -> None:
        """Run the platform's connection; when it ends, the process ends (the orchestrator restarts it)."""


class Platform(Protocol):
    """One chat platform: its settings, and how it starts inside the service."""

    name: str

    def load_settings(self, options: ServeOptions) -> Any:
        """The platform's settings from the environment; a SettingsError names the variable."""

    async def start(self, host: Host, settings: Any, options: ServeOptions) -> Any:
        """Connect and register with the host; returns the platform's `ChatState`."""


@dataclass(frozen=True)
class Registered:
    name: str
    variable: str  # the credential whose presence turns the platform on
    module: str  # holds `PLATFORM`, a `Platform`

    def load(self) -> Platform:
        platform: Platform = importlib.import_module(self.module).PLATFORM
        return platform


REGISTRY: tuple[Registered, ...] = (
    Registered("slack", "SLACK_BOT_TOKEN", "adapters.slack.server"),
    Registered("discord", "DISCORD_TOKEN", "adapters.discord.runner"),
    Registered("github", "GITHUB_WEBHOOK_SECRET", "adapters.github.app"),
)
NAMES = tuple(entry.name for entry in REGISTRY)
VARIABLES = {entry.name: entry.variable for entry in REGISTRY}


def configured_platforms(environ: Mapping[str, str]) -> list[str]:
    """The platforms whose credential is set."""
    return [entry.name for entry in REGISTRY if environ.get(entry.variable)]


def platform(name: str) -> Platform:
    """The registered platform of that name (KeyError for another)."""
    return next(entry for entry in REGISTRY if entry.name == name).load()
