"""Unasked lookups run off the event loop (a burst of slow lookups never stalls the loop, so acks and health
checks answer), and a channel's queue of unasked lookups is capped: the excess is dropped and counted."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from adapters.chat import flows as chat_flows
from adapters.chat.flows import ChatFlows, ChatState, Paste
from adapters.chat.replies import PostedReply
from bot import LookupResult, PasteReading

LOOKUP_SECONDS = 0.15


class SlowLookup:
    """A core whose lookup holds its thread, as a 1 MB paste does (time.sleep: blocking, not awaitable)."""

    def __init__(self) -> None:
        self.started = 0
        self.lock = threading.Lock()

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        with self.lock:
            self.started += 1
        time.sleep(LOOKUP_SECONDS)
        return LookupResult(panics=(), matches=(), answer_panic=None, auto_reply=False)

    def lookup_reading(self, reading: PasteReading, limit: int = 5) -> LookupResult:
        """A large paste, read in a worker process first: the lookup proper is as slow."""
        return self.lookup("", limit)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the flows asked the core for {name} on an unanswerable lookup")


class NoReplies:
    async def post(self, card: Any) -> str | None:
        raise AssertionError("nothing to post")

    async def update(self, reply: Any, card: Any) -> Any:
        raise AssertionError("nothing to update")

    async def delete(self, reply: Any) -> None:
        raise AssertionError("nothing to delete")


async def max_loop_lag(until: asyncio.Future[Any]) -> float:
    """The longest the loop took to come back to a 10 ms heartbeat while `until` runs."""
    worst = 0.0
    while not until.done():
        before = time.perf_counter()
        await asyncio.sleep(0.01)
        worst = max(worst, time.perf_counter() - before - 0.01)
    return worst


def test_a_burst_of_slow_unasked_lookups_never_stalls_the_loop_and_the_excess_is_dropped() -> None:
    core = SlowLookup()
    state: ChatState[str] = ChatState()
    flows = ChatFlows("test", core, state, reply_key=lambda reply: reply.reply_id)  # type: ignore[arg-type]
    burst = 12

    async def scenario() -> float:
        pastes = [Paste(f"m{i}", "C1", f"paste {i}") for i in range(burst)]
        work = asyncio.ensure_future(asyncio.gather(*(flows.unasked_reply(p, NoReplies()) for p in pastes)))
        lag = await max_loop_lag(work)
        await work
        return lag

    lag = asyncio.run(scenario())
    # Before: each lookup ran on the loop, stalling it LOOKUP_SECONDS at a time (12 in a row: ~1.8 s).
    assert lag < LOOKUP_SECONDS * 0.66, lag
    cap = chat_flows.UNASKED_PER_CHANNEL
    assert core.started == cap and state.unasked_dropped == burst - cap
    assert state.unasked_queued == {}  # released once looked up


def test_the_cap_is_per_channel() -> None:
    core = SlowLookup()
    state: ChatState[str] = ChatState()
    flows = ChatFlows("test", core, state, reply_key=lambda reply: reply.reply_id)  # type: ignore[arg-type]
    cap = chat_flows.UNASKED_PER_CHANNEL

    async def scenario() -> None:
        pastes = [Paste(f"{c}{i}", c, "paste") for c in ("C1", "C2") for i in range(cap)]
        await asyncio.gather(*(flows.unasked_reply(p, NoReplies()) for p in pastes))

    asyncio.run(scenario())
    assert core.started == 2 * cap and state.unasked_dropped == 0


class SlowAskedLookup(SlowLookup):
    """The slow core, which also answers `card` (an asked answer renders its "no known record")."""

    def card(self, result: LookupResult) -> None:
        return None


class Deletes(NoReplies):
    def __init__(self) -> None:
        self.deleted: list[Any] = []

    async def delete(self, reply: Any) -> None:
        self.deleted.append(reply)


def test_asked_lookups_of_large_pastes_never_stall_the_loop() -> None:
    core = SlowAskedLookup()
    state: ChatState[str] = ChatState()
    flows = ChatFlows("test", core, state, reply_key=lambda reply: reply.reply_id)  # type: ignore[arg-type]
    large = "thread 'main' panicked at src/lib.rs:1:1:\n" + "x" * 1_000_000
    asyncio.run(
        state.replies.put("m1", PostedReply("C1", "r1", "some-record", "digest of what it said before"))
    )
    replier = Deletes()

    async def read() -> str:
        return large

    async def scenario() -> tuple[float, list[Any]]:
        # A mention (answer), /panic (ask), "Explain this panic" (explain), an edited paste (edited).
        work = asyncio.ensure_future(
            asyncio.gather(
                flows.answer_off_loop(large),
                flows.ask_off_loop("U1", large),
                flows.explain("U1", read),
                flows.edited("m1", large, replier),
            )
        )
        lag = await max_loop_lag(work)
        return lag, await work

    lag, (answered, asked, explained, _) = asyncio.run(scenario())
    # Before: each asked lookup ran on the loop (4 in a row: ~0.6 s without the loop coming back).
    assert lag < LOOKUP_SECONDS * 0.66, lag
    assert core.started == 4
    assert [answered.kind, asked.kind, explained.kind] == ["no_match"] * 3
    assert asyncio.run(state.replies.get("m1")) is None and [reply.reply_id for reply in replier.deleted] == [
        "r1"
    ]
