"""`OutboxWorker` over a SQLite outbox: answers in turn, retries a failure, and a stop gives back what it
holds and logs what is left by delivery id."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from adapters import outbox as outbox_module
from adapters.outbox import OutboxEntry, OutboxWorker, Undeliverable, Waiting, next_turn
from adapters.storage import upgrade_database
from adapters.storage.outbox import SqlOutbox

log = logging.getLogger("panicbot.test-outbox")


@pytest.fixture
def sql_outbox(tmp_path: Path) -> SqlOutbox:
    url = f"sqlite:///{tmp_path / 'outbox.db'}"
    upgrade_database(url)
    return SqlOutbox(url, "github")


def entry(key: str, group: str = "repo", member: str = "user") -> OutboxEntry:
    return OutboxEntry(key, group, member, {"n": key})


def test_next_turn_waits_behind_a_held_head_and_serves_the_least_recently_served_group() -> None:
    waiting = [
        Waiting(1, "a1", "a", "u", held=True),
        Waiting(2, "a2", "a", "u", held=False),  # behind a held head: not its turn
        Waiting(3, "b1", "b", "u", held=False),
        Waiting(4, "c1", "c", "u", held=False),
    ]
    assert next_turn(waiting, {}).key == "b1"  # type: ignore[union-attr]
    assert next_turn(waiting, {"b": 5, "c": 2}).key == "c1"  # type: ignore[union-attr]
    assert next_turn(waiting[:2], {}) is None


def test_the_worker_answers_in_order_and_tries_a_failed_entry_again(
    sql_outbox: SqlOutbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.01)
    answered: list[str] = []
    failures = {"d2": 1}

    async def handle(item: OutboxEntry) -> None:
        if failures.get(item.key):
            failures[item.key] -= 1
            raise RuntimeError("GitHub said 502")
        answered.append(item.key)

    async def scenario() -> None:
        for key in ("d1", "d2", "d3"):
            await sql_outbox.add(entry(key))
        worker = OutboxWorker(sql_outbox, handle, name="GitHub", log=log, poll_seconds=0.01)
        worker.start()
        for _ in range(500):
            if len(answered) == 3:
                break
            await asyncio.sleep(0.01)
        await worker.stop(1.0)
        assert answered == ["d1", "d2", "d3"]  # d3 waited for d2's retry: one lane, one order
        assert await sql_outbox.pending() == []

    asyncio.run(scenario())


def test_a_stop_gives_back_the_entry_in_hand_and_logs_what_is_left(
    sql_outbox: SqlOutbox, caplog: pytest.LogCaptureFixture
) -> None:
    started = asyncio.Event()

    async def slow(item: OutboxEntry) -> None:
        started.set()
        await asyncio.sleep(60)

    async def scenario() -> None:
        for key in ("d1", "d2"):
            await sql_outbox.add(entry(key))
        worker = OutboxWorker(sql_outbox, slow, name="GitHub", log=log, poll_seconds=0.01)
        worker.start()
        await asyncio.wait_for(started.wait(), 5)
        await worker.stop(0.1)  # the grace runs out: cancelled, given back
        assert worker.answered == 0
        resumed = await sql_outbox.claim("next-start", 60)
        assert resumed is not None and (resumed.key, resumed.attempts) == ("d1", 1)

    caplog.set_level(logging.INFO)
    asyncio.run(scenario())
    [line] = [r.getMessage() for r in caplog.records if "kept in the outbox" in r.getMessage()]
    assert line.startswith("stopping with 2 GitHub deliveries not answered yet") and line.endswith("d1, d2")


def test_an_entry_that_keeps_failing_is_dropped_and_logged(
    sql_outbox: SqlOutbox, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.001)
    calls: list[str] = []

    async def broken(item: OutboxEntry) -> None:
        calls.append(item.key)
        raise RuntimeError("always")

    async def scenario() -> None:
        await sql_outbox.add(entry("d1"))
        worker = OutboxWorker(sql_outbox, broken, name="GitHub", log=log, poll_seconds=0.01, max_attempts=3)
        worker.start()
        for _ in range(500):
            if not await sql_outbox.pending():
                break
            await asyncio.sleep(0.01)
        await worker.stop(1.0)
        assert calls == ["d1"] * 3 and await sql_outbox.pending() == []

    asyncio.run(scenario())
    assert any("delivery d1 failed 3 times" in r.getMessage() for r in caplog.records)


def test_with_concurrency_lanes_run_side_by_side_each_in_its_order(sql_outbox: SqlOutbox) -> None:
    running: set[str] = set()
    most = 0
    answered: list[str] = []

    async def handle(item: OutboxEntry) -> None:
        nonlocal most
        running.add(item.member)
        most = max(most, len(running))
        await asyncio.sleep(0.05)
        running.discard(item.member)
        answered.append(item.key)

    async def scenario() -> None:
        for n in range(12):
            await sql_outbox.add(entry(f"{'abc'[n % 3]}{n // 3}", member="abc"[n % 3]))
        worker = OutboxWorker(sql_outbox, handle, name="Slack", log=log, poll_seconds=5, concurrency=8)
        worker.start()
        for _ in range(500):
            if len(answered) == 12:
                break
            await asyncio.sleep(0.01)
        await worker.stop(1.0)

    started = time.monotonic()
    asyncio.run(scenario())
    # Three users' lanes at once (never two of one user's), each in the order it came; the next of a lane
    # goes as soon as the one before it is done, not at the next poll (5 s).
    assert most == 3 and time.monotonic() - started < 3
    for user in "abc":
        assert [key for key in answered if key[0] == user] == [f"{user}{n}" for n in range(4)]


def test_an_undeliverable_entry_is_dropped_with_one_line_and_no_traceback(
    sql_outbox: SqlOutbox, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    async def expired(item: OutboxEntry) -> None:
        calls.append(item.key)
        raise Undeliverable("its response_url expired")

    async def scenario() -> None:
        await sql_outbox.add(entry("d1"))
        worker = OutboxWorker(sql_outbox, expired, name="Slack", log=log, poll_seconds=0.01)
        worker.start()
        for _ in range(500):
            if worker.dropped:
                break
            await asyncio.sleep(0.01)
        await worker.stop(1.0)
        assert calls == ["d1"] and await sql_outbox.pending() == [] and worker.answered == 0

    asyncio.run(scenario())
    [line] = [r for r in caplog.records if "d1" in r.getMessage()]
    assert line.getMessage() == "delivery d1 dropped from the Slack outbox: its response_url expired"
    assert line.exc_info is None
