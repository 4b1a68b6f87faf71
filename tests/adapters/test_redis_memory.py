"""Redis-backed shared state: its semantics against a real Redis on 127.0.0.1:6379, its degradation to the
in-process fallback when Redis is gone, and two Slack HTTP replicas answering a re-delivered event once.

Every test that touches Redis uses its own random key prefix and deletes its keys afterwards. Without a
reachable Redis these tests skip, except under CI (`CI` set), where they fail: CI runs a Redis server.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

import aiohttp
import pytest
import redis
from aiohttp import web
from redis.asyncio import Redis as AsyncRedis
from slack_sdk.signature import SignatureVerifier

from adapters.chat import PostedReply, shared_replies
from adapters.redis_memory import (
    EVENT_TTL_SECONDS,
    RateLimiter,
    RedisCooldown,
    RedisEventDeduper,
    RedisKeyedMemory,
    RedisRateLimiter,
    async_redis_from_url,
    redacted_url,
)
from adapters.slack.app import SlackState, build_slack_app
from adapters.slack.server import build_web_application
from adapters.slack.settings import SlackSettings
from bot.lookup import PanicLookup
from bot.records import default_catalog
from tests.adapters.slack.fake_slack import BOT_USER_ID, HOST, TEAM_ID, FakeSlack
from tests.adapters.slack.test_app import delete_event, edit_event
from tests.support.local_only import isolate
from tests.support.local_redis import answering_redis, prefix_of_its_own

REDIS_URL = f"redis://{HOST}:6379/0"
LOGGER = "panicbot.shared_state"

BOT_TOKEN = "xoxb-test-1234-5678-NotARealToken"
SIGNING_SECRET = "0123456789abcdef-not-a-real-signing-secret"
AUTO = "CAUTO"
CHANNEL = "C1"
USER = "U012AB3CDE"
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
SCENARIO_TIMEOUT = 15.0
T = TypeVar("T")
# The fixtures below: run a coroutine on the test's loop; make a redis.asyncio client closed after the test.
OnLoop = Callable[[Awaitable[Any]], Any]
NewClient = Callable[..., AsyncRedis]

_ids = itertools.count(1)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


# -- Redis fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_client() -> Iterator[redis.Redis]:
    """The shared Redis on 127.0.0.1:6379, read by the tests to see what the objects under test wrote (a
    plain synchronous client): a failure under CI, a skip elsewhere when it is not running."""
    client = answering_redis(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def prefix(redis_client: redis.Redis) -> Iterator[str]:
    """A key prefix no other test (or concurrent CI job) uses; its keys are deleted afterwards."""
    yield from prefix_of_its_own(redis_client)


def free_port() -> int:
    """A local port nobody listens on: connections to it are refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def on_loop() -> Iterator[Callable[[Awaitable[T]], T]]:
    """Runs a coroutine to its end on the test's one event loop (the clients below live on it)."""
    loop = asyncio.new_event_loop()
    yield loop.run_until_complete
    loop.close()


@pytest.fixture
def new_client(on_loop: OnLoop) -> Iterator[Callable[..., AsyncRedis]]:
    """Makes redis.asyncio clients as the service does (`async_redis_from_url`), closed after the test;
    one per replica, as separate processes have."""
    made: list[AsyncRedis] = []

    def make(url: str = REDIS_URL, **options: Any) -> AsyncRedis:
        made.append(async_redis_from_url(url, **options))
        return made[-1]

    yield make
    for client in made:
        on_loop(client.aclose())


@pytest.fixture
def aredis(redis_client: redis.Redis, new_client: NewClient) -> AsyncRedis:
    """The client under test, on the Redis that `redis_client` reads."""
    return new_client()


@pytest.fixture
def dead_client(new_client: NewClient) -> AsyncRedis:
    return new_client(f"redis://{HOST}:{free_port()}/0")


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


# -- semantics against the real Redis ------------------------------------------------------------------


def test_event_deduper_answers_the_first_delivery_across_replicas(
    redis_client: redis.Redis,
    aredis: AsyncRedis,
    new_client: NewClient,
    prefix: str,
    on_loop: OnLoop,
) -> None:
    replica_a = RedisEventDeduper(aredis, prefix)
    replica_b = RedisEventDeduper(new_client(), prefix)
    assert on_loop(replica_a.first_time("Ev1")) is True
    assert on_loop(replica_b.first_time("Ev1")) is False  # Slack's retry, on the other replica
    assert on_loop(replica_a.first_time("Ev1")) is False
    assert on_loop(replica_b.first_time("Ev2")) is True
    assert redis_client.exists(f"{prefix}:event:Ev1") == 1
    assert (replica_a.failures, replica_b.failures, replica_a.fallbacks) == (0, 0, 0)


def test_event_deduper_keys_expire(
    redis_client: redis.Redis, aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    on_loop(RedisEventDeduper(aredis, prefix).first_time("EvDefault"))
    assert 0 < redis_client.ttl(f"{prefix}:event:EvDefault") <= EVENT_TTL_SECONDS == 900
    on_loop(RedisEventDeduper(aredis, prefix, ttl_seconds=30).first_time("EvShort"))
    assert 0 < redis_client.ttl(f"{prefix}:event:EvShort") <= 30


def test_event_deduper_keeps_its_own_record_when_redis_loses_the_key(
    redis_client: redis.Redis, aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    replica = RedisEventDeduper(aredis, prefix)
    assert on_loop(replica.first_time("EvLost"))
    redis_client.delete(f"{prefix}:event:EvLost")  # a Redis restart without persistence, say
    assert on_loop(replica.first_time("EvLost")) is False  # this replica handled it: still once
    # and Redis learns it again, so a retry balanced to another replica is dropped too
    assert redis_client.exists(f"{prefix}:event:EvLost") == 1
    assert on_loop(RedisEventDeduper(aredis, prefix).first_time("EvLost")) is False


def test_cooldown_is_shared_per_channel_and_record(
    redis_client: redis.Redis,
    aredis: AsyncRedis,
    new_client: NewClient,
    prefix: str,
    on_loop: OnLoop,
) -> None:
    replica_a = RedisCooldown(aredis, prefix, 600)
    replica_b = RedisCooldown(new_client(), prefix, 600)
    assert on_loop(replica_a.allow(AUTO, "rec1")) is True
    assert on_loop(replica_b.allow(AUTO, "rec1")) is False
    assert on_loop(replica_a.allow(AUTO, "rec1")) is False
    assert on_loop(replica_b.allow(AUTO, "rec2")) is True  # another record
    assert on_loop(replica_b.allow("COTHER", "rec1")) is True  # another channel
    assert 590_000 < redis_client.pttl(f"{prefix}:cooldown:{AUTO}:rec1") <= 600_000
    on_loop(replica_a.release(AUTO, "rec1"))  # the reply failed or was deleted
    assert redis_client.exists(f"{prefix}:cooldown:{AUTO}:rec1") == 0
    assert on_loop(replica_b.allow(AUTO, "rec1")) is True
    assert replica_a.failures == replica_b.failures == 0


def test_a_cooldown_held_by_a_paste_lets_that_paste_take_it_again(
    redis_client: redis.Redis, aredis: AsyncRedis, new_client: NewClient, prefix: str, on_loop: OnLoop
) -> None:
    # A reply tried again (on any replica) after its earlier try took the hold and could not give it back.
    replica_a = RedisCooldown(aredis, prefix, 600)
    replica_b = RedisCooldown(new_client(), prefix, 600)
    assert on_loop(replica_a.allow(AUTO, "rec1", "CAUTO/1.1")) is True
    assert on_loop(replica_b.allow(AUTO, "rec1", "CAUTO/1.1")) is True  # the same paste
    assert on_loop(replica_b.allow(AUTO, "rec1", "CAUTO/2.2")) is False  # another paste
    assert on_loop(replica_b.allow(AUTO, "rec1")) is False  # nobody in particular
    assert 590_000 < redis_client.pttl(f"{prefix}:cooldown:{AUTO}:rec1") <= 600_000
    assert on_loop(replica_a.allow(AUTO, "rec2")) is True
    assert on_loop(replica_a.allow(AUTO, "rec2", "")) is False  # an anonymous hold is never taken again


def test_a_cooldown_released_on_one_replica_is_free_on_the_other(
    aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    replica_a, replica_b = RedisCooldown(aredis, prefix, 600), RedisCooldown(aredis, prefix, 600)
    assert on_loop(replica_a.allow("C1", "avg-pool"))
    on_loop(replica_b.release("C1", "avg-pool"))  # B removed the reply that held it
    assert on_loop(replica_a.allow("C1", "avg-pool"))  # A's own memory of its hold does not outlast Redis
    assert not on_loop(replica_b.allow("C1", "avg-pool"))


def test_cooldown_ends_after_its_time(aredis: AsyncRedis, prefix: str, on_loop: OnLoop) -> None:
    replica_a, replica_b = RedisCooldown(aredis, prefix, 0.2), RedisCooldown(aredis, prefix, 0.2)
    assert on_loop(replica_a.allow(AUTO, "rec1"))
    assert not on_loop(replica_b.allow(AUTO, "rec1"))
    time.sleep(0.3)
    assert on_loop(replica_b.allow(AUTO, "rec1"))


def test_cooldown_of_zero_seconds_always_allows(
    redis_client: redis.Redis, aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    gate = RedisCooldown(aredis, prefix, 0)
    assert on_loop(gate.allow(AUTO, "rec1")) and on_loop(gate.allow(AUTO, "rec1"))
    assert gate.failures == 0
    assert list(redis_client.scan_iter(match=f"{prefix}:*")) == []


def test_rate_limiter_counts_per_user_across_replicas(
    redis_client: redis.Redis,
    aredis: AsyncRedis,
    new_client: NewClient,
    prefix: str,
    on_loop: OnLoop,
) -> None:
    replica_a = RedisRateLimiter(aredis, prefix, limit=3, window_seconds=60)
    replica_b = RedisRateLimiter(new_client(), prefix, limit=3, window_seconds=60)
    answers = [
        on_loop(replica_a.allow(USER)),
        on_loop(replica_b.allow(USER)),
        on_loop(replica_a.allow(USER)),
        on_loop(replica_b.allow(USER)),
    ]
    assert answers == [True, True, True, False]
    assert on_loop(replica_a.allow(USER)) is False
    assert on_loop(replica_b.allow("UOTHER")) is True
    assert 59_000 < redis_client.pttl(f"{prefix}:rate:{USER}") <= 60_000
    assert replica_a.failures == replica_b.failures == 0


def test_rate_limiter_window_starts_again(aredis: AsyncRedis, prefix: str, on_loop: OnLoop) -> None:
    limiter = RedisRateLimiter(aredis, prefix, limit=1, window_seconds=0.2)
    assert [on_loop(limiter.allow(USER)), on_loop(limiter.allow(USER))] == [True, False]
    time.sleep(0.3)
    assert on_loop(limiter.allow(USER)) is True


def test_rate_limiter_is_atomic_under_concurrent_calls(
    redis_client: redis.Redis,
    new_client: NewClient,
    prefix: str,
    on_loop: OnLoop,
) -> None:
    limiters = [RedisRateLimiter(new_client(), prefix, 5, 60) for _ in range(4)]

    # 40 requests in flight at once over four connections, as four replicas would send them.
    async def all_at_once() -> list[bool]:
        return await asyncio.gather(*(limiters[n % 4].allow(USER) for n in range(40)))

    answers = on_loop(all_at_once())
    assert answers.count(True) == 5
    assert redis_client.get(f"{prefix}:rate:{USER}") == b"40"


def test_rate_limiter_heals_a_key_without_expiry(
    redis_client: redis.Redis, aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    redis_client.set(f"{prefix}:rate:{USER}", 7)  # left without TTL by hand: must not block forever
    on_loop(RedisRateLimiter(aredis, prefix, 3, 60).allow(USER))
    assert 0 < redis_client.pttl(f"{prefix}:rate:{USER}") <= 60_000


def reply_memory(client: AsyncRedis, prefix: str, clock: Any = time.monotonic) -> Any:
    return RedisKeyedMemory(
        client, prefix, "reply", 3600, PostedReply.to_json, PostedReply.from_json, clock=clock
    )


def test_keyed_memory_is_shared_and_popped_once(
    redis_client: redis.Redis, aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    replica_a, replica_b = reply_memory(aredis, prefix), reply_memory(aredis, prefix)
    posted = PostedReply("C1", "1710000000.000200", "avg-pool", "digest")
    on_loop(replica_a.put(("C1", "1710000000.000100"), posted))
    assert on_loop(replica_b.get(("C1", "1710000000.000100"))) == posted
    assert on_loop(replica_b.pop(("C1", "1710000000.000100"))) == posted
    assert redis_client.get(f"{prefix}:reply:C1:1710000000.000100") is None
    assert on_loop(replica_b.get(("C1", "1710000000.000100"))) is None
    on_loop(replica_a.put(("C1", "1"), posted))
    assert 3500 < redis_client.ttl(f"{prefix}:reply:C1:1") <= 3600


def test_keyed_memory_trusts_redis_over_its_own_copy(
    aredis: AsyncRedis, dead_client: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    replica_a, replica_b = reply_memory(aredis, prefix), reply_memory(aredis, prefix)
    posted = PostedReply("C1", "2", "avg-pool")
    on_loop(replica_a.put(("C1", "1"), posted))
    assert on_loop(replica_b.pop(("C1", "1"))) == posted  # B deleted the reply
    assert on_loop(replica_a.get(("C1", "1"))) is None  # A's copy is stale: Redis says it is gone
    assert on_loop(replica_a.pop(("C1", "1"))) is None
    # Written while Redis was down: once Redis answers again, this replica's copy is the only one.
    healthy = replica_a.client
    replica_a.client = dead_client
    on_loop(replica_a.put(("C1", "3"), posted))
    replica_a.client, replica_a._paused_until = healthy, float("-inf")
    assert on_loop(replica_a.get(("C1", "3"))) == posted
    assert on_loop(replica_a.pop(("C1", "3"))) == posted


def test_keyed_memory_ignores_what_it_cannot_read(
    redis_client: redis.Redis,
    aredis: AsyncRedis,
    prefix: str,
    on_loop: OnLoop,
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = reply_memory(aredis, prefix)
    for raw in (
        "not json",
        json.dumps({"channel": "C1"}),
        json.dumps([1, 2]),
        json.dumps({"channel": 1, "ts": 2, "record_id": 3}),
    ):
        redis_client.set(f"{prefix}:reply:C1:9", raw)
        assert on_loop(memory.get(("C1", "9"))) is None
    assert any("unreadable reply" in r.getMessage() for r in caplog.records)


def test_keyed_memory_answers_from_its_own_copy_when_redis_is_down(
    dead_client: AsyncRedis, on_loop: OnLoop
) -> None:
    memory = reply_memory(dead_client, "p")
    posted = PostedReply("C1", "2", "avg-pool")
    on_loop(memory.put(("C1", "1"), posted))
    assert on_loop(memory.get(("C1", "1"))) == posted
    assert on_loop(memory.pop(("C1", "1"))) == posted
    assert on_loop(memory.get(("C1", "1"))) is None
    assert memory.failures >= 1


def test_in_process_rate_limiter(on_loop: OnLoop) -> None:
    clock = FakeClock()
    limiter = RateLimiter(limit=2, window_seconds=10, clock=clock)
    assert [on_loop(limiter.allow(USER)) for _ in range(3)] == [True, True, False]
    assert on_loop(limiter.allow("UOTHER")) is True
    clock.now += 9.9
    assert on_loop(limiter.allow(USER)) is False  # the window started at the first call, not the last
    clock.now += 0.2
    assert on_loop(limiter.allow(USER)) is True
    with pytest.raises(ValueError, match="limit"):
        RateLimiter(limit=0, window_seconds=10)
    with pytest.raises(ValueError, match="window"):
        RateLimiter(limit=1, window_seconds=0)


# -- URLs and passwords --------------------------------------------------------------------------------


def test_redis_url_password_is_never_logged(
    new_client: NewClient,
    on_loop: OnLoop,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    password = "hunter2-not-a-real-password"
    port = free_port()
    url = f"redis://panicbot:{password}@{HOST}:{port}/2"
    assert redacted_url(url) == f"redis://panicbot:***@{HOST}:{port}/2"
    deduper = RedisEventDeduper(new_client(url), "p", retry_after=0)
    assert on_loop(deduper.first_time("Ev1")) is True
    assert deduper.failures == 1
    assert caplog.records, "the client and the failure are logged"
    assert all(password not in record.getMessage() for record in caplog.records)
    with pytest.raises(ValueError, match="REDIS_URL") as raised:
        async_redis_from_url(f"mysql://root:{password}@{HOST}/")
    assert password not in str(raised.value)


def test_client_timeouts_are_short(new_client: NewClient) -> None:
    kwargs = new_client().connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 0.5


# -- degradation: Redis gone -----------------------------------------------------------------------------


def test_unreachable_redis_falls_back_counts_and_logs_once(
    dead_client: AsyncRedis, on_loop: OnLoop, caplog: pytest.LogCaptureFixture
) -> None:
    # retry_after=0: every call tries Redis again, so every call fails and is counted.
    deduper = RedisEventDeduper(dead_client, "p", retry_after=0)
    cooldown = RedisCooldown(dead_client, "p", 600, retry_after=0)
    limiter = RedisRateLimiter(dead_client, "p", 2, 60, retry_after=0)
    started = time.monotonic()
    assert [on_loop(deduper.first_time("Ev1")) for _ in range(5)] == [True, False, False, False, False]
    assert [on_loop(cooldown.allow(AUTO, "rec1")) for _ in range(3)] == [True, False, False]
    on_loop(cooldown.release(AUTO, "rec1"))
    assert on_loop(cooldown.allow(AUTO, "rec1")) is True
    assert [on_loop(limiter.allow(USER)) for _ in range(3)] == [True, True, False]
    assert time.monotonic() - started < 2.0  # refusals are immediate; nothing waited for a timeout
    assert (deduper.failures, cooldown.failures, limiter.failures) == (5, 5, 3)
    assert (deduper.fallbacks, limiter.fallbacks) == (5, 3)
    assert deduper.degraded and cooldown.degraded and limiter.degraded
    warnings = warnings_logged(caplog)
    assert len(warnings) == 3, warnings  # one per object, not one per call
    assert all("Redis unavailable" in line and "ConnectionError" in line for line in warnings)


def test_after_a_failure_redis_rests_then_is_tried_again(
    redis_client: redis.Redis,
    aredis: AsyncRedis,
    dead_client: AsyncRedis,
    prefix: str,
    on_loop: OnLoop,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = FakeClock()
    deduper = RedisEventDeduper(dead_client, prefix, clock=clock, retry_after=5, log_every=60)
    for number in range(10):
        assert on_loop(deduper.first_time(f"Ev{number}"))
    assert (deduper.failures, deduper.fallbacks) == (1, 10)  # one refused call, then the pause
    clock.now += 5
    on_loop(deduper.first_time("EvAfterPause"))
    assert deduper.failures == 2
    assert len(warnings_logged(caplog)) == 1  # still within the minute
    clock.now += 60
    on_loop(deduper.first_time("EvNextMinute"))
    assert warnings_logged(caplog)[1].startswith("Redis still unavailable for event dedupe")
    assert "2 failures since the last warning" in warnings_logged(caplog)[1]
    deduper.client = aredis  # Redis is back
    clock.now += 5
    assert on_loop(deduper.first_time("EvBack")) is True
    assert redis_client.exists(f"{prefix}:event:EvBack") == 1
    assert not deduper.degraded
    assert any(r.getMessage() == "Redis is back for event dedupe" for r in caplog.records)


def test_every_outage_start_and_end_is_logged_once_even_within_a_minute(
    aredis: AsyncRedis,
    dead_client: AsyncRedis,
    prefix: str,
    on_loop: OnLoop,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = FakeClock()
    deduper = RedisEventDeduper(dead_client, prefix, clock=clock, retry_after=5, log_every=60)
    for outage in range(3):  # three short outages within one minute: each one is news
        deduper.client = dead_client
        for number in range(3):
            on_loop(deduper.first_time(f"Ev{outage}-{number}"))
        clock.now += 5
        deduper.client = aredis
        for number in range(3):
            assert on_loop(deduper.first_time(f"EvBack{outage}-{number}")) is True
        clock.now += 5
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO] * 3, lines
    assert all(message.startswith("Redis unavailable for event dedupe") for _, message in lines[::2])
    assert all(message == "Redis is back for event dedupe" for _, message in lines[1::2])


def test_silent_redis_times_out_quickly(new_client: NewClient, on_loop: OnLoop) -> None:
    # A socket that accepts connections but never answers: the read times out instead of hanging.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind((HOST, 0))
        silent.listen(8)
        client = new_client(f"redis://{HOST}:{silent.getsockname()[1]}/0", timeout=0.1)
        deduper = RedisEventDeduper(client, "p")
        started = time.monotonic()
        assert on_loop(deduper.first_time("Ev1")) is True
        assert time.monotonic() - started < 0.5  # one timeout, not retried
        assert deduper.failures == 1


def test_a_stalled_redis_holds_up_only_the_handler_that_asked(new_client: NewClient, on_loop: OnLoop) -> None:
    """Every shared part waits for a silent Redis (its timeout) while the event loop goes on: other
    events, health checks and replies are served meanwhile. Before, the synchronous client held the loop
    for the whole timeout of each call."""
    timeout = 0.4
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind((HOST, 0))
        silent.listen(8)
        client = new_client(f"redis://{HOST}:{silent.getsockname()[1]}/0", timeout=timeout)
        memory = reply_memory(client, "p")
        calls = [
            RedisEventDeduper(client, "p").first_time("Ev1"),
            RedisCooldown(client, "p", 600).allow(AUTO, "rec1"),
            RedisRateLimiter(client, "p", 2, 60).allow(USER),
            memory.put(("C1", "1"), PostedReply("C1", "2", "avg-pool")),
        ]

        async def measured(call: Awaitable[Any]) -> tuple[Any, float, float]:
            """(the answer, how long it took, the longest the loop went without running a tick)."""
            ticks = [time.monotonic()]

            async def tick() -> None:
                while True:
                    await asyncio.sleep(0.01)
                    ticks.append(time.monotonic())

            ticker = asyncio.ensure_future(tick())
            started = time.monotonic()
            answer = await call
            took = time.monotonic() - started
            ticker.cancel()
            ticks.append(time.monotonic())
            return answer, took, max(b - a for a, b in itertools.pairwise(ticks))

        for call in calls:
            answer, took, longest_gap = on_loop(measured(call))
            assert answer in (True, None)  # the fallback's answer
            assert took >= timeout * 0.9  # it did wait for Redis ...
            assert longest_gap < 0.2, longest_gap  # ... without stopping the loop (before: >= 0.4 s)


def test_redis_refusing_a_command_falls_back(
    redis_client: redis.Redis, aredis: AsyncRedis, prefix: str, on_loop: OnLoop
) -> None:
    redis_client.rpush(f"{prefix}:rate:{USER}", "x")  # WRONGTYPE for INCR: an error reply, not an outage
    limiter = RedisRateLimiter(aredis, prefix, 1, 60)
    assert on_loop(limiter.allow(USER)) is True
    assert limiter.failures == 1


# -- two Slack HTTP replicas, one Redis ----------------------------------------------------------------


def signed_headers(body: str) -> dict[str, str]:
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


def message_event(text: str) -> dict[str, Any]:
    ts = f"1710000000.{next(_ids):06d}"
    return {
        "type": "message",
        "text": text,
        "user": USER,
        "ts": ts,
        "team": TEAM_ID,
        "channel": AUTO,
        "event_ts": ts,
        "channel_type": "channel",
    }


def event_callback(event: dict[str, Any], event_id: str) -> str:
    return json.dumps(
        {
            "token": "gIkuvaNzQIHg97ATvDxqgjtO",
            "team_id": TEAM_ID,
            "api_app_id": "A1",
            "event": event,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(float(event["ts"])),
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        }
    )


@dataclass
class Replica:
    name: str
    base_url: str


@dataclass
class Cluster:
    fake: FakeSlack
    replicas: list[Replica]
    session: aiohttp.ClientSession

    async def post(
        self, replica: Replica, body: str, content_type: str, **headers: str
    ) -> aiohttp.ClientResponse:
        sent = {"Content-Type": content_type, **signed_headers(body), **headers}
        async with self.session.post(f"{replica.base_url}/slack/events", data=body, headers=sent) as response:
            await response.read()
            assert response.status == 200, f"{replica.name}: {response.status}"
            return response

    async def deliver(self, replica: Replica, event: dict[str, Any], event_id: str, retry: int = 0) -> bool:
        """Post the event as Slack does; whether the replica told Slack not to retry (a dropped duplicate)."""
        headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
        response = await self.post(replica, event_callback(event, event_id), "application/json", **headers)
        return response.headers.get("x-slack-no-retry") == "1"

    async def settle(self, replica: Replica) -> None:
        """Let the replica's handlers started so far finish: Bolt runs listeners as tasks after the ack,
        and a handler that stays silent finishes before a later `/panic help` is answered."""
        url = self.fake.response_url()
        form = {
            "team_id": TEAM_ID,
            "channel_id": CHANNEL,
            "user_id": USER,
            "command": "/panic",
            "text": "help",
            "api_app_id": "A1",
            "response_url": url,
            "trigger_id": "1.2.3",
        }
        await self.post(replica, urlencode(form), "application/x-www-form-urlencoded")
        path = url.removeprefix(f"http://{HOST}:{self.fake.port}")
        await self.fake.wait_for(lambda: [c for c in self.fake.responses() if c.path == path], what=url)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No inherited Slack settings or proxies: every request stays on 127.0.0.1."""
    isolate(monkeypatch, "SLACK_APP_TOKEN", "SLACK_AUTO_REPLY_COOLDOWN_SECONDS", "PANICBOT_CATALOG")


@contextlib.asynccontextmanager
async def cluster(states: list[SlackState]) -> AsyncIterator[Cluster]:
    """One fake Slack and one aiohttp server per state, like replicas behind a load balancer."""
    service = PanicLookup(default_catalog())
    runners: list[web.AppRunner] = []
    async with FakeSlack(BOT_TOKEN) as fake:
        settings = SlackSettings(
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake.api_url,
            slack_auto_reply_channels=frozenset({AUTO}),
        )
        try:
            replicas = []
            for name, state in zip("AB", states, strict=True):
                app = build_slack_app(settings, service, state)
                runner = web.AppRunner(build_web_application(app, len(service.catalog.records)))
                runners.append(runner)
                await runner.setup()
                await web.TCPSite(runner, HOST, 0).start()
                replicas.append(Replica(name, f"http://{HOST}:{runner.addresses[0][1]}"))
            async with aiohttp.ClientSession() as session:
                yield Cluster(fake, replicas, session)
        finally:
            for runner in runners:
                await runner.cleanup()
            for client in {id(c): c for c in map(_redis_client_of, states) if c is not None}.values():
                await client.aclose()
        assert fake.problems == [], "Slack would have refused these blocks"


def _redis_client_of(state: SlackState) -> AsyncRedis | None:
    """The Redis client a replica's shared parts use (each replica has its own), if any."""
    client = getattr(state.seen, "client", None)
    return client if isinstance(client, AsyncRedis) else None


def run(scenario: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=SCENARIO_TIMEOUT))


def replica_states(mode: str, request: pytest.FixtureRequest) -> list[SlackState]:
    """Two replicas' state: sharing one Redis under one prefix, or each its own process memory."""
    if mode == "in-process":
        return [SlackState(), SlackState()]
    prefix = request.getfixturevalue("prefix")
    states = []
    for _ in range(2):
        # One client per replica, as separate processes have; it connects on the scenario's loop, and
        # `cluster` closes it there.
        client = async_redis_from_url(REDIS_URL)
        states.append(
            SlackState(
                seen=RedisEventDeduper(client, prefix),
                cooldown=RedisCooldown(client, prefix, 600),
                **shared_replies(client, prefix),
            )
        )
    return states


# Without Redis each replica remembers only what it saw itself: Slack's retry to the other replica, or the
# same panic pasted twice and balanced to both, is answered twice. That is why deployments set REDIS_URL.
MODES = [pytest.param("redis", 1, id="shared-redis"), pytest.param("in-process", 2, id="in-process")]


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize(("mode", "replies"), MODES)
def test_retry_to_another_replica_is_answered_once(
    mode: str, replies: int, request: pytest.FixtureRequest
) -> None:
    states = replica_states(mode, request)

    async def scenario() -> None:
        async with cluster(states) as c:
            replica_a, replica_b = c.replicas
            event = message_event(AVG_POOL_PASTE)
            assert not await c.deliver(replica_a, event, "Ev0SHARED")
            await c.fake.wait_for_calls("chat.postMessage")
            # Slack did not see A's ack in time and retries; the load balancer picks B.
            dropped = await c.deliver(replica_b, event, "Ev0SHARED", retry=1)
            assert dropped is (mode == "redis")
            await c.fake.wait_for_calls("chat.postMessage", replies)
            await c.settle(replica_a)
            await c.settle(replica_b)
            posts = c.fake.posts()
            assert len(posts) == replies, [p.body.get("channel") for p in posts]
            assert all(p.body["thread_ts"] == event["ts"] for p in posts)

    run(scenario)


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize(("mode", "replies"), MODES)
def test_same_panic_on_two_replicas_respects_one_cooldown(
    mode: str, replies: int, request: pytest.FixtureRequest
) -> None:
    states = replica_states(mode, request)

    async def scenario() -> None:
        async with cluster(states) as c:
            replica_a, replica_b = c.replicas
            first, second = message_event(AVG_POOL_PASTE), message_event(AVG_POOL_PASTE)
            await c.deliver(replica_a, first, f"Ev{next(_ids):08d}")
            await c.fake.wait_for_calls("chat.postMessage")
            await c.deliver(replica_b, second, f"Ev{next(_ids):08d}")  # another message, same panic
            await c.fake.wait_for_calls("chat.postMessage", replies)
            await c.settle(replica_a)
            await c.settle(replica_b)
            posts = c.fake.posts()
            assert len(posts) == replies
            assert posts[0].body["thread_ts"] == first["ts"]

    run(scenario)


DEFORM_PASTE = AVG_POOL_PASTE.replace("1498", "915").replace("avg pool", "deform conv")


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize(("mode", "followed"), [("redis", True), ("in-process", False)])
def test_edit_and_deletion_on_another_replica_follow_the_card(
    mode: str, followed: bool, request: pytest.FixtureRequest
) -> None:
    states = replica_states(mode, request)

    async def scenario() -> None:
        async with cluster(states) as c:
            replica_a, replica_b = c.replicas
            paste = message_event(AVG_POOL_PASTE)
            await c.deliver(replica_a, paste, f"Ev{next(_ids):08d}")
            [post] = await c.fake.wait_for_calls("chat.postMessage")
            # The author fixes the paste to another panic; Slack delivers the edit to B.
            await c.deliver(replica_b, edit_event(paste, DEFORM_PASTE), f"Ev{next(_ids):08d}")
            await c.settle(replica_b)
            updates = c.fake.calls_to("chat.update")
            assert len(updates) == int(followed)
            if followed:
                assert updates[0].body["ts"] == post.response["ts"]
                assert "deform" in json.dumps(updates[0].body["blocks"]).lower()
            # Then deletes it; the deletion reaches A, which did not see the edit.
            await c.deliver(replica_a, delete_event(paste), f"Ev{next(_ids):08d}")
            await c.settle(replica_a)
            deletions = c.fake.calls_to("chat.delete")
            assert [d.body["ts"] for d in deletions] == [post.response["ts"]]

    run(scenario)


@pytest.mark.usefixtures("clean_env")
def test_replica_with_redis_down_still_answers_and_dedupes_locally(caplog: pytest.LogCaptureFixture) -> None:
    dead = async_redis_from_url(f"redis://{HOST}:{free_port()}/0")  # closed by `cluster`
    deduper = RedisEventDeduper(dead, "p")
    cooldown = RedisCooldown(dead, "p", 600)
    states = [SlackState(seen=deduper, cooldown=cooldown), SlackState()]

    async def scenario() -> None:
        async with cluster(states) as c:
            replica_a = c.replicas[0]
            event = message_event(AVG_POOL_PASTE)
            assert not await c.deliver(replica_a, event, "Ev0DOWN")
            await c.fake.wait_for_calls("chat.postMessage")
            assert await c.deliver(replica_a, event, "Ev0DOWN", retry=1)  # same replica: still dropped
            await c.deliver(replica_a, message_event(AVG_POOL_PASTE), "Ev0DOWN2")  # local cooldown holds
            await c.settle(replica_a)
            assert len(c.fake.posts()) == 1

    run(scenario)
    assert deduper.failures >= 1 and cooldown.failures >= 1
    assert len(warnings_logged(caplog)) == 2  # one per object for the whole outage
