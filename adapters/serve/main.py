"""`panicbot serve`: every adapter whose credentials are set, in one asyncio process, with `GET /healthz`,
`GET /readyz` and `GET /metrics`, catalog hot reload (SIGHUP or a file change) and graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import Gauge
from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import SettingsConfigDict

from adapters.catalog_settings import CatalogSettings
from adapters.chat.flows import PASTE_READERS
from adapters.console.settings import ConsoleSettings
from adapters.observe import Observer, Observers
from adapters.outbox import Outbox
from adapters.platforms import Platform, ServeOptions, platform
from adapters.redis_memory import RateLimiter
from adapters.serve.live_catalog import CatalogLoadError, LiveLookup, LoadReport
from adapters.serve.metrics import CONTENT_TYPE, Metrics
from adapters.settings import DEFAULT_DATABASE_URL, SAME_SIGNAL_SECONDS, SettingsError, describe_problems
from adapters.storage import SqlStore, StorageError, upgrade_database
from bot.lookup import PanicLookup
from bot.matcher import LookupResult

log = logging.getLogger("panicbot.service")

USER_RATE_WINDOW_SECONDS = 60.0
PRUNE_EVERY_SECONDS = 24 * 3600
STORE_BACKLOG = 10_000  # lookups waiting to be written before statistics are dropped


class StoreObserver:
    """Counts matches and keeps unmatched panics (redacted) for `panicbot report`. A database outage is
    logged and costs the statistic, never the reply (`Observers` logs and skips a failing observer)."""

    def __init__(self, store: SqlStore, on_failure: Callable[[str], None] | None = None) -> None:
        self.store = store
        self._on_failure = on_failure
        # One writer thread: the database never blocks the event loop (a hung connection would stall every
        # ack), and writes keep their order. Statistics are best effort: a full backlog drops, counted.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="panicbot-store")
        self._backlog = threading.BoundedSemaphore(STORE_BACKLOG)

    def looked_up(self, platform: str, result: LookupResult, seconds: float) -> None:
        if not self._backlog.acquire(blocking=False):
            if self._on_failure is not None:
                self._on_failure("StoreObserver")
            return
        self._writer.submit(self._write, result, platform)

    def _write(self, result: LookupResult, platform: str) -> None:
        try:
            self.store.record_lookup(result, platform)
        except Exception as exc:
            log.warning("storing a lookup failed: %s", exc.__class__.__name__)
            if self._on_failure is not None:
                self._on_failure("StoreObserver")
        finally:
            self._backlog.release()

    def close(self) -> None:
        self._writer.shutdown(wait=True, cancel_futures=False)

    def auto_replied(self, platform: str, record_id: str) -> None:
        """Counted with the lookup already."""

    def voted(self, platform: str, vote: str) -> None:
        """Stored by the feedback store itself."""

    def api_error(self, platform: str, error: str) -> None:
        """Metrics count these; nothing to keep."""


class ServiceError(Exception):
    """Start-up cannot go on; the message says which setting to fix."""


class ServiceSettings(CatalogSettings, ConsoleSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    panicbot_http_host: str = "0.0.0.0"
    panicbot_http_port: int = Field(default=8080, ge=0, le=65535)
    panicbot_log_format: str = Field(default="json", pattern="^(json|text)$")
    panicbot_catalog_watch_seconds: float = Field(default=5.0, ge=0)
    panicbot_shutdown_grace_seconds: float = Field(default=10.0, ge=0)
    # On SIGTERM, /readyz answers 503 this long before the listener closes, so a load balancer sees the
    # pod leave before its connections are refused (Kubernetes' usual pre-stop window).
    panicbot_shutdown_drain_seconds: float = Field(default=5.0, ge=0)
    redis_url: SecretStr | None = None  # shared dedupe and cooldowns across replicas; in-process without it
    database_url: SecretStr = SecretStr(DEFAULT_DATABASE_URL)  # votes, unmatched panics, matches
    panicbot_retention_days: int = Field(default=90, ge=1)
    panicbot_user_rate_limit: int = Field(default=20, ge=0)  # lookups per user per minute; 0: no limit
    # A client gets this long for a request's headers (from connecting, or from the previous response) and
    # again for its body; slower, its connection is closed. Also the idle keep-alive time.
    panicbot_http_read_timeout_seconds: float = Field(default=10.0, gt=0)


def load_service_settings() -> ServiceSettings:
    try:
        return ServiceSettings()
    except ValidationError as exc:
        raise ServiceError(describe_problems(exc)) from None


@dataclass
class ServiceStatus:
    """What /readyz reports: the catalog is loaded and every started platform is connected."""

    live: LiveLookup
    stopping: bool = False
    checks: dict[str, Any] = field(default_factory=dict)

    def ready(self) -> tuple[bool, dict[str, bool]]:
        states = {"catalog": len(self.live.matcher) > 0}
        for name, check in self.checks.items():
            try:
                states[name] = bool(check())
            except Exception:
                states[name] = False
        return (not self.stopping and all(states.values())), states


MAX_BODY_BYTES = 2 * 1024 * 1024


@web.middleware
async def refuse_compressed_bodies(request: web.Request, handler: Any) -> web.StreamResponse:
    """415 for any compressed body, before a byte of it is read: no endpoint takes one (Slack never sends
    them), and a small gzip body can inflate to gigabytes. The runner never inflates bodies either."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return web.json_response({"error": "compressed bodies are not accepted"}, status=415)
    response: web.StreamResponse = await handler(request)
    return response


def http_runner_options(read_timeout: float) -> dict[str, Any]:
    """AppRunner options that hold no connection for a slow client and never inflate a body.

    aiohttp arms its keep-alive timer when a connection opens and after each response, and closes the
    connection if no complete request head has arrived when it fires: with the read timeout as that timer,
    headers dribbled slower than it get the connection closed. An unread body is drained at most as long."""
    return {"keepalive_timeout": read_timeout, "lingering_time": read_timeout, "auto_decompress": False}


def build_service_application(status: ServiceStatus, metrics: Metrics) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(_: web.Request) -> web.Response:
        ready, states = status.ready()
        body = {"ready": ready, "stopping": status.stopping, **states, "records": len(status.live.matcher)}
        return web.json_response(body, status=200 if ready else 503)

    async def metrics_page(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    web_app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[refuse_compressed_bodies])
    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/readyz", readyz)
    web_app.router.add_get("/metrics", metrics_page)
    return web_app


class Service:
    """One process: the catalog, the observers, the HTTP endpoints and the chat adapters."""

    def __init__(self, settings: ServiceSettings, platforms: list[str], *, slack_http: bool = False) -> None:
        self.settings = settings
        self.platforms = platforms
        self.options = ServeOptions(http=slack_http)
        self.http_read_timeout = settings.panicbot_http_read_timeout_seconds
        # Every platform's settings are read now, so a bad one stops start-up before anything runs.
        self.platform_settings: list[tuple[Platform, Any]] = [self._settings_of(name) for name in platforms]
        self.failure: str | None = None
        self.failure_error: BaseException | None = None  # what ended a platform's connection, if anything
        self.metrics = Metrics()
        self.unasked_dropped = Gauge(
            "panicbot_unasked_dropped",
            "Unasked lookups dropped (since start) because their channel had too many queued",
            ["platform"],
            registry=self.metrics.registry,
        )
        self.store = self._open_store()
        self.feedback = self.store
        count_failure = self.metrics.observer_failures.labels
        self.store_observer = StoreObserver(self.store, on_failure=lambda name: count_failure(name).inc())
        self.observer: Observer = Observers(
            self.metrics, self.store_observer, on_failure=lambda name: count_failure(name).inc()
        )
        try:
            self.live = LiveLookup(
                settings.catalog_paths,
                on_loaded=self._catalog_loaded,
                on_refused=lambda: self.metrics.catalog_reloads.labels("refused").inc(),
            )
        except CatalogLoadError as exc:
            raise ServiceError(f"PANICBOT_CATALOG cannot be served: {exc}") from None
        self.status = ServiceStatus(self.live)
        self.web_app = build_service_application(self.status, self.metrics)
        # Outboxes (and the console's shared logouts) close last: a Slack reply acknowledged while the HTTP
        # server finishes is still stored.
        self._outbox_closers: list[Any] = []
        if settings.console_enabled:  # the maintainers' console, off unless a credential is set
            from adapters.console.app import mount_console  # noqa: PLC0415  (loads Jinja2 and pygal)

            try:
                mount_console(
                    self.web_app, settings, lambda: self.live.current, self.store, self._revocations()
                )
            except SettingsError as exc:
                raise ServiceError(str(exc)) from None
        self._tasks: list[asyncio.Task[Any]] = []
        self._closers: list[Any] = []
        self._drains: list[Any] = []
        self._drains_before_close: list[Any] = []
        self._redis_parts: list[Any] = []
        self._shared_clients: list[Any] = []  # Redis clients of the shared state: closed after the drains
        self.states: dict[str, Any] = {}  # each platform's ChatState, once started
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self.signalled: str | None = None  # the signal that stopped the service, if one did
        self.signalled_at: float | None = None  # when (time.monotonic) that first signal came
        self.started = asyncio.Event()
        # Whether a stop signal came during start-up, before the loop took signals over (set by the CLI).
        self.stop_requested: Callable[[], bool] = lambda: False
        self.bound: Any = None

    def _catalog_loaded(self, lookup: PanicLookup, report: LoadReport) -> None:
        self.metrics.catalog_loaded(report.records, lookup.dataset_versions(), report.sources)
        self.metrics.catalog_reloads.labels("loaded").inc()

    def _open_store(self) -> SqlStore:
        """The database, migrated to the latest schema; old unmatched panics pruned (retention)."""
        url = self.settings.database_url.get_secret_value()
        try:
            upgrade_database(url)
            store = SqlStore(url)
            pruned = store.prune(self.settings.panicbot_retention_days)
        except StorageError as exc:
            raise ServiceError(f"DATABASE_URL: {exc}") from None
        if pruned:
            log.info("pruned %d rows older than %d days", pruned, self.settings.panicbot_retention_days)
        return store

    def _settings_of(self, name: str) -> tuple[Platform, Any]:
        chat = platform(name)
        try:
            return chat, chat.load_settings(self.options)
        except SettingsError as exc:
            raise ServiceError(f"cannot start {name.capitalize()}: {exc}") from None

    # -- what a platform is offered while it starts (adapters.platforms.Host) ---------------------------

    async def shared_state(
        self, prefix: str, cooldown_seconds: float, more: Callable[[Any, str], dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        return await self._shared_state(prefix, cooldown_seconds, more)

    def _revocations(self) -> Any:
        """Where console logouts are shared: Redis with REDIS_URL, else (None) the database."""
        if self.settings.redis_url is None:
            return None
        from adapters.console.revocations import RedisRevocations  # noqa: PLC0415
        from adapters.redis_memory import async_redis_from_url  # noqa: PLC0415

        try:
            client = async_redis_from_url(self.settings.redis_url.get_secret_value(), timeout=2.0)
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        revocations = RedisRevocations(client)
        self._outbox_closers.append(revocations.close)
        return revocations

    def outbox(self, platform: str) -> Outbox:
        if self.settings.redis_url is not None:
            from adapters.redis_memory import async_redis_from_url  # noqa: PLC0415
            from adapters.redis_outbox import RedisOutbox  # noqa: PLC0415

            try:
                client = async_redis_from_url(self.settings.redis_url.get_secret_value(), timeout=2.0)
            except ValueError as exc:
                raise ServiceError(str(exc)) from None
            shared = RedisOutbox(client, f"panicbot:{platform}")
            self._outbox_closers.append(shared.close)
            return shared
        from adapters.storage.outbox import SqlOutbox  # noqa: PLC0415

        try:
            outbox = SqlOutbox(self.settings.database_url.get_secret_value(), platform)
        except StorageError as exc:
            raise ServiceError(f"DATABASE_URL: {exc}") from None
        self._outbox_closers.append(lambda: asyncio.to_thread(outbox.close))
        return outbox

    def ready_when(self, name: str, check: Callable[[], bool]) -> None:
        self.status.checks[name] = check

    def on_stop(self, drain: Callable[[float], Awaitable[None]], *, before_close: bool = False) -> None:
        (self._drains_before_close if before_close else self._drains).append(drain)

    def on_close(self, close: Callable[[], Awaitable[Any]]) -> None:
        self._closers.append(close)

    def run_for_life(self, work: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(work)

        def ended(done: asyncio.Future[None]) -> None:
            if done.cancelled():
                return
            error = done.exception()
            # The connection is the adapter's whole life: when it ends, the process ends and the
            # orchestrator restarts it, instead of a replica that looks alive and answers nothing.
            self.failure_error = error
            if isinstance(error, SettingsError):  # a refused token: its message names the variable
                self.failure = str(error)
            else:
                self.failure = f"{name} stopped: {error}" if error else f"{name} connection closed"
            log.error("%s", self.failure)
            self._stop.set()

        task.add_done_callback(ended)
        self._tasks.append(task)

    async def _shared_state(
        self,
        prefix: str,
        cooldown_seconds: float,
        more: Callable[[Any, str], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Redis-backed dedupe and cooldowns when REDIS_URL is set (several replicas), else nothing;
        `more(client, prefix)` adds an adapter's own shared parts."""
        if self.settings.redis_url is None:
            limit = self.settings.panicbot_user_rate_limit
            return {"rate_limit": RateLimiter(limit, USER_RATE_WINDOW_SECONDS)} if limit else {}
        from adapters.redis_memory import (  # noqa: PLC0415
            RedisCooldown,
            RedisEventDeduper,
            RedisRateLimiter,
            async_redis_from_url,
            redacted_url,
            redis_reachable,
        )

        try:
            client = async_redis_from_url(self.settings.redis_url.get_secret_value())
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        self._shared_clients.append(client)
        log.info("shared state in Redis at %s", redacted_url(self.settings.redis_url.get_secret_value()))
        if not await redis_reachable(client):
            log.warning(
                "Redis is not reachable now: dedupe and cooldowns fall back to this process until it is"
            )
        seen = RedisEventDeduper(client, prefix)
        cooldown = RedisCooldown(client, prefix, cooldown_seconds)
        shared: dict[str, Any] = {"seen": seen, "cooldown": cooldown}
        limit = self.settings.panicbot_user_rate_limit
        if limit:
            shared["rate_limit"] = RedisRateLimiter(client, prefix, limit, USER_RATE_WINDOW_SECONDS)
        if more is not None:
            shared.update(more(client, prefix))
        self._redis_parts.extend(shared.values())
        parts = self._redis_parts
        self.metrics.shared_state_failures.set_function(lambda: float(sum(p.failures for p in parts)))
        return shared

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._signalled, sig)
        if self.stop_requested():
            # A SIGTERM during start-up whose exception was swallowed (raised inside a weakref or gc
            # callback, which Python only reports): the stop it asked for still happens.
            self._signalled(signal.SIGTERM)
        self.live.install_sighup(loop)
        # Platforms register their routes and checks here and connect in the background (run_for_life):
        # the endpoints answer before any platform is connected (/readyz 503 until then), and a signal
        # stops the process whatever state a connection is in.
        for chat, settings in self.platform_settings:
            self.states[chat.name] = await chat.start(self, settings, self.options)
            self._count_drops(chat.name, self.states[chat.name])
        if self.signalled is not None:  # a signal while the platforms started: nothing to drain or serve
            await self.shutdown(None)
            return
        if self.platform_settings:
            PASTE_READERS.warm()  # the reader process of large pastes starts now, not on the first one
        runner = web.AppRunner(
            self.web_app,
            shutdown_timeout=self.settings.panicbot_shutdown_grace_seconds,
            **http_runner_options(self.settings.panicbot_http_read_timeout_seconds),
        )
        await runner.setup()
        site = web.TCPSite(runner, self.settings.panicbot_http_host, self.settings.panicbot_http_port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ServiceError(
                f"PANICBOT_HTTP_PORT: cannot listen on {self.settings.panicbot_http_host}:"
                f"{self.settings.panicbot_http_port} ({exc.strerror or exc})"
            ) from None
        self.bound = runner.addresses[0] if runner.addresses else None
        self.started.set()
        log.info(
            "panicbot serving",
            extra={"platforms": ",".join(self.platforms), "port": self.settings.panicbot_http_port},
        )
        self._tasks.append(asyncio.create_task(self._prune_daily()))
        if self.settings.panicbot_catalog_watch_seconds > 0 and self.live.paths:
            self._tasks.append(
                asyncio.create_task(self.live.watch(self.settings.panicbot_catalog_watch_seconds))
            )
        await self._stop.wait()
        await self.shutdown(runner)

    def _signalled(self, sig: signal.Signals) -> None:
        """SIGTERM or SIGINT: stop, /readyz 503 from now on. Another one within SAME_SIGNAL_SECONDS of
        the first is that signal delivered twice and is ignored; a later one cuts the readiness drain
        short."""
        now = time.monotonic()
        self.status.stopping = True
        if self.signalled_at is None:
            self.signalled_at = now
            self.signalled = sig.name
            if self._stop.is_set():  # already stopping (`stop()`): a signal means "now"
                self._hurry.set()
            self._stop.set()
            return
        since = now - self.signalled_at
        if since < SAME_SIGNAL_SECONDS:
            log.debug(
                "%s %.2f s after %s: the same signal delivered twice, ignored",
                sig.name,
                since,
                self.signalled,
            )
            return
        if not self._hurry.is_set():
            log.info("%s again: cutting the readiness drain short", sig.name)
        self._hurry.set()

    def _count_drops(self, name: str, state: Any) -> None:
        """Unasked lookups a platform dropped because a channel's queue was full."""
        if hasattr(state, "unasked_dropped"):
            self.unasked_dropped.labels(name).set_function(lambda: float(state.unasked_dropped))

    async def _prune_daily(self) -> None:
        """Retention for a process that runs for months, not only at start-up."""
        while True:
            await asyncio.sleep(PRUNE_EVERY_SECONDS)
            try:
                removed = await asyncio.to_thread(self.store.prune, self.settings.panicbot_retention_days)
            except StorageError as exc:
                log.warning("pruning old rows failed: %s", exc)
                continue
            log.info("pruned %d rows older than %d days", removed, self.settings.panicbot_retention_days)

    async def shutdown(self, runner: web.AppRunner | None) -> None:
        """Stop taking new work (readyz turns 503), let replies in flight finish (bounded), close. Without a
        runner (stopped before serving), what the platforms started is closed and one line says so."""
        if runner is None:
            log.info("stopped during start-up (%s)", self.signalled or "stop")
        else:
            log.info("shutting down")
        self.status.stopping = True
        delay = self.settings.panicbot_shutdown_drain_seconds
        if runner is not None and delay > 0 and self.failure is None:
            # /readyz answers 503 while the load balancer notices; the listener stays open meanwhile.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), timeout=delay)
        grace = self.settings.panicbot_shutdown_grace_seconds
        for drain in self._drains_before_close:
            await drain(grace)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for close in self._closers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(close(), timeout=grace)
        if runner is not None:
            await runner.cleanup()  # waits up to shutdown_timeout for requests in flight
        for drain in self._drains:
            await drain(grace)  # replies already acknowledged get their answer
        for client in self._shared_clients:  # the drained replies used it to the end
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.aclose(), timeout=grace)
        for close in self._outbox_closers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(close(), timeout=grace)
        await asyncio.to_thread(PASTE_READERS.close)
        await asyncio.to_thread(self.store_observer.close)
        if runner is not None:
            log.info("stopped")

    def stop(self) -> None:
        self._stop.set()
