"""The decisions both adapters share: the unasked card and what an edit does to the reply and the cooldown."""

from __future__ import annotations

import asyncio

from adapters.answers import EditedReply, follow_edit, paste_digest, unasked_card
from adapters.local_memory import Cooldown
from bot.card import Card
from bot.lookup import PanicLookup
from tests.support.catalogs import seeds_catalog

SERVICE = PanicLookup(seeds_catalog())
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


AVG_POOL_ID = "8d1d2fa6df3880bd"


def edit_avg_pool_reply(gate: Cooldown, text: str) -> EditedReply | None:
    """The avg-pool paste, answered in C1, edited to `text`."""
    return asyncio.run(
        follow_edit(
            record_id=AVG_POOL_ID,
            digest=paste_digest(AVG_POOL),
            text=text,
            answer=answer,
            gate=gate,
            place="C1",
        )
    )


def allow(gate: Cooldown, record_id: str) -> bool:
    """Whether the gate lets a reply of `record_id` out in C1 now (and holds it when it does)."""
    return asyncio.run(gate.allow("C1", record_id))


def test_only_a_paste_confident_enough_gets_an_unasked_card() -> None:
    card = answer(AVG_POOL)
    assert card is not None and "avg pool" in card.title and card.record_id == AVG_POOL_ID
    assert answer("how do I train on two GPUs?") is None
    assert answer("avg pool backward") is None  # a typed query is for /panic, not for auto-reply


def test_an_edit_that_keeps_the_text_changes_nothing() -> None:
    gate = Cooldown(600, Clock())
    assert allow(gate, AVG_POOL_ID)
    assert edit_avg_pool_reply(gate, AVG_POOL) is None
    assert not allow(gate, AVG_POOL_ID)  # still cooling down


def test_an_edit_to_another_panic_moves_the_cooldown_to_its_record() -> None:
    gate = Cooldown(600, Clock())
    deform = answer(DEFORM)
    assert deform is not None
    allow(gate, AVG_POOL_ID)
    assert edit_avg_pool_reply(gate, DEFORM) == EditedReply(deform)
    assert allow(gate, AVG_POOL_ID)  # released: the reply no longer shows it
    assert not allow(gate, deform.record_id)  # taken by the reply


def test_an_edit_that_no_longer_warrants_a_reply_removes_it_and_frees_the_record() -> None:
    gate = Cooldown(600, Clock())
    allow(gate, AVG_POOL_ID)
    assert edit_avg_pool_reply(gate, "never mind, fixed it") == EditedReply(None)
    assert allow(gate, AVG_POOL_ID)


def test_an_edit_to_a_record_another_reply_shows_removes_this_reply() -> None:
    gate = Cooldown(600, Clock())
    deform = answer(DEFORM)
    assert deform is not None
    allow(gate, AVG_POOL_ID)
    allow(gate, deform.record_id)  # another paste's reply shows deform conv in this channel
    assert edit_avg_pool_reply(gate, DEFORM) == EditedReply(None)
    assert allow(gate, AVG_POOL_ID)  # nothing shows avg pool any more


def test_a_cooldown_held_by_a_paste_lets_that_paste_take_it_again() -> None:
    gate = Cooldown(600, Clock())
    assert asyncio.run(gate.allow("C1", AVG_POOL_ID, "C1/1.1"))
    assert asyncio.run(gate.allow("C1", AVG_POOL_ID, "C1/1.1"))  # its reply tried again
    assert not asyncio.run(gate.allow("C1", AVG_POOL_ID, "C1/2.2"))  # another paste's
    assert not allow(gate, AVG_POOL_ID)


def test_a_digest_tells_texts_apart_in_16_characters() -> None:
    digest = paste_digest("token xoxb-secret in a paste")
    assert len(digest) == 16
    assert digest == paste_digest("token xoxb-secret in a paste") != paste_digest("another paste")
