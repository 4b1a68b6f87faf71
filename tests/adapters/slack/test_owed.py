"""Slack's answers owed through a response_url (`/panic`, the message shortcut) kept in the outbox: stored
before the ack, posted once after a SIGTERM and a restart, dropped (one line) once the URL has expired,
and a store that fails before the ack is an answer the user sees, never silence."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from adapters import outbox as outbox_module
from adapters.chat.owed import NOT_STORED_MESSAGE
from adapters.outbox import OutboxEntry, OutboxWorker
from adapters.storage.errors import StorageError
from tests.adapters.serve.test_service import clean_env
from tests.adapters.slack.owed_restart import restart_scenario
from tests.adapters.slack.test_app import (
    ACK_BUDGET,
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    header,
    message_action,
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
            if delay:
                await h.fake.wait_for(lambda: len(outbox.withdrawn) == 2, what="the late stores undone")
            await asyncio.sleep(0.1)
            assert h.fake.posts_to(url) == 0  # nothing owed, nothing posted late

    run(scenario())
    failures = [r for r in caplog.records if "not stored in the Slack outbox" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info is None for r in failures)


def test_an_expired_response_url_is_dropped_with_one_line_and_never_posted(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = sqlite_outbox("slack")

    async def scenario() -> None:
        async with running(slack_env, outbox=outbox) as h:
            owed = h.state.owed
            assert owed is not None
            await owed.worker.stop(0.1)  # this replica is gone: the reply waits in the outbox
            reply, url = await h.command(AVG_POOL_PASTE)
            assert reply.status == 200 and reply.text == ""
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


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=30))
