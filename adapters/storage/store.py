"""`SqlStore`: votes (the adapters' `FeedbackStore`), lookups worth remembering, retention and a report.

Every method runs one short transaction and blocks until it is done (milliseconds on a nearby database).
The engine's connection pool is thread-safe, so async code may call a method directly or, when the database
is remote, through `asyncio.to_thread`. Counters are bumped with one atomic upsert (`INSERT ... ON CONFLICT`),
so several replicas may share one PostgreSQL database. Any database failure is raised as one `StorageError`
that names the action and the database without its password.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Table,
    and_,
    case,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from adapters.storage.engine import DEFAULT_CONNECT_TIMEOUT_SECONDS, make_engine
from adapters.storage.errors import StorageError, storage_error
from adapters.storage.models import (
    MAX_MESSAGE_CHARS,
    VOTE_VALUES,
    RecordMatch,
    RevokedSession,
    UnmatchedPanic,
    Vote,
)
from bot.extract import Panic
from bot.matcher import LookupResult
from bot.redact import redact

Clock = Callable[[], datetime]

# Only pastes are worth keeping: a typed query (`kind == "query"`) is a person's words, not a panic.
STORED_PANIC_KINDS = frozenset({"header", "message"})
# Every statement is a short transaction: one that takes longer is stuck (a lock, a sick server), and a chat
# handler must not wait for it.
DEFAULT_STATEMENT_TIMEOUT_SECONDS = 15

_WHITESPACE = re.compile(r"\s+")
# Standalone numbers and addresses vary between runs of one panic site ("the index is 7", "0x7ffd...");
# numbers inside words ("conv2d") are part of the message.
_NUMBER = re.compile(r"\b(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)\b")

_VOTES: Table = Vote.__table__  # type: ignore[assignment]
_UNMATCHED: Table = UnmatchedPanic.__table__  # type: ignore[assignment]
_MATCHES: Table = RecordMatch.__table__  # type: ignore[assignment]
_REVOKED: Table = RevokedSession.__table__  # type: ignore[assignment]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def normalise_message(message: str) -> str:
    """The message as it is compared: whitespace collapsed, standalone numbers and addresses as `#`."""
    return _NUMBER.sub("#", _WHITESPACE.sub(" ", message).strip())


def panic_fingerprint(redacted_message: str, path: str | None) -> str:
    """sha256 of the normalised redacted message and the canonical path: one row per panic site."""
    return hashlib.sha256(f"{normalise_message(redacted_message)}\n{path or ''}".encode()).hexdigest()


@dataclass(frozen=True)
class UnmatchedPanicSummary:
    fingerprint: str
    message: str
    path: str | None
    count: int
    first_seen: datetime
    last_seen: datetime
    platform: str
    """Where it was seen last."""


@dataclass(frozen=True)
class RecordVotes:
    record_id: str
    down: int
    up: int


@dataclass(frozen=True)
class Report:
    """What the data set needs next: records to write, analyses to review, records nobody meets."""

    unmatched: tuple[UnmatchedPanicSummary, ...]
    """Panics with no record, most frequent first."""
    most_downvoted: tuple[RecordVotes, ...]
    """Records with at least one 👎, most 👎 first."""
    never_matched: tuple[str, ...]
    """Ids of the given catalog never given as an answer (within retention), in catalog order, cut to
    `limit`; `never_matched_total` counts them all."""
    never_matched_total: int = 0
    catalog_size: int = 0


class SqlStore:
    """Votes, matches and unmatched panics in SQLite or PostgreSQL; implements `FeedbackStore`.

    The tables must exist: run `upgrade_database(url)` first. The caller picks the URL (e.g. from
    `DATABASE_URL`, default `sqlite:///panicbot.db`).
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = _utc_now,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
        statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._clock = clock
        try:
            self.url: URL = make_url(url)
            # A database that does not answer must not hold a chat handler for libpq's default (forever).
            self.engine: Engine = make_engine(
                self.url,
                connect_timeout=connect_timeout,
                statement_timeout=statement_timeout,
                # pool_pre_ping: a restarted server's dead connections are replaced.
                **{"pool_pre_ping": True, **(engine_options or {})},
            )
        except (ArgumentError, ImportError, ValueError) as exc:
            # Never echo the URL: it may hold a password.
            raise StorageError(f"not a usable database URL ({type(exc).__name__})") from None

    def close(self) -> None:
        """Close the pooled connections."""
        self.engine.dispose()

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlStore({self.url.render_as_string(hide_password=True)!r})"

    # -- FeedbackStore ---------------------------------------------------------------------------------

    def record_vote(self, *, record_id: str, user_id: str, vote: str, platform: str, place: str) -> None:
        """The user's vote on the record at `place`; voting again there replaces it."""
        if vote not in VOTE_VALUES:
            raise ValueError(f"unknown vote {vote!r}")
        now = self._now()
        row = {
            "platform": platform,
            "record_id": record_id,
            "user_id": user_id,
            "place": place,
            "vote": vote,
            "created_at": now,
            "updated_at": now,
        }
        with self._transaction("recording a vote") as connection:
            _upsert(
                connection,
                _VOTES,
                row,
                keys=("platform", "record_id", "user_id", "place"),
                changes={"vote": vote, "updated_at": now},
            )

    def vote_of(self, *, record_id: str, user_id: str, platform: str) -> str | None:
        """The user's latest vote on the record, wherever it was cast; None when they never voted."""
        query = (
            select(_VOTES.c.vote)
            .where(
                _VOTES.c.platform == platform,
                _VOTES.c.record_id == record_id,
                _VOTES.c.user_id == user_id,
            )
            .order_by(_VOTES.c.updated_at.desc(), _VOTES.c.id.desc())
            .limit(1)
        )
        with self._transaction("reading a vote") as connection:
            vote: str | None = connection.execute(query).scalar_one_or_none()
        return vote

    def tally(self, *, record_id: str, platform: str, place: str) -> dict[str, int]:
        """Votes on one record at one place (a message), by everyone: `{"up": n, "down": m}`."""
        query = (
            select(_VOTES.c.vote, func.count())
            .where(
                _VOTES.c.platform == platform,
                _VOTES.c.record_id == record_id,
                _VOTES.c.place == place,
            )
            .group_by(_VOTES.c.vote)
        )
        counts = dict.fromkeys(VOTE_VALUES, 0)
        with self._transaction("counting votes") as connection:
            for vote, count in connection.execute(query):
                counts[vote] = int(count)
        return counts

    # -- lookups ---------------------------------------------------------------------------------------

    def record_lookup(self, result: LookupResult, platform: str) -> None:
        """Count the answer's record; keep (redacted) every pasted panic that no record explains.

        Unexplained panics are those of a `no_known_record` result, and in a matched paste those before the
        answered one (the lookup tried them first and found no record). Typed queries are not kept.
        """
        now = self._now()
        best = result.best
        if result.status == "no_known_record":
            unexplained = result.panics
        elif best is not None and result.answer_panic is not None:
            unexplained = result.panics[: result.answer_panic]
        else:
            unexplained = ()
        rows = _unmatched_rows(unexplained, platform, now)
        if best is None and not rows:
            return
        with self._transaction("recording a lookup") as connection:
            if best is not None:
                _upsert(
                    connection,
                    _MATCHES,
                    {
                        "record_id": best.record.id,
                        "platform": platform,
                        "count": 1,
                        "first_seen": now,
                        "last_seen": now,
                    },
                    keys=("record_id", "platform"),
                    changes={"count": _MATCHES.c["count"] + 1, "last_seen": now},
                )
            for row in rows:
                _upsert(
                    connection,
                    _UNMATCHED,
                    row,
                    keys=("fingerprint",),
                    changes={
                        "count": _UNMATCHED.c["count"] + 1,
                        "last_seen": now,
                        "last_platform": platform,
                    },
                )

    def prune(self, older_than_days: int) -> int:
        """Retention: delete unmatched panics and match counts last seen over `older_than_days` ago.

        Votes are kept. Returns how many rows were deleted.
        """
        if older_than_days < 0:
            raise ValueError("older_than_days must be 0 or more")
        cutoff = self._now() - timedelta(days=older_than_days)
        with self._transaction("pruning old rows") as connection:
            deleted = 0
            for table in (_UNMATCHED, _MATCHES):
                deleted += connection.execute(delete(table).where(table.c.last_seen < cutoff)).rowcount
        return deleted

    def revoke_session(self, nonce: str, expires: datetime) -> None:
        """A console session logged out: refused by every replica until `expires` (then forgotten, with
        every other revocation past its time)."""
        with self._transaction("revoking a console session") as connection:
            connection.execute(delete(_REVOKED).where(_REVOKED.c.expires_at <= self._now()))
            row = {"nonce": nonce[:64], "expires_at": expires}
            _upsert(connection, _REVOKED, row, keys=("nonce",), changes={"expires_at": expires})

    def session_revoked(self, nonce: str) -> bool:
        """True when the console session `nonce` was logged out (on any replica) and has not expired."""
        with self._transaction("reading revoked console sessions") as connection:
            found = connection.execute(
                select(_REVOKED.c.nonce).where(
                    _REVOKED.c.nonce == nonce[:64], _REVOKED.c.expires_at > self._now()
                )
            ).first()
        return found is not None

    def report(self, limit: int = 10, catalog_ids: Iterable[str] = ()) -> Report:
        """The most frequent unmatched panics, the records with the most 👎 (and their 👍), and the ids of
        `catalog_ids` never matched; each list at most `limit` long."""
        if limit < 1:
            raise ValueError("limit must be 1 or more")
        catalog = list(dict.fromkeys(catalog_ids))
        unmatched_query = (
            select(_UNMATCHED)
            .order_by(_UNMATCHED.c["count"].desc(), _UNMATCHED.c.last_seen.desc(), _UNMATCHED.c.id)
            .limit(limit)
        )
        down = func.sum(case((_VOTES.c.vote == "down", 1), else_=0))
        up = func.sum(case((_VOTES.c.vote == "up", 1), else_=0))
        votes_query = (
            select(_VOTES.c.record_id, down.label("down"), up.label("up"))
            .group_by(_VOTES.c.record_id)
            .having(down > 0)
            .order_by(down.desc(), up, _VOTES.c.record_id)
            .limit(limit)
        )
        with self._transaction("building the report") as connection:
            # By key: to type checkers `row.count` is the tuple method, not the column.
            unmatched = tuple(
                UnmatchedPanicSummary(
                    fingerprint=row["fingerprint"],
                    message=row["message"],
                    path=row["path"],
                    count=row["count"],
                    first_seen=row["first_seen"],
                    last_seen=row["last_seen"],
                    platform=row["last_platform"],
                )
                for row in connection.execute(unmatched_query).mappings()
            )
            downvoted = tuple(
                RecordVotes(row.record_id, int(row.down), int(row.up))
                for row in connection.execute(votes_query)
            )
            # The matched set is at most one row per record and platform: smaller than an IN list of a
            # whole catalog, which SQLite caps.
            matched = set(connection.execute(select(_MATCHES.c.record_id).distinct()).scalars())
        never = [record_id for record_id in catalog if record_id not in matched]
        return Report(
            unmatched=unmatched,
            most_downvoted=downvoted,
            never_matched=tuple(never[:limit]),
            never_matched_total=len(never),
            catalog_size=len(catalog),
        )

    # -- internals -------------------------------------------------------------------------------------

    def _now(self) -> datetime:
        now = self._clock()
        if now.tzinfo is None:
            raise ValueError("the clock must return timezone-aware times")
        return now.astimezone(UTC)

    @contextmanager
    def _transaction(self, action: str) -> Iterator[Connection]:
        try:
            with self.engine.begin() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise storage_error(action, self.url, exc) from exc


def _unmatched_rows(panics: Iterable[Panic], platform: str, now: datetime) -> list[dict[str, Any]]:
    """Rows for the panics worth keeping, redacted before anything else, one per fingerprint."""
    rows: dict[str, dict[str, Any]] = {}
    for panic in panics:
        if panic.kind not in STORED_PANIC_KINDS or not panic.message.strip():
            continue
        # Redact first, then cut: a cut first could leave half a token the patterns no longer recognise.
        message = redact(panic.message)
        path = redact(panic.location.path) if panic.location and panic.location.path else None
        raw_path = redact(panic.location.raw_path) if panic.location and panic.location.raw_path else None
        fingerprint = panic_fingerprint(message, path)
        rows.setdefault(
            fingerprint,
            {
                "fingerprint": fingerprint,
                "message": message[:MAX_MESSAGE_CHARS],
                "path": path,
                "count": 1,
                "first_seen": now,
                "last_seen": now,
                "last_platform": platform,
                "raw_path": raw_path,
                "line": panic.location.line if panic.location else None,
            },
        )
    return list(rows.values())


def _upsert(
    connection: Connection,
    table: Table,
    row: dict[str, Any],
    *,
    keys: tuple[str, ...],
    changes: dict[str, Any],
) -> None:
    """Insert `row`, or apply `changes` to the row with the same `keys`, atomically where the database can."""
    dialect = connection.dialect.name
    if dialect in ("postgresql", "sqlite"):
        insert_row = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table).values(row)
        connection.execute(
            insert_row.on_conflict_do_update(index_elements=[table.c[k] for k in keys], set_=changes)
        )
        return
    # Other databases: update, then insert when there was nothing to update (not atomic across replicas).
    match = and_(*(table.c[k] == row[k] for k in keys))
    if connection.execute(update(table).where(match).values(changes)).rowcount == 0:
        connection.execute(insert(table).values(row))
