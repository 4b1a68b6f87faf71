"""Replies owed after an acknowledgement (Slack's `response_url` posts, Discord's follow-ups), kept in the
platform's outbox (`adapters.outbox`) from before the acknowledgement until they are sent.

`OwedReplies.record` stores one before the platform gets its ack (within `STORE_SECONDS`, so the ack is
never late); when it cannot, the caller answers with `NOT_STORED_MESSAGE` instead, which the platform
shows. The outbox's worker sends each one (`OutboxWorker`: in order per user, resumed by any replica after
a stop); one whose URL or token has expired is dropped with one line naming it (`expired`). What is
stored is the job, not its secret's name in a log: entries are named by a digest or the platform's id."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

from adapters.outbox import Outbox, OutboxEntry, OutboxWorker, Undeliverable

# Slack and Discord want the ack within 3 s: storing may take at most this much of it.
STORE_SECONDS = 1.5
# Several replies go out at once (each is a lookup and one HTTP post); a user's own stay in order.
CONCURRENCY = 8
NOT_STORED_MESSAGE = (
    "panicbot cannot take this request right now (its storage is not answering). Try again in a minute."
)


def digest_key(prefix: str, secret: str) -> str:
    """A stable name for the reply owed through `secret` (a response_url): safe to log, never the secret."""
    return f"{prefix}-{hashlib.sha256(secret.encode('utf-8')).hexdigest()[:20]}"


def expired(payload: dict[str, Any], valid_seconds: float, now: float, what: str) -> None:
    """Raise `Undeliverable` when the reply was asked for more than `valid_seconds` ago (its URL or token
    is dead): the worker drops it with one line, never posts late to a dead URL."""
    asked = payload.get("at")
    age = now - asked if isinstance(asked, int | float) else valid_seconds + 1
    if age > valid_seconds:
        raise Undeliverable(
            f"{what} expired ({age:.0f} s after it was asked; it lasts {valid_seconds:.0f} s)"
        )


class OwedReplies:
    """One platform's owed replies: the outbox they wait in, and the worker that sends them."""

    def __init__(
        self,
        outbox: Outbox,
        worker: OutboxWorker,
        log: logging.Logger,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.outbox, self.worker, self.log, self.clock = outbox, worker, log, clock
        self._late: set[asyncio.Task[None]] = set()

    async def record(
        self,
        key: str,
        group: str,
        member: str,
        payload: dict[str, Any],
        *,
        wake: bool = True,
        instead: str = "the user is told",
    ) -> bool:
        """Store the reply owed (with the time it was asked, `at`); False, logged, when it cannot be stored
        within `STORE_SECONDS`: then nothing is owed, and the caller tells the user so (or does what the
        log line says it does `instead`). Without `wake` the caller wakes the worker once the platform has
        the ack (a follow-up may not come before it)."""
        entry = OutboxEntry(key, group or "-", member or "-", {**payload, "at": self.clock()})
        adding = asyncio.ensure_future(self.outbox.add(entry))
        try:
            await asyncio.wait_for(asyncio.shield(adding), STORE_SECONDS)
        except TimeoutError:
            # It may still land: then it is taken out again, since the user was told it was not taken.
            late = asyncio.get_running_loop().create_task(self._withdraw(adding, key))
            self._late.add(late)
            late.add_done_callback(self._late.discard)
            self.log.error("reply %s not stored in the %s outbox in time: %s", key, self.name, instead)
            return False
        except Exception as exc:
            self.log.error(
                "reply %s not stored in the %s outbox (%s): %s",
                key,
                self.name,
                exc.__class__.__name__,
                instead,
            )
            return False
        if wake:
            self.worker.wake()
        return True

    async def withdraw(self, key: str) -> None:
        """The ack that owed this reply failed: nothing is owed after all."""
        try:
            await self.outbox.done(key)
        except Exception as exc:
            self.log.warning("reply %s could not be withdrawn (%s)", key, exc.__class__.__name__)

    @property
    def name(self) -> str:
        return self.worker.name

    async def _withdraw(self, adding: asyncio.Future[bool], key: str) -> None:
        try:
            if await adding:
                await self.outbox.done(key)
        except Exception as exc:
            self.log.warning("reply %s: a late store could not be undone (%s)", key, exc.__class__.__name__)
