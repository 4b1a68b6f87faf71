"""The edit and deletion of a paste the bot answered unasked, kept in the Slack outbox: stored before the
ack in the paste author's lane, so a change waits behind the reply it changes (also after a restart); the
reply found in the paste's thread by its metadata when memory lost it; a change Slack did not take tried
again and applied (twice is harmless, an already deleted reply is no error); an edit never posts a reply.
And the channel's cooldown with the Redis-backed state: a reply tried again is never held back by the hold
its own earlier try took."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from adapters import outbox as outbox_module
from adapters.answers import paste_digest
from adapters.chat import ChatFlows, shared_replies
from adapters.outbox import Outbox
from adapters.redis_memory import RedisCooldown, RedisEventDeduper, async_redis_from_url
from adapters.slack import app as app_module
from adapters.slack.app import REPLY_METADATA_TYPE, event_key
from tests.adapters.serve.test_service import clean_env
from tests.adapters.slack.fake_slack import BOT_USER_ID, HOST, FakeSlack
from tests.adapters.slack.test_app import (
    ACK_BUDGET,
    APP_TOKEN,
    AUTO,
    AVG_POOL_ID,
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    CHAT,
    DEFORM_ID,
    DEFORM_PASTE,
    DEFORM_TITLE,
    OTHER_USER,
    Call,
    Harness,
    _no_secrets_in_logs,
    delete_event,
    edit_event,
    header,
    message_event,
    running,
    slack_env,
)
from tests.adapters.test_redis_memory import free_port
from tests.support.local_redis import answering_redis, prefix_of_its_own
from tests.support.outboxes import sqlite_outbox

# Fixtures: by name, and autouse (no secret in any log line).
__all__ = ["_no_secrets_in_logs", "clean_env", "slack_env"]

REDIS_URL = f"redis://{HOST}:6379/0"
CHANGES = ("edit", "delete")


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=40))


async def paste(h: Harness, text: str = AVG_POOL_PASTE) -> tuple[dict[str, Any], str]:
    """A paste in the auto-reply channel, as Slack has it and delivers it; its outbox key."""
    event = message_event(text)
    h.fake.add_message(event["channel"], event["ts"], event["text"], user=event["user"])
    event_id = f"EvPASTE{event['ts'].replace('.', '')}"
    reply = await h.event(event, event_id=event_id)
    assert reply.status == 200 and reply.seconds < ACK_BUDGET
    return event, event_key(event_id)


def as_slack_shows(fake: FakeSlack, event: dict[str, Any]) -> dict[str, Any]:
    """The paste as Slack shows it now (a thread's parent: its thread, reply count and who replied), which
    is what the message_changed and message_deleted events carry."""
    return {**event, **fake.messages[(event["channel"], event["ts"])]}


def change_of(kind: str, shown: dict[str, Any]) -> dict[str, Any]:
    return edit_event(shown, DEFORM_PASTE) if kind == "edit" else delete_event(shown)


def reply_metadata(fake: FakeSlack, post: Call) -> dict[str, Any]:
    metadata = fake.messages[(AUTO, post.response["ts"])]["metadata"]
    assert metadata["event_type"] == REPLY_METADATA_TYPE
    return dict(metadata["event_payload"])


async def paste_and_change_stored(h: Harness, outbox: Outbox, kind: str) -> None:
    """The worker stopped (as by SIGTERM), a paste and its change (`kind`) are acknowledged in time and
    stored, in that order, not answered."""
    owed = h.state.owed
    assert owed is not None
    await owed.worker.stop(0.1)  # SIGTERM: acknowledged (and stored) from now on, not answered
    event, key = await paste(h)
    reply = await h.event(change_of(kind, event), event_id="EvCHANGE1")
    assert reply.status == 200 and reply.seconds < ACK_BUDGET
    assert await outbox.pending() == [key, event_key("EvCHANGE1")]


async def changed(fake: FakeSlack, kind: str, post: Call) -> None:
    """The reply `post` shows the deform conv card now (its metadata says so), or is gone."""
    ts = post.response["ts"]
    if kind == "edit":
        [update] = await fake.wait_for_calls("chat.update")
        assert (update.body["channel"], update.body["ts"]) == (AUTO, ts)
        assert header(update) == DEFORM_TITLE
        assert reply_metadata(fake, post)["record"] == DEFORM_ID
    else:
        [delete] = await fake.wait_for_calls("chat.delete")
        assert (delete.body["channel"], delete.body["ts"]) == (AUTO, ts)
        assert (AUTO, ts) not in fake.messages


@pytest.mark.parametrize("kind", CHANGES)
def test_a_change_queued_behind_its_reply_is_applied_to_it_after_the_restart(
    slack_env: pytest.MonkeyPatch, kind: str
) -> None:
    outbox = sqlite_outbox("slack")

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                await paste_and_change_stored(h, outbox, kind)
                await asyncio.sleep(0.3)
                assert [call.method for call in fake.calls if call.method.startswith("chat.")] == []
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                [post] = await fake.wait_for_calls("chat.postMessage")
                assert header(post) == AVG_POOL_TITLE  # the reply first, for the paste as it was asked
                await changed(fake, kind, post)  # then changed, in order
                await fake.wait_for(lambda: h.state.owed and h.state.owed.worker.answered == 2, what="both")
                await asyncio.sleep(0.3)
                assert len(fake.posts()) == 1
                assert await outbox.pending() == []

    run(scenario())
    outbox.close()


@pytest.mark.parametrize("memory", ["put-back", "kept"])
@pytest.mark.parametrize("kind", CHANGES)
def test_a_change_stored_before_its_reply_that_slack_did_not_take_is_tried_again_and_applied(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch, kind: str, memory: str
) -> None:
    # The edit (or deletion) arrives while the reply is still owed: the paste has no thread yet. After the
    # restart the reply is posted, then Slack answers its chat.update (chat.delete) 429 three times (the
    # client retries twice): the worker tries the change again, and it is applied to the reply. "kept": the
    # memory the failed try changed is not put back (as when a replica sharing it in Redis is killed
    # mid-call): the try again reads the reply in the paste's thread.
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)
    if memory == "kept":

        async def killed(*_: Any) -> None:
            return None

        monkeypatch.setattr(ChatFlows, "_not_done", killed)
    outbox = sqlite_outbox("slack")
    method = "chat.update" if kind == "edit" else "chat.delete"

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                await paste_and_change_stored(h, outbox, kind)
            fake.rate_limit(method, retry_after=0, times=3)
            async with running(slack_env, outbox=outbox, fake=fake) as h:
                [post] = await fake.wait_for_calls("chat.postMessage")
                await changed(fake, kind, post)
                await fake.wait_for(lambda: h.state.owed and h.state.owed.worker.answered == 2, what="both")
                assert len(fake.calls_to(method)) == 4  # three refused, one applied
                if kind == "edit":
                    shown = fake.messages[(AUTO, post.response["ts"])]
                    assert shown["blocks"][0]["text"]["text"] == DEFORM_TITLE
                    assert reply_metadata(fake, post)["digest"] == paste_digest(DEFORM_PASTE)
                assert len(fake.posts()) == 1
                assert await outbox.pending() == []

    run(scenario())
    outbox.close()


@pytest.mark.parametrize("kind", CHANGES)
def test_a_change_after_a_restart_finds_the_reply_in_the_paste_thread(
    slack_env: pytest.MonkeyPatch, kind: str
) -> None:
    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            async with running(slack_env, fake=fake) as h:
                event, _ = await paste(h)
                [post] = await fake.wait_for_calls("chat.postMessage")
                assert reply_metadata(fake, post) == {
                    "delivery": event_key(f"EvPASTE{event['ts'].replace('.', '')}"),
                    "paste": event["ts"],
                    "record": AVG_POOL_ID,
                    "digest": paste_digest(AVG_POOL_PASTE),  # the paste as written
                }
            # Started again without Redis: the memory of the reply is gone, Slack still shows it.
            async with running(slack_env, fake=fake) as h:
                shown = as_slack_shows(fake, event)
                assert shown["thread_ts"] == event["ts"] and BOT_USER_ID in shown["reply_users"]
                assert (await h.event(change_of(kind, shown))).status == 200
                await changed(fake, kind, post)
                [looked] = fake.calls_to("conversations.replies")
                assert looked.body["ts"] == event["ts"]
                if kind == "edit":  # remembered again: the next edit needs no look
                    await h.event(edit_event(as_slack_shows(fake, event), AVG_POOL_PASTE))
                    await fake.wait_for_calls("chat.update", 2)
                    assert len(fake.calls_to("conversations.replies")) == 1

    run(scenario())


def test_an_edit_of_a_message_without_a_thread_reads_nothing_and_posts_nothing(
    slack_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            chat, _ = await paste(h, CHAT)
            await h.event(edit_event(chat, DEFORM_PASTE))  # became a panic: an edit never posts a reply
            await h.fake.wait_for(lambda: h.state.owed and h.state.owed.worker.answered == 2, what="both")
            await h.settle()
            assert [c.method for c in h.fake.calls if c.method.startswith(("chat.", "conversations."))] == []

    run(scenario())


def test_an_edit_of_a_paste_whose_reply_slack_refused_posts_nothing(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.fail("chat.postMessage", "not_in_channel")
            event, _ = await paste(h)
            await h.fake.wait_for(lambda: h.fake.calls_to("chat.postMessage"), what="the refused reply")
            await h.event(edit_event(as_slack_shows(h.fake, event), DEFORM_PASTE))
            await h.fake.wait_for(lambda: h.state.owed and h.state.owed.worker.answered == 2, what="both")
            await h.settle()
            assert h.fake.posts() == [] and h.fake.calls_to("chat.update") == []

    run(scenario())


def test_an_edit_slack_did_not_take_is_tried_again_and_applied(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Slack answers chat.update 429 three times (the client retries twice): the worker tries the edit again.
    # Memory already says the reply shows deform conv; Slack's reply (its metadata) says it does not.
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)

    async def scenario() -> None:
        async with running(slack_env) as h:
            event, _ = await paste(h)
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            h.fake.rate_limit("chat.update", retry_after=0, times=3)
            assert (await h.event(edit_event(as_slack_shows(h.fake, event), DEFORM_PASTE))).status == 200
            await changed(h.fake, "edit", post)
            assert len(h.fake.calls_to("chat.update")) == 4  # three refused, one applied
            shown = h.fake.messages[(AUTO, post.response["ts"])]
            assert shown["blocks"][0]["text"]["text"] == DEFORM_TITLE

    run(scenario())


def test_deleting_a_paste_whose_reply_is_already_gone_is_no_error(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            event, _ = await paste(h)
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            shown = as_slack_shows(h.fake, event)
            del h.fake.messages[(AUTO, post.response["ts"])]  # someone deleted the reply already
            assert (await h.event(delete_event(shown))).status == 200
            await h.fake.wait_for(lambda: h.fake.calls_to("chat.delete"), what="the deletion")
            await h.fake.wait_for(lambda: h.state.owed and h.state.owed.worker.answered == 2, what="both")
            # The cooldown went with the reply: the same panic pasted again is answered.
            await paste(h)
            await h.fake.wait_for_calls("chat.postMessage", 2)

    run(scenario())
    assert not [
        r for r in caplog.records if r.levelname in ("WARNING", "ERROR") and "delete" in r.getMessage()
    ]
    assert any("already gone" in r.getMessage() for r in caplog.records)


# -- the cooldown with the Redis-backed state ------------------------------------------------------------


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of its own on the Redis at 127.0.0.1:6379, deleted afterwards: a failure under CI, a skip
    elsewhere when no Redis answers."""
    client = answering_redis(REDIS_URL)
    yield from prefix_of_its_own(client)
    client.close()


def redis_state(prefix: str) -> tuple[dict[str, Any], AsyncRedis]:
    """What `panicbot serve` shares in Redis for Slack (dedupe, cooldown, replies), as one replica has it."""
    client = async_redis_from_url(REDIS_URL)
    shared = {
        "seen": RedisEventDeduper(client, prefix),
        "cooldown": RedisCooldown(client, prefix, 600),
        **shared_replies(client, prefix),
    }
    return shared, client


def test_with_redis_an_unasked_reply_slack_did_not_take_is_tried_again_past_its_cooldown(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch, redis_prefix: str
) -> None:
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)

    async def scenario() -> None:
        shared, client = redis_state(redis_prefix)
        try:
            async with running(slack_env, shared=shared) as h:
                h.fake.rate_limit("chat.postMessage", retry_after=0, times=3)
                event, _ = await paste(h)
                [post] = await h.fake.wait_for(h.fake.posts, what="the reply")
                assert post.body["thread_ts"] == event["ts"]
                assert len(h.fake.calls_to("chat.postMessage")) == 4  # three refused, one posted
                await asyncio.sleep(0.3)
                assert len(h.fake.posts()) == 1
                await paste(h)  # the channel's cooldown holds now
                await h.settle()
                assert len(h.fake.posts()) == 1
        finally:
            await client.aclose()

    run(scenario())


def test_with_redis_a_reply_cut_short_holding_its_cooldown_is_posted_after_the_restart(
    slack_env: pytest.MonkeyPatch, redis_prefix: str
) -> None:
    # The stop cuts the reply short (Slack asked it to wait 30 s) while Redis does not answer this replica:
    # the cooldown's hold cannot be given back, as when a process is killed holding it. The reply tried
    # again after the restart is held back by nobody but itself: it is posted, once.
    outbox = sqlite_outbox("slack")
    sync = redis.Redis.from_url(REDIS_URL)

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            shared, client = redis_state(redis_prefix)
            async with running(slack_env, outbox=outbox, fake=fake, shared=shared) as h:
                fake.rate_limit("chat.postMessage", retry_after=30, times=1)
                _, key = await paste(h)
                await fake.wait_for(lambda: fake.calls_to("chat.postMessage"), what="the post Slack refused")
                cooldown = shared["cooldown"]
                assert isinstance(cooldown, RedisCooldown)
                cooldown.client = async_redis_from_url(f"redis://{HOST}:{free_port()}/0")
                owed = h.state.owed
                assert owed is not None
                await owed.worker.stop(0.1)
                assert await outbox.pending() == [key]
                await cooldown.client.aclose()
            await client.aclose()
            assert sync.exists(f"{redis_prefix}:cooldown:{AUTO}:{AVG_POOL_ID}")  # the hold stayed
            shared, client = redis_state(redis_prefix)
            try:
                async with running(slack_env, outbox=outbox, fake=fake, shared=shared) as h:
                    [post] = await fake.wait_for(fake.posts, what="the reply after the restart")
                    assert header(post) == AVG_POOL_TITLE
                    await fake.wait_for(
                        lambda: h.state.owed and h.state.owed.worker.answered == 1, what="done"
                    )
                    await asyncio.sleep(0.3)
                    assert len(fake.posts()) == 1
                    assert await outbox.pending() == []
            finally:
                await client.aclose()

    run(scenario())
    outbox.close()
    sync.close()


@pytest.mark.parametrize("where", ["local", "redis"])
def test_a_reply_slack_posted_but_did_not_answer_keeps_its_cooldown_until_tried_again(
    slack_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, where: str
) -> None:
    # Slack posts paste A's reply but answers after the client gave up (a timeout): A is tried again later.
    # Meanwhile another user pastes the same panic in the channel (B): the cooldown A took still holds, so B
    # gets no second card; A's try again finds its post and does not post it twice.
    monkeypatch.setattr(outbox_module, "RETRY_BASE_SECONDS", 1.5)
    built = app_module.build_web_client

    def impatient(settings: Any) -> Any:
        client = built(settings)
        client.timeout = 0.3
        return client

    monkeypatch.setattr(app_module, "build_web_client", impatient)

    async def scenario() -> None:
        shared: dict[str, Any] = {}
        client = None
        if where == "redis":
            shared, client = redis_state(request.getfixturevalue("redis_prefix"))
        try:
            async with running(slack_env, shared=shared) as h:
                h.fake.post_delay = 1.0  # posted at once, answered after the client's timeout
                _, key_a = await paste(h)
                [post] = await h.fake.wait_for(h.fake.posts, what="A's reply posted")
                await h.fake.wait_for(
                    lambda: [
                        c for c in h.fake.calls_to("chat.postMessage") if c.at + 0.35 < time.monotonic()
                    ],
                    what="A's post timed out",
                )
                h.fake.post_delay = 0.0
                event_b = message_event(AVG_POOL_PASTE, user=OTHER_USER)
                h.fake.add_message(AUTO, event_b["ts"], event_b["text"], user=OTHER_USER)
                assert (await h.event(event_b)).status == 200
                owed = h.state.owed
                assert owed is not None
                await h.fake.wait_for(lambda: owed.worker.answered == 1, what="B answered")
                outbox = owed.outbox
                assert await outbox.pending() == [key_a]  # A still waits for its try again
                assert len(h.fake.posts()) == 1  # B posted no second card
                await h.fake.wait_for(lambda: owed.worker.answered == 2, what="A tried again", timeout=8)
                await asyncio.sleep(0.3)
                assert h.fake.posts() == [post]  # A found its post: not posted twice
        finally:
            if client is not None:
                await client.aclose()

    run(scenario())
