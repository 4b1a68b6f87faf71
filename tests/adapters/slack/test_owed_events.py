"""Slack's replies to Events API deliveries (mentions, unasked replies to pastes) and the Share button kept in
the outbox: stored before the ack under the event id (or the response_url's digest), posted once after a
stop and a restart, a post a stop cut short looked for (by its metadata) before it is posted again, and a
store that fails answered from memory as before, never a traceback to anyone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from adapters import outbox as outbox_module
from adapters.chat.owed import digest_key
from adapters.outbox import OutboxEntry
from adapters.slack import app as app_module
from adapters.slack import render
from adapters.slack.app import REPLY_METADATA_TYPE, event_key
from adapters.storage.outbox import SqlOutbox
from tests.adapters.serve.test_service import clean_env
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.owed_restart import events_restart_scenario
from tests.adapters.slack.test_app import (
    ACK_BUDGET,
    APP_TOKEN,
    AUTO,
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    CHANNEL,
    DEFORM_PASTE,
    DEFORM_TITLE,
    Call,
    Harness,
    Reply,
    _no_secrets_in_logs,
    block_actions,
    buttons,
    edit_event,
    ephemeral_card,
    header,
    mention_event,
    message_event,
    next_ts,
    running,
    slack_env,
    text_of,
)
from tests.adapters.slack.test_owed import _BrokenOutbox
from tests.support.outboxes import sqlite_outbox

# Fixtures: by name, and autouse (no secret in any log line).
__all__ = ["_no_secrets_in_logs", "clean_env", "slack_env"]

KINDS = ("mention", "auto_reply", "share")
# A secret pasted with the panic: the outbox keeps the paste redacted.
SECRET_LINE = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


class _GatedOutbox:
    """A SQLite outbox whose `add` waits until the test opens the gate (a slow store), noting each call."""

    def __init__(self, inner: SqlOutbox) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.adding: list[OutboxEntry] = []

    async def add(self, entry: OutboxEntry) -> bool:
        self.adding.append(entry)
        await self.gate.wait()
        return await self.inner.add(entry)

    async def claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        return await self.inner.claim(owner, lease_seconds)

    async def done(self, key: str) -> None:
        await self.inner.done(key)

    async def release(self, key: str, owner: str, delay: float = 0.0) -> None:
        await self.inner.release(key, owner, delay)

    async def pending(self) -> list[str]:
        return await self.inner.pending()


@dataclass(frozen=True)
class Asked:
    """A delivery a test sends: its key in the outbox, how to send it, and the event (None for Share)."""

    key: str
    send: Callable[[], Awaitable[Reply]]
    event: dict[str, Any] | None = None


def _ask(h: Harness, kind: str, card: Call | None = None) -> Asked:
    """A `kind` delivery: a mention (in CHANNEL) or a paste (in AUTO), each carrying a secret, or a click of
    `card`'s Share."""
    if kind == "share":
        assert card is not None
        url = h.fake.response_url()
        share = buttons(card)[render.ACTION_SHARE]
        click = block_actions(share, url, channel=CHANNEL, message_ts=next_ts(), ephemeral=True)
        return Asked(digest_key("slack", url), lambda: h.interaction(click))
    paste = f"{AVG_POOL_PASTE}\n{SECRET_LINE}"
    event = mention_event(paste) if kind == "mention" else message_event(paste)
    event_id = f"Ev{kind.upper()}{event['ts'].replace('.', '')}"
    h.fake.add_message(event["channel"], event["ts"], event["text"], user=event["user"])  # Slack has it
    return Asked(event_key(event_id), lambda: h.event(event, event_id=event_id), event)


def _delivery(post: Call) -> str | None:
    metadata = post.body.get("metadata") or {}
    if metadata.get("event_type") != REPLY_METADATA_TYPE:
        return None
    delivery = metadata["event_payload"].get("delivery")  # none for a reply posted from memory
    return str(delivery) if delivery else None


@pytest.mark.parametrize("kind", KINDS)
def test_the_reply_an_event_or_share_owes_is_stored_before_the_ack(
    slack_env: pytest.MonkeyPatch, kind: str
) -> None:
    inner = sqlite_outbox("slack")
    outbox = _GatedOutbox(inner)

    async def scenario() -> None:
        async with running(slack_env, outbox=outbox) as h:
            card = None
            if kind == "share":
                outbox.gate.set()
                card = await ephemeral_card(h)
                outbox.gate.clear()
                outbox.adding.clear()
            asked = _ask(h, kind, card)
            before = h.state.owed.worker.answered if h.state.owed else 0
            sending = asyncio.ensure_future(asked.send())
            await h.fake.wait_for(lambda: outbox.adding, what="the reply stored")
            await asyncio.sleep(0.3)
            assert not sending.done()  # Slack has no ack while the store is under way
            assert h.fake.posts() == []
            outbox.gate.set()
            reply = await sending
            assert reply.status == 200 and reply.seconds < ACK_BUDGET
            [entry] = outbox.adding
            assert entry.key == asked.key
            stored = json.dumps(entry.payload)
            # The job, never a rendered message, a token or a secret of the paste.
            assert "blocks" not in stored and BOT_TOKEN not in stored
            assert "wJalrXUtnFEMI" not in stored
            [post] = await h.fake.wait_for(h.fake.posts, what="the reply")
            assert header(post) == AVG_POOL_TITLE
            assert _delivery(post) == asked.key  # posted by the outbox's worker, named in its metadata
            owed = h.state.owed
            assert owed is not None
            await h.fake.wait_for(lambda: owed.worker.answered == before + 1, what="the entry answered")
            await asyncio.sleep(0.3)
            assert len(h.fake.posts()) == 1
            assert await outbox.pending() == []

    run(scenario())
    inner.close()


def test_events_and_share_acknowledged_before_a_stop_are_posted_after_the_restart_exactly_once(
    slack_env: pytest.MonkeyPatch,
) -> None:
    outbox = sqlite_outbox("slack")

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                card = await ephemeral_card(h)
                owed = h.state.owed
                assert owed is not None
                # SIGTERM: the worker takes nothing more; the HTTP server still acknowledges (stores first).
                await owed.worker.stop(0.1)
                keys = []
                for kind in KINDS:
                    asked = _ask(h, kind, card)
                    reply = await asked.send()
                    assert reply.status == 200 and reply.seconds < ACK_BUDGET
                    keys.append(asked.key)
                assert sorted(await outbox.pending()) == sorted(keys)
                await asyncio.sleep(0.3)
                assert fake.posts() == []  # nothing answered from memory
            # Started again on the same outbox with nothing in memory: each is posted once.
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                posts = await fake.wait_for(lambda: len(fake.posts()) >= 3 and fake.posts(), what="3 posts")
                await fake.wait_for(lambda: fake.responses()[1:], what="the shared card's ephemeral removed")
                await asyncio.sleep(0.5)  # a duplicate, if any, would come now
                assert sorted(_delivery(post) or "" for post in fake.posts()) == sorted(keys)
                assert {post.body["channel"] for post in posts} == {CHANNEL, AUTO}
                assert all(header(post) == AVG_POOL_TITLE for post in posts)
                assert await outbox.pending() == []

    run(scenario())
    outbox.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_post_a_stop_cut_short_is_not_posted_again_after_the_restart(
    slack_env: pytest.MonkeyPatch, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = sqlite_outbox("slack")

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                card = await ephemeral_card(h) if kind == "share" else None
                fake.post_delay = 2.0  # Slack posts the message, then answers late
                asked = _ask(h, kind, card)
                assert (await asked.send()).status == 200
                await fake.wait_for(fake.posts, what="the message posted")
                owed = h.state.owed
                assert owed is not None
                await owed.worker.stop(0.1)  # the stop cuts the post short: the entry stays
                assert await outbox.pending() == [asked.key]
            fake.post_delay = 0.0
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                owed = h.state.owed
                assert owed is not None
                await fake.wait_for(lambda: owed.worker.answered == 1, what="the resumed delivery")
                await asyncio.sleep(0.3)
                assert len(fake.posts()) == 1  # found by its metadata, not posted again
                assert await outbox.pending() == []
                looked = "conversations.history" if kind == "share" else "conversations.replies"
                assert fake.calls_to(looked)[-1].body.get("include_all_metadata") in ("1", "true", True)
                if kind == "share":  # the ephemeral card is still removed
                    await fake.wait_for(lambda: fake.responses()[1:], what="the ephemeral removed")
                if kind == "auto_reply":  # remembered as the paste's reply: an edit changes that reply
                    [post] = fake.posts()
                    assert asked.event is not None
                    assert (await h.event(edit_event(asked.event, DEFORM_PASTE))).status == 200
                    [update] = await fake.wait_for_calls("chat.update")
                    assert update.body["ts"] == post.response["ts"]
                    assert header(update) == DEFORM_TITLE

    run(scenario())
    outbox.close()
    assert any("not posted again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("pages", ["enough", "one"])
@pytest.mark.parametrize("kind", ["mention", "share"])
def test_a_post_cut_short_is_found_past_the_first_page_of_its_thread_or_channel(
    slack_env: pytest.MonkeyPatch,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    pages: str,
) -> None:
    # 250 messages stand between the look and the post a stop cut short: after the mention's post in its
    # thread (conversations.replies, oldest first), before the shared card in the channel (conversations.
    # history, newest first). The resumed delivery reads the next pages (Slack's cursor) and finds it.
    # "one": the pages run out first, so whether it was posted cannot be told: a mention is posted again
    # (one line says so), a Share is not (its user can press it again).
    if pages == "one":
        monkeypatch.setattr(app_module, "LOOKED_AT_PAGES", 1)
    outbox = sqlite_outbox("slack")
    others = 250

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                card = await ephemeral_card(h) if kind == "share" else None
                asked = _ask(h, kind, card)
                if asked.event is not None:  # the thread is busy before the mention is answered
                    for number in range(others):
                        fake.say(CHANNEL, f"message {number}", thread_ts=asked.event["ts"])
                fake.post_delay = 2.0  # Slack posts the message, then answers late
                assert (await asked.send()).status == 200
                await fake.wait_for(fake.posts, what="the message posted")
                owed = h.state.owed
                assert owed is not None
                await owed.worker.stop(0.1)  # the stop cuts the post short: the entry stays
                assert await outbox.pending() == [asked.key]
                if kind == "share":  # the channel is busy after the card was shared
                    for number in range(others):
                        fake.say(CHANNEL, f"message {number}")
            fake.post_delay = 0.0
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                owed = h.state.owed
                assert owed is not None
                await fake.wait_for(lambda: owed.worker.answered == 1, what="the resumed delivery")
                await asyncio.sleep(0.3)
                looked = fake.calls_to(
                    "conversations.history" if kind == "share" else "conversations.replies"
                )
                if pages == "enough":
                    assert len(fake.posts()) == 1  # found on a later page, not posted again
                    assert len(looked) == 2 and looked[1].body.get("cursor")
                else:
                    assert len(looked) == 1
                    assert len(fake.posts()) == (1 if kind == "share" else 2)
                assert await outbox.pending() == []

    run(scenario())
    outbox.close()
    if pages == "one":
        [line] = [r for r in caplog.records if "may have been posted before" in r.getMessage()]
        assert "more than 200 messages" in line.getMessage()


def test_a_share_cut_short_where_slack_will_not_show_the_conversation_is_not_posted_again(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A Share in a direct message, the stop cutting its post short; after the restart Slack refuses to show
    # the DM's history (an app installed before it asked for im:history): whether the card went out cannot
    # be told. It is not posted again; the user keeps the ephemeral card (to press Share again) and a note.
    outbox = sqlite_outbox("slack")
    dm = "D0123ABCD"

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                card = await ephemeral_card(h)
                url = fake.response_url()
                share = buttons(card)[render.ACTION_SHARE]
                click = block_actions(share, url, channel=dm, message_ts=next_ts(), ephemeral=True)
                fake.post_delay = 2.0  # Slack posts the card, then answers late
                assert (await h.interaction(click)).status == 200
                [post] = await fake.wait_for(fake.posts, what="the card posted")
                assert post.body["channel"] == dm
                owed = h.state.owed
                assert owed is not None
                await owed.worker.stop(0.1)  # the stop cuts the post short: the entry stays
                assert await outbox.pending() == [digest_key("slack", url)]
            fake.post_delay = 0.0
            fake.fail("conversations.history", "missing_scope", times=None)
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                owed = h.state.owed
                assert owed is not None
                await fake.wait_for(lambda: owed.worker.answered == 1, what="the resumed Share")
                [note] = h.responses_to(url)
                assert note.body.get("delete_original") is not True  # the ephemeral card stays
                assert note.body.get("replace_original") is False
                assert "Share again" in text_of(note)
                await asyncio.sleep(0.3)
                assert len(fake.posts()) == 1  # not posted twice
                assert fake.calls_to("conversations.history")[0].error == "missing_scope"
                assert await outbox.pending() == []

    run(scenario())
    outbox.close()
    [line] = [r for r in caplog.records if "not posted again" in r.getMessage()]
    assert "missing_scope" in line.getMessage()


@pytest.mark.parametrize("delay", [0.0, 2.5], ids=["refused", "too-slow"])
def test_an_event_whose_store_fails_is_answered_from_memory_once(
    slack_env: pytest.MonkeyPatch, delay: float, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = _BrokenOutbox(delay)

    async def scenario() -> None:
        async with running(slack_env, outbox=outbox) as h:
            for kind in ("mention", "auto_reply"):
                reply = await _ask(h, kind).send()
                assert reply.status == 200 and reply.seconds < ACK_BUDGET
            posts = await h.fake.wait_for(lambda: h.fake.posts()[1:], what="two replies")
            assert all(header(post) == AVG_POOL_TITLE and _delivery(post) is None for post in posts)
            if delay:
                await h.fake.wait_for(lambda: len(outbox.withdrawn) == 2, what="the late stores undone")
            await asyncio.sleep(0.2)
            assert len(h.fake.posts()) == 2

    run(scenario())
    failures = [r for r in caplog.records if "answered from memory instead" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info is None for r in failures)


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=40))


def test_an_unasked_reply_slack_did_not_take_is_tried_again_and_posted_once(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Slack answers 429 three times (the client retries twice): the worker tries the delivery again, and
    # the channel's cooldown, taken by the first try, does not hold the second back.
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)

    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.rate_limit("chat.postMessage", retry_after=0, times=3)
            asked = _ask(h, "auto_reply")
            assert (await asked.send()).status == 200
            [post] = await h.fake.wait_for(h.fake.posts, what="the reply")
            assert asked.event is not None and post.body["thread_ts"] == asked.event["ts"]
            assert len(h.fake.calls_to("chat.postMessage")) == 4  # three refused, one posted
            assert _delivery(post) == asked.key
            await asyncio.sleep(0.3)
            assert len(h.fake.posts()) == 1

    run(scenario())


def test_events_acknowledged_before_a_sigterm_are_answered_after_a_restart_exactly_once(
    clean_env: pytest.MonkeyPatch,
) -> None:
    # `panicbot serve slack --http`: 60 mentions and pastes. Slack refuses the first 4 posts (429, retry
    # in 2 s) and takes 0.5 s to answer each post it made; the SIGTERM comes after 12 posts, and the stop
    # gives 0.1 s: the refused replies are waiting, the posts in hand cut short, the rest not started.
    figures = asyncio.run(events_restart_scenario(clean_env, events=60, stop_after=12, delay=0.5))
    assert figures.answered_before_stop < 60
    assert figures.kept_at_stop >= 60 - figures.answered_before_stop
    assert figures.cut_short >= 1  # posted, then cut short: found after the restart, not posted again
    assert (figures.answered, figures.duplicates, figures.cards) == (60, 0, 60)
