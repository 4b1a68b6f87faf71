"""The tables: `votes` (👍/👎 per user, record and message), `unmatched_panics` (redacted pastes the data set
has no record for, counted), `record_matches` (how often each record answered, per platform), and the outbox
(`outbox`: acknowledged deliveries not answered yet; `outbox_lanes`: when each repository and user was last
served, for fairness), and `console_revoked` (console sessions logged out before they expire).

Changing a table here needs a new revision in `migrations/versions/` (the tests compare the two).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    DateTime,
    Dialect,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Stored messages are cut to this many characters (after redaction, so no secret is cut in half and kept).
MAX_MESSAGE_CHARS = 2_000
VOTE_VALUES = ("up", "down")

# Named constraints so later migrations can alter them on every database (SQLite batch mode needs names).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[datetime]):
    """Timestamps in UTC, always timezone-aware in Python.

    SQLite has no time zones: it gets UTC without an offset, and gets the offset back on reading, so times
    compare the same on SQLite and PostgreSQL.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: pass a timezone-aware time (UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Vote(Base):
    """One user's vote on one record's card at one place (a message); a re-vote updates the row."""

    __tablename__ = "votes"
    __table_args__ = (
        UniqueConstraint("platform", "record_id", "user_id", "place"),
        CheckConstraint("vote IN ('up', 'down')", name="vote_value"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    record_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    place: Mapped[str] = mapped_column(String(255))
    vote: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class UnmatchedPanic(Base):
    """A panic no record explains, redacted; one row per fingerprint (message shape + path), counted."""

    __tablename__ = "unmatched_panics"
    __table_args__ = (Index(None, "last_seen"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    message: Mapped[str] = mapped_column(Text)
    path: Mapped[str | None] = mapped_column(Text)
    count: Mapped[int] = mapped_column(Integer)
    first_seen: Mapped[datetime] = mapped_column(UtcDateTime())
    last_seen: Mapped[datetime] = mapped_column(UtcDateTime())
    last_platform: Mapped[str] = mapped_column(String(32))
    # As pasted (redacted), it names the release (`burn-fusion-0.21.0/src/...`); and the line. The first
    # sighting's: the fingerprint already holds the site.
    raw_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    line: Mapped[int | None] = mapped_column(Integer, nullable=True)


class RecordMatch(Base):
    """How often a record was the answer on a platform, and when."""

    __tablename__ = "record_matches"
    __table_args__ = (UniqueConstraint("record_id", "platform"), Index(None, "last_seen"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    record_id: Mapped[str] = mapped_column(String(128))
    platform: Mapped[str] = mapped_column(String(32))
    count: Mapped[int] = mapped_column(Integer)
    first_seen: Mapped[datetime] = mapped_column(UtcDateTime())
    last_seen: Mapped[datetime] = mapped_column(UtcDateTime())


class OutboxRow(Base):
    """A delivery acknowledged and not yet answered (`adapters.outbox`): its payload (pastes redacted), the
    lane it waits in (a repository and a user), and who holds it until when."""

    __tablename__ = "outbox"
    __table_args__ = (UniqueConstraint("platform", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # the order deliveries came in
    platform: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(128))  # the delivery id
    grp: Mapped[str] = mapped_column(String(255))
    member: Mapped[str] = mapped_column(String(255))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer)


class OutboxLane(Base):
    """When a lane of the outbox (a repository, or a user in it) was last served, as a rising counter."""

    __tablename__ = "outbox_lanes"
    __table_args__ = (UniqueConstraint("platform", "lane"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    lane: Mapped[str] = mapped_column(String(600))
    served: Mapped[int] = mapped_column(Integer)


class RevokedSession(Base):
    """A console session logged out before it expires (its cookie's nonce), so that every replica refuses
    its cookie; kept until it would have expired."""

    __tablename__ = "console_revoked"

    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
