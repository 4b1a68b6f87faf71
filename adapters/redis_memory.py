"""State shared by every replica of an adapter, in Redis: event dedupe, auto-reply cooldowns, rate limits.

Behind a load balancer Slack may deliver an event to one replica and its retry to another, and two pastes of
the same panic may land on two replicas: only state both replicas see answers once. Each class here
implements the protocol of the in-process one (`adapters.local_memory`) and keeps such an in-process object as
its fallback: when Redis is unreachable, slow or refuses a command, the answer comes from the fallback (one
replica's view, which is what a single process has anyway), a warning is logged at most once a minute and
`.failures` counts the errors, so a Redis outage degrades dedupe but never stops a lookup or raises into a
handler.

The client is redis-py's asyncio one (`async_redis_from_url`) and the protocols are awaited by the handlers:
a slow or dead Redis holds up the handler that asked, for at most one short timeout per pause after a
failure, and never the event loop (other events, health checks and replies go on meanwhile).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from adapters.local_memory import (
    EVENT_TTL_SECONDS,
    Clock,
    Cooldown,
    CooldownGate,
    EventDeduper,
    ExpiringMap,
    KeyedMemory,
    LocalMemory,
    SeenEvents,
)

log = logging.getLogger("panicbot.shared_state")

T = TypeVar("T")
V = TypeVar("V")

# Redis on the same network answers in well under a millisecond; half a second means it is not answering.
REDIS_TIMEOUT_SECONDS = 0.5
# After a failure the fallback answers alone for this long, so a dead Redis costs one timeout per pause
# instead of one per event.
RETRY_REDIS_AFTER_SECONDS = 5.0
# At most one "Redis unavailable" warning per object in this time, however many calls fail.
LOG_EVERY_SECONDS = 60.0
_MAX_ERROR_TEXT = 200

# A fixed window per key: the first hit starts the window (PEXPIRE), later hits only count. Lua makes the
# two steps atomic across replicas; the PTTL check heals a key left without expiry (by a manual INCR, say).
_RATE_LIMIT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return count
"""
# A cooldown's hold: taken when free, or taken again (its time renewed) by the holder that holds it. The
# value is the holder's name after "=", or "1" for nobody in particular (never taken again).
_COOLDOWN_SCRIPT = """
local held = redis.call('GET', KEYS[1])
if held and (ARGV[1] == '1' or held ~= ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""


def redacted_url(url: str) -> str:
    """The URL as it may appear in logs: scheme, user, host, port and path, never the password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # IPv6
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ":?"
    user = parts.username or ""
    credentials = f"{user}:***@" if parts.password else (f"{user}@" if user else "")
    return f"{parts.scheme}://{credentials}{host}{port}{parts.path}"


def async_redis_from_url(url: str, *, timeout: float = REDIS_TIMEOUT_SECONDS) -> redis.asyncio.Redis:
    """A redis.asyncio client for `url` (`redis://`, `rediss://`, `unix://`) with short timeouts: a slow or
    dead Redis costs its callers the timeout, never the event loop.

    Connecting is lazy: this never touches the network. One immediate retry on a connection error mends a
    pooled connection that Redis closed (a restart, an idle timeout); timeouts are not retried, since a
    second wait would double the time a handler is held up.
    """
    password = urlsplit(url).password
    try:
        return redis.asyncio.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=AsyncRetry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            health_check_interval=30,
        )
    except ValueError as exc:  # the message may quote parts of the URL
        raise ValueError(f"REDIS_URL is not a usable Redis URL: {_scrub(str(exc), password)}") from None


async def redis_reachable(client: redis.asyncio.Redis) -> bool:
    """Whether Redis answers a PING now (for start-up logs and health checks); never raises."""
    try:
        return bool(await client.ping())
    except Exception:
        return False


def _scrub(text: str, password: str | None) -> str:
    if password:
        text = text.replace(password, "***")
    return text[:_MAX_ERROR_TEXT]


# What a user over the per-user limit is told, privately, on every platform.
RATE_LIMITED_MESSAGE = "You have asked panicbot a lot in the last minute: try again in a moment."


class RateLimit(Protocol):
    """At most `limit` requests per user per window; shared across replicas in a deployment."""

    async def allow(self, user_id: str) -> bool: ...


class RateLimiter:
    """In-process fixed-window rate limit: at most `limit` calls per user per `window_seconds`."""

    def __init__(
        self, limit: int, window_seconds: float, clock: Clock = time.monotonic, max_users: int = 100_000
    ) -> None:
        _check_limit(limit, window_seconds)
        self.limit = limit
        # The window starts at a user's first call; the entry expires with it, so a new window begins.
        self._counts: ExpiringMap[str, list[int]] = ExpiringMap(window_seconds, max_users, clock)

    async def allow(self, user_id: str) -> bool:
        count = self._counts.get(user_id)
        if count is None:
            self._counts.put(user_id, [1])
            return True
        count[0] += 1  # in place: put() would restart the window
        return count[0] <= self.limit


def _check_limit(limit: int, window_seconds: float) -> None:
    if limit < 1:
        raise ValueError(f"a rate limit needs limit >= 1, not {limit}")
    if not window_seconds > 0:
        raise ValueError(f"a rate limit needs a window > 0 s, not {window_seconds}")


class _RedisWithFallback:
    """Runs Redis calls; on any failure counts it, pauses Redis for a while and lets the fallback answer."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        prefix: str,
        what: str,
        *,
        clock: Clock,
        retry_after: float,
        log_every: float,
    ) -> None:
        self.client, self.prefix, self.what = client, prefix.rstrip(":"), what
        self._clock, self._retry_after, self._log_every = clock, retry_after, log_every
        # For metrics: Redis calls that failed, and answers the in-process fallback gave instead.
        self.failures = 0
        self.fallbacks = 0
        self._paused_until = -math.inf
        self._next_log = -math.inf
        self._failures_unlogged = 0
        self._in_outage = False
        self._password = client.connection_pool.connection_kwargs.get("password")

    def _key(self, kind: str, *parts: str) -> str:
        return ":".join((self.prefix, kind, *parts))

    @property
    def degraded(self) -> bool:
        """True while the last Redis call failed (the fallback is answering)."""
        return self._paused_until > -math.inf

    async def _redis(self, call: Callable[[], Awaitable[T]]) -> T | None:
        """`call()`'s result, or None when Redis failed or is paused (the caller asks its fallback)."""
        if self._clock() >= self._paused_until:
            try:
                result = await call()
            except Exception as exc:  # whatever went wrong, the handler must still get an answer
                self._failed(exc)
            else:
                self._recovered()
                return result
        self.fallbacks += 1
        return None

    def _failed(self, exc: Exception) -> None:
        now = self._clock()
        self.failures += 1
        self._paused_until = now + self._retry_after
        reason = _scrub(f"{exc.__class__.__name__}: {exc}", self._password)
        if not self._in_outage:
            # The start of every outage is logged, however soon after the last one: rate-limiting it would
            # hide a second outage (and its end) entirely. Outages are at least `retry_after` apart.
            self._in_outage = True
            self._failures_unlogged = 0
            self._next_log = now + self._log_every
            log.warning(
                "Redis unavailable for %s (%s): answering from in-process state, retrying every %g s",
                self.what,
                reason,
                self._retry_after,
            )
            return
        # Within one outage, a reminder at most every `log_every` seconds.
        self._failures_unlogged += 1
        if now < self._next_log:
            return
        log.warning(
            "Redis still unavailable for %s (%s): %d failures since the last warning",
            self.what,
            reason,
            self._failures_unlogged,
        )
        self._next_log = now + self._log_every
        self._failures_unlogged = 0

    def _recovered(self) -> None:
        self._paused_until = -math.inf
        if self._in_outage:
            self._in_outage = False
            log.info("Redis is back for %s", self.what)


class RedisEventDeduper(_RedisWithFallback):
    """`EventDeduper` across replicas: `SET <prefix>:event:<id> 1 NX EX ttl` succeeds for one delivery."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        prefix: str,
        ttl_seconds: int = EVENT_TTL_SECONDS,
        *,
        fallback: EventDeduper | None = None,
        clock: Clock = time.monotonic,
        retry_after: float = RETRY_REDIS_AFTER_SECONDS,
        log_every: float = LOG_EVERY_SECONDS,
    ) -> None:
        super().__init__(
            client, prefix, "event dedupe", clock=clock, retry_after=retry_after, log_every=log_every
        )
        self.ttl_seconds = max(1, int(ttl_seconds))
        self.fallback: EventDeduper = fallback if fallback is not None else SeenEvents(clock)

    async def first_time(self, event_id: str) -> bool:
        key = self._key("event", event_id)

        async def claim() -> bool:
            return await self.client.set(key, b"1", nx=True, ex=self.ttl_seconds) is not None

        first = await self._redis(claim)
        # The fallback always records the event too: if Redis fails between a delivery and its retry, or
        # comes back without the key, this replica still knows what it handled.
        local = await self.fallback.first_time(event_id)
        return local if first is None else first and local

    async def forget(self, event_id: str) -> None:
        key = self._key("event", event_id)
        await self._redis(lambda: self.client.delete(key))
        await self.fallback.forget(event_id)


class RedisCooldown(_RedisWithFallback):
    """`CooldownGate` across replicas: `<prefix>:cooldown:<channel>:<record>` holds the holder's name (or 1)
    for the cooldown, set by a script when free or held by the same holder; `release` deletes the key."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        prefix: str,
        seconds: float,
        *,
        fallback: CooldownGate | None = None,
        clock: Clock = time.monotonic,
        retry_after: float = RETRY_REDIS_AFTER_SECONDS,
        log_every: float = LOG_EVERY_SECONDS,
    ) -> None:
        super().__init__(
            client, prefix, "auto-reply cooldown", clock=clock, retry_after=retry_after, log_every=log_every
        )
        self.seconds = seconds
        self.fallback: CooldownGate = fallback if fallback is not None else Cooldown(seconds, clock)
        # register_script does not touch the network; EVALSHA falls back to EVAL when Redis lacks it.
        self._script = client.register_script(_COOLDOWN_SCRIPT)

    async def allow(self, channel: str, record_id: str, holder: str = "") -> bool:
        if self.seconds <= 0:
            return True  # no cooldown configured (Redis refuses PX 0 anyway)
        key = self._key("cooldown", channel, record_id)
        milliseconds = max(1, round(self.seconds * 1000))
        value = f"={holder}" if holder else "1"

        async def hold() -> bool:
            return bool(await self._script(keys=[key], args=[value, milliseconds]))

        allowed = await self._redis(hold)
        if allowed is None:
            return await self.fallback.allow(channel, record_id, holder)
        if allowed:
            # Mirror what Redis allowed, so a Redis outage right after cannot let this replica answer
            # again. Redis decides while it answers: a hold released on another replica is released here.
            await self.fallback.release(channel, record_id)
            await self.fallback.allow(channel, record_id, holder)
        return allowed

    async def release(self, channel: str, record_id: str) -> None:
        key = self._key("cooldown", channel, record_id)
        # With Redis down the key stays until it expires: the cooldown then holds longer, never shorter.
        await self._redis(lambda: self.client.delete(key))
        await self.fallback.release(channel, record_id)


class RedisRateLimiter(_RedisWithFallback):
    """`RateLimit` across replicas: a fixed window per user at `<prefix>:rate:<user>`, counted atomically."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        prefix: str,
        limit: int,
        window_seconds: float,
        *,
        fallback: RateLimit | None = None,
        clock: Clock = time.monotonic,
        retry_after: float = RETRY_REDIS_AFTER_SECONDS,
        log_every: float = LOG_EVERY_SECONDS,
    ) -> None:
        _check_limit(limit, window_seconds)
        super().__init__(
            client, prefix, "rate limit", clock=clock, retry_after=retry_after, log_every=log_every
        )
        self.limit, self.window_seconds = limit, window_seconds
        # A local count starts afresh in an outage: the limit is a guard against floods, not a quota.
        self.fallback: RateLimit = (
            fallback if fallback is not None else RateLimiter(limit, window_seconds, clock)
        )
        # register_script does not touch the network; EVALSHA falls back to EVAL when Redis lacks it.
        self._script = client.register_script(_RATE_LIMIT_SCRIPT)

    async def allow(self, user_id: str) -> bool:
        key = self._key("rate", user_id)
        window_ms = max(1, round(self.window_seconds * 1000))

        async def count_hit() -> int:
            return int(await self._script(keys=[key], args=[window_ms]))

        count = await self._redis(count_hit)
        if count is None:
            return await self.fallback.allow(user_id)
        return count <= self.limit


class RedisKeyedMemory(_RedisWithFallback, Generic[V]):
    """`KeyedMemory` across replicas: `<prefix>:<kind>:<key parts>` holds the value as JSON for `ttl`
    seconds. What one replica posted, another can follow: Slack may deliver the edit or deletion of a paste
    to any replica. `pop` is atomic (GET and DEL in one transaction): one replica acts on it.

    Every write also goes to the in-process fallback. It answers while Redis fails, and afterwards for the
    keys whose Redis write failed; otherwise Redis decides (a key it lacks was removed by another replica).
    """

    def __init__(
        self,
        client: redis.asyncio.Redis,
        prefix: str,
        kind: str,
        ttl_seconds: float,
        encode: Callable[[V], dict[str, Any]],
        decode: Callable[[dict[str, Any]], V],
        *,
        fallback: KeyedMemory[tuple[str, ...], V] | None = None,
        clock: Clock = time.monotonic,
        retry_after: float = RETRY_REDIS_AFTER_SECONDS,
        log_every: float = LOG_EVERY_SECONDS,
    ) -> None:
        super().__init__(client, prefix, kind, clock=clock, retry_after=retry_after, log_every=log_every)
        self.kind = kind
        self.ttl_seconds = max(1, round(ttl_seconds))
        self._encode, self._decode = encode, decode
        self.fallback: KeyedMemory[tuple[str, ...], V] = (
            fallback if fallback is not None else LocalMemory(ttl_seconds, 50_000, clock)
        )
        # Keys whose Redis write failed: only for those is the local copy the truth once Redis answers
        # again (for any other key, Redis lacking it means another replica removed it).
        self._missed: ExpiringMap[tuple[str, ...], bool] = ExpiringMap(ttl_seconds, 50_000, clock)

    def _value(self, raw: object) -> V | None:
        if not isinstance(raw, bytes | str):
            return None
        try:
            data = json.loads(raw)
            return self._decode(data) if isinstance(data, dict) else None
        except (ValueError, TypeError) as exc:  # written by another version, or by hand
            log.warning("unreadable %s in Redis, ignored: %s", self.kind, _scrub(str(exc), None))
            return None

    async def get(self, key: tuple[str, ...]) -> V | None:
        name = self._key(self.kind, *key)

        async def read() -> tuple[object]:
            return (await self.client.get(name),)

        found = await self._redis(read)
        if found is None or (found[0] is None and self._missed.get(key)):
            return await self.fallback.get(key)
        return self._value(found[0])

    async def put(self, key: tuple[str, ...], value: V) -> None:
        name = self._key(self.kind, *key)
        data = json.dumps(self._encode(value), separators=(",", ":"))
        written = await self._redis(lambda: self.client.set(name, data, ex=self.ttl_seconds))
        if written is None:
            self._missed.put(key, True)
        else:
            self._missed.pop(key)
        await self.fallback.put(key, value)

    async def pop(self, key: tuple[str, ...]) -> V | None:
        name = self._key(self.kind, *key)

        async def take() -> tuple[object]:
            return (await self._take(name),)

        found = await self._redis(take)
        local = await self.fallback.pop(key)
        missed = self._missed.pop(key)
        if found is None or (found[0] is None and missed):
            return local
        return self._value(found[0])

    async def _take(self, name: str) -> object:
        """GET and DEL in one transaction (GETDEL needs Redis 6.2): one replica gets the value."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.get(name)
            pipe.delete(name)
            value, _ = await pipe.execute()
        return value
