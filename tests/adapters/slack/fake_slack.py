"""A local fake of Slack on 127.0.0.1: the Web API, `response_url` endpoints and a Socket Mode websocket.

Records every request and answers the way Slack does (ok/error JSON, 429 with Retry-After, invalid_blocks),
so tests can assert on exactly what Slack would have received. Start it inside the test's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

HOST = "127.0.0.1"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T1"
APP_ID = "A1"
RESPONSE_URL_METHOD = "response_url"
# Slack accepts up to 5 posts to one response_url.
RESPONSE_URL_POSTS = 5
MAX_BLOCKS = 50
# The most messages conversations.history and conversations.replies return in one page.
PAGE_LIMIT = 999
# Methods that change a message and so carry blocks Slack validates.
_MESSAGE_METHODS = {"chat.postMessage", "chat.postEphemeral", "chat.update"}

T = TypeVar("T")


@dataclass
class Call:
    """One request the fake received: Web API method (or "response_url"), parsed body, headers."""

    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    path: str
    status: int = 200
    error: str | None = None
    response: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    peer: tuple[str, int] | None = None  # the client's address and port: one per connection

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.error


@dataclass
class _Failure:
    error: str | None  # a Slack error code answered with HTTP 200 and ok=false
    status: int = 200
    retry_after: int | None = None
    times: int | None = 1  # None: every call


def block_problems(body: dict[str, Any]) -> list[str]:
    """Why Slack would refuse these blocks (empty when they are valid Block Kit within the limits)."""
    blocks = body.get("blocks")
    if blocks is None:
        return []
    if not isinstance(blocks, list):
        return [f"blocks is not a list: {type(blocks).__name__}"]
    problems = []
    if len(blocks) >= MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks (Slack allows fewer than {MAX_BLOCKS} here)")
    for index, raw in enumerate(blocks):
        try:
            parsed = Block.parse(raw)
            if parsed is None:
                raise SlackObjectFormationError(f"unknown block {raw!r}")
            parsed.validate_json()
        except (SlackObjectFormationError, TypeError, ValueError) as exc:
            problems.append(f"block {index}: {exc}")
    if blocks and not body.get("text"):
        problems.append("blocks without a text fallback")
    return problems


class FakeSlack:
    """Slack's side of every conversation the bot has, on a free port of 127.0.0.1."""

    def __init__(self, bot_token: str, app_token: str | None = None) -> None:
        self.bot_token, self.app_token = bot_token, app_token
        self.calls: list[Call] = []
        self.problems: list[str] = []
        # (channel, ts) -> message, for conversations.replies / chat.update / chat.delete.
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.socket_received: list[dict[str, Any]] = []
        self._failures: dict[str, list[_Failure]] = {}
        self._last_ts_us = 0  # microseconds of the last ts handed out (Slack's ts is the time it was posted)
        self._response_ids = itertools.count(1)
        self._response_posts: dict[str, int] = {}
        self._sockets: list[web.WebSocketResponse] = []
        self._socket_connected = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0
        # Seconds each response_url post takes to answer (counted as soon as it arrives, as Slack would).
        self.response_delay = 0.0
        # Seconds chat.postMessage takes to answer once the message is posted (a caller stopped meanwhile
        # never learns that it was).
        self.post_delay = 0.0

    # -- lifecycle ----------------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{id}", self._response_url)
        app.router.add_get("/link/", self._websocket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        for socket in list(self._sockets):
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"http://{HOST}:{self.port}/api/"

    def response_url(self) -> str:
        """A fresh response_url, as Slack puts in every command, shortcut and action payload."""
        return f"http://{HOST}:{self.port}/response/{next(self._response_ids)}"

    # -- what tests configure -----------------------------------------------------------------------

    def fail(self, method: str, error: str, *, times: int | None = 1) -> None:
        """Answer `method` with `{"ok": false, "error": error}` the next `times` calls (None: always)."""
        self._failures.setdefault(method, []).append(_Failure(error, times=times))

    def rate_limit(self, method: str, *, retry_after: int = 1, times: int | None = 1) -> None:
        """Answer `method` with HTTP 429 and `Retry-After` the next `times` calls, then normally."""
        self._failures.setdefault(method, []).append(
            _Failure("ratelimited", status=429, retry_after=retry_after, times=times)
        )

    def fail_response_url(self, status: int, error: str, *, times: int | None = 1) -> None:
        """Refuse the next `times` response_url posts with `status` (404 `expired_url`, say)."""
        self._failures.setdefault(RESPONSE_URL_METHOD, []).append(_Failure(error, status=status, times=times))

    def add_message(self, channel: str, ts: str, text: str, user: str = "U1", **extra: Any) -> None:
        """A message that exists in Slack (a thread parent for conversations.replies, say)."""
        self.messages[(channel, ts)] = {"type": "message", "user": user, "text": text, "ts": ts, **extra}

    def say(self, channel: str, text: str, *, user: str = "U2", thread_ts: str | None = None) -> str:
        """Someone's message posted now (in `thread_ts`'s thread when given); its ts."""
        ts = self._new_ts()
        self.add_message(channel, ts, text, user=user, **({"thread_ts": thread_ts} if thread_ts else {}))
        return ts

    # -- what tests read ----------------------------------------------------------------------------

    def calls_to(self, method: str, *, ok_only: bool = False) -> list[Call]:
        return [call for call in self.calls if call.method == method and (call.ok or not ok_only)]

    def posts(self) -> list[Call]:
        """Messages Slack accepted through chat.postMessage."""
        return self.calls_to("chat.postMessage", ok_only=True)

    def responses(self) -> list[Call]:
        """Posts to response_url that Slack accepted."""
        return self.calls_to(RESPONSE_URL_METHOD, ok_only=True)

    def posts_to(self, response_url: str) -> int:
        """How many posts reached `response_url`, accepted or not."""
        return self._response_posts.get(response_url.rsplit("/", 1)[-1], 0)

    async def wait_for(
        self, probe: Callable[[], T | None], *, timeout: float = 5.0, what: str = "a Slack call"
    ) -> T:
        """The first truthy `probe()`, checked every 20 ms for at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                seen = [(call.method, call.status, call.error) for call in self.calls]
                raise AssertionError(f"timed out waiting for {what}; calls so far: {seen}")
            await asyncio.sleep(0.02)

    async def wait_for_calls(self, method: str, count: int = 1, *, ok_only: bool = True) -> list[Call]:
        return await self.wait_for(
            lambda: (calls := self.calls_to(method, ok_only=ok_only))[count - 1 :] and calls,
            what=f"{count} {method} call(s)",
        )

    # -- Socket Mode --------------------------------------------------------------------------------

    async def wait_for_socket(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(self._socket_connected.wait(), timeout)

    async def send_envelope(self, envelope: dict[str, Any]) -> None:
        """Push a Socket Mode envelope to every connected client."""
        for socket in self._sockets:
            await socket.send_str(json.dumps(envelope))

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": len(self._sockets),
                    "debug_info": {"host": "fake", "approximate_connection_time": 18060},
                    "connection_info": {"app_id": APP_ID},
                }
            )
        )
        self._socket_connected.set()
        try:
            async for message in socket:
                if message.type == WSMsgType.TEXT:
                    self.socket_received.append(json.loads(message.data))
        finally:
            self._sockets.remove(socket)
        return socket

    # -- HTTP handlers ------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await _parsed_body(request)
        call = Call(method, body, dict(request.headers), request.path, peer=_peer(request))
        self.calls.append(call)
        status, payload, headers = self._answer(method, body, request.headers.get("Authorization", ""))
        call.status, call.error = status, None if payload.get("ok") else payload.get("error")
        call.response = payload
        if method == "chat.postMessage" and self.post_delay:
            await asyncio.sleep(self.post_delay)
        return web.json_response(payload, status=status, headers=headers)

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await _parsed_body(request)
        call = Call(RESPONSE_URL_METHOD, body, dict(request.headers), request.path)
        self.calls.append(call)
        response_id = request.match_info["id"]
        self._response_posts[response_id] = self._response_posts.get(response_id, 0) + 1
        if self.response_delay:
            await asyncio.sleep(self.response_delay)
        failure = self._take_failure(RESPONSE_URL_METHOD)
        if failure is not None:
            call.status, call.error = failure.status, failure.error
        elif self._response_posts[response_id] > RESPONSE_URL_POSTS:
            call.status, call.error = 404, "used_url"
        elif problems := block_problems(body):
            self.problems.extend(f"{request.path}: {problem}" for problem in problems)
            call.status, call.error = 400, "invalid_blocks"
        if call.error:
            return web.Response(status=call.status, text=call.error)
        return web.json_response({"ok": True})

    def _take_failure(self, method: str) -> _Failure | None:
        queue = self._failures.get(method)
        if not queue:
            return None
        failure = queue[0]
        if failure.times is not None:
            failure.times -= 1
            if failure.times <= 0:
                queue.pop(0)
        return failure

    def _answer(
        self, method: str, body: dict[str, Any], authorization: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if not authorization.startswith("Bearer "):
            return 200, {"ok": False, "error": "not_authed"}, {}
        if authorization.removeprefix("Bearer ") != expected:
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        failure = self._take_failure(method)
        if failure is not None:
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
            return failure.status, {"ok": False, "error": failure.error}, headers
        if method in _MESSAGE_METHODS and (problems := block_problems(body)):
            self.problems.extend(f"{method}: {problem}" for problem in problems)
            return 200, {"ok": False, "error": "invalid_blocks"}, {}
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        return 200, handler(body), {}

    # -- Web API methods ----------------------------------------------------------------------------

    def _new_ts(self) -> str:
        """The time now, as Slack writes a message's ts, unique (a microsecond apart at least)."""
        self._last_ts_us = max(time.time_ns() // 1000, self._last_ts_us + 1)
        return f"{self._last_ts_us // 1_000_000}.{self._last_ts_us % 1_000_000:06d}"

    def _auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake-workspace.slack.com/",
            "team": "Fake Workspace",
            "user": "panicbot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _apps_connections_open(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://{HOST}:{self.port}/link/?ticket=fake-ticket"}

    def _chat_postMessage(self, body: dict[str, Any]) -> dict[str, Any]:
        channel, ts = body.get("channel", ""), self._new_ts()
        message = {
            "type": "message",
            "user": BOT_USER_ID,
            "bot_id": BOT_ID,
            "ts": ts,
            "text": body.get("text"),
        }
        if body.get("blocks"):
            message["blocks"] = body["blocks"]
        if body.get("thread_ts"):
            message["thread_ts"] = body["thread_ts"]
            parent = self.messages.get((channel, body["thread_ts"]))
            if parent is not None:  # as Slack shows a thread's parent: its thread, who replied, how often
                users = parent.get("reply_users") or []
                parent.update(
                    thread_ts=parent["ts"],
                    reply_count=int(parent.get("reply_count") or 0) + 1,
                    reply_users=users if BOT_USER_ID in users else [*users, BOT_USER_ID],
                )
        if body.get("metadata"):
            message["metadata"] = body["metadata"]
        self.messages[(channel, ts)] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _chat_postEphemeral(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "message_ts": self._new_ts()}

    def _chat_update(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (body.get("channel", ""), body.get("ts", ""))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        self.messages[key].update(text=body.get("text"), blocks=body.get("blocks"))
        if body.get("metadata"):  # replaced when given, kept as it was otherwise
            self.messages[key]["metadata"] = body["metadata"]
        return {"ok": True, "channel": key[0], "ts": key[1], "text": body.get("text")}

    def _chat_delete(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (body.get("channel", ""), body.get("ts", ""))
        if self.messages.pop(key, None) is None:
            return {"ok": False, "error": "message_not_found"}
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _conversations_replies(self, body: dict[str, Any]) -> dict[str, Any]:
        channel, ts = body.get("channel", ""), body.get("ts", "")
        parent = self.messages.get((channel, ts))
        if parent is None:
            return {"ok": False, "error": "thread_not_found"}
        oldest = float(body.get("oldest") or 0)
        replies = [
            message
            for (where, _), message in sorted(self.messages.items())
            if where == channel
            and message.get("thread_ts") == ts
            and message["ts"] != ts
            and float(message["ts"]) > oldest
        ]
        # As Slack pages a thread: its parent first on every page, then `limit` of its replies.
        return _page([parent], replies, body, default_limit=1000)

    def _conversations_history(self, body: dict[str, Any]) -> dict[str, Any]:
        """The channel's messages (not the replies in threads), newest first, after `oldest`; a page of
        `limit` at a time."""
        channel, oldest = body.get("channel", ""), float(body.get("oldest") or 0)
        found = [
            message
            for (where, ts), message in sorted(self.messages.items(), reverse=True)
            if where == channel and message.get("thread_ts") in (None, ts) and float(ts) > oldest
        ]
        return _page([], found, body, default_limit=100)


def _page(
    first: list[dict[str, Any]], found: list[dict[str, Any]], body: dict[str, Any], *, default_limit: int
) -> dict[str, Any]:
    """One page of `found`, as Slack pages conversations.history and conversations.replies: `limit`
    messages (`default_limit` when not given, 999 at most) from where `cursor` says, `has_more`, and the
    next page's cursor in `response_metadata.next_cursor` (opaque to the caller; empty on the last page)."""
    limit = min(int(body.get("limit") or default_limit), PAGE_LIMIT)
    cursor = str(body.get("cursor") or "")
    start = int(base64.b64decode(cursor).decode().removeprefix("next:")) if cursor else 0
    page = found[start : start + limit]
    more = start + limit < len(found)
    next_cursor = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
    return {
        "ok": True,
        "messages": [_with_metadata(message, body) for message in [*first, *page]],
        "has_more": more,
        "response_metadata": {"next_cursor": next_cursor},
    }


def _with_metadata(message: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """A message as a read shows it: its metadata only when asked for (`include_all_metadata`)."""
    if str(body.get("include_all_metadata", "")).lower() in {"1", "true"}:
        return message
    return {name: value for name, value in message.items() if name != "metadata"}


def _peer(request: web.Request) -> tuple[str, int] | None:
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    return (str(peer[0]), int(peer[1])) if peer else None


async def _parsed_body(request: web.Request) -> dict[str, Any]:
    """JSON, form or query parameters as one dict; JSON-valued form fields (blocks) decoded."""
    body: dict[str, Any] = dict(request.query)
    raw = await request.text()
    if raw.startswith("{"):
        body.update(json.loads(raw))
    elif raw:
        body.update(parse_qsl(raw, keep_blank_values=True))
    for name in ("blocks", "attachments"):
        if isinstance(body.get(name), str):
            body[name] = json.loads(body[name])
    return body
