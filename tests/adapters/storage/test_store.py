"""SqlStore on SQLite and PostgreSQL: votes, lookups kept (redacted) and counted, retention, the report.

Lookups are real: `PanicLookup` over the embedded data set.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from adapters.local_memory import FeedbackStore, InMemoryFeedbackStore
from adapters.storage import SqlStore, panic_fingerprint
from adapters.storage.models import MAX_MESSAGE_CHARS, RecordMatch, RevokedSession, UnmatchedPanic, Vote
from bot.lookup import PanicLookup
from tests.adapters.storage.support import FakeClock
from tests.support.catalogs import seeds_catalog

LOOKUP = PanicLookup(seeds_catalog())
CATALOG_IDS = [record.id for record in LOOKUP.catalog.records]
AVG_POOL_ID = "8d1d2fa6df3880bd"
DEFORM_ID = "5c5da46720dbbf10"
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward.\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
)
TOKEN = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"
SECRET_PASTE = (
    "thread 'main' panicked at /home/alice/work/app/src/client.rs:42:13:\n"
    f"slack auth failed with {TOKEN}: invalid_auth (config /home/alice/.config/app/settings.toml)\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
)


def index_paste(index: int, path: str = "src/lib.rs") -> str:
    message = f"index out of bounds: the len is 3 but the index is {index}"
    return f"thread 'main' panicked at {path}:10:5:\n{message}\n"


def rows(store: SqlStore, model: type[Vote] | type[UnmatchedPanic] | type[RecordMatch]) -> list[dict]:
    with store.engine.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(select(model.__table__))]


def everything_stored(store: SqlStore) -> str:
    return repr([rows(store, model) for model in (Vote, UnmatchedPanic, RecordMatch)])


# -- votes ----------------------------------------------------------------------------------------------


def test_sql_store_is_a_feedback_store(store: SqlStore) -> None:
    feedback: FeedbackStore = store  # what the adapters take
    feedback.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="up", platform="slack", place="C1:1.0")
    assert feedback.vote_of(record_id=AVG_POOL_ID, user_id="U1", platform="slack") == "up"


@pytest.mark.parametrize("kind", ["memory", "sql"])
def test_same_vote_semantics_as_the_in_memory_store(kind: str, sqlite_url: str) -> None:
    feedback: FeedbackStore = InMemoryFeedbackStore() if kind == "memory" else SqlStore(sqlite_url)
    vote = feedback.record_vote
    vote(record_id="r1", user_id="U1", vote="up", platform="slack", place="m1")
    vote(record_id="r1", user_id="U2", vote="up", platform="slack", place="m1")
    vote(record_id="r1", user_id="U1", vote="down", platform="slack", place="m1")  # changes their mind
    vote(record_id="r1", user_id="U3", vote="down", platform="discord", place="m1")
    assert feedback.tally(record_id="r1", platform="slack", place="m1") == {"up": 1, "down": 1}
    assert feedback.tally(record_id="r1", platform="discord", place="m1") == {"up": 0, "down": 1}
    assert feedback.vote_of(record_id="r1", user_id="U1", platform="slack") == "down"
    assert feedback.vote_of(record_id="r1", user_id="U1", platform="discord") is None
    with pytest.raises(ValueError, match="unknown vote"):
        vote(record_id="r1", user_id="U1", vote="meh", platform="slack", place="m1")


def test_revote_updates_the_one_row(store: SqlStore, clock: FakeClock) -> None:
    first = clock.now
    store.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="up", platform="slack", place="m1")
    later = clock.advance(minutes=5)
    store.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="down", platform="slack", place="m1")
    [row] = rows(store, Vote)
    assert (row["vote"], row["created_at"], row["updated_at"]) == ("down", first, later)
    assert store.tally(record_id=AVG_POOL_ID, platform="slack", place="m1") == {"up": 0, "down": 1}


def test_tally_is_per_place_and_vote_of_is_the_latest(store: SqlStore, clock: FakeClock) -> None:
    store.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="up", platform="slack", place="m1")
    store.record_vote(record_id=AVG_POOL_ID, user_id="U2", vote="up", platform="slack", place="m1")
    clock.advance(seconds=1)
    store.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="down", platform="slack", place="m2")
    store.record_vote(record_id=DEFORM_ID, user_id="U1", vote="down", platform="slack", place="m1")
    assert store.tally(record_id=AVG_POOL_ID, platform="slack", place="m1") == {"up": 2, "down": 0}
    assert store.tally(record_id=AVG_POOL_ID, platform="slack", place="m2") == {"up": 0, "down": 1}
    assert store.tally(record_id=AVG_POOL_ID, platform="discord", place="m1") == {"up": 0, "down": 0}
    assert store.vote_of(record_id=AVG_POOL_ID, user_id="U1", platform="slack") == "down"
    assert store.vote_of(record_id=AVG_POOL_ID, user_id="U9", platform="slack") is None
    assert len(rows(store, Vote)) == 4


# -- lookups --------------------------------------------------------------------------------------------


def test_a_matched_answer_counts_its_record(store: SqlStore, clock: FakeClock) -> None:
    first = clock.now
    store.record_lookup(LOOKUP.lookup(AVG_POOL_PASTE), "slack")
    last = clock.advance(hours=3)
    store.record_lookup(LOOKUP.lookup("avg pool 2d backward"), "slack")  # a typed query answered too
    store.record_lookup(LOOKUP.lookup(AVG_POOL_PASTE), "discord")
    by_platform = {row["platform"]: row for row in rows(store, RecordMatch)}
    assert {p: (r["record_id"], r["count"]) for p, r in by_platform.items()} == {
        "slack": (AVG_POOL_ID, 2),
        "discord": (AVG_POOL_ID, 1),
    }
    assert (by_platform["slack"]["first_seen"], by_platform["slack"]["last_seen"]) == (first, last)
    assert rows(store, UnmatchedPanic) == []


def test_unmatched_panics_are_stored_redacted(store: SqlStore, clock: FakeClock, database_url: str) -> None:
    result = LOOKUP.lookup(SECRET_PASTE)
    assert result.status == "no_known_record"
    assert TOKEN in result.panics[0].message and "alice" in result.panics[0].location.path
    store.record_lookup(result, "slack")
    [row] = rows(store, UnmatchedPanic)
    assert row["message"] == (
        "slack auth failed with [redacted]: invalid_auth (config /home/user/.config/app/settings.toml)"
    )
    assert row["path"] == "/home/user/work/app/src/client.rs"
    assert row["fingerprint"] == panic_fingerprint(row["message"], row["path"])
    dump = everything_stored(store)
    assert "xoxb-" not in dump and "alice" not in dump
    if database_url.startswith("sqlite:///"):
        # Not even in the file's bytes (journal included).
        for file in Path(database_url.removeprefix("sqlite:///")).parent.glob("panicbot.db*"):
            data = file.read_bytes()
            assert b"xoxb-" not in data and b"alice" not in data


def test_unmatched_counts_and_first_and_last_seen(store: SqlStore, clock: FakeClock) -> None:
    first = clock.now
    store.record_lookup(LOOKUP.lookup(index_paste(7)), "slack")
    clock.advance(days=2)
    # The same site with other values is the same panic: standalone numbers do not split it.
    store.record_lookup(LOOKUP.lookup(index_paste(9)), "slack")
    last = clock.advance(days=1)
    store.record_lookup(LOOKUP.lookup(index_paste(7)), "discord")
    store.record_lookup(LOOKUP.lookup(index_paste(7, path="src/other.rs")), "slack")  # another site
    by_path = {row["path"]: row for row in rows(store, UnmatchedPanic)}
    assert set(by_path) == {"src/lib.rs", "src/other.rs"}
    row = by_path["src/lib.rs"]
    assert (row["count"], row["first_seen"], row["last_seen"]) == (3, first, last)
    assert row["last_platform"] == "discord"
    assert row["message"].endswith("the index is 7")  # the first sighting's text is kept
    assert by_path["src/other.rs"]["count"] == 1


def test_what_is_not_kept(store: SqlStore) -> None:
    typed = LOOKUP.lookup("index out of bounds: the len is 3 but the index is 7")
    assert (typed.status, typed.panics[0].kind) == ("no_known_record", "query")
    store.record_lookup(typed, "slack")  # a person's typed words, not a paste
    store.record_lookup(LOOKUP.lookup("hello there"), "slack")
    store.record_lookup(LOOKUP.lookup(""), "slack")  # no_panic
    assert rows(store, UnmatchedPanic) == [] and rows(store, RecordMatch) == []


def test_a_headerless_runtime_message_is_kept(store: SqlStore) -> None:
    result = LOOKUP.lookup("called `Option::unwrap()` on a `None` value")
    assert result.panics[0].kind == "message"
    store.record_lookup(result, "slack")
    [row] = rows(store, UnmatchedPanic)
    assert (row["message"], row["path"]) == ("called `Option::unwrap()` on a `None` value", None)


def test_long_messages_are_cut(store: SqlStore) -> None:
    store.record_lookup(LOOKUP.lookup(f"thread 'main' panicked at src/a.rs:1:1:\n{'x' * 3000}\n"), "slack")
    [row] = rows(store, UnmatchedPanic)
    assert len(row["message"]) == MAX_MESSAGE_CHARS


def test_in_a_matched_paste_the_unexplained_panics_before_the_answer_are_kept(store: SqlStore) -> None:
    result = LOOKUP.lookup(index_paste(7) + AVG_POOL_PASTE)
    assert (result.status, result.answer_panic) == ("matched", 1)
    store.record_lookup(result, "slack")
    assert [row["path"] for row in rows(store, UnmatchedPanic)] == ["src/lib.rs"]
    assert [row["record_id"] for row in rows(store, RecordMatch)] == [AVG_POOL_ID]


def test_concurrent_calls_from_async_code_lose_no_count(store: SqlStore) -> None:
    unmatched, matched = LOOKUP.lookup(index_paste(7)), LOOKUP.lookup(AVG_POOL_PASTE)

    async def many() -> None:
        calls = [asyncio.to_thread(store.record_lookup, r, "slack") for r in [unmatched, matched] * 10]
        await asyncio.gather(*calls)

    asyncio.run(many())
    assert [row["count"] for row in rows(store, UnmatchedPanic)] == [10]
    assert [row["count"] for row in rows(store, RecordMatch)] == [10]


# -- retention ------------------------------------------------------------------------------------------


def test_prune_deletes_what_was_last_seen_before_the_cutoff(store: SqlStore, clock: FakeClock) -> None:
    store.record_lookup(LOOKUP.lookup(index_paste(7)), "slack")
    store.record_lookup(LOOKUP.lookup(AVG_POOL_PASTE), "slack")
    store.record_lookup(LOOKUP.lookup(index_paste(7, path="src/kept.rs")), "slack")
    store.record_vote(record_id=AVG_POOL_ID, user_id="U1", vote="up", platform="slack", place="m1")
    clock.advance(days=20)
    store.record_lookup(LOOKUP.lookup(index_paste(7, path="src/kept.rs")), "slack")  # seen again: kept
    store.record_lookup(LOOKUP.lookup(SECRET_PASTE), "slack")
    clock.advance(days=20)

    assert store.prune(older_than_days=30) == 2
    assert sorted(row["path"] for row in rows(store, UnmatchedPanic)) == [
        "/home/user/work/app/src/client.rs",
        "src/kept.rs",
    ]
    assert rows(store, RecordMatch) == []
    assert len(rows(store, Vote)) == 1  # votes are not pruned
    assert store.prune(older_than_days=30) == 0
    assert store.prune(older_than_days=0) == 2
    with pytest.raises(ValueError):
        store.prune(older_than_days=-1)


# -- report ---------------------------------------------------------------------------------------------


def test_report_contents(store: SqlStore, clock: FakeClock) -> None:
    for _ in range(3):
        store.record_lookup(LOOKUP.lookup(index_paste(7)), "slack")
    clock.advance(hours=1)
    store.record_lookup(LOOKUP.lookup(SECRET_PASTE), "discord")
    store.record_lookup(LOOKUP.lookup(AVG_POOL_PASTE), "slack")
    for user, vote in [("U1", "down"), ("U2", "down"), ("U3", "up")]:
        store.record_vote(record_id=AVG_POOL_ID, user_id=user, vote=vote, platform="slack", place="m1")
    store.record_vote(record_id=DEFORM_ID, user_id="U1", vote="down", platform="discord", place="m2")
    store.record_vote(record_id="liked", user_id="U1", vote="up", platform="slack", place="m3")

    report = store.report(10, CATALOG_IDS)
    assert [(u.path, u.count, u.platform) for u in report.unmatched] == [
        ("src/lib.rs", 3, "slack"),
        ("/home/user/work/app/src/client.rs", 1, "discord"),
    ]
    assert report.unmatched[1].first_seen == clock.now
    assert [(v.record_id, v.down, v.up) for v in report.most_downvoted] == [
        (AVG_POOL_ID, 2, 1),
        (DEFORM_ID, 1, 0),
    ]
    assert set(report.never_matched) == set(CATALOG_IDS) - {AVG_POOL_ID}
    assert (report.never_matched_total, report.catalog_size) == (2, 3)

    short = store.report(1, CATALOG_IDS)
    assert (len(short.unmatched), len(short.most_downvoted), len(short.never_matched)) == (1, 1, 1)
    assert short.never_matched_total == 2
    assert store.report(5).never_matched == ()
    with pytest.raises(ValueError):
        store.report(0)


def test_empty_report(store: SqlStore) -> None:
    report = store.report(5, CATALOG_IDS)
    assert (report.unmatched, report.most_downvoted) == ((), ())
    assert report.never_matched == tuple(CATALOG_IDS)


def test_times_come_back_in_utc(store: SqlStore, clock: FakeClock) -> None:
    clock.now = clock.now.astimezone(timezone(timedelta(hours=2)))
    store.record_lookup(LOOKUP.lookup(index_paste(1)), "slack")
    [row] = store.report(1).unmatched
    assert row.first_seen == clock.now and row.first_seen.utcoffset() == timedelta(0)


def test_an_unmatched_panic_keeps_its_pasted_path_redacted_and_its_line(store: SqlStore) -> None:
    paste = (
        "thread 'main' panicked at /home/ana.smith/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
        "burn-fusion-0.21.0/src/stream/queue.rs:88:21:\nsomething no record explains\n"
    )
    store.record_lookup(LOOKUP.lookup(paste), "slack")
    [row] = rows(store, UnmatchedPanic)
    assert row["line"] == 88
    assert "burn-fusion-0.21.0/src/stream/queue.rs" in row["raw_path"]
    assert "ana.smith" not in row["raw_path"]


def test_a_revoked_console_session_is_refused_until_it_would_have_expired(
    store: SqlStore, clock: FakeClock
) -> None:
    store.revoke_session("nonce-a", clock.now + timedelta(hours=1))
    store.revoke_session("nonce-a", clock.now + timedelta(hours=1))  # a second logout changes nothing
    assert store.session_revoked("nonce-a") and not store.session_revoked("nonce-b")
    clock.advance(hours=2)
    assert not store.session_revoked("nonce-a")  # expired anyway: its cookie is refused for that
    store.revoke_session("nonce-b", clock.now + timedelta(hours=1))  # and a later logout forgets it
    with store.engine.connect() as connection:
        kept = connection.execute(select(RevokedSession.nonce)).scalars().all()
    assert kept == ["nonce-b"]
