"""`RedisOutbox` against the Redis on 127.0.0.1:6379 (a failure under CI, a skip elsewhere without one):
the same contract as `SqlOutbox` (tests/adapters/storage/test_outbox.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from adapters.outbox import OutboxEntry
from adapters.redis_outbox import RedisOutbox
from tests.support.local_redis import new_prefix, redis_missing

REDIS_URL = "redis://127.0.0.1:6379/0"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def entry(key: str, group: str = "tracel-ai/burn", member: str = "ferris") -> OutboxEntry:
    return OutboxEntry(key, group, member, {"event": "issue_comment", "body": f"paste {key}"})


def with_outbox(scenario: Callable[[RedisOutbox, Clock], Awaitable[None]]) -> None:
    async def run() -> None:
        client = Redis.from_url(REDIS_URL, socket_timeout=1)
        try:
            await client.ping()
        except Exception:
            await client.aclose()
            redis_missing(REDIS_URL)
        prefix = new_prefix()
        clock = Clock()
        try:
            await scenario(RedisOutbox(client, prefix, clock=clock), clock)
        finally:
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()

    asyncio.run(run())


def test_an_entry_stays_until_done_and_is_stored_once() -> None:
    async def scenario(outbox: RedisOutbox, clock: Clock) -> None:
        assert await outbox.add(entry("d1"))
        assert not await outbox.add(entry("d1"))
        claimed = await outbox.claim("replica-a", 60)
        assert claimed is not None
        assert (claimed.key, claimed.payload["body"], claimed.attempts) == ("d1", "paste d1", 0)
        assert await outbox.pending() == ["d1"]
        await outbox.done("d1")
        assert await outbox.pending() == []
        assert await outbox.claim("replica-a", 60) is None

    with_outbox(scenario)


def test_leases_give_back_and_retry_delays() -> None:
    async def scenario(outbox: RedisOutbox, clock: Clock) -> None:
        for key in ("d1", "d2"):
            await outbox.add(entry(key))
        assert (await outbox.claim("replica-a", 60)).key == "d1"  # type: ignore[union-attr]
        assert await outbox.claim("replica-b", 60) is None  # d2 waits behind the held d1
        clock.now += 61  # replica-a died holding it
        resumed = await outbox.claim("replica-b", 60)
        assert resumed is not None and (resumed.key, resumed.attempts) == ("d1", 1)
        await outbox.release("d1", "replica-a")  # not its holder any more: nothing
        assert await outbox.claim("replica-c", 60) is None
        await outbox.release("d1", "replica-b", delay=30)
        assert await outbox.claim("replica-c", 60) is None
        clock.now += 31
        assert (await outbox.claim("replica-c", 60)).key == "d1"  # type: ignore[union-attr]

    with_outbox(scenario)


def test_one_busy_user_or_repository_gets_its_turn_not_the_whole_rate() -> None:
    async def scenario(outbox: RedisOutbox, clock: Clock) -> None:
        for n in range(20):
            await outbox.add(entry(f"busy{n}", "big/repo", "busy"))
        for n in range(3):
            await outbox.add(entry(f"other{n}", "big/repo", "ferris"))
            await outbox.add(entry(f"small{n}", "small/repo", "crab"))
        served = []
        for _ in range(9):
            claimed = await outbox.claim("replica", 60)
            assert claimed is not None
            served.append(claimed.key)
            await outbox.done(claimed.key)
        assert served == [
            "busy0",
            "small0",
            "other0",
            "small1",
            "busy1",
            "small2",
            "other1",
            "busy2",
            "other2",
        ]

    with_outbox(scenario)


def test_two_replicas_claiming_at_once_never_get_the_same_entry() -> None:
    async def scenario(outbox: RedisOutbox, clock: Clock) -> None:
        for n in range(30):
            await outbox.add(entry(f"d{n}", f"repo{n % 5}", "user"))
        got: list[str] = []

        async def replica(name: str) -> None:
            for _ in range(2_000):
                if not await outbox.pending():
                    return
                claimed = await outbox.claim(name, 60)
                if claimed is not None:
                    got.append(claimed.key)
                    await outbox.done(claimed.key)
                await asyncio.sleep(0)

        await asyncio.gather(*(replica(f"r{n}") for n in range(3)))
        assert len(got) == len(set(got)) == 30  # each once

    with_outbox(scenario)
