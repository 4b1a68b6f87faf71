"""The Slack app end to end: signed requests to the real aiohttp server, Bolt, the handlers, and a fake Slack
on 127.0.0.1 that records what Slack would receive (Web API calls, response_url posts, Socket Mode acks)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from adapters.outbox import Outbox
from adapters.slack import render, server
from adapters.slack.app import SlackState, build_slack_app
from adapters.slack.server import build_web_application, run_socket_mode
from adapters.slack.settings import load_slack_settings
from bot.lookup import PanicLookup
from tests.adapters.slack.fake_slack import (
    BOT_ID,
    BOT_USER_ID,
    HOST,
    TEAM_ID,
    Call,
    FakeSlack,
    block_problems,
)
from tests.support.catalogs import seeds_catalog
from tests.support.local_only import isolate
from tests.support.outboxes import sqlite_outbox

BOT_TOKEN = "xoxb-test-1234-5678-NotARealToken"
APP_TOKEN = "xapp-1-A1-1234-NotARealAppToken"
SIGNING_SECRET = "0123456789abcdef-not-a-real-signing-secret"
AUTO = "CAUTO"
CHANNEL = "C1"
USER = "U012AB3CDE"
OTHER_USER = "U061F7AUR"

AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_TITLE = "Can't differentiate avg pool 2d backward."
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    f"{AVG_POOL_TITLE}\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
DEFORM_ID = "5c5da46720dbbf10"
DEFORM_TITLE = "Can't differentiate deform conv 2d backward."
DEFORM_PASTE = f"thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n{DEFORM_TITLE}"
CHAT = "how do I train?"
# Slack wants the ack within 3 s; locally it takes milliseconds, the rest is room for a loaded CI machine.
ACK_BUDGET = 2.0

_ids = itertools.count(1)


def next_ts() -> str:
    return f"1710000000.{next(_ids):06d}"


# -- Slack payloads, shaped like the real ones ---------------------------------------------------------


def signed(body: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


def slash_command(
    text: str, response_url: str, *, channel: str = CHANNEL, user: str = USER
) -> dict[str, str]:
    return {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "team_id": TEAM_ID,
        "team_domain": "fake",
        "channel_id": channel,
        "channel_name": "general",
        "user_id": user,
        "user_name": "ferris",
        "command": "/panic",
        "text": text,
        "api_app_id": "A1",
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    }


def event_callback(event: dict[str, Any], event_id: str) -> dict[str, Any]:
    return {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "team_id": TEAM_ID,
        "api_app_id": "A1",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(float(event.get("event_ts", event.get("ts", "0")))),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-eyJldCI6Im1lc3NhZ2UiLCJ0aWQiOiJUMSJ9",
    }


def message_event(text: str, *, channel: str = AUTO, user: str = USER, **extra: Any) -> dict[str, Any]:
    ts = extra.pop("ts", None) or next_ts()
    return {
        "type": "message",
        "client_msg_id": f"0e1c2d3a-{ts}",
        "text": text,
        "user": user,
        "ts": ts,
        "team": TEAM_ID,
        "channel": channel,
        "event_ts": ts,
        "channel_type": "channel",
        **extra,
    }


def mention_event(text: str, *, channel: str = CHANNEL, **extra: Any) -> dict[str, Any]:
    event = message_event(f"<@{BOT_USER_ID}> {text}".rstrip(), channel=channel, **extra)
    event["type"] = "app_mention"
    del event["channel_type"]
    return event


def edit_event(original: dict[str, Any], new_text: str) -> dict[str, Any]:
    ts = next_ts()
    edited = {**original, "text": new_text, "edited": {"user": original["user"], "ts": ts}}
    for name in ("channel", "event_ts", "channel_type"):
        edited.pop(name, None)
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "message": edited,
        "channel": original["channel"],
        "previous_message": {k: v for k, v in original.items() if k not in {"channel", "event_ts"}},
        "event_ts": ts,
        "ts": ts,
        "channel_type": "channel",
    }


def delete_event(original: dict[str, Any]) -> dict[str, Any]:
    ts = next_ts()
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "deleted_ts": original["ts"],
        "channel": original["channel"],
        "previous_message": {k: v for k, v in original.items() if k not in {"channel", "event_ts"}},
        "event_ts": ts,
        "ts": ts,
        "channel_type": "channel",
    }


def message_action(text: str, response_url: str, **message: Any) -> dict[str, Any]:
    """The message shortcut, used on a message of OTHER_USER in CHANNEL."""
    ts = next_ts()
    return {
        "type": "message_action",
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "action_ts": f"{time.time():.6f}",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "user": {"id": USER, "username": "ferris", "team_id": TEAM_ID, "name": "ferris"},
        "channel": {"id": CHANNEL, "name": "general"},
        "is_enterprise_install": False,
        "enterprise": None,
        "callback_id": "explain_panic",
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "response_url": response_url,
        "message_ts": ts,
        "message": {"type": "message", "user": OTHER_USER, "text": text, "ts": ts, **message},
    }


def block_actions(
    button: dict[str, Any],
    response_url: str,
    *,
    channel: str,
    message_ts: str,
    ephemeral: bool,
    user: str = USER,
    message: dict[str, Any] | None = None,
    thread_ts: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "type": "message",
        "message_ts": message_ts,
        "channel_id": channel,
        "is_ephemeral": ephemeral,
    }
    if thread_ts:
        container["thread_ts"] = thread_ts
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": "ferris", "name": "ferris", "team_id": TEAM_ID},
        "api_app_id": "A1",
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "container": container,
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "general"},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": "b1",
                "text": button["text"],
                "value": button["value"],
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    if message is not None:  # Slack leaves the message out of actions on ephemeral messages
        payload["message"] = message
    return payload


# -- reading what Slack received -----------------------------------------------------------------------


def header(call: Call) -> str | None:
    for block in call.body.get("blocks") or []:
        if block["type"] == "header":
            return str(block["text"]["text"])
    return None


def text_of(call: Call) -> str:
    """Every text in the message: fallback, sections, contexts, button labels."""
    found = [call.body.get("text") or ""]
    for block in call.body.get("blocks") or []:
        if "text" in block:
            found.append(block["text"]["text"])
        for element in block.get("elements", []):
            found.append(element["text"]["text"] if element["type"] == "button" else element.get("text", ""))
    return "\n".join(found)


def buttons(call: Call) -> dict[str, dict[str, Any]]:
    return {
        element["action_id"]: element
        for block in call.body.get("blocks") or []
        if block["type"] == "actions"
        for element in block["elements"]
    }


# -- the app on a local port, talking to the fake ------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    seconds: float
    text: str


@dataclass
class Harness:
    fake: FakeSlack
    state: SlackState
    clock: FakeClock
    base_url: str
    session: aiohttp.ClientSession

    async def post(self, body: str, content_type: str, headers: dict[str, str] | None = None) -> Reply:
        started = time.monotonic()
        sent = {"Content-Type": content_type, **signed(body), **(headers or {})}
        async with self.session.post(f"{self.base_url}/slack/events", data=body, headers=sent) as response:
            text = await response.text()
            return Reply(response.status, dict(response.headers), time.monotonic() - started, text)

    async def command(self, text: str, **options: str) -> tuple[Reply, str]:
        response_url = self.fake.response_url()
        body = urlencode(slash_command(text, response_url, **options))
        return await self.post(body, "application/x-www-form-urlencoded"), response_url

    async def event(
        self, event: dict[str, Any], *, event_id: str | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        body = json.dumps(event_callback(event, event_id or f"Ev{next(_ids):08d}"))
        return await self.post(body, "application/json", headers)

    async def interaction(self, payload: dict[str, Any]) -> Reply:
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, "application/x-www-form-urlencoded")

    def responses_to(self, response_url: str) -> list[Call]:
        path = response_url.removeprefix(f"http://{HOST}:{self.fake.port}")
        return [call for call in self.fake.responses() if call.path == path]

    async def response(self, response_url: str) -> Call:
        """The first accepted post to `response_url`, waiting for it."""
        return (await self.fake.wait_for(lambda: self.responses_to(response_url), what=response_url))[0]

    async def click(self, card: Call, action_id: str, *, thread_ts: str | None = None) -> str:
        """Press a button of an ephemeral card in CHANNEL; the response_url the click carried."""
        url = self.fake.response_url()
        payload = block_actions(
            buttons(card)[action_id],
            url,
            channel=CHANNEL,
            message_ts=next_ts(),
            ephemeral=True,
            thread_ts=thread_ts,
        )
        reply = await self.interaction(payload)
        assert reply.status == 200, reply.text
        assert reply.seconds < ACK_BUDGET
        return url

    async def answer(self, command_text: str) -> Call:
        """Run `/panic <command_text>` and return the response_url post that answered it."""
        reply, url = await self.command(command_text)
        assert reply.status == 200, reply.text
        return await self.response(url)

    async def settle(self) -> None:
        """Let every handler started so far finish before asserting that nothing happened.

        Bolt runs each listener as a task scheduled before the ack; a handler that decides to stay silent
        returns without awaiting, so once a later sentinel command has been answered, it has run.
        """
        await self.answer("help")

    async def auto_reply(self, text: str = AVG_POOL_PASTE) -> tuple[dict[str, Any], Call]:
        """A paste in the auto-reply channel and the reply it got."""
        before = len(self.fake.posts())
        event = message_event(text)
        assert (await self.event(event)).status == 200
        posts = await self.fake.wait_for(lambda: self.fake.posts()[before:], what="the auto-reply")
        return event, posts[0]


@pytest.fixture
def slack_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No inherited Slack settings or proxies: every request goes to 127.0.0.1."""
    return isolate(
        monkeypatch,
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "SLACK_API_URL",
        "SLACK_AUTO_REPLY_CHANNELS",
        "SLACK_AUTO_REPLY_COOLDOWN_SECONDS",
        "PANICBOT_CATALOG",
    )


def logged_text(caplog: pytest.LogCaptureFixture) -> str:
    """Everything logged while the test set up and ran, formatted with tracebacks."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    records = caplog.get_records("setup") + caplog.get_records("call")
    return "\n".join(formatter.format(record) for record in records)


def logged_by_panicbot(caplog: pytest.LogCaptureFixture, word: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "panicbot.slack" and word in r.getMessage()]


@pytest.fixture(autouse=True)
def _no_secrets_in_logs(caplog: pytest.LogCaptureFixture) -> Any:
    """Whatever a scenario logs, at any level, never carries a token or the signing secret."""
    caplog.set_level(logging.DEBUG)
    # The SDK loggers' own levels may have been raised elsewhere in the process: ask for DEBUG explicitly.
    for name in ("slack_sdk", "slack_bolt"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield
    logged = logged_text(caplog)
    for secret in (BOT_TOKEN, APP_TOKEN, SIGNING_SECRET):
        assert secret not in logged, "a secret was logged"


@contextlib.asynccontextmanager
async def running(
    env: pytest.MonkeyPatch,
    feedback: Any = None,
    outbox: Outbox | None = None,
    fake: FakeSlack | None = None,
    shared: dict[str, Any] | None = None,
) -> AsyncIterator[Harness]:
    """Fake Slack, then the app from env settings served on a free local port, then a client. Answers owed
    through a response_url go through an outbox, as in the service (a SQLite one unless given). With
    `fake`, that Slack (left running): a second start talks to the Slack the first one did. `shared`: the
    state's parts a deployment shares in Redis (cooldown, replies), as `SlackState` takes them."""
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(FakeSlack(BOT_TOKEN, APP_TOKEN))
        env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
        env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
        env.setenv("SLACK_API_URL", fake.api_url)
        env.setenv("SLACK_AUTO_REPLY_CHANNELS", AUTO)
        settings = load_slack_settings(http_mode=True)
        clock = FakeClock()
        state = SlackState(
            clock=clock, cooldown_seconds=settings.slack_auto_reply_cooldown_seconds, **(shared or {})
        )
        state.feedback = feedback or state.feedback
        service = PanicLookup(seeds_catalog())
        own_outbox = sqlite_outbox("slack") if outbox is None else None
        app = build_slack_app(settings, service, state, outbox=outbox if outbox is not None else own_outbox)
        assert state.owed is not None
        state.owed.worker.start()
        runner = web.AppRunner(build_web_application(app, len(service.catalog.records)), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, HOST, 0).start()
        try:
            async with aiohttp.ClientSession() as session:
                base_url = f"http://{HOST}:{runner.addresses[0][1]}"
                yield Harness(fake, state, clock, base_url, session)
        finally:
            await runner.cleanup()
            await state.owed.worker.stop(1.0)
            if own_outbox is not None:
                own_outbox.close()
        assert fake.problems == [], "Slack would have refused these blocks"


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=20))


# -- /panic --------------------------------------------------------------------------------------------


def test_slash_command_answers_with_an_ephemeral_card(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            reply, url = await h.command(AVG_POOL_PASTE)
            assert reply.status == 200
            assert reply.seconds < ACK_BUDGET
            [answer] = await h.fake.wait_for(lambda: h.responses_to(url))
            assert answer.body["response_type"] == "ephemeral"
            assert header(answer) == AVG_POOL_TITLE
            assert set(buttons(answer)) == {
                render.ACTION_SHARE,
                render.ACTION_MORE,
                render.ACTION_VOTE_UP,
                render.ACTION_VOTE_DOWN,
            }
            assert buttons(answer)[render.ACTION_SHARE]["value"].startswith(AVG_POOL_ID + "|")
            # Nothing was posted in the channel: the answer is only for the user who asked.
            assert h.fake.calls_to("chat.postMessage") == []

    run(scenario())


@pytest.mark.parametrize("text", ["", "help", "  HELP "])
def test_slash_command_without_a_paste_shows_usage(slack_env: pytest.MonkeyPatch, text: str) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            answer = await h.answer(text)
            assert answer.body["response_type"] == "ephemeral"
            assert "/panic" in text_of(answer)
            assert "message shortcut" in text_of(answer)
            assert header(answer) is None

    run(scenario())


def test_slash_command_containing_the_word_payload_is_answered(slack_env: pytest.MonkeyPatch) -> None:
    """slack-bolt 1.30 parses any form body containing `payload` as an interactivity payload."""

    async def scenario() -> None:
        async with running(slack_env) as h:
            answer = await h.answer(AVG_POOL_PASTE + "\nwhile decoding the handshake payload")
            assert header(answer) == AVG_POOL_TITLE
            # Parsed as `{}`, the command would get a 404 and no answer; parsed right, the words come back.
            unknown = await h.answer("invalid handshake payload")
            assert unknown.body["response_type"] == "ephemeral"
            assert "No known record" in text_of(unknown)
            assert ">invalid handshake payload" in text_of(unknown)

    run(scenario())


def test_slash_command_with_an_unknown_panic_says_so(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            answer = await h.answer(
                "thread 'main' panicked at src/main.rs:3:5:\n"
                "index out of bounds: the len is 3 but the index is 7"
            )
            assert "No known record" in text_of(answer)
            assert header(answer) is None
            assert render.ACTION_SHARE not in buttons(answer)

    run(scenario())


# -- mentions ------------------------------------------------------------------------------------------


def test_mention_with_a_paste_is_answered_once_in_its_thread(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            event = mention_event(AVG_POOL_PASTE)
            reply = await h.event(event)
            assert reply.status == 200
            assert reply.seconds < ACK_BUDGET
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            await h.settle()
            assert len(h.fake.calls_to("chat.postMessage")) == 1
            assert post.body["channel"] == CHANNEL
            assert post.body["thread_ts"] == event["ts"]
            assert header(post) == AVG_POOL_TITLE
            assert post.headers["Authorization"] == f"Bearer {BOT_TOKEN}"
            # In a channel everybody sees the card: no "Share" button, votes only.
            assert render.ACTION_SHARE not in buttons(post)
            assert render.ACTION_VOTE_UP in buttons(post)

    run(scenario())


def test_bare_mention_in_a_thread_explains_the_thread_parent(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            parent_ts = next_ts()
            h.fake.add_message(CHANNEL, parent_ts, AVG_POOL_PASTE)
            await h.event(mention_event("", thread_ts=parent_ts))
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            [replies] = h.fake.calls_to("conversations.replies")
            assert replies.body["channel"] == CHANNEL
            assert replies.body["ts"] == parent_ts
            assert post.body["thread_ts"] == parent_ts
            assert header(post) == AVG_POOL_TITLE

    run(scenario())


def test_bare_mention_outside_a_thread_shows_usage(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            event = mention_event("")
            await h.event(event)
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            assert post.body["thread_ts"] == event["ts"]
            assert "/panic" in text_of(post)
            assert h.fake.calls_to("conversations.replies") == []

    run(scenario())


def test_mention_in_an_auto_reply_channel_is_answered_once(slack_env: pytest.MonkeyPatch) -> None:
    """Slack sends both `app_mention` and `message` for it; only the mention handler answers."""

    async def scenario() -> None:
        async with running(slack_env) as h:
            mention = mention_event(AVG_POOL_PASTE, channel=AUTO)
            message = {**mention, "type": "message", "channel_type": "channel"}
            await h.event(message)
            await h.event(mention)
            await h.fake.wait_for_calls("chat.postMessage")
            await h.settle()
            assert len(h.fake.calls_to("chat.postMessage")) == 1

    run(scenario())


# -- auto-reply ----------------------------------------------------------------------------------------


def test_auto_reply_answers_a_paste_in_its_thread(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            event, post = await h.auto_reply()
            assert post.body["channel"] == AUTO
            assert post.body["thread_ts"] == event["ts"]
            assert header(post) == AVG_POOL_TITLE
            assert set(buttons(post)) == {render.ACTION_VOTE_UP, render.ACTION_VOTE_DOWN}

    run(scenario())


def test_redelivered_event_is_acknowledged_but_answered_once(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            event = message_event(AVG_POOL_PASTE)
            first = await h.event(event, event_id="Ev0REDELIVER")
            assert first.status == 200
            await h.fake.wait_for_calls("chat.postMessage")
            retry_headers = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
            retry = await h.event(event, event_id="Ev0REDELIVER", headers=retry_headers)
            assert 200 <= retry.status < 300
            assert retry.headers.get("x-slack-no-retry") == "1"
            await h.settle()
            assert len(h.fake.calls_to("chat.postMessage")) == 1

    run(scenario())


def test_auto_reply_cooldown_per_record_and_channel(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            await h.auto_reply()
            await h.event(message_event(AVG_POOL_PASTE))  # another message, same panic, same channel
            await h.settle()
            assert len(h.fake.calls_to("chat.postMessage")) == 1
            _, other = await h.auto_reply(DEFORM_PASTE)  # another record is not held back
            assert header(other) == DEFORM_TITLE
            h.clock.now += 601  # the default cooldown is 600 s
            _, again = await h.auto_reply()
            assert header(again) == AVG_POOL_TITLE

    run(scenario())


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(message_event(AVG_POOL_PASTE, channel="CQUIET"), id="channel-not-listed"),
        pytest.param(message_event(AVG_POOL_PASTE, bot_id="BOTHER", subtype="bot_message"), id="bot-message"),
        pytest.param(message_event(AVG_POOL_PASTE, bot_id="BOTHER", app_id="A9"), id="app-message"),
        pytest.param(message_event(AVG_POOL_PASTE, user=BOT_USER_ID, bot_id=BOT_ID), id="own-message"),
        pytest.param(message_event(CHAT), id="chat"),
        pytest.param(message_event("avg pool 2d backward?"), id="words-not-a-paste"),
        pytest.param(message_event(AVG_POOL_PASTE, subtype="channel_join"), id="channel-join"),
    ],
)
def test_auto_reply_stays_silent(slack_env: pytest.MonkeyPatch, event: dict[str, Any]) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            reply = await h.event(event)
            assert reply.status == 200
            await h.settle()
            assert h.fake.calls_to("chat.postMessage") == []

    run(scenario())


def test_edit_to_another_panic_updates_the_reply(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            paste, post = await h.auto_reply()
            reply_ts = post.response["ts"]
            await h.event(edit_event(paste, DEFORM_PASTE))
            [update] = await h.fake.wait_for_calls("chat.update")
            assert update.body["channel"] == AUTO
            assert update.body["ts"] == reply_ts
            assert header(update) == DEFORM_TITLE
            assert h.fake.calls_to("chat.delete") == []
            assert len(h.fake.calls_to("chat.postMessage")) == 1

    run(scenario())


@pytest.mark.parametrize(("error", "gone"), [("message_not_found", True), ("internal_error", False)])
def test_a_failed_update_leaves_the_cooldown_with_what_the_channel_shows(
    slack_env: pytest.MonkeyPatch, error: str, gone: bool
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            paste, _ = await h.auto_reply()
            h.fake.fail("chat.update", error)
            await h.event(edit_event(paste, DEFORM_PASTE))
            await h.fake.wait_for(lambda: h.fake.calls_to("chat.update"), what="the refused update")
            await h.settle()
            # The reply never showed deform conv: a deform paste here is answered.
            _, deform = await h.auto_reply(DEFORM_PASTE)
            assert header(deform) == DEFORM_TITLE
            posts = len(h.fake.calls_to("chat.postMessage"))
            await h.event(message_event(AVG_POOL_PASTE))
            await h.settle()
            # Gone: nothing shows avg pool any more, so it is answered. Still there: it still shows it.
            assert len(h.fake.calls_to("chat.postMessage")) == posts + int(gone)

    run(scenario())


def test_edit_to_chat_deletes_the_reply(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            paste, post = await h.auto_reply()
            await h.event(edit_event(paste, "never mind, fixed it"))
            [delete] = await h.fake.wait_for_calls("chat.delete")
            assert (delete.body["channel"], delete.body["ts"]) == (AUTO, post.response["ts"])
            # The reply is gone, so the cooldown is too: the next paste is answered.
            _, again = await h.auto_reply()
            assert header(again) == AVG_POOL_TITLE

    run(scenario())


def test_deleting_the_paste_deletes_the_reply(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            paste, post = await h.auto_reply()
            await h.event(delete_event(paste))
            [delete] = await h.fake.wait_for_calls("chat.delete")
            assert (delete.body["channel"], delete.body["ts"]) == (AUTO, post.response["ts"])
            assert (AUTO, post.response["ts"]) not in h.fake.messages

    run(scenario())


def test_edit_of_an_unanswered_message_is_ignored(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            chat = message_event(CHAT)
            await h.event(chat)
            await h.event(edit_event(chat, "still chatting"))
            await h.event(delete_event(chat))
            await h.settle()
            assert [c.method for c in h.fake.calls if c.method.startswith("chat.")] == []

    run(scenario())


def test_edited_reply_holds_the_cooldown_of_its_new_record(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            paste, _ = await h.auto_reply()
            await h.event(edit_event(paste, DEFORM_PASTE))
            await h.fake.wait_for_calls("chat.update")
            await h.event(message_event(DEFORM_PASTE))  # the channel already shows a deform conv card
            await h.settle()
            assert len(h.fake.calls_to("chat.postMessage")) == 1

    run(scenario())


# -- the message shortcut ------------------------------------------------------------------------------


def test_message_shortcut_answers_ephemerally(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            url = h.fake.response_url()
            reply = await h.interaction(message_action(AVG_POOL_PASTE, url, thread_ts="1710000000.000001"))
            assert reply.status == 200
            assert reply.seconds < ACK_BUDGET
            answer = await h.response(url)
            assert answer.body["response_type"] == "ephemeral"
            assert header(answer) == AVG_POOL_TITLE
            assert render.ACTION_SHARE in buttons(answer)

    run(scenario())


def test_message_shortcut_on_a_message_without_text_says_so(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            url = h.fake.response_url()
            await h.interaction(message_action("", url, files=[{"id": "F1", "name": "trace.png"}]))
            note = await h.response(url)
            assert "no text to explain" in text_of(note)
            assert note.body["response_type"] == "ephemeral"

    run(scenario())


# -- buttons -------------------------------------------------------------------------------------------


async def ephemeral_card(h: Harness) -> Call:
    answer = await h.answer(AVG_POOL_PASTE)
    assert header(answer) == AVG_POOL_TITLE
    return answer


def test_share_posts_in_the_channel_and_removes_the_ephemeral(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            url = await h.click(card, render.ACTION_SHARE)
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            assert post.body["channel"] == CHANNEL
            assert post.body.get("thread_ts") is None
            assert header(post) == AVG_POOL_TITLE
            assert f"Shared by <@{USER}>" in text_of(post)
            assert render.ACTION_SHARE not in buttons(post)
            removal = await h.response(url)
            assert removal.body.get("delete_original") is True
            assert "blocks" not in removal.body

    run(scenario())


def test_share_from_a_thread_posts_in_that_thread(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            thread = next_ts()
            await h.click(card, render.ACTION_SHARE, thread_ts=thread)
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            assert post.body["thread_ts"] == thread

    run(scenario())


def test_more_matches_lists_the_other_records(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            url = await h.click(card, render.ACTION_MORE)
            answer = await h.response(url)
            assert answer.body["response_type"] == "ephemeral"
            assert answer.body["replace_original"] is False  # the card stays; the list comes under it
            listed = text_of(answer)
            assert "Other matches* (1 record" in listed
            assert DEFORM_TITLE in listed
            assert AVG_POOL_TITLE not in listed

    run(scenario())


def test_full_fix_button_answers_with_the_whole_fix(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            # The seeds' fixes are short enough that the card never shows this button; Slack would still
            # deliver a click on an older card, with the same value as the card's other buttons.
            [actions] = [block for block in card.body["blocks"] if block["type"] == "actions"]
            actions["elements"].append({**actions["elements"][1], "action_id": render.ACTION_FULL_FIX})
            url = await h.click(card, render.ACTION_FULL_FIX)
            answer = await h.response(url)
            assert answer.body["replace_original"] is True
            assert header(answer) == AVG_POOL_TITLE
            assert "*Example fix*" in text_of(answer)

    run(scenario())


def test_vote_on_an_ephemeral_card_replaces_it_and_is_stored(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            up = buttons(card)[render.ACTION_VOTE_UP]
            url = await h.click(card, render.ACTION_VOTE_UP)
            answer = await h.response(url)
            assert answer.body["replace_original"] is True
            assert answer.body["response_type"] == "ephemeral"
            assert "You voted 👍" in text_of(answer)
            assert buttons(answer)[render.ACTION_VOTE_UP].get("style") == "primary"
            assert h.state.feedback.vote_of(record_id=AVG_POOL_ID, user_id=USER, platform="slack") == "up"
            # The replaced card keeps its buttons working: Share still carries the lookup.
            assert buttons(answer)[render.ACTION_SHARE]["value"] == up["value"]
            assert h.fake.calls_to("chat.update") == []

    run(scenario())


async def vote_in_channel(h: Harness, post: Call, *, user: str, action: str = render.ACTION_VOTE_UP) -> Call:
    ts = post.response["ts"]
    before = len(h.fake.calls_to("chat.update"))
    payload = block_actions(
        buttons(post)[action],
        h.fake.response_url(),
        channel=post.body["channel"],
        message_ts=ts,
        ephemeral=False,
        user=user,
        message=h.fake.messages[(post.body["channel"], ts)],
        thread_ts=post.body.get("thread_ts"),
    )
    assert (await h.interaction(payload)).status == 200
    return (await h.fake.wait_for(lambda: h.fake.calls_to("chat.update")[before:]))[0]


def test_vote_on_an_in_channel_card_updates_it(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            _, post = await h.auto_reply()
            update = await vote_in_channel(h, post, user=OTHER_USER, action=render.ACTION_VOTE_DOWN)
            assert update.ok
            assert update.body["channel"] == AUTO
            assert update.body["ts"] == post.response["ts"]
            assert header(update) == AVG_POOL_TITLE
            assert (
                h.state.feedback.vote_of(record_id=AVG_POOL_ID, user_id=OTHER_USER, platform="slack")
                == "down"
            )
            assert h.fake.calls_to("response_url") == []  # the public card itself changed

    run(scenario())


def test_vote_on_a_shared_card_keeps_who_shared_it(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            await h.click(card, render.ACTION_SHARE)
            [shared] = await h.fake.wait_for_calls("chat.postMessage")
            update = await vote_in_channel(h, shared, user=OTHER_USER)
            assert f"Shared by <@{USER}>" in text_of(update)

    run(scenario())


def test_vote_on_an_in_channel_card_does_not_speak_for_every_reader(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            _, post = await h.auto_reply()
            update = await vote_in_channel(h, post, user=OTHER_USER)
            assert "You voted" not in text_of(update)

    run(scenario())


class BrokenStore:
    """A feedback database that is down."""

    def record_vote(self, **_: Any) -> None:
        raise ConnectionError("feedback database unreachable")

    def vote_of(self, **_: Any) -> str | None:
        return None


def test_vote_that_cannot_be_stored_tells_the_user(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(slack_env, feedback=BrokenStore()) as h:
            card = await ephemeral_card(h)
            url = await h.click(card, render.ACTION_VOTE_UP)
            note = await h.response(url)
            assert "could not be saved" in text_of(note)
            assert note.body["replace_original"] is False  # the card stays for another try

    run(scenario())
    [error] = [r for r in caplog.records if r.name == "panicbot.slack" and r.levelno >= logging.ERROR]
    assert error.exc_info is not None


# -- security ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tamper", ["bad-signature", "old-timestamp", "no-signature"])
def test_unsigned_or_stale_requests_are_refused_before_any_slack_call(
    slack_env: pytest.MonkeyPatch, tamper: str
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            tampered_url = h.fake.response_url()
            body = urlencode(slash_command(AVG_POOL_PASTE, tampered_url))
            if tamper == "bad-signature":
                headers = signed(body, secret="not-the-signing-secret")
            elif tamper == "old-timestamp":
                headers = signed(body, timestamp=int(time.time()) - 6 * 60)
            else:
                headers = {"X-Slack-Request-Timestamp": str(int(time.time()))}
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            async with h.session.post(f"{h.base_url}/slack/events", data=body, headers=headers) as response:
                assert response.status == 401
            event = json.dumps(event_callback(message_event(AVG_POOL_PASTE), "Ev0FORGED"))
            forged = {**signed(event, secret="nope"), "Content-Type": "application/json"}
            async with h.session.post(f"{h.base_url}/slack/events", data=event, headers=forged) as response:
                assert response.status == 401
            assert h.fake.calls == []  # refused before Bolt's auth.test, let alone a handler
            await h.settle()
            assert h.responses_to(tampered_url) == []
            assert h.fake.calls_to("chat.postMessage") == []

    run(scenario())


def test_url_verification_and_ssl_check_are_answered(slack_env: pytest.MonkeyPatch) -> None:
    """What Slack sends when the Request URL is configured, and its periodic certificate check."""

    async def scenario() -> None:
        async with running(slack_env) as h:
            challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
            body = json.dumps({"token": "x", "challenge": challenge, "type": "url_verification"})
            reply = await h.post(body, "application/json")
            assert reply.status == 200
            assert challenge in reply.text
            reply = await h.post(
                urlencode({"ssl_check": "1", "token": "x"}), "application/x-www-form-urlencoded"
            )
            assert reply.status == 200
            assert h.fake.calls == []

    run(scenario())


# -- Slack saying no -----------------------------------------------------------------------------------


def test_refused_post_is_logged_and_the_app_keeps_serving(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.fail("chat.postMessage", "not_in_channel")
            await h.event(message_event(AVG_POOL_PASTE))
            [refused] = await h.fake.wait_for(lambda: h.fake.calls_to("chat.postMessage"))
            assert refused.error == "not_in_channel"
            await h.fake.wait_for(lambda: logged_by_panicbot(caplog, "not_in_channel"), what="a warning")
            # The failed reply does not hold the cooldown: the next paste is answered.
            _, post = await h.auto_reply()
            assert header(post) == AVG_POOL_TITLE
            answer = await h.answer(AVG_POOL_PASTE)
            assert header(answer) == AVG_POOL_TITLE

    run(scenario())
    [warning] = logged_by_panicbot(caplog, "not_in_channel")
    assert warning.levelno == logging.WARNING


def test_share_where_the_bot_cannot_post_tells_the_user(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            card = await ephemeral_card(h)
            h.fake.fail("chat.postMessage", "not_in_channel")
            url = await h.click(card, render.ACTION_SHARE)
            note = await h.response(url)
            assert "/invite" in text_of(note)
            assert note.body.get("delete_original") is not True
            assert h.fake.posts() == []

    run(scenario())


def test_channel_not_found_on_a_mention_is_logged(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.fail("chat.postMessage", "channel_not_found")
            await h.event(mention_event(AVG_POOL_PASTE))
            await h.fake.wait_for(lambda: logged_by_panicbot(caplog, "channel_not_found"), what="a warning")
            await h.event(mention_event(AVG_POOL_PASTE))
            await h.fake.wait_for_calls("chat.postMessage")

    run(scenario())


def test_rate_limited_post_is_retried_after_retry_after(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.rate_limit("chat.postMessage", retry_after=1)
            await h.event(mention_event(AVG_POOL_PASTE))
            await h.fake.wait_for_calls("chat.postMessage")
            limited, delivered = h.fake.calls_to("chat.postMessage")
            assert limited.status == 429
            assert delivered.ok
            assert delivered.at - limited.at >= 1.0  # Retry-After: 1 was honoured
            assert delivered.body == limited.body
            await h.settle()
            assert len(h.fake.posts()) == 1

    run(scenario())


def test_refused_response_url_post_is_logged(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            h.fake.fail_response_url(404, "expired_url")
            await h.command(AVG_POOL_PASTE)
            await h.fake.wait_for(lambda: h.fake.calls_to("response_url"))
            await h.settle()

    run(scenario())
    assert [r for r in caplog.records if r.name == "panicbot.slack" and r.levelno >= logging.WARNING]


def test_debug_logs_carry_no_secrets(slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Every Slack call is logged at DEBUG (headers included): the token must show as redacted."""

    async def scenario() -> None:
        async with running(slack_env) as h:
            await h.answer(AVG_POOL_PASTE)
            h.fake.fail("chat.postMessage", "invalid_auth")
            await h.event(mention_event(AVG_POOL_PASTE))
            await h.fake.wait_for_calls("chat.postMessage", ok_only=False)
            await h.auto_reply()

    run(scenario())
    logged = logged_text(caplog)
    assert "chat.postMessage" in logged
    assert "(redacted)" in logged
    for secret in (BOT_TOKEN, SIGNING_SECRET, BOT_TOKEN.removeprefix("xoxb-")):
        assert secret not in logged


# -- health and Block Kit ------------------------------------------------------------------------------


def test_healthz_reports_ok_and_the_catalog_size(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h, h.session.get(f"{h.base_url}/healthz") as response:
            assert response.status == 200
            assert await response.json() == {"ok": True, "records": len(seeds_catalog().records)}
            assert h.fake.calls == []

    run(scenario())


def test_fake_refuses_invalid_block_kit() -> None:
    """The Block Kit check every scenario relies on does catch what Slack refuses."""
    header_too_long = {"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}
    assert block_problems({"text": "t", "blocks": [header_too_long]})
    assert block_problems({"text": "t", "blocks": [{"type": "divider"}] * 50})
    assert block_problems({"blocks": [{"type": "divider"}]})  # no notification text
    assert block_problems({"text": "t", "blocks": [{"type": "no_such_block"}]})
    assert block_problems({"text": "t", "blocks": [{"type": "divider"}] * 49}) == []


# -- Socket Mode ---------------------------------------------------------------------------------------


def test_socket_mode_slash_command_is_acked_and_answered(slack_env: pytest.MonkeyPatch) -> None:
    handlers: list[Any] = []

    class RecordingHandler(server.AsyncSocketModeHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            handlers.append(self)

    slack_env.setattr(server, "AsyncSocketModeHandler", RecordingHandler)

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
            slack_env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            slack_env.setenv("SLACK_APP_TOKEN", APP_TOKEN)
            slack_env.setenv("SLACK_API_URL", fake.api_url)
            settings = load_slack_settings()
            assert settings.slack_app_token is not None
            # As in the service: the answer is stored in the outbox before the envelope's ack.
            state = SlackState()
            outbox = sqlite_outbox("slack")
            app = build_slack_app(settings, PanicLookup(seeds_catalog()), state, outbox=outbox)
            assert state.owed is not None
            state.owed.worker.start()
            task = asyncio.create_task(run_socket_mode(app, settings.slack_app_token.get_secret_value()))
            try:
                await fake.wait_for_socket()
                [opened] = fake.calls_to("apps.connections.open")
                assert opened.headers["Authorization"] == f"Bearer {APP_TOKEN}"
                url = fake.response_url()
                await fake.send_envelope(
                    {
                        "envelope_id": "4f6a1c5e-0d7b-4e59-9d1a-0a1b2c3d4e5f",
                        "payload": slash_command(AVG_POOL_PASTE, url),
                        "type": "slash_commands",
                        "accepts_response_payload": True,
                    }
                )
                [ack] = await fake.wait_for(lambda: fake.socket_received, what="the envelope ack")
                assert ack["envelope_id"] == "4f6a1c5e-0d7b-4e59-9d1a-0a1b2c3d4e5f"
                [answer] = await fake.wait_for(fake.responses)
                assert answer.body["response_type"] == "ephemeral"
                assert header(answer) == AVG_POOL_TITLE
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                for handler in handlers:
                    await handler.close_async()
                await state.owed.worker.stop(1.0)
                outbox.close()
            assert state.owed.worker.answered == 1
            assert fake.problems == []

    run(scenario())
    assert len(handlers) == 1


# -- per-user rate limit -------------------------------------------------------------------------------


def test_one_user_asking_too_often_is_told_to_wait(slack_env: pytest.MonkeyPatch) -> None:
    from adapters.redis_memory import RateLimiter

    async def scenario() -> None:
        async with running(slack_env) as h:
            h.state.rate_limit = RateLimiter(2, 60.0, clock=h.clock)
            for _ in range(2):
                assert header(await h.answer(AVG_POOL_PASTE)) == AVG_POOL_TITLE
            refused = await h.answer(AVG_POOL_PASTE)
            assert header(refused) is None
            assert "try again in a moment" in text_of(refused)
            h.clock.now += 61  # the window has passed
            assert header(await h.answer(AVG_POOL_PASTE)) == AVG_POOL_TITLE

    run(scenario())


def test_mention_with_words_in_a_thread_explains_the_pasted_parent(slack_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            parent_ts = next_ts()
            h.fake.add_message(CHANNEL, parent_ts, AVG_POOL_PASTE)
            await h.event(mention_event("what does this mean?", thread_ts=parent_ts))
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            assert post.body["thread_ts"] == parent_ts
            assert header(post) == AVG_POOL_TITLE

    run(scenario())


def test_an_edit_that_keeps_the_text_leaves_the_reply_alone(slack_env: pytest.MonkeyPatch) -> None:
    """Slack sends message_changed for link unfurls too: the card (and its vote counts) stays as it is."""

    async def scenario() -> None:
        async with running(slack_env) as h:
            paste, _ = await h.auto_reply()
            await h.event(edit_event(paste, paste["text"]))
            await h.settle()
            assert h.fake.calls_to("chat.update") == []
            assert h.fake.calls_to("chat.delete") == []

    run(scenario())


def test_bolt_says_nothing_of_an_unused_token_at_start(
    slack_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SLACK_BOT_TOKEN is the client's token: Bolt, which reads the variable too, must not call it unused."""

    async def scenario() -> None:
        async with running(slack_env) as h:
            await h.answer(AVG_POOL_PASTE)

    run(scenario())
    bolt = [r.getMessage() for r in caplog.records if r.name.startswith("slack_bolt") and r.levelno >= 30]
    assert bolt == []  # before: "As you gave `client` as well, `token` will be unused."
