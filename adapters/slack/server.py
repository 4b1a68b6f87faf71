"""Running the Slack app: HTTP mode (`POST /slack/events`, `GET /healthz`) or Socket Mode."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from urllib.parse import parse_qsl

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_internals import build_async_context
from slack_bolt.request.async_request import AsyncBoltRequest

log = logging.getLogger("panicbot.slack")

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"


def to_bolt_request(raw_body: str, query: str, headers: dict[str, str | Sequence[str]]) -> AsyncBoltRequest:
    """A Bolt request, mending slack-bolt 1.30's body parsing: it reads any form body that contains the
    word `payload` as an interactivity payload, so `/panic ... handshake payload` parsed as `{}`."""
    request = AsyncBoltRequest(body=raw_body, query=query, headers=headers)
    if request.body or not raw_body or raw_body.startswith("{"):
        return request
    form = dict(parse_qsl(raw_body, keep_blank_values=True))
    if "payload" not in form and form:
        request.body = form
        request.context = build_async_context(AsyncBoltContext({}), form)
    return request


def add_slack_routes(web_app: web.Application, app: AsyncApp) -> None:
    """`POST /slack/events`: events, commands, shortcuts and actions all arrive here in HTTP mode."""

    async def events(request: web.Request) -> web.Response:
        raw = await request.text()
        bolt_request = to_bolt_request(raw, request.query_string, dict(request.headers))
        bolt_response = await app.async_dispatch(bolt_request)
        return await to_aiohttp_response(bolt_response)

    web_app.router.add_post(EVENTS_PATH, events)


def build_web_application(app: AsyncApp, records: int) -> web.Application:
    """The aiohttp application Slack posts to, with a health check for the load balancer."""

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"ok": True, "records": records})

    web_app = web.Application(client_max_size=2 * 1024 * 1024)
    add_slack_routes(web_app, app)
    web_app.router.add_get(HEALTH_PATH, health)
    return web_app


async def run_socket_mode(app: AsyncApp, app_token: str) -> None:
    handler = AsyncSocketModeHandler(app, app_token)
    log.info("connecting to Slack in Socket Mode")
    await handler.start_async()  # type: ignore[no-untyped-call]  # slack_bolt leaves it untyped
