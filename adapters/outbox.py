"""Work owed after an acknowledgement, kept where every replica sees it until it is done.

A webhook delivery is recorded here before the platform gets its 2XX (Redis with `REDIS_URL`, else the
service's database) and removed once answered. A worker (`OutboxWorker`) claims one entry at a time under a
lease, so two replicas never answer the same delivery; a stop releases what it has not started (logged by
delivery id) and any replica, the same one restarted included, resumes it in order. Entries wait in lanes (a
group such as a repository, and a member such as a user in it): the next one comes from the group served
longest ago, and in it from the member served longest ago, so one busy user or repository cannot take more
than its share of the reply rate. Within a lane entries go out in the order they came.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# Longer than one entry can take (a rate-limit wait of up to two minutes included): a replica that died
# holding an entry frees it after this long.
LEASE_SECONDS = 300.0
# How often a worker with nothing to do looks for entries other replicas stored.
POLL_SECONDS = 1.0
# An entry whose handling failed this many times is dropped (logged by delivery id).
MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 2.0
# How many delivery ids one shutdown log line lists.
LOGGED_IDS = 500
LANE_SEPARATOR = "\n"


class TryLater(Exception):
    """Raised by a handler when the platform cannot take the answer now: the entry is tried again later
    (logged as a warning, without a traceback)."""


class Undeliverable(Exception):
    """Raised by a handler when the entry can never be answered (the URL or token it must answer through
    has expired): it is removed, with one warning naming it and the reason (no traceback), never tried
    again."""


@dataclass(frozen=True)
class OutboxEntry:
    """One delivery owed an answer: `key` is its delivery id, `group` and `member` its lane (a repository
    and a user), `payload` what the handler needs (JSON), `attempts` how many times it was claimed before."""

    key: str
    group: str
    member: str
    payload: dict[str, Any]
    attempts: int = 0


class Outbox(Protocol):
    """Where entries wait; shared by every replica of a deployment."""

    async def add(self, entry: OutboxEntry) -> bool:
        """Store the entry (False when one with its key is already there); raises when it cannot."""

    async def claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        """The next entry by the lanes' turns, held by `owner` for `lease_seconds`; None when none is free."""

    async def done(self, key: str) -> None:
        """The entry was answered: gone."""

    async def release(self, key: str, owner: str, delay: float = 0.0) -> None:
        """Give a claimed entry back, free for anyone in `delay` seconds (its turn in its lane kept)."""

    async def pending(self) -> list[str]:
        """The keys of every entry waiting or held, in the order they came."""


@dataclass(frozen=True)
class Waiting:
    """What a claim sees of an entry: its place in the order, its lane, whether a live lease holds it."""

    order: int
    key: str
    group: str
    member: str
    held: bool


def lane_name(group: str, member: str | None = None) -> str:
    return group if member is None else f"{group}{LANE_SEPARATOR}{member}"


def next_turn(waiting: Iterable[Waiting], served: Mapping[str, int]) -> Waiting | None:
    """The entry whose turn it is: the head of a lane whose head nobody holds, from the group served longest
    ago (never served first; ties to the oldest entry), and in it from the member served longest ago. A
    lane whose head is held waits, so one lane's entries never run out of order."""
    heads: dict[tuple[str, str], Waiting] = {}
    for entry in sorted(waiting, key=lambda item: item.order):
        heads.setdefault((entry.group, entry.member), entry)
    free = [head for head in heads.values() if not head.held]
    if not free:
        return None
    groups: dict[str, list[Waiting]] = {}
    for head in free:
        groups.setdefault(head.group, []).append(head)

    def group_turn(group: str) -> tuple[int, int]:
        return served.get(lane_name(group), 0), min(head.order for head in groups[group])

    group = min(groups, key=group_turn)
    return min(groups[group], key=lambda head: (served.get(lane_name(group, head.member), 0), head.order))


Handler = Callable[[OutboxEntry], Coroutine[Any, Any, None]]


class OutboxWorker:
    """Answers the outbox's entries, `concurrency` at a time (one by default), in the lanes' turns, until
    stopped. A lane's next entry waits until the one before it is done, so a lane stays in order.

    `handle(entry)` answers one; when it raises, the entry is given back and tried again later (at most
    `MAX_ATTEMPTS` claims, then dropped and logged). On `stop` no new entry is claimed, those in hand get
    the grace time to finish (else they are cancelled and given back), and what is left is logged by key."""

    def __init__(
        self,
        outbox: Outbox,
        handle: Handler,
        *,
        name: str,
        log: logging.Logger,
        lease_seconds: float = LEASE_SECONDS,
        poll_seconds: float = POLL_SECONDS,
        max_attempts: int = MAX_ATTEMPTS,
        concurrency: int = 1,
    ) -> None:
        self.outbox, self.handle, self.name, self.log = outbox, handle, name, log
        self.lease_seconds, self.poll_seconds, self.max_attempts = lease_seconds, poll_seconds, max_attempts
        self.concurrency = max(1, concurrency)
        self.owner = f"{name.lower()}-{uuid.uuid4().hex[:12]}"
        self.answered = 0  # entries handled to the end by this worker (a metric, and for tests)
        self.dropped = 0  # entries removed unanswered (`Undeliverable`, or too many failures)
        self._wake = asyncio.Event()
        self._stopping = False
        self._in_hand: dict[str, asyncio.Task[None]] = {}  # each entry's handler, by key
        self._answers: set[asyncio.Task[None]] = set()  # each entry's whole turn (handler, removal)
        self._loop: asyncio.Task[None] | None = None
        self._unreadable = False

    def start(self) -> None:
        """Start answering (once: a second call changes nothing)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop().create_task(self._run())

    @property
    def busy(self) -> bool:
        """An entry is in hand now."""
        return bool(self._in_hand)

    def wake(self) -> None:
        """An entry was added here: look now rather than at the next poll."""
        self._wake.set()

    async def _run(self) -> None:
        while not self._stopping:
            if len(self._answers) >= self.concurrency:
                await asyncio.wait(set(self._answers), return_when=asyncio.FIRST_COMPLETED)
                continue
            # Cleared before the claim: an entry added, or one finished (its lane's next may go), while
            # claiming wakes the wait below at once.
            self._wake.clear()
            try:
                entry = await self.outbox.claim(self.owner, self.lease_seconds)
            except Exception as exc:  # the store is down: nothing is lost, it is asked again
                if not self._unreadable:  # once per outage, not once a poll
                    self.log.warning("the %s outbox cannot be read: %s", self.name, exc.__class__.__name__)
                self._unreadable = True
                entry = None
            else:
                if self._unreadable:
                    self.log.info("the %s outbox can be read again", self.name)
                self._unreadable = False
            if entry is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)
                continue
            if self._stopping:  # stopped while claiming: give it back untouched
                await self._give_back(entry.key)
                return
            answer = asyncio.get_running_loop().create_task(self._answer(entry))
            self._answers.add(answer)
            answer.add_done_callback(self._answered)

    def _answered(self, answer: asyncio.Task[None]) -> None:
        self._answers.discard(answer)
        self._wake.set()  # the next entry of its lane may go now

    async def _answer(self, entry: OutboxEntry) -> None:
        if entry.attempts >= self.max_attempts:
            self.log.error(
                "delivery %s failed %d times: dropped from the %s outbox",
                entry.key,
                entry.attempts,
                self.name,
            )
            self.dropped += 1
            await self._finish(entry.key)
            return
        handling = self._in_hand[entry.key] = asyncio.get_running_loop().create_task(self.handle(entry))
        try:
            await asyncio.shield(handling)
        except asyncio.CancelledError:
            if handling.cancelled():
                # Cut short by the stop: it stays for the next start (in its lane's turn).
                await self._give_back(entry.key)
                return
            raise
        except Undeliverable as exc:
            self.log.warning("delivery %s dropped from the %s outbox: %s", entry.key, self.name, exc)
            self.dropped += 1
            await self._finish(entry.key)
            return
        except TryLater as exc:
            delay = backoff(entry.attempts)
            self.log.warning("delivery %s not answered now (%s): tried again in %g s", entry.key, exc, delay)
            await self._give_back(entry.key, delay)
            return
        except Exception:
            self.log.exception("answering delivery %s failed; it will be tried again", entry.key)
            await self._give_back(entry.key, backoff(entry.attempts))
            return
        finally:
            self._in_hand.pop(entry.key, None)
        self.answered += 1
        await self._finish(entry.key)

    async def _finish(self, key: str) -> None:
        for attempt in range(3):
            try:
                await self.outbox.done(key)
                return
            except Exception as exc:
                self.log.warning(
                    "delivery %s answered but not removed from the outbox (%s)", key, exc.__class__.__name__
                )
                await asyncio.sleep(0.2 * (attempt + 1))

    async def _give_back(self, key: str, delay: float = 0.0) -> None:
        try:
            await self.outbox.release(key, self.owner, delay)
        except Exception as exc:  # its lease expires by itself
            self.log.warning("delivery %s not given back (%s)", key, exc.__class__.__name__)

    async def stop(self, timeout: float) -> None:
        """Claim nothing more; let the entries in hand finish within `timeout` seconds (else give them
        back); log what is left in the outbox, by delivery id."""
        self._stopping = True
        self._wake.set()
        in_hand = [task for task in self._in_hand.values() if not task.done()]
        if in_hand:
            _, late = await asyncio.wait(in_hand, timeout=timeout)
            for task in late:
                task.cancel()
        if self._answers:  # each gives its entry back, or removes it
            await asyncio.wait(set(self._answers), timeout=max(timeout, 1.0))
        if self._loop is not None:
            try:
                await asyncio.wait_for(self._loop, timeout=max(timeout, 1.0))
            except (TimeoutError, asyncio.CancelledError):
                self._loop.cancel()
            except Exception:
                self.log.exception("the %s outbox worker failed", self.name)
        try:
            left = await self.outbox.pending()
        except Exception as exc:
            self.log.warning("the %s outbox cannot be read at stop (%s)", self.name, exc.__class__.__name__)
            return
        if left:
            shown = ", ".join(left[:LOGGED_IDS]) + (" ..." if len(left) > LOGGED_IDS else "")
            self.log.warning(
                "stopping with %d %s deliver%s not answered yet, kept in the outbox for the next start: %s",
                len(left),
                self.name,
                "y" if len(left) == 1 else "ies",
                shown,
            )


def backoff(attempts: int) -> float:
    """Seconds before an entry that failed `attempts` times is tried again."""
    return float(min(RETRY_BASE_SECONDS * 2 ** min(attempts, 10), 60.0))
