"""Running the Slack app: HTTP mode (`POST /slack/events`, `GET /healthz`) or Socket Mode.

In HTTP mode every request is checked on its raw bytes before anything reads it: a compressed body is refused,
the body is read within a size and a time limit, and the signature (HMAC-SHA256 of `v0:{timestamp}:{body}`,
compared in constant time, at most 5 minutes old) is verified. Only then is the body parsed, and a signed body
that is not what Slack sends is a 400. Unsigned, stale or forged requests are a 401: nothing of them is parsed
or logged above DEBUG."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_internals import build_async_context
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError

from adapters.chat import shared_replies
from adapters.platforms import Host, ServeOptions, until_reachable
from adapters.settings import PlatformRefused, PlatformUnreachable
from adapters.slack.app import SIGNATURE_CHECKED, SlackAuthorization, SlackState, build_slack_app
from adapters.slack.settings import SlackSettings, load_slack_settings
from adapters.webhooks import read_body

log = logging.getLogger("panicbot.slack")

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
# Slack's own limit: a request older (or newer) than this is a replay, whatever its signature.
SIGNATURE_MAX_AGE_SECONDS = 5 * 60
# Slack's payloads are a few KB (a slash command's text is at most 4,000 characters); 2 MiB is ample.
MAX_BODY_BYTES = 2 * 1024 * 1024
# A client sending its body slower than this has its connection closed (the service's runner does headers).
DEFAULT_READ_TIMEOUT_SECONDS = 10.0

# Unix seconds, ASCII digits only: int() would also take " 1", "1_000" and other scripts' digits.
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
# The JSON nesting Slack's payloads need is a handful of levels; far deeper is an attack on the parser.
_MAX_JSON_DEPTH = 64
_STR, _DICT, _LIST, _NONE = (str,), (dict,), (list,), (type(None),)
# What Bolt and the handlers read, and the types Slack gives it; any other type is a malformed body.
_TOP_LEVEL: dict[str, tuple[type, ...]] = {
    "type": _STR,
    "token": _STR,
    "command": _STR,
    "text": _STR,
    "callback_id": _STR,
    "event_id": _STR,
    "team_id": _STR + _NONE,
    "user_id": _STR,
    "channel_id": _STR,
    "response_url": _STR,
    "trigger_id": _STR,
    "api_app_id": _STR,
    "enterprise_id": _STR + _NONE,
    "event": _DICT,
    "authorizations": _LIST,
    "actions": _LIST,
    "team": _STR + _DICT + _NONE,
    "enterprise": _STR + _DICT + _NONE,
    "user": _STR + _DICT,
    "channel": _STR + _DICT,
    "container": _DICT,
    "message": _DICT,
    "view": _DICT,
}
_EVENT: dict[str, tuple[type, ...]] = {
    "type": _STR,
    "subtype": _STR + _NONE,
    "text": _STR + _NONE,
    "user": _STR + _DICT + _NONE,
    "channel": _STR + _DICT + _NONE,
    "ts": _STR,
    "thread_ts": _STR + _NONE,
    "event_ts": _STR,
    "team": _STR + _NONE,
    "user_team": _STR + _NONE,
    "message": _DICT + _NONE,
    "previous_message": _DICT + _NONE,
}
_ACTION: dict[str, tuple[type, ...]] = {"action_id": _STR, "block_id": _STR, "value": _STR}


class MalformedBody(ValueError):
    """A signed body that is not one Slack sends; the reason names the problem, never the content."""


def signature_is_valid(
    secret: str,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    now: float | None = None,
) -> bool:
    """Slack's `v0` request signature over the raw bytes, in constant time, within 5 minutes of `now`."""
    if not timestamp or not signature or not _TIMESTAMP.fullmatch(timestamp):
        return False
    if not _SIGNATURE.fullmatch(signature):
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > SIGNATURE_MAX_AGE_SECONDS:
        return False
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    expected = "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii"))


def _nests_deeper_than(value: Any, limit: int) -> bool:
    """True when a parsed JSON value holds containers more than `limit` levels deep. It walks containers
    only, never characters: a megabyte-long string costs nothing here."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)  # C-level; a body nested past the interpreter's recursion limit raises
    except (ValueError, RecursionError):
        raise MalformedBody(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise MalformedBody(f"{what} is not a JSON object")
    if _nests_deeper_than(value, _MAX_JSON_DEPTH):
        raise MalformedBody(f"{what} nests too deeply")
    return value


def _check_types(value: Mapping[str, Any], expected: Mapping[str, tuple[type, ...]], what: str) -> None:
    for key, types in expected.items():
        if key in value and not isinstance(value[key], types):
            raise MalformedBody(f"{what}.{key} has the wrong type")


def _check_shape(body: Mapping[str, Any]) -> None:
    _check_types(body, _TOP_LEVEL, "body")
    if isinstance(body.get("event"), dict):
        _check_types(body["event"], _EVENT, "event")
    for key, expected in (("authorizations", {}), ("actions", _ACTION)):
        for item in body.get(key) or ():
            if not isinstance(item, dict):
                raise MalformedBody(f"{key} holds a non-object")
            _check_types(item, expected, key)
    if body.get("type") == "block_actions" and not all(
        isinstance(action.get("action_id"), str) for action in body.get("actions") or [{}]
    ):
        raise MalformedBody("a block action without an action_id")


@dataclass(frozen=True)
class SignedBody:
    """A signed request's body: its text, and the object Bolt reads from it."""

    text: str
    parsed: dict[str, Any]


def parse_signed_body(raw: bytes, content_type: str | None) -> SignedBody:
    """The body, parsed once the way Bolt reads it, once it is known to be a shape Bolt can handle; else
    `MalformedBody`.

    Mirrors slack-bolt's `parse_body`: JSON when the content type says so or the body starts with `{`, else a
    form, whose `payload` field (interactivity) holds JSON. Unlike slack-bolt 1.30, a form is read as a
    payload only when it has a `payload` field, not whenever it contains the word: `/panic ... handshake
    payload` parsed as `{}` there."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedBody("the body is not UTF-8") from None
    if not text:
        return SignedBody(text, {})
    if content_type == "application/json" or text.startswith("{"):
        parsed = _json_object(text, "the body")
    else:
        form = dict(parse_qsl(text, keep_blank_values=True))
        parsed = _json_object(form["payload"], "the payload") if "payload" in form else dict(form)
    _check_shape(parsed)
    return SignedBody(text, parsed)


def to_bolt_request(
    body: SignedBody, query: str, headers: dict[str, str | Sequence[str]]
) -> AsyncBoltRequest:
    """A Bolt request over a body whose signature was checked and which is already parsed: Bolt would parse
    it again, on the event loop, for every request (a megabyte of JSON costs milliseconds)."""
    request = AsyncBoltRequest(body="", query=query, headers=headers)
    request.raw_body = body.text
    request.body = body.parsed
    request.context = build_async_context(AsyncBoltContext({SIGNATURE_CHECKED: True}), body.parsed)
    return request


def _content_type(headers: Mapping[str, str]) -> str | None:
    """The media type exactly as Bolt reads it (`extract_content_type`), so both parse a body alike."""
    value = headers.get("Content-Type")
    return value.split(";")[0] if value else None


def _refused(status: int, error: str) -> web.Response:
    return web.json_response({"error": error}, status=status)


def _app_signing_secret(app: AsyncApp) -> str:
    # Bolt keeps the secret it verifies with; the route checks with the same one before Bolt sees anything.
    secret = getattr(app, "_signing_secret", "")
    return secret if isinstance(secret, str) else ""


def add_slack_routes(
    web_app: web.Application,
    app: AsyncApp,
    *,
    signing_secret: str | None = None,
    read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
    max_body_bytes: int = MAX_BODY_BYTES,
    clock: Callable[[], float] = time.time,
) -> None:
    """`POST /slack/events`: events, commands, shortcuts and actions all arrive here in HTTP mode.

    `signing_secret` defaults to the app's; HTTP mode without one is refused (anyone could post)."""
    secret = signing_secret or _app_signing_secret(app)
    if not secret:
        raise ValueError("Slack over HTTP needs a signing secret")

    async def events(request: web.Request) -> web.Response:
        raw = await read_body(request, limit=max_body_bytes, timeout=read_timeout)
        headers = request.headers
        if not signature_is_valid(
            secret,
            raw,
            headers.get("X-Slack-Request-Timestamp"),
            headers.get("X-Slack-Signature"),
            clock(),
        ):
            log.debug("refused a request without a valid Slack signature (%d bytes)", len(raw))
            return _refused(401, "invalid request")
        try:
            body = parse_signed_body(raw, _content_type(headers))
            bolt_request = to_bolt_request(body, request.query_string, dict(headers))
        except MalformedBody as exc:
            log.warning("refused a signed request: %s", exc)
            return _refused(400, "malformed request")
        except Exception as exc:  # Bolt's own reading of a shape no check above foresaw
            log.warning("refused a signed request Bolt cannot read: %s", exc.__class__.__name__)
            return _refused(400, "malformed request")
        bolt_response = await app.async_dispatch(bolt_request)
        return await to_aiohttp_response(bolt_response)

    web_app.router.add_post(EVENTS_PATH, events)


def build_web_application(
    app: AsyncApp, records: int, *, read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS
) -> web.Application:
    """The aiohttp application Slack posts to, with a health check for the load balancer."""

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"ok": True, "records": records})

    web_app = web.Application(client_max_size=MAX_BODY_BYTES)
    add_slack_routes(web_app, app, read_timeout=read_timeout)
    web_app.router.add_get(HEALTH_PATH, health)
    return web_app


# Slack's answers that mean the token itself is refused: retrying cannot help, the operator must fix it.
REFUSED_TOKEN_ERRORS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
        "missing_scope",
        "no_permission",
        "team_access_not_granted",
        "ekm_access_denied",
    }
)
TOKEN_HELP = {
    "SLACK_BOT_TOKEN": "copy the Bot User OAuth Token (xoxb-) again from the app's Install App page",
    "SLACK_APP_TOKEN": "make an app-level token with connections:write (Basic Information, App-Level Tokens)",
}


async def until_slack_answers(call: Callable[[], Awaitable[Any]], variable: str) -> Any:
    """`call()`'s answer once Slack gives one. A refused token ends start-up with a `PlatformRefused` naming
    `variable`; an unreachable Slack (network, timeout, its outage, a rate limit) is retried as every platform
    is (`until_reachable`: backoff, one log line per attempt, no traceback)."""

    async def attempt() -> Any:
        try:
            return await call()
        except SlackApiError as exc:
            error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
            if error in REFUSED_TOKEN_ERRORS:
                raise PlatformRefused(f"Slack refused {variable} ({error}): {TOKEN_HELP[variable]}") from None
            reason = f"Slack answered {error or exc.response.status_code}"
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            reason = f"{exc.__class__.__name__}: {exc}" if str(exc) else exc.__class__.__name__
        raise PlatformUnreachable(f"Slack is not reachable ({reason.splitlines()[0]})")

    return await until_reachable(attempt, log)


class _OneLine(logging.Filter):
    """slack_sdk's Socket Mode client logs a full traceback per reconnect attempt: keep its one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


def socket_connected(handler: AsyncSocketModeHandler) -> bool:
    """The Socket Mode connection is open (the aiohttp client's `is_connected`, which is a coroutine)."""
    client = handler.client
    session = getattr(client, "current_session", None)
    return (
        not client.closed
        and not getattr(client, "stale", False)
        and session is not None
        and not session.closed
    )


async def run_socket_mode(app: AsyncApp, app_token: str) -> None:
    handler = AsyncSocketModeHandler(app, app_token)
    log.info("connecting to Slack in Socket Mode")
    await handler.start_async()  # type: ignore[no-untyped-call]  # slack_bolt leaves it untyped


class SlackPlatform:
    """Slack inside `panicbot serve`: HTTP mode on the service's port (`--http`), else Socket Mode."""

    name = "slack"

    def load_settings(self, options: ServeOptions) -> SlackSettings:
        return load_slack_settings(http_mode=options.http)

    async def start(self, host: Host, settings: SlackSettings, options: ServeOptions) -> SlackState:
        cooldown = settings.slack_auto_reply_cooldown_seconds
        shared = await host.shared_state("panicbot:slack", cooldown, more=shared_replies)
        state = SlackState(
            cooldown_seconds=cooldown, observer=host.observer, feedback=host.feedback, **shared
        )
        # Bolt learns who the bot is from the start-up check below, never from a request (which would wait
        # for Slack's Web API, and answer Slack 500 while it is unreachable).
        authorization = SlackAuthorization(settings.slack_bot_token.get_secret_value(), ask_on_request=False)
        # Answers owed through a response_url (`/panic`, the shortcut, buttons) wait in the outbox
        # until posted.
        app = build_slack_app(settings, host.live, state, authorization, outbox=host.outbox(self.name))
        assert state.owed is not None
        worker = state.owed.worker
        worker.start()  # answers left by a stop (this replica's or another's) are posted first
        # One connection pool for every Web API call: slack_sdk otherwise opens a session (and a TCP
        # connection) per call, which under a burst of replies costs the event loop more than the replies.
        session = aiohttp.ClientSession()
        app.client.session = session

        async def drain_then_close(grace: float) -> None:
            # After the HTTP server: replies already acknowledged get their answer; what the outbox's worker
            # has not started stays there (logged by id) for the next start or another replica.
            await asyncio.gather(worker.stop(grace), state.drain(grace))
            await session.close()

        host.on_stop(drain_then_close)
        # Both tokens are checked before Slack is ready: a revoked bot token would otherwise be "ready" and
        # answer every /panic with Bolt's "installation no longer available". The checks and the connection
        # run in the background, so /healthz answers and a signal stops the process meanwhile.
        if options.http:
            add_slack_routes(host.web_app, app, read_timeout=host.http_read_timeout)
            checked = asyncio.Event()
            host.ready_when(self.name, checked.is_set)
            host.run_for_life(self._http_mode(app, authorization, checked), "Slack")
            return state
        assert settings.slack_app_token is not None  # load_slack_settings checked it
        app_token = settings.slack_app_token.get_secret_value()
        handler = AsyncSocketModeHandler(app, app_token)
        handler.client.logger.addFilter(_OneLine())
        host.ready_when(self.name, lambda: socket_connected(handler))
        host.on_close(handler.close_async)
        host.run_for_life(self._socket_mode(app, authorization, handler, app_token), "Slack")
        return state

    async def _http_mode(
        self, app: AsyncApp, authorization: SlackAuthorization, checked: asyncio.Event
    ) -> None:
        authorization.remember(await until_slack_answers(app.client.auth_test, "SLACK_BOT_TOKEN"))
        checked.set()
        await asyncio.Event().wait()  # Slack posts to the service's port until it stops

    async def _socket_mode(
        self,
        app: AsyncApp,
        authorization: SlackAuthorization,
        handler: AsyncSocketModeHandler,
        app_token: str,
    ) -> None:
        authorization.remember(await until_slack_answers(app.client.auth_test, "SLACK_BOT_TOKEN"))
        await until_slack_answers(
            lambda: app.client.apps_connections_open(app_token=app_token), "SLACK_APP_TOKEN"
        )
        log.info("connecting to Slack in Socket Mode")
        await handler.connect_async()  # type: ignore[no-untyped-call]  # slack_bolt leaves it untyped
        await asyncio.Event().wait()  # slack_sdk reconnects by itself until the service closes it


PLATFORM = SlackPlatform()
