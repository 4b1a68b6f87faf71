"""`SqlOutbox` on SQLite and PostgreSQL: entries kept until done, one holder at a time (leases), lanes
served in turn, order kept within a lane, given-back entries resumed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.outbox import OutboxEntry
from adapters.storage.outbox import SqlOutbox
from tests.adapters.storage.support import FakeClock


@pytest.fixture
def outbox(database_url: str, clock: FakeClock) -> Iterator[SqlOutbox]:
    opened = SqlOutbox(database_url, "github", clock=clock)
    try:
        yield opened
    finally:
        opened.close()


def entry(key: str, group: str = "tracel-ai/burn", member: str = "ferris") -> OutboxEntry:
    return OutboxEntry(key, group, member, {"event": "issue_comment", "body": f"paste {key}"})


def test_an_entry_stays_until_done_and_is_stored_once(outbox: SqlOutbox) -> None:
    assert outbox.add_now(entry("d1"))
    assert not outbox.add_now(entry("d1"))  # the same delivery twice: one entry
    claimed = outbox.claim_now("replica-a", 60)
    assert claimed is not None
    assert (claimed.key, claimed.payload, claimed.attempts) == (
        "d1",
        {"event": "issue_comment", "body": "paste d1"},
        0,
    )
    assert outbox.pending_now() == ["d1"]  # held, not gone
    outbox.done_now("d1")
    assert outbox.pending_now() == []
    assert outbox.claim_now("replica-a", 60) is None


def test_a_held_entry_is_not_given_to_another_replica_until_its_lease_expires(
    outbox: SqlOutbox, clock: FakeClock
) -> None:
    outbox.add_now(entry("d1"))
    outbox.add_now(entry("d2"))  # same lane: waits behind d1, whoever holds it
    assert outbox.claim_now("replica-a", 60).key == "d1"  # type: ignore[union-attr]
    assert outbox.claim_now("replica-b", 60) is None
    clock.advance(seconds=61)  # replica-a died holding it
    resumed = outbox.claim_now("replica-b", 60)
    assert resumed is not None and (resumed.key, resumed.attempts) == ("d1", 1)


def test_a_released_entry_is_resumed_first_in_its_lane(outbox: SqlOutbox, clock: FakeClock) -> None:
    for key in ("d1", "d2", "d3"):
        outbox.add_now(entry(key))
    assert outbox.claim_now("stopping", 60).key == "d1"  # type: ignore[union-attr]
    outbox.release_now("d1", "stopping")  # SIGTERM before it was answered
    assert outbox.claim_now("restarted", 60).key == "d1"  # type: ignore[union-attr]
    outbox.release_now("d1", "someone-else")  # only its holder gives it back
    assert outbox.claim_now("other", 60) is None
    outbox.release_now("d1", "restarted", delay=30)  # failed: tried again in 30 s, still first
    assert outbox.claim_now("other", 60) is None
    clock.advance(seconds=31)
    assert outbox.claim_now("other", 60).key == "d1"  # type: ignore[union-attr]


def test_one_busy_user_or_repository_gets_its_turn_not_the_whole_rate(outbox: SqlOutbox) -> None:
    for n in range(20):
        outbox.add_now(entry(f"busy{n}", "big/repo", "busy"))
    for n in range(3):
        outbox.add_now(entry(f"other{n}", "big/repo", "ferris"))
        outbox.add_now(entry(f"small{n}", "small/repo", "crab"))
    served = []
    for _ in range(9):
        claimed = outbox.claim_now("replica", 60)
        assert claimed is not None
        served.append(claimed.key)
        outbox.done_now(claimed.key)
    # Repositories take turns; inside big/repo, its users take turns; each lane in its own order.
    assert served == ["busy0", "small0", "other0", "small1", "busy1", "small2", "other1", "busy2", "other2"]
