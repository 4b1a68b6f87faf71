"""The chat platforms panicbot can serve, and what `panicbot serve` offers each one (`Host`), with the one
policy every platform follows while it cannot be reached at start-up (`until_reachable`). The service and the
CLI loop over `REGISTRY`; a platform's module is imported only when it is served, so `panicbot lookup` never
loads a chat SDK."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aiohttp import web

from adapters.local_memory import FeedbackStore
from adapters.observe import Observer
from adapters.outbox import Outbox
from adapters.settings import PlatformUnreachable
from bot import Lookup

T = TypeVar("T")

# While a platform cannot be reached at start-up, it is asked again after this long, doubled per attempt up to
# the last (the same for every platform; read when used, so a test can shorten them).
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 30.0


async def until_reachable(attempt: Callable[[], Awaitable[T]], log: logging.Logger) -> T:
    """`attempt()`'s result once the platform answers.

    `attempt` raises `PlatformUnreachable` while the platform cannot be reached (network, DNS, a timeout, its
    outage), its message naming the platform, where and why: that is retried with backoff, one log line per
    attempt and no traceback, for as long as it takes (the service stays up, `/readyz` 503 meanwhile). A
    refused credential (`PlatformRefused`) or anything else ends it at once."""
    delay, count = RETRY_FIRST_SECONDS, 0
    while True:
        count += 1
        try:
            return await attempt()
        except PlatformUnreachable as exc:
            reason = str(exc).splitlines()[0] if str(exc) else "unreachable"
            log.warning("%s; attempt %d, next in %g s", reason, count, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_SECONDS)


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

    async def shared_state(
        self, prefix: str, cooldown_seconds: float, more: Callable[[Any, str], dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Dedupe, cooldown and rate limit for a `ChatState` (Redis-backed with REDIS_URL)."""

    def outbox(self, platform: str) -> Outbox:
        """Where `platform` keeps the work it acknowledged until it is done (Redis with REDIS_URL, else the
        service's database): every replica sees it, and it outlives the process."""

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
