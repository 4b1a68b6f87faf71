"""In-process state shared by the chat adapters: delivered events, cooldowns, votes.

Bounded and time-limited so that a process can run for months. The feedback store is an interface so the
deployment can back it with a database.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

Clock = Callable[[], float]
K = TypeVar("K")
V = TypeVar("V")
KeyT_contra = TypeVar("KeyT_contra", contravariant=True)

# Slack re-delivers an event up to 3 times over about 5 minutes.
EVENT_TTL_SECONDS = 15 * 60


class ExpiringMap(Generic[K, V]):
    """A dict whose entries expire after `ttl` seconds and whose size is capped (oldest go first)."""

    def __init__(self, ttl: float, max_items: int, clock: Clock = time.monotonic) -> None:
        self._ttl, self._max, self._clock = ttl, max_items, clock
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def _expire(self) -> None:
        now = self._clock()
        while self._items:
            key, (stamp, _) = next(iter(self._items.items()))
            if now - stamp < self._ttl and len(self._items) <= self._max:
                break
            del self._items[key]

    def get(self, key: K) -> V | None:
        self._expire()
        item = self._items.get(key)
        return item[1] if item else None

    def put(self, key: K, value: V) -> None:
        self._items[key] = (self._clock(), value)
        self._items.move_to_end(key)
        self._expire()

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        return item[1] if item else None

    def __len__(self) -> int:
        self._expire()
        return len(self._items)


# The shared parts of a handler's state are awaited: a deployment with replicas keeps them in Redis, through
# redis.asyncio, so a slow Redis holds up the handler that asked, never the event loop. The in-process ones
# below answer at once.


class KeyedMemory(Protocol[KeyT_contra, V]):
    """What a handler remembers by key for a while (`LocalMemory`, or one shared by replicas in Redis)."""

    async def get(self, key: KeyT_contra) -> V | None: ...

    async def put(self, key: KeyT_contra, value: V) -> None: ...

    async def pop(self, key: KeyT_contra) -> V | None: ...


class LocalMemory(Generic[K, V]):
    """`KeyedMemory` in this process: an `ExpiringMap` behind the awaited interface."""

    def __init__(self, ttl: float, max_items: int, clock: Clock = time.monotonic) -> None:
        self.items: ExpiringMap[K, V] = ExpiringMap(ttl, max_items, clock)

    async def get(self, key: K) -> V | None:
        return self.items.get(key)

    async def put(self, key: K, value: V) -> None:
        self.items.put(key, value)

    async def pop(self, key: K) -> V | None:
        return self.items.pop(key)

    def __len__(self) -> int:
        return len(self.items)


class EventDeduper(Protocol):
    """Answers once per event id; a deployment with replicas shares it (Redis)."""

    async def first_time(self, event_id: str) -> bool: ...

    async def forget(self, event_id: str) -> None:
        """The event was not taken after all (it could not be stored): its redelivery is new."""


class CooldownGate(Protocol):
    """One auto-reply per record per channel per cooldown; shared across replicas in a deployment.

    `holder` names what takes the hold (a paste, for its reply): the same holder asking again is allowed
    (a reply tried again after a stop, a crash or no answer from the platform is not held back by the
    hold its own earlier try took and could not give back). Empty: nobody in particular, never allowed
    again within the cooldown."""

    async def allow(self, channel: str, record_id: str, holder: str = "") -> bool: ...

    async def release(self, channel: str, record_id: str) -> None: ...


class SeenEvents:
    """Event ids already handled, so a re-delivered event is answered once."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._seen: ExpiringMap[str, bool] = ExpiringMap(EVENT_TTL_SECONDS, 100_000, clock)

    async def first_time(self, event_id: str) -> bool:
        if self._seen.get(event_id):
            return False
        self._seen.put(event_id, True)
        return True

    async def forget(self, event_id: str) -> None:
        self._seen.pop(event_id)


class Cooldown:
    """At most one auto-reply per record per channel per `seconds`."""

    def __init__(self, seconds: float, clock: Clock = time.monotonic) -> None:
        # Who holds each (channel, record): a holder's name, "" for nobody in particular.
        self._last: ExpiringMap[tuple[str, str], str] = ExpiringMap(seconds, 100_000, clock)

    async def allow(self, channel: str, record_id: str, holder: str = "") -> bool:
        held = self._last.get((channel, record_id))
        if held is not None and not (holder and held == holder):
            return False
        self._last.put((channel, record_id), holder)  # taken now (again, by the same holder)
        return True

    async def release(self, channel: str, record_id: str) -> None:
        """Forget a reply that was deleted or failed, so the next paste may be answered."""
        self._last.pop((channel, record_id))


class FeedbackStore(Protocol):
    """Where 👍/👎 votes go. In-process here; the deployment backs it with a database."""

    def record_vote(self, *, record_id: str, user_id: str, vote: str, platform: str, place: str) -> None: ...

    def vote_of(self, *, record_id: str, user_id: str, platform: str) -> str | None: ...

    def tally(self, *, record_id: str, platform: str, place: str) -> dict[str, int]: ...


class InMemoryFeedbackStore:
    """Votes kept in memory: the last vote of a user on a record counts."""

    def __init__(self) -> None:
        self.votes: dict[tuple[str, str, str], tuple[str, str]] = {}

    def record_vote(self, *, record_id: str, user_id: str, vote: str, platform: str, place: str) -> None:
        if vote not in {"up", "down"}:
            raise ValueError(f"unknown vote {vote!r}")
        self.votes[(platform, record_id, user_id)] = (vote, place)

    def vote_of(self, *, record_id: str, user_id: str, platform: str) -> str | None:
        item = self.votes.get((platform, record_id, user_id))
        return item[0] if item else None

    def tally(self, *, record_id: str, platform: str, place: str) -> dict[str, int]:
        """Votes on one record at one place (a message), by everyone."""
        counts = {"up": 0, "down": 0}
        for (voted_platform, voted_record, _), (vote, voted_place) in self.votes.items():
            if (voted_platform, voted_record, voted_place) == (platform, record_id, place):
                counts[vote] += 1
        return counts
