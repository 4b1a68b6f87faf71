"""Slack's answers owed through a response_url (`/panic`, the message shortcut, the buttons More matches,
Full fix and 👍/👎) kept in the outbox: stored before the ack, posted once after a SIGTERM and a restart,
dropped (one line) once the URL has expired, and a store that fails before the ack is an answer the user
sees, never silence."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from adapters import outbox as outbox_module
from adapters.chat.owed import NOT_STORED_MESSAGE, digest_key
from adapters.outbox import OutboxEntry, OutboxWorker
from adapters.slack import render
from adapters.storage.errors import StorageError
from tests.adapters.serve.test_service import clean_env
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.owed_restart import restart_scenario
from tests.adapters.slack.test_app import (
    ACK_BUDGET,
    APP_TOKEN,
    AVG_POOL_ID,
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    CHANNEL,
    DEFORM_TITLE,
    USER,
    Harness,
    block_actions,
    ephemeral_card,
    header,
    message_action,
    next_ts,
    running,
    slack_env,
    text_of,
)
from tests.support.outboxes import sqlite_outbox

__all__ = ["clean_env", "slack_env"]  # fixtures, used by name


def test_a_panic_owed_at_sigterm_is_answered_after_a_restart_exactly_once(
    clean_env: pytest.MonkeyPatch,
) -> None:
    # Slack's answer takes 0.2 s here: most of the 120 answers are still owed at the SIGTERM.
    figures = asyncio.run(restart_scenario(clean_env, commands=120, stop_after=10, delay=0.2))
    assert 10 <= figures.answered_before_stop < 120
    # What was not posted stayed in the outbox, and the stop said so (by id, never the URL).
    assert figures.kept_at_stop == 120 - figures.answered_before_stop
    assert (figures.answered, figures.duplicates, figures.cards) == (120, 0, 120)
    assert figures.logged_urls == 0


class _BrokenOutbox:
    """An outbox whose store is down (or, with `delay`, answers too late for Slack's 3 s)."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.withdrawn: list[str] = []

    async def add(self, entry: OutboxEntry) -> bool:
        if not self.delay:
            raise StorageError("the database is not answering")
        await asyncio.sleep(self.delay)
        return True

    async def claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        return None

    async def done(self, key: str) -> None:
        self.withdrawn.append(key)

    async def release(self, key: str, owner: str, delay: float = 0.0) -> None:
        return None

    async def pending(self) -> list[str]:
        return []


@pytest.mark.parametrize("delay", [0.0, 2.5], ids=["refused", "too-slow"])
def test_a_store_failing_before_the_ack_is_an_answer_the_user_sees(
    slack_env: pytest.MonkeyPatch, delay: float, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = _BrokenOutbox(delay)

    async def scenario() -> None:
        async with running(slack_env, outbox=outbox) as h:
            reply, url = await h.command(AVG_POOL_PASTE)
            assert reply.status == 200
            assert reply.seconds < ACK_BUDGET  # never late, however slow the store
            assert NOT_STORED_MESSAGE in reply.text  # Slack shows the ack's text to the user
            shortcut_url = h.fake.response_url()
            assert (await h.interaction(message_action(AVG_POOL_PASTE, shortcut_url))).status == 200
            note = await h.response(shortcut_url)  # a shortcut's ack carries no text: told at once instead
            assert NOT_STORED_MESSAGE in text_of(note)
            more = {"action_id": render.ACTION_MORE, "text": {"type": "plain_text", "text": "More matches"}}
            more["value"] = render.action_value(AVG_POOL_ID, None, 0.9)
            button_url = h.fake.response_url()
            click = block_actions(more, button_url, channel=CHANNEL, message_ts=next_ts(), ephemeral=True)
            clicked = await h.interaction(click)
            assert clicked.status == 200 and clicked.seconds < ACK_BUDGET
            note = await h.response(button_url)  # so is a button's (the card it came with stays)
            assert NOT_STORED_MESSAGE in text_of(note) and note.body["replace_original"] is False
            if delay:
                await h.fake.wait_for(lambda: len(outbox.withdrawn) == 3, what="the late stores undone")
            await asyncio.sleep(0.1)
            assert h.fake.posts_to(url) == 0  # nothing owed, nothing posted late
            assert h.fake.posts_to(button_url) == 1

    run(scenario())
    failures = [r for r in caplog.records if "not stored in the Slack outbox" in r.getMessage()]
    assert len(failures) == 3 and all(r.exc_info is None for r in failures)


@pytest.mark.parametrize("asked", ["command", render.ACTION_MORE, render.ACTION_VOTE_UP])
def test_an_expired_response_url_is_dropped_with_one_line_and_never_posted(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, asked: str
) -> None:
    outbox = sqlite_outbox("slack")

    async def scenario() -> None:
        async with running(slack_env, outbox=outbox) as h:
            owed = h.state.owed
            assert owed is not None
            card = await ephemeral_card(h) if asked != "command" else None
            await owed.worker.stop(0.1)  # this replica is gone: the reply waits in the outbox
            if card is None:
                reply, url = await h.command(AVG_POOL_PASTE)
                assert reply.status == 200 and reply.text == ""
            else:
                url = await h.click(card, asked)
            [key] = await outbox.pending()
            # Another replica starts 31 minutes later: Slack keeps a response_url for 30.
            later = time.time() + 31 * 60
            owed.clock = lambda: later
            other = OutboxWorker(outbox, owed.worker.handle, name="Slack", log=owed.log, poll_seconds=0.02)
            other.start()
            await h.fake.wait_for(lambda: other.dropped == 1, what="the expired reply dropped")
            await other.stop(0.1)
            assert await outbox.pending() == []
            assert h.fake.posts_to(url) == 0
            dropped = [r for r in caplog.records if key in r.getMessage() and "dropped" in r.getMessage()]
            assert len(dropped) == 1 and dropped[0].exc_info is None
            assert "its response_url expired" in dropped[0].getMessage()

    run(scenario())
    outbox.close()


def test_a_refused_response_url_is_not_retried_and_slacks_outage_is(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)

    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.fail_response_url(404, "expired_url")
            _, gone = await h.command(AVG_POOL_PASTE)
            await h.fake.wait_for(lambda: h.fake.posts_to(gone) == 1, what="the refused post")
            h.fake.fail_response_url(503, "service_unavailable", times=2)
            _, url = await h.command(AVG_POOL_PASTE)
            answer = await h.response(url)  # tried again after Slack's outage
            assert header(answer) == AVG_POOL_TITLE
            assert h.fake.posts_to(url) == 3
            await asyncio.sleep(0.3)
            assert h.fake.posts_to(gone) == 1  # a dead URL is never posted to again

    run(scenario())


def _with_full_fix(card: Any) -> Any:
    """The card with a Full fix button (the seeds' fixes are short enough that the card never shows it;
    Slack would still deliver a click on an older card, with the same value as the other buttons)."""
    [actions] = [block for block in card.body["blocks"] if block["type"] == "actions"]
    actions["elements"].append({**actions["elements"][1], "action_id": render.ACTION_FULL_FIX})
    return card


BUTTONS = (render.ACTION_MORE, render.ACTION_FULL_FIX, render.ACTION_VOTE_UP)


async def _check_button_answers(h: Harness, urls: dict[str, str]) -> None:
    more = await h.response(urls[render.ACTION_MORE])
    assert more.body["replace_original"] is False and DEFORM_TITLE in text_of(more)
    fix = await h.response(urls[render.ACTION_FULL_FIX])
    assert fix.body["replace_original"] is True and "*Example fix*" in text_of(fix)
    assert header(fix) == AVG_POOL_TITLE
    vote = await h.response(urls[render.ACTION_VOTE_UP])
    assert vote.body["replace_original"] is True and "You voted 👍" in text_of(vote)
    assert h.state.feedback.vote_of(record_id=AVG_POOL_ID, user_id=USER, platform="slack") == "up"


def test_buttons_acknowledged_before_a_stop_are_answered_after_the_restart_exactly_once(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)
    outbox = sqlite_outbox("slack")

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                card = _with_full_fix(await ephemeral_card(h))
                owed = h.state.owed
                assert owed is not None
                # The service is stopping (SIGTERM): its worker takes nothing more, the HTTP server still
                # acknowledges. Each click's job is in the outbox before its ack, named by a digest.
                await owed.worker.stop(0.1)
                urls = {button: await h.click(card, button) for button in BUTTONS}
                assert sorted(await outbox.pending()) == sorted(digest_key("slack", u) for u in urls.values())
                await asyncio.sleep(0.3)
                assert [fake.posts_to(url) for url in urls.values()] == [0, 0, 0]
            # Started again on the same outbox, with nothing in memory: Slack refuses the first post once.
            fake.fail_response_url(503, "service_unavailable")
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                await _check_button_answers(h, urls)
                owed = h.state.owed
                assert owed is not None
                await fake.wait_for(lambda: owed.worker.answered == 3, what="every click answered")
                await asyncio.sleep(0.5)  # a duplicate, if any, would come now
                assert [len(h.responses_to(url)) for url in urls.values()] == [1, 1, 1]
                assert sum(fake.posts_to(url) for url in urls.values()) == 4  # one refused, sent again
                assert await outbox.pending() == []

    run(scenario())
    outbox.close()
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("panicbot")]
    assert any("3 Slack deliveries not answered yet" in line for line in logged)
    assert not any("/response/" in line for line in logged)  # entries named by digest, never by URL


def test_buttons_are_answered_once_each_by_the_outbox_worker(
    slack_env: pytest.MonkeyPatch,
) -> None:
    # The same three buttons while the worker runs: answered once each, from the outbox.
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = _with_full_fix(await ephemeral_card(h))
            owed = h.state.owed
            assert owed is not None
            before = owed.worker.answered
            urls = {button: await h.click(card, button) for button in BUTTONS}
            await _check_button_answers(h, urls)
            await h.fake.wait_for(lambda: owed.worker.answered == before + 3, what="three answers")
            await asyncio.sleep(0.2)
            assert [h.fake.posts_to(url) for url in urls.values()] == [1, 1, 1]

    run(scenario())


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=30))
