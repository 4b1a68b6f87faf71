"""What the chat adapters decide alike about unasked replies: which card a paste gets, and what an edit of
an answered paste does to the reply and to the channel's cooldown. Platform code sends the messages; this
module only decides, so Slack and Discord cannot drift apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from adapters.local_memory import CooldownGate
from bot import Card, Lookup, LookupResult


def paste_digest(text: str) -> str:
    """What a reply remembers of the paste it answers (never the paste itself): enough to tell an edit
    that changes the text from one that does not (a link preview, a pin)."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def unasked_card(service: Lookup, result: LookupResult) -> Card | None:
    """The card to post without being asked: only for a lookup confident enough to auto-reply."""
    return service.card(result) if result.auto_reply else None


@dataclass(frozen=True)
class EditedReply:
    """What an edited paste's reply becomes: `card` to show now, or None to remove the reply."""

    card: Card | None


async def follow_edit(
    *,
    record_id: str,
    digest: str,
    text: str,
    answer: Callable[[str], Card | None],
    gate: CooldownGate,
    place: str,
    holder: str = "",
    text_digest: str = "",
) -> EditedReply | None:
    """The reply's fate after its paste (answered with `record_id`, text digest `digest`) became `text`;
    None when the text is unchanged. The channel's cooldown follows the reply: released for a record it no
    longer shows, taken for the one it shows now; a record another reply already shows in the channel
    (its cooldown held) is not shown twice: the reply goes. `holder` names the paste: an edit tried again
    is not held back by the hold its own earlier try took. `text_digest`: the digest of the text as written
    when `text` is not (a paste kept redacted); by default that of `text`."""
    if digest and digest == (text_digest or paste_digest(text)):
        return None
    card = answer(text)
    if card is not None and card.record_id == record_id:
        return EditedReply(card)
    await gate.release(place, record_id)
    if card is not None and not await gate.allow(place, card.record_id, holder):
        return EditedReply(None)
    return EditedReply(card)


async def undo_edit(
    gate: CooldownGate, place: str, *, shown: str, previous: str, reply_gone: bool, holder: str = ""
) -> None:
    """The reply could not be changed to show `shown`: the cooldown goes back to the record it still
    shows (`previous`), or is freed when the reply turned out to be gone."""
    if shown != previous:
        await gate.release(place, shown)
        if not reply_gone:
            await gate.allow(place, previous, holder)
    elif reply_gone:
        await gate.release(place, previous)
