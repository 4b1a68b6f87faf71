"""The decisions both adapters share: the unasked card and what an edit does to the reply and the cooldown."""

from __future__ import annotations

from adapters.answers import EditedReply, follow_edit, paste_digest, unasked_card
from adapters.state import Cooldown
from bot.card import Card
from bot.records import default_catalog
from bot.service import PanicLookup

SERVICE = PanicLookup(default_catalog())
AVG_POOL = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    "Can't differentiate avg pool 2d backward."
)
DEFORM = AVG_POOL.replace("1498", "915").replace("avg pool", "deform conv")


def answer(text: str) -> Card | None:
    return unasked_card(SERVICE, SERVICE.lookup(text))


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_only_a_paste_confident_enough_gets_an_unasked_card() -> None:
    card = answer(AVG_POOL)
    assert card is not None and "avg pool" in card.title
    assert answer("how do I train on two GPUs?") is None
    assert answer("avg pool backward") is None  # a typed query is for /panic, not for auto-reply


def test_an_edit_that_keeps_the_text_changes_nothing() -> None:
    gate = Cooldown(600, Clock())
    record = answer(AVG_POOL)
    assert record is not None
    assert gate.allow("C1", record.record_id)
    assert (
        follow_edit(
            record_id=record.record_id,
            digest=paste_digest(AVG_POOL),
            text=AVG_POOL,
            answer=answer,
            gate=gate,
            place="C1",
        )
        is None
    )
    assert not gate.allow("C1", record.record_id)  # still cooling down


def test_an_edit_to_another_panic_moves_the_cooldown_to_its_record() -> None:
    gate = Cooldown(600, Clock())
    avg = answer(AVG_POOL)
    deform = answer(DEFORM)
    assert avg is not None and deform is not None
    gate.allow("C1", avg.record_id)
    outcome = follow_edit(
        record_id=avg.record_id,
        digest=paste_digest(AVG_POOL),
        text=DEFORM,
        answer=answer,
        gate=gate,
        place="C1",
    )
    assert outcome == EditedReply(deform)
    assert gate.allow("C1", avg.record_id)  # released: the reply no longer shows it
    assert not gate.allow("C1", deform.record_id)  # taken by the reply


def test_an_edit_that_no_longer_warrants_a_reply_removes_it_and_frees_the_record() -> None:
    gate = Cooldown(600, Clock())
    avg = answer(AVG_POOL)
    assert avg is not None
    gate.allow("C1", avg.record_id)
    outcome = follow_edit(
        record_id=avg.record_id,
        digest=paste_digest(AVG_POOL),
        text="never mind, fixed it",
        answer=answer,
        gate=gate,
        place="C1",
    )
    assert outcome == EditedReply(None)
    assert gate.allow("C1", avg.record_id)


def test_a_digest_keeps_nothing_of_the_paste() -> None:
    digest = paste_digest("token xoxb-secret in a paste")
    assert len(digest) == 16 and "xoxb" not in digest
    assert digest == paste_digest("token xoxb-secret in a paste") != paste_digest("another paste")


def test_an_edit_to_a_record_another_reply_shows_removes_this_reply() -> None:
    gate = Cooldown(600, Clock())
    avg, deform = answer(AVG_POOL), answer(DEFORM)
    assert avg is not None and deform is not None
    gate.allow("C1", avg.record_id)
    gate.allow("C1", deform.record_id)  # another paste's reply shows deform conv in this channel
    outcome = follow_edit(
        record_id=avg.record_id,
        digest=paste_digest(AVG_POOL),
        text=DEFORM,
        answer=answer,
        gate=gate,
        place="C1",
    )
    assert outcome == EditedReply(None)
    assert gate.allow("C1", avg.record_id)  # nothing shows avg pool any more
