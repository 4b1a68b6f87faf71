"""Read-only queries behind the maintainers' console (`adapters/console`): every stored group of unmatched
panics, votes and match counts per record. Nothing here writes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Table, case, func, select

from adapters.storage.models import RecordMatch, UnmatchedPanic, Vote
from adapters.storage.store import SqlStore

_VOTES: Table = Vote.__table__  # type: ignore[assignment]
_UNMATCHED: Table = UnmatchedPanic.__table__  # type: ignore[assignment]
_MATCHES: Table = RecordMatch.__table__  # type: ignore[assignment]


@dataclass(frozen=True)
class UnmatchedGroup:
    """One row of `unmatched_panics`: a normalised message at one site, counted."""

    fingerprint: str
    message: str
    path: str | None
    count: int
    first_seen: datetime
    last_seen: datetime
    platform: str
    raw_path: str | None = None
    """The path as pasted (it names the release), when the store keeps it; None otherwise."""
    line: int | None = None


@dataclass(frozen=True)
class RecordCounts:
    record_id: str
    matches: int = 0
    up: int = 0
    down: int = 0


def _group(row: object) -> UnmatchedGroup:
    get = row.get  # type: ignore[attr-defined]
    return UnmatchedGroup(
        fingerprint=get("fingerprint"),
        message=get("message"),
        path=get("path"),
        count=int(get("count")),
        first_seen=get("first_seen"),
        last_seen=get("last_seen"),
        platform=get("last_platform"),
        raw_path=get("raw_path"),
        line=get("line"),
    )


def unmatched_groups(store: SqlStore, limit: int = 200) -> list[UnmatchedGroup]:
    """The most frequent groups first (then the most recent)."""
    query = (
        select(_UNMATCHED)
        .order_by(_UNMATCHED.c["count"].desc(), _UNMATCHED.c.last_seen.desc(), _UNMATCHED.c.id)
        .limit(limit)
    )
    with store.engine.connect() as connection:
        return [_group(row) for row in connection.execute(query).mappings()]


def unmatched_group(store: SqlStore, fingerprint: str) -> UnmatchedGroup | None:
    query = select(_UNMATCHED).where(_UNMATCHED.c.fingerprint == fingerprint)
    with store.engine.connect() as connection:
        row = connection.execute(query).mappings().first()
    return None if row is None else _group(row)


def record_counts(store: SqlStore, record_ids: Iterable[str] | None = None) -> dict[str, RecordCounts]:
    """Matches (all platforms) and votes per record; only `record_ids` when given."""
    ids = None if record_ids is None else list(dict.fromkeys(record_ids))
    matches = select(_MATCHES.c.record_id, func.sum(_MATCHES.c["count"])).group_by(_MATCHES.c.record_id)
    up = func.sum(case((_VOTES.c.vote == "up", 1), else_=0))
    down = func.sum(case((_VOTES.c.vote == "down", 1), else_=0))
    votes = select(_VOTES.c.record_id, up, down).group_by(_VOTES.c.record_id)
    if ids is not None:
        matches = matches.where(_MATCHES.c.record_id.in_(ids))
        votes = votes.where(_VOTES.c.record_id.in_(ids))
    counts: dict[str, dict[str, int]] = {}
    with store.engine.connect() as connection:
        for record_id, total in connection.execute(matches):
            counts.setdefault(record_id, {})["matches"] = int(total or 0)
        for record_id, ups, downs in connection.execute(votes):
            counts.setdefault(record_id, {}).update(up=int(ups or 0), down=int(downs or 0))
    return {record_id: RecordCounts(record_id, **values) for record_id, values in counts.items()}


def most_matched(store: SqlStore, limit: int = 20) -> list[RecordCounts]:
    total = func.sum(_MATCHES.c["count"]).label("total")
    query = (
        select(_MATCHES.c.record_id, total)
        .group_by(_MATCHES.c.record_id)
        .order_by(total.desc(), _MATCHES.c.record_id)
        .limit(limit)
    )
    with store.engine.connect() as connection:
        return [RecordCounts(record_id, matches=int(count)) for record_id, count in connection.execute(query)]


def most_downvoted(store: SqlStore, limit: int = 20) -> list[RecordCounts]:
    down = func.sum(case((_VOTES.c.vote == "down", 1), else_=0))
    up = func.sum(case((_VOTES.c.vote == "up", 1), else_=0))
    query = (
        select(_VOTES.c.record_id, up.label("up"), down.label("down"))
        .group_by(_VOTES.c.record_id)
        .having(down > 0)
        .order_by(down.desc(), up, _VOTES.c.record_id)
        .limit(limit)
    )
    with store.engine.connect() as connection:
        return [
            RecordCounts(row.record_id, up=int(row.up), down=int(row.down))
            for row in connection.execute(query)
        ]


def matched_ids(store: SqlStore) -> set[str]:
    with store.engine.connect() as connection:
        return set(connection.execute(select(_MATCHES.c.record_id).distinct()).scalars())
