"""`POST /slack/events` before Bolt: the signature is checked on the raw bytes first, so nothing unsigned or
stale is parsed or logged, a signed but malformed body is a 400 (never a 500), and no request body reaches a
log line, whoever writes it (Bolt's own verification included)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack.app import SlackState, build_slack_app
from adapters.slack.settings import load_slack_settings
from bot.lookup import PanicLookup
from bot.records import default_catalog
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import (
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    SIGNING_SECRET,
    Harness,
    header,
    mention_event,
    running,
    signed,
    slash_command,
)
from tests.support.local_only import isolate

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
# (body, content type): what Slack never sends, each of which got a 500 and an ERROR line from Bolt's parser.
MALFORMED = {
    "broken-json": (b"{not json", JSON),
    "json-array": (b"[]", JSON),
    "json-null": (b"null", JSON),
    "json-string": (b'"text"', JSON),
    "brace-but-not-json": (b"{token=x&text=y", FORM),
    "payload-not-json": (b"payload=not-json", FORM),
    "payload-json-array": (b"payload=%5B%5D", FORM),
    "invalid-utf8": (b"token=\xff\xfe&text=\xc3", FORM),
    "invalid-utf8-json": (b'{"type": "\xff"}', JSON),
    "form-sent-as-json": (b"token=x&team_id=T1&command=%2Fpanic&text=hi", JSON),
    "deeply-nested-json": (b"[" * 100_000 + b"]" * 100_000, JSON),
    # Deeper than any payload of Slack's, yet within what the parser itself accepts.
    "nested-json-100": (b'{"a":' * 100 + b"1" + b"}" * 100, JSON),
}
BAD_TIMESTAMPS = ["abc", "", "1e9", "0x10", " 1", "1_000", "١٢٣", "-1", "99999999999999999999999"]
MARKER = "PANICBOT-MARKER-7f3a9c"


@pytest.fixture
def slack_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
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


class Everything(logging.Handler):
    """Every record any logger emits, at any level, formatted the way a real handler would write it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[tuple[int, str, str]] = []
        self.formatter_ = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.name, self.formatter_.format(record)))

    def text(self) -> str:
        return "\n".join(line for _, _, line in self.lines)

    def above_debug(self) -> list[str]:
        return [line for level, _, line in self.lines if level > logging.DEBUG]


@pytest.fixture
def every_log() -> Iterator[Everything]:
    """A handler on the root and on every logger that exists (Bolt's included), everything at DEBUG.

    Bolt copies the root level onto its loggers when it creates them, and may give them handlers of their own:
    the handler goes on each, so whatever any of them would write is seen here."""
    handler = Everything()
    root = logging.getLogger()
    saved: dict[str, tuple[int, bool]] = {}
    root_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    # Not SQLAlchemy's: the outbox's worker polls its database in the background, and SQLAlchemy at DEBUG
    # writes each statement at INFO; that is not the request's (SQLAlchemy keeps its loggers at WARNING).
    names = [
        name
        for name in ["slack_bolt", "slack_sdk", "aiohttp", *logging.root.manager.loggerDict]
        if name != "sqlalchemy" and not name.startswith("sqlalchemy.")
    ]
    for name in names:
        logger = logging.getLogger(name)
        saved[name] = (logger.level, logger.disabled)
        logger.setLevel(logging.DEBUG)
        logger.disabled = False
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(root_level)
        for name, (level, disabled) in saved.items():
            logging.getLogger(name).setLevel(level)
            logging.getLogger(name).disabled = disabled


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=30))


async def post_raw(h: Harness, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    async with h.session.post(f"{h.base_url}/slack/events", data=body, headers=headers) as response:
        return response.status, await response.text()


def signed_bytes(
    body: bytes, *, timestamp: int | None = None, secret: str = SIGNING_SECRET
) -> dict[str, str]:
    """Slack's signature over raw bytes (which need not be UTF-8)."""
    import hashlib
    import hmac

    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


# -- 1. the signature first ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("signature", ["none", "wrong-secret", "stale"])
def test_an_unsigned_or_stale_malformed_body_is_a_401_that_parses_and_logs_nothing(
    slack_env: pytest.MonkeyPatch, every_log: Everything, case: str, signature: str
) -> None:
    body, content_type = MALFORMED[case]
    if signature == "none":
        headers = {"X-Slack-Request-Timestamp": str(int(time.time()))}
    elif signature == "wrong-secret":
        headers = signed_bytes(body, secret="not-the-signing-secret")
    else:
        headers = signed_bytes(body, timestamp=int(time.time()) - 5 * 60 - 30)

    async def scenario() -> None:
        async with running(slack_env) as h:
            every_log.lines.clear()  # what start-up said is not the request's
            status, _ = await post_raw(h, body, {**headers, "Content-Type": content_type})
            assert status == 401
            assert h.fake.calls == []
            assert every_log.above_debug() == []

    run(scenario())


@pytest.mark.parametrize("timestamp", BAD_TIMESTAMPS)
def test_a_non_numeric_timestamp_is_a_401_that_logs_nothing(
    slack_env: pytest.MonkeyPatch, every_log: Everything, timestamp: str
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            body = b"token=x&command=%2Fpanic&text=hi"
            # Signed over the bad timestamp with the right secret: only the timestamp is wrong.
            import hashlib
            import hmac

            digest = hmac.new(
                SIGNING_SECRET.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256
            ).hexdigest()
            headers = {
                "X-Slack-Request-Timestamp": timestamp,
                "X-Slack-Signature": f"v0={digest}",
                "Content-Type": FORM,
            }
            every_log.lines.clear()  # what start-up said is not the request's
            status, _ = await post_raw(h, body, headers)
            assert status == 401
            assert h.fake.calls == []
            assert every_log.above_debug() == []

    run(scenario())


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_signed_malformed_body_is_a_400_never_a_500(
    slack_env: pytest.MonkeyPatch, every_log: Everything, case: str
) -> None:
    body, content_type = MALFORMED[case]

    async def scenario() -> None:
        async with running(slack_env) as h:
            status, _ = await post_raw(h, body, {**signed_bytes(body), "Content-Type": content_type})
            assert status == 400
            assert h.fake.calls == []
            # The app keeps serving.
            answer = await h.answer(AVG_POOL_PASTE)
            assert answer.body["response_type"] == "ephemeral"

    run(scenario())
    assert [line for level, _, line in every_log.lines if level >= logging.ERROR] == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"type": "event_callback", "event": "not an object", "event_id": "Ev1"}',
        b'{"type": "event_callback", "event": null}',
        b'{"type": "event_callback", "event": {"type": "message", "text": 5, "channel": []}}',
        b'{"type": "event_callback", "event": {"type": "app_mention", "text": null}}',
        b'{"type": "block_actions", "actions": "x"}',
        b'{"type": "block_actions", "actions": [{}]}',
        b'{"type": "url_verification"}',
        b'{"type": 5, "command": ["x"]}',
        b"command=%2Fpanic",
        b"command=%2Fpanic&text=" + b"%00" * 10,
    ],
)
def test_signed_bodies_of_odd_shapes_never_get_a_500(slack_env: pytest.MonkeyPatch, body: bytes) -> None:
    content_type = JSON if body.startswith(b"{") else FORM

    async def scenario() -> None:
        async with running(slack_env) as h:
            status, _ = await post_raw(h, body, {**signed_bytes(body), "Content-Type": content_type})
            assert status < 500

    run(scenario())


def test_brackets_inside_a_pasted_text_are_not_nesting(slack_env: pytest.MonkeyPatch) -> None:
    """A paste holding a tensor printout or a long run of `[` is text, not nesting: it is answered (a
    character scan of the body used to count them and refused the request with a 400)."""
    paste = f"{AVG_POOL_PASTE}\nvalues: " + "[" * 200 + "0.5" + "]" * 200

    async def scenario() -> None:
        async with running(slack_env) as h:
            reply = await h.event(mention_event(paste))
            assert reply.status == 200
            [post] = await h.fake.wait_for_calls("chat.postMessage")
            assert header(post) == AVG_POOL_TITLE

    run(scenario())


# -- 2. no body in any log line ----------------------------------------------------------------------------


def test_a_bad_signature_request_body_is_in_no_log_line(
    slack_env: pytest.MonkeyPatch, every_log: Everything
) -> None:
    async def scenario() -> None:
        async with running(slack_env) as h:
            from urllib.parse import urlencode

            paste = f"{AVG_POOL_PASTE}\n{MARKER} " + "x" * 200_000
            body = urlencode(slash_command(paste, h.fake.response_url())).encode()
            headers = {**signed_bytes(body, secret="forged"), "Content-Type": FORM}
            status, _ = await post_raw(h, body, headers)
            assert status == 401
            status, _ = await post_raw(h, body, {"Content-Type": FORM})
            assert status == 401

    run(scenario())
    assert MARKER not in every_log.text()
    assert sum(len(line) for _, _, line in every_log.lines) < 20_000


def test_bolt_refuses_a_request_the_route_did_not_check_and_logs_no_body(
    slack_env: pytest.MonkeyPatch, every_log: Everything
) -> None:
    """Bolt no longer hashes every body a second time, but a request that reached it without the route's
    signature check (no `SIGNATURE_CHECKED` mark) is still refused with a 401, its body in no log line."""

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            slack_env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            slack_env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
            slack_env.setenv("SLACK_API_URL", fake.api_url)
            settings = load_slack_settings(http_mode=True)
            app = build_slack_app(settings, PanicLookup(default_catalog()), SlackState())
            body = f"token=x&command=%2Fpanic&text={MARKER}"
            for secret in ("forged", SIGNING_SECRET):  # even a good signature: only the route checks
                request = AsyncBoltRequest(
                    body=body, headers={**signed(body, secret=secret), "Content-Type": FORM}
                )
                response = await app.async_dispatch(request)
                assert response.status == 401
            assert fake.calls_to("chat.postMessage") == [] and fake.responses() == []

    run(scenario())
    assert MARKER not in every_log.text()


def test_a_checked_request_is_hashed_once(slack_env: pytest.MonkeyPatch) -> None:
    """The route's check is the only one: Bolt's verifier hashed every body again on the event loop."""

    def no_second_check(*_: object, **__: object) -> bool:
        raise AssertionError("Bolt verified a signature the route had checked")

    slack_env.setattr("slack_sdk.signature.SignatureVerifier.is_valid", no_second_check)

    async def scenario() -> None:
        async with running(slack_env) as h:
            answer = await h.answer(AVG_POOL_PASTE)
            assert answer.body["response_type"] == "ephemeral"

    run(scenario())
