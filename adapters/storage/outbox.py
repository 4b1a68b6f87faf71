"""`SqlOutbox`: the outbox (`adapters.outbox`) in the service's database (SQLite or PostgreSQL), for a
deployment without Redis. Each call is one short transaction run in a thread, never on the event loop.

A claim reads the waiting entries and the lanes' turns, picks the next (`next_turn`) and takes it with a
conditional UPDATE (only if nobody holds a live lease on it): two replicas claiming at once cannot both get
it. On PostgreSQL claims also queue on an advisory lock, so the turns stay fair across replicas."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, Table, delete, event, insert, or_, select, text, update
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError

from adapters.outbox import OutboxEntry, Waiting, lane_name, next_turn
from adapters.storage.engine import make_engine
from adapters.storage.errors import StorageError, storage_error
from adapters.storage.models import OutboxLane, OutboxRow
from adapters.storage.store import _upsert

OUTBOX_LOCK_KEY = 0x6F7574626F78  # "outbox"
_OUTBOX: Table = OutboxRow.__table__  # type: ignore[assignment]
_LANES: Table = OutboxLane.__table__  # type: ignore[assignment]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SqlOutbox:
    """The outbox of one platform in a migrated database (`upgrade_database` first)."""

    def __init__(self, url: str, platform: str, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self.platform, self._clock = platform, clock
        try:
            self.url: URL = make_url(url)
            self.engine: Engine = make_engine(self.url, pool_pre_ping=True)
        except (ArgumentError, ImportError, ValueError) as exc:
            raise StorageError(f"not a usable database URL ({type(exc).__name__})") from None
        if self.url.get_backend_name() == "sqlite":
            event.listen(self.engine, "connect", _sqlite_wal)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _transaction(self, action: str) -> Iterator[Connection]:
        try:
            with self.engine.begin() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise storage_error(action, self.url, exc) from exc

    # -- the Outbox protocol, off the event loop ----------------------------------------------------------

    async def add(self, entry: OutboxEntry) -> bool:
        return await asyncio.to_thread(self.add_now, entry)

    async def claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        return await asyncio.to_thread(self.claim_now, owner, lease_seconds)

    async def done(self, key: str) -> None:
        await asyncio.to_thread(self.done_now, key)

    async def release(self, key: str, owner: str, delay: float = 0.0) -> None:
        await asyncio.to_thread(self.release_now, key, owner, delay)

    async def pending(self) -> list[str]:
        return await asyncio.to_thread(self.pending_now)

    # -- the same, blocking -------------------------------------------------------------------------------

    def add_now(self, entry: OutboxEntry) -> bool:
        row = {
            "platform": self.platform,
            "key": entry.key,
            "grp": entry.group[:255],
            "member": entry.member[:255],
            "payload": json.dumps(entry.payload, separators=(",", ":")),
            "created_at": self._clock(),
            "owner": None,
            "lease_until": None,
            "attempts": 0,
        }
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(_OUTBOX).values(row))
        except IntegrityError:
            return False  # the same delivery is already waiting
        except SQLAlchemyError as exc:
            raise storage_error("storing a delivery in the outbox", self.url, exc) from exc
        return True

    def claim_now(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        now = self._clock()
        with self._transaction("claiming from the outbox") as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": OUTBOX_LOCK_KEY})
            mine = _OUTBOX.c.platform == self.platform
            rows = connection.execute(
                select(_OUTBOX.c.id, _OUTBOX.c.key, _OUTBOX.c.grp, _OUTBOX.c.member, _OUTBOX.c.lease_until)
                .where(mine)
                .order_by(_OUTBOX.c.id)
            ).all()
            waiting = [
                Waiting(row.id, row.key, row.grp, row.member, _held(row.lease_until, now)) for row in rows
            ]
            served = {
                row.lane: row.served
                for row in connection.execute(
                    select(_LANES.c.lane, _LANES.c.served).where(_LANES.c.platform == self.platform)
                )
            }
            turn = next_turn(waiting, served)
            if turn is None:
                return None
            taken = connection.execute(
                update(_OUTBOX)
                .where(
                    _OUTBOX.c.id == turn.order,
                    or_(_OUTBOX.c.lease_until.is_(None), _OUTBOX.c.lease_until <= now),
                )
                .values(
                    owner=owner,
                    lease_until=now + timedelta(seconds=lease_seconds),
                    attempts=_OUTBOX.c.attempts + 1,
                )
            )
            if taken.rowcount != 1:
                return None  # another replica took it: the next poll finds the next one
            counter = max(served.values(), default=0) + 1
            for lane in (lane_name(turn.group), lane_name(turn.group, turn.member)):
                row = {"platform": self.platform, "lane": lane, "served": counter}
                _upsert(connection, _LANES, row, keys=("platform", "lane"), changes={"served": counter})
            payload, attempts = connection.execute(
                select(_OUTBOX.c.payload, _OUTBOX.c.attempts).where(_OUTBOX.c.id == turn.order)
            ).one()
        return OutboxEntry(turn.key, turn.group, turn.member, _payload(payload), attempts - 1)

    def done_now(self, key: str) -> None:
        with self._transaction("removing an answered delivery from the outbox") as connection:
            mine = _OUTBOX.c.platform == self.platform
            connection.execute(delete(_OUTBOX).where(mine, _OUTBOX.c.key == key))
            # Lanes with nothing waiting are forgotten, so the table holds only the active ones.
            connection.execute(
                delete(_LANES).where(
                    _LANES.c.platform == self.platform,
                    ~select(_OUTBOX.c.id).where(mine).exists(),
                )
            )

    def release_now(self, key: str, owner: str, delay: float = 0.0) -> None:
        free_at = self._clock() + timedelta(seconds=delay) if delay > 0 else None
        with self._transaction("giving a delivery back to the outbox") as connection:
            connection.execute(
                update(_OUTBOX)
                .where(_OUTBOX.c.platform == self.platform, _OUTBOX.c.key == key, _OUTBOX.c.owner == owner)
                .values(owner=None, lease_until=free_at)
            )

    def pending_now(self) -> list[str]:
        with self._transaction("reading the outbox") as connection:
            return list(
                connection.execute(
                    select(_OUTBOX.c.key).where(_OUTBOX.c.platform == self.platform).order_by(_OUTBOX.c.id)
                ).scalars()
            )


def _sqlite_wal(connection: Any, _: object) -> None:
    """Write-ahead log, synced at checkpoints: a commit costs no fsync (30 ms on a slow disk, two per
    reply) and still survives the process being killed; only a power cut can take the last commits."""
    cursor = connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _payload(raw: str) -> dict[str, Any]:
    data = json.loads(raw)
    return data if isinstance(data, dict) else {}


def _held(lease_until: datetime | None, now: datetime) -> bool:
    return lease_until is not None and lease_until > now
