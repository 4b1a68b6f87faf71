"""A local fake of Discord on 127.0.0.1: the REST API routes the bot uses (v10), interaction callbacks and
webhook follow-ups, a CDN for attachments, and the gateway websocket (plain JSON text frames, no zlib).

Records every request and answers as Discord does: JSON with `Content-Type: application/json` exactly,
50035 Invalid Form Body for a message over a limit, 403/404 with Discord's error codes, 429 with
`retry_after`. Tests assert on exactly what Discord would have received. Start it inside the test's loop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import WSMsgType, web

HOST = "127.0.0.1"
API_PREFIX = "/api/v10"
# Discord's epoch (2015) to 2024-01-01 in milliseconds: snowflakes made here look like real ones.
_SNOWFLAKE_BASE = 283_996_800_000

APP_ID = 1_190_000_000_000_000_001
BOT_ID = APP_ID  # an application's bot user has the application's id
GUILD_ID = 1_190_000_000_000_000_100
HELP_CHANNEL_ID = 1_190_000_000_000_000_201
GENERAL_CHANNEL_ID = 1_190_000_000_000_000_202
FORUM_ID = 1_190_000_000_000_000_203
FORUM_POST_ID = 1_190_000_000_000_000_204  # a forum post (thread) that exists at start-up
USER_ID = 1_190_000_000_000_000_301
OTHER_USER_ID = 1_190_000_000_000_000_302
MODERATOR_ID = 1_190_000_000_000_000_303
OTHER_BOT_ID = 1_190_000_000_000_000_304
BOT_NAME = "panicbot"

TEXT_CHANNEL, PUBLIC_THREAD, FORUM_CHANNEL = 0, 11, 15
EPHEMERAL, LOADING = 1 << 6, 1 << 7
MESSAGE_CONTENT_INTENT = 1 << 15
# Permissions of members in the guild: view, send, read history; moderators also manage messages.
MEMBER_PERMISSIONS = (1 << 10) | (1 << 11) | (1 << 16) | (1 << 6) | (1 << 31)
MANAGE_MESSAGES = 1 << 13
BOT_PERMISSIONS = MEMBER_PERMISSIONS | (1 << 14) | (1 << 15) | (1 << 38)
TIMESTAMP = "2024-01-01T00:00:00.000000+00:00"

# Discord's limits, as its API enforces them (counted here in UTF-16 units: never laxer than Discord).
LIMITS = {
    "content": 2_000,
    "embeds": 10,
    "title": 256,
    "description": 4_096,
    "fields": 25,
    "field_name": 256,
    "field_value": 1_024,
    "footer": 2_048,
    "author": 256,
    "embeds_total": 6_000,
    "rows": 5,
    "row_buttons": 5,
    "components": 40,
    "custom_id": 100,
    "label": 80,
    "link_url": 512,
    "options": 25,
    "option_text": 100,
    "placeholder": 150,
    "choices": 25,
    "choice_text": 100,
}
CALLBACK_MESSAGE, CALLBACK_DEFERRED, CALLBACK_DEFERRED_UPDATE, CALLBACK_UPDATE, CALLBACK_AUTOCOMPLETE = (
    4,
    5,
    6,
    7,
    8,
)

T = TypeVar("T")
_ids = itertools.count(1)


def snowflake() -> int:
    return (_SNOWFLAKE_BASE + next(_ids)) << 22


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def user_json(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(user_id),
        "username": name,
        "discriminator": "0",
        "global_name": name.title(),
        "avatar": None,
        "public_flags": 0,
    }
    if bot:
        data["bot"] = True
    return data


USERS = {
    USER_ID: user_json(USER_ID, "ferris"),
    OTHER_USER_ID: user_json(OTHER_USER_ID, "corro"),
    MODERATOR_ID: user_json(MODERATOR_ID, "moderator"),
    OTHER_BOT_ID: user_json(OTHER_BOT_ID, "ci-bot", bot=True),
    BOT_ID: user_json(BOT_ID, BOT_NAME, bot=True),
}


def member_json(user_id: int, *, with_user: bool = True, permissions: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "roles": [],
        "joined_at": TIMESTAMP,
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "nick": None,
        "avatar": None,
        "premium_since": None,
        "communication_disabled_until": None,
    }
    if with_user:
        data["user"] = USERS[user_id]
    if permissions is not None:
        data["permissions"] = str(permissions)
    return data


def _channel(channel_id: int, name: str, kind: int, position: int) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(channel_id),
        "type": kind,
        "guild_id": str(GUILD_ID),
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "parent_id": None,
        "nsfw": False,
        "rate_limit_per_user": 0,
        "flags": 0,
        "last_message_id": None,
        "topic": None,
    }
    if kind == FORUM_CHANNEL:
        data.update(
            available_tags=[],
            default_reaction_emoji=None,
            default_sort_order=None,
            default_forum_layout=0,
            default_thread_rate_limit_per_user=0,
        )
    return data


def thread_json(thread_id: int, parent_id: int, name: str, owner_id: int = USER_ID) -> dict[str, Any]:
    return {
        "id": str(thread_id),
        "guild_id": str(GUILD_ID),
        "parent_id": str(parent_id),
        "owner_id": str(owner_id),
        "name": name,
        "type": PUBLIC_THREAD,
        "last_message_id": str(thread_id),
        "message_count": 1,
        "member_count": 1,
        "total_message_sent": 1,
        "rate_limit_per_user": 0,
        "flags": 0,
        "applied_tags": [],
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 4320,
            "archive_timestamp": TIMESTAMP,
            "locked": False,
            "create_timestamp": TIMESTAMP,
        },
    }


CHANNELS = [
    _channel(HELP_CHANNEL_ID, "rust-help", TEXT_CHANNEL, 0),
    _channel(GENERAL_CHANNEL_ID, "general", TEXT_CHANNEL, 1),
    _channel(FORUM_ID, "panics-forum", FORUM_CHANNEL, 2),
]


def guild_json() -> dict[str, Any]:
    """GUILD_CREATE's guild: its channels (one a forum, type 15) and the active threads (a forum post)."""
    return {
        "id": str(GUILD_ID),
        "name": "Burn users",
        "icon": None,
        "owner_id": str(MODERATOR_ID),
        "afk_timeout": 300,
        "verification_level": 1,
        "default_message_notifications": 1,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "premium_tier": 0,
        "system_channel_flags": 0,
        "preferred_locale": "en-US",
        "features": ["COMMUNITY"],
        "roles": [
            {
                "id": str(GUILD_ID),
                "name": "@everyone",
                "permissions": str(MEMBER_PERMISSIONS),
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
        ],
        "emojis": [],
        "stickers": [],
        "joined_at": TIMESTAMP,
        "large": False,
        "unavailable": False,
        "member_count": 5,
        "voice_states": [],
        "members": [member_json(BOT_ID)],
        "channels": [dict(channel) for channel in CHANNELS],
        "threads": [thread_json(FORUM_POST_ID, FORUM_ID, "old post")],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
    }


# -- what Discord refuses --------------------------------------------------------------------------------


def _text_problems(name: str, text: Any, limit: int, *, required: bool = False) -> list[str]:
    if text is None:
        return [f"{name} is required"] if required else []
    if not isinstance(text, str):
        return [f"{name} must be a string"]
    if required and not text.strip():
        return [f"{name} must not be empty"]
    if units(text) > limit:
        return [f"{name} must be {limit} or fewer in length ({units(text)})"]
    return []


def _url_ok(url: Any, limit: int = 2_048) -> bool:
    return isinstance(url, str) and url.startswith(("http://", "https://")) and len(url) <= limit


def embed_problems(embeds: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    if len(embeds) > LIMITS["embeds"]:
        problems.append(f"{len(embeds)} embeds")
    total = 0
    for number, embed in enumerate(embeds):
        where = f"embeds.{number}"
        problems += _text_problems(f"{where}.title", embed.get("title"), LIMITS["title"])
        problems += _text_problems(f"{where}.description", embed.get("description"), LIMITS["description"])
        if "url" in embed and not _url_ok(embed["url"]):
            problems.append(f"{where}.url: Not a well formed URL.")
        colour = embed.get("color")
        if colour is not None and not (isinstance(colour, int) and 0 <= colour <= 0xFFFFFF):
            problems.append(f"{where}.color out of range")
        fields = embed.get("fields") or []
        if len(fields) > LIMITS["fields"]:
            problems.append(f"{where}: {len(fields)} fields")
        for index, item in enumerate(fields):
            problems += _text_problems(f"{where}.fields.{index}.name", item.get("name"), 256, required=True)
            problems += _text_problems(
                f"{where}.fields.{index}.value", item.get("value"), LIMITS["field_value"], required=True
            )
            total += units(item.get("name") or "") + units(item.get("value") or "")
        footer = (embed.get("footer") or {}).get("text")
        author = (embed.get("author") or {}).get("name")
        problems += _text_problems(f"{where}.footer.text", footer, LIMITS["footer"])
        problems += _text_problems(f"{where}.author.name", author, LIMITS["author"])
        for text in (embed.get("title"), embed.get("description"), footer, author):
            total += units(text or "")
        if not any((embed.get("title"), embed.get("description"), fields)):
            problems.append(f"{where} is empty")
    if total > LIMITS["embeds_total"]:
        problems.append(f"embeds: {total} characters in all (Discord allows {LIMITS['embeds_total']})")
    return problems


def component_problems(rows: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    if len(rows) > LIMITS["rows"]:
        problems.append(f"{len(rows)} action rows")
    seen: set[str] = set()
    count = 0
    for number, row in enumerate(rows):
        where = f"components.{number}"
        children = row.get("components") or []
        if row.get("type") != 1:
            problems.append(f"{where} is not an action row")
        if not 1 <= len(children) <= LIMITS["row_buttons"]:
            problems.append(f"{where} holds {len(children)} components")
        if any(child.get("type") == 3 for child in children) and len(children) != 1:
            problems.append(f"{where}: a select menu takes a whole row")
        for child in children:
            count += 1
            custom_id = child.get("custom_id")
            if child.get("type") == 2 and child.get("style") == 5:
                if custom_id is not None or not _url_ok(child.get("url"), LIMITS["link_url"]):
                    problems.append(f"{where}: a link button needs a URL (<= 512) and no custom_id")
            elif not isinstance(custom_id, str) or not 1 <= len(custom_id) <= LIMITS["custom_id"]:
                problems.append(f"{where}: custom_id must be 1-100 characters ({custom_id!r})")
            elif custom_id in seen:
                problems.append(f"{where}: duplicate custom_id {custom_id}")
            else:
                seen.add(custom_id)
            if child.get("type") == 2:
                problems += _text_problems(f"{where}.label", child.get("label"), LIMITS["label"])
                if not child.get("label") and not child.get("emoji"):
                    problems.append(f"{where}: a button needs a label or an emoji")
            if child.get("type") == 3:
                options = child.get("options") or []
                if not 1 <= len(options) <= LIMITS["options"]:
                    problems.append(f"{where}: {len(options)} select options")
                values = [option.get("value") for option in options]
                if len(values) != len(set(values)):
                    problems.append(f"{where}: duplicate option values")
                for option in options:
                    for key in ("label", "value"):
                        problems += _text_problems(
                            f"{where}.option.{key}", option.get(key), LIMITS["option_text"], required=True
                        )
                    problems += _text_problems(
                        f"{where}.option.description", option.get("description"), LIMITS["option_text"]
                    )
                problems += _text_problems(
                    f"{where}.placeholder", child.get("placeholder"), LIMITS["placeholder"]
                )
    if count > LIMITS["components"]:
        problems.append(f"{count} components")
    return problems


def message_problems(body: dict[str, Any], *, edit: bool = False) -> list[str]:
    """Why Discord would refuse this message body with 50035 (empty when it is valid)."""
    problems = _text_problems("content", body.get("content"), LIMITS["content"])
    problems += embed_problems(body.get("embeds") or [])
    problems += component_problems(body.get("components") or [])
    if not edit and not (body.get("content") or body.get("embeds") or body.get("attachments")):
        problems.append("Cannot send an empty message")
    return problems


def choice_problems(data: dict[str, Any]) -> list[str]:
    choices = data.get("choices")
    if not isinstance(choices, list):
        return ["choices must be a list"]
    problems = [f"{len(choices)} choices"] if len(choices) > LIMITS["choices"] else []
    for choice in choices:
        problems += _text_problems("choice.name", choice.get("name"), LIMITS["choice_text"], required=True)
        value = choice.get("value")
        if isinstance(value, str):
            problems += _text_problems("choice.value", value, LIMITS["choice_text"], required=True)
    return problems


def pings_allowed(body: dict[str, Any]) -> bool:
    """True when a message body lets a paste ping: anything but `allowed_mentions` with `parse: []`."""
    mentions = body.get("allowed_mentions")
    return not (
        isinstance(mentions, dict)
        and mentions.get("parse") == []
        and not mentions.get("users")
        and not mentions.get("roles")
        and not mentions.get("replied_user")
    )


# -- recording ---------------------------------------------------------------------------------------------


@dataclass
class Call:
    """One request the fake received: route template, path parameters, query, JSON body, answer."""

    method: str
    route: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    headers: dict[str, str]
    status: int = 200
    response: Any = None
    at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def key(self) -> str:
        return f"{self.method} {self.route}"


# Where the middleware leaves the request's Call for the route handlers.
CALL: web.RequestKey[Call] = web.RequestKey("call", Call)


@dataclass
class _Failure:
    status: int
    code: int
    message: str
    retry_after: float | None = None
    times: int = 1


@dataclass
class FakeInteraction:
    """An interaction the fake sent, and what the bot answered it with."""

    id: int
    token: str
    type: int
    channel_id: int
    user_id: int
    message_id: int | None = None
    responded: bool = False
    original_id: int | None = None
    deferred_loading: bool = False


@dataclass
class _Socket:
    ws: web.WebSocketResponse
    shard: tuple[int, int] = (0, 1)
    sequence: int = 0
    identified: bool = False
    intents: int = 0


class FakeDiscord:
    """Discord's side of everything the bot does, on a free port of 127.0.0.1."""

    def __init__(self, token: str, *, port: int = 0) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.problems: list[str] = []
        self.pings: list[str] = []
        self.identifies: list[dict[str, Any]] = []
        self.sessions = 0  # READY (and the guild) sent: events sent from now on find the guild cached
        self.messages: dict[int, dict[str, Any]] = {}
        # Threads Discord knows, for GET /channels/{id}: announced at start-up or later, or never (an
        # archived thread the bot has not seen, brought back by a new message).
        self.threads: dict[int, dict[str, Any]] = {
            FORUM_POST_ID: thread_json(FORUM_POST_ID, FORUM_ID, "old post")
        }
        self.interactions: dict[int, FakeInteraction] = {}
        self.files: dict[str, bytes] = {}
        self.reject_intents = False
        self.commands: list[dict[str, Any]] = []
        self._failures: dict[str, list[_Failure]] = {}
        self._sockets: list[_Socket] = []
        self._runner: web.AppRunner | None = None
        self.port = port  # 0: any free one
        # Seconds each follow-up takes to answer (recorded as soon as it arrives, as Discord would).
        self.followup_delay = 0.0

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application(middlewares=[self._record])
        api = API_PREFIX
        routes = [
            ("GET", "/gateway/bot", self._gateway_bot),
            ("GET", "/users/@me", self._me),
            ("GET", "/oauth2/applications/@me", self._application),
            ("PUT", "/applications/{application_id}/commands", self._bulk_overwrite),
            ("GET", "/channels/{channel_id}", self._get_channel),
            ("POST", "/channels/{channel_id}/messages", self._create_message),
            ("GET", "/channels/{channel_id}/messages/{message_id}", self._get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._edit_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message),
            ("POST", "/interactions/{interaction_id}/{token}/callback", self._callback),
            ("POST", "/webhooks/{application_id}/{token}", self._followup),
            ("PATCH", "/webhooks/{application_id}/{token}/messages/{message_id}", self._edit_webhook_message),
            (
                "DELETE",
                "/webhooks/{application_id}/{token}/messages/{message_id}",
                self._delete_webhook_message,
            ),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, api + path, handler)
        app.router.add_get("/cdn/attachments/{channel_id}/{attachment_id}/{filename}", self._cdn)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, HOST, self.port).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        for socket in list(self._sockets):
            await socket.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeDiscord:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return self.base + API_PREFIX

    # -- what tests configure -------------------------------------------------------------------------

    def fail(self, key: str, status: int, code: int, message: str, *, times: int = 1) -> None:
        """Answer the next `times` calls of `key` ("POST /channels/{channel_id}/messages") with an error."""
        self._failures.setdefault(key, []).append(_Failure(status, code, message, times=times))

    def rate_limit(self, key: str, *, retry_after: float = 0.3) -> None:
        """Answer the next call of `key` with 429 and `retry_after`, as the API (not Cloudflare) does."""
        self._failures.setdefault(key, []).append(
            _Failure(429, 0, "You are being rate limited.", retry_after=retry_after)
        )

    def add_file(
        self, channel_id: int, filename: str, data: bytes, *, size: int | None = None
    ) -> dict[str, Any]:
        """An attachment on the CDN; `size` may claim more than the bytes (as a huge upload would)."""
        attachment_id = snowflake()
        url = f"{self.base}/cdn/attachments/{channel_id}/{attachment_id}/{filename}"
        self.files[url] = data
        return {
            "id": str(attachment_id),
            "filename": filename,
            "size": len(data) if size is None else size,
            "url": url,
            "proxy_url": url,
            "content_type": "text/plain; charset=utf-8",
        }

    # -- what tests read ------------------------------------------------------------------------------

    def calls_to(self, key: str, *, ok_only: bool = False) -> list[Call]:
        return [call for call in self.calls if call.key == key and (call.ok or not ok_only)]

    def created(self, channel_id: int | None = None) -> list[Call]:
        """Messages the bot created in channels (REST, not interactions) that Discord accepted."""
        return [
            call
            for call in self.calls_to("POST /channels/{channel_id}/messages", ok_only=True)
            if channel_id is None or call.params["channel_id"] == str(channel_id)
        ]

    def callbacks(self, interaction: FakeInteraction) -> list[Call]:
        return [
            call
            for call in self.calls_to("POST /interactions/{interaction_id}/{token}/callback")
            if call.params["interaction_id"] == str(interaction.id)
        ]

    def followups(self, interaction: FakeInteraction) -> list[Call]:
        return [
            call
            for call in self.calls_to("POST /webhooks/{application_id}/{token}")
            if call.params["token"] == interaction.token
        ]

    async def wait_for(
        self, probe: Callable[[], T | None], *, timeout: float = 5.0, what: str = "a Discord call"
    ) -> T:
        """The first truthy `probe()`, checked every 10 ms for at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                seen = [(call.key, call.status) for call in self.calls]
                raise AssertionError(f"timed out waiting for {what}; calls so far: {seen}")
            await asyncio.sleep(0.01)

    async def callback(self, interaction: FakeInteraction) -> Call:
        return (await self.wait_for(lambda: self.callbacks(interaction), what="the interaction callback"))[0]

    # -- gateway events tests send --------------------------------------------------------------------

    def message_json(
        self,
        channel_id: int,
        content: str,
        *,
        author: int = USER_ID,
        attachments: list[dict[str, Any]] | None = None,
        reference: dict[str, Any] | None = None,
        message_id: int | None = None,
        webhook: bool = False,
    ) -> dict[str, Any]:
        """A message as Discord sends it in MESSAGE_CREATE (guild fields included)."""
        mentions = [USERS[BOT_ID]] if f"<@{BOT_ID}>" in content or f"<@!{BOT_ID}>" in content else []
        message: dict[str, Any] = {
            "id": str(message_id or snowflake()),
            "channel_id": str(channel_id),
            "guild_id": str(GUILD_ID),
            "author": USERS[author] if not webhook else {**user_json(snowflake(), "Hook"), "bot": True},
            "content": content,
            "timestamp": TIMESTAMP,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": "@everyone" in content,
            "mentions": mentions,
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "type": 19 if reference else 0,
            "flags": 0,
        }
        if not webhook:
            message["member"] = member_json(author, with_user=False)
        else:
            message["webhook_id"] = str(snowflake())
        if reference:
            message["message_reference"] = {"type": 0, **reference}
        return message

    async def post(self, channel_id: int, content: str, **options: Any) -> dict[str, Any]:
        """Someone posts a message: MESSAGE_CREATE, and it exists for GET afterwards."""
        message = self.message_json(channel_id, content, **options)
        self.messages[int(message["id"])] = message
        await self.dispatch("MESSAGE_CREATE", message)
        return message

    def unannounced_thread(self, parent_id: int, *, title: str = "old help post") -> int:
        """A thread that exists but was never announced to the bot (archived before it connected)."""
        thread_id = snowflake()
        self.threads[thread_id] = thread_json(thread_id, parent_id, title)
        return thread_id

    async def new_forum_post(self, content: str, *, title: str = "help: panic") -> dict[str, Any]:
        """A new post in the forum: THREAD_CREATE, then its starter message (same id as the thread)."""
        thread_id = snowflake()
        self.threads[thread_id] = thread_json(thread_id, FORUM_ID, title)
        await self.dispatch("THREAD_CREATE", {**self.threads[thread_id], "newly_created": True})
        return await self.post(thread_id, content, message_id=thread_id)

    async def edit(self, message: dict[str, Any], content: str) -> dict[str, Any]:
        """The author edits: MESSAGE_UPDATE carries the whole message (API v10)."""
        message.update(content=content, edited_timestamp="2024-01-01T00:05:00.000000+00:00")
        await self.dispatch("MESSAGE_UPDATE", message)
        return message

    async def delete(self, message: dict[str, Any]) -> None:
        self.messages.pop(int(message["id"]), None)
        await self.dispatch(
            "MESSAGE_DELETE",
            {"id": message["id"], "channel_id": message["channel_id"], "guild_id": str(GUILD_ID)},
        )

    def _interaction_payload(
        self, kind: int, data: dict[str, Any], *, user: int, channel_id: int, message: dict[str, Any] | None
    ) -> tuple[FakeInteraction, dict[str, Any]]:
        interaction = FakeInteraction(
            id=snowflake(),
            token="aW50ZXJhY3Rpb24" + secrets.token_urlsafe(24),
            type=kind,
            channel_id=channel_id,
            user_id=user,
            message_id=int(message["id"]) if message else None,
        )
        self.interactions[interaction.id] = interaction
        permissions = MEMBER_PERMISSIONS | (MANAGE_MESSAGES if user == MODERATOR_ID else 0)
        channel = next((c for c in CHANNELS if c["id"] == str(channel_id)), None)
        payload: dict[str, Any] = {
            "id": str(interaction.id),
            "application_id": str(APP_ID),
            "type": kind,
            "data": data,
            "guild_id": str(GUILD_ID),
            "guild": {"id": str(GUILD_ID), "locale": "en-US", "features": ["COMMUNITY"]},
            "channel_id": str(channel_id),
            "channel": channel or thread_json(channel_id, FORUM_ID, "post"),
            "member": member_json(user, permissions=permissions),
            "token": interaction.token,
            "version": 1,
            "app_permissions": str(BOT_PERMISSIONS),
            "locale": "en-GB",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(GUILD_ID)},
            "context": 0,
            "attachment_size_limit": 10_485_760,
        }
        if message is not None:
            payload["message"] = message
        return interaction, payload

    async def slash(
        self,
        query: str,
        *,
        user: int = USER_ID,
        channel_id: int = GENERAL_CHANNEL_ID,
        public: bool | None = None,
    ) -> FakeInteraction:
        options: list[dict[str, Any]] = [{"name": "query", "type": 3, "value": query}]
        if public is not None:
            options.append({"name": "public", "type": 5, "value": public})
        data = {"id": str(snowflake()), "name": "panic", "type": 1, "options": options}
        interaction, payload = self._interaction_payload(
            2, data, user=user, channel_id=channel_id, message=None
        )
        await self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    async def autocomplete(self, current: str, *, channel_id: int = GENERAL_CHANNEL_ID) -> FakeInteraction:
        data = {
            "id": str(snowflake()),
            "name": "panic",
            "type": 1,
            "options": [{"name": "query", "type": 3, "value": current, "focused": True}],
        }
        interaction, payload = self._interaction_payload(
            4, data, user=USER_ID, channel_id=channel_id, message=None
        )
        await self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    async def context_menu(self, target: dict[str, Any], *, user: int = USER_ID) -> FakeInteraction:
        """ "Explain this panic" on `target`: its content comes in `resolved`, intent or not."""
        resolved = {key: value for key, value in target.items() if key not in {"member", "guild_id"}}
        data = {
            "id": str(snowflake()),
            "name": "Explain this panic",
            "type": 3,
            "target_id": target["id"],
            "resolved": {"messages": {target["id"]: resolved}},
        }
        channel_id = int(target["channel_id"])
        interaction, payload = self._interaction_payload(
            2, data, user=user, channel_id=channel_id, message=None
        )
        await self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    async def click(
        self, message_id: int, custom_id: str, *, user: int = USER_ID, values: list[str] | None = None
    ) -> FakeInteraction:
        """A button (or, with `values`, a select menu) on a message the bot sent."""
        message = self.messages[message_id]
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": 2 if values is None else 3}
        if values is not None:
            data["values"] = values
        channel_id = int(message["channel_id"])
        interaction, payload = self._interaction_payload(
            3, data, user=user, channel_id=channel_id, message=message
        )
        await self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    # -- the gateway ----------------------------------------------------------------------------------

    def _shard_of_guild(self, shard_count: int) -> int:
        return (GUILD_ID >> 22) % shard_count

    async def wait_for_identify(self, count: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
        return await self.wait_for(
            lambda: self.identifies if self.sessions >= count else None, timeout=timeout, what="IDENTIFY"
        )

    async def drop_sessions(self, code: int = 4000) -> None:
        """Close every gateway connection with `code` (4000: an unknown error the client may resume)."""
        for socket in list(self._sockets):
            await socket.ws.close(code=code, message=b"Unknown error")

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a DISPATCH to the shard that holds the guild (every event here belongs to it)."""
        for socket in self._sockets:
            shard_id, count = socket.shard
            if socket.identified and shard_id == self._shard_of_guild(count):
                await self._send(socket, {"op": 0, "t": event, "d": _as_seen(socket.intents, event, data)})

    async def _send(self, socket: _Socket, payload: dict[str, Any]) -> None:
        if payload.get("op") == 0:
            socket.sequence += 1
            payload["s"] = socket.sequence
        else:
            payload.setdefault("s", None)
            payload.setdefault("t", None)
        await socket.ws.send_str(json.dumps(payload))

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        socket = _Socket(ws)
        self._sockets.append(socket)
        await self._send(socket, {"op": 10, "d": {"heartbeat_interval": 41_250}})
        try:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    continue
                payload = json.loads(frame.data)
                if payload.get("op") == 1:
                    await self._send(socket, {"op": 11})
                elif payload.get("op") == 2:
                    await self._identify(socket, payload["d"])
        finally:
            self._sockets.remove(socket)
        return ws

    async def _identify(self, socket: _Socket, data: dict[str, Any]) -> None:
        self.identifies.append(data)
        if data.get("token") != self.token:
            await socket.ws.close(code=4004, message=b"Authentication failed.")
            return
        if self.reject_intents and data.get("intents", 0) & MESSAGE_CONTENT_INTENT:
            await socket.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        shard = data.get("shard") or [0, 1]
        socket.shard = (int(shard[0]), int(shard[1]))
        socket.intents = int(data.get("intents", 0))
        owns_guild = socket.shard[0] == self._shard_of_guild(socket.shard[1])
        ready = {
            "v": 10,
            "user": {**USERS[BOT_ID], "verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": str(GUILD_ID), "unavailable": True}] if owns_guild else [],
            "session_id": secrets.token_hex(16),
            "resume_gateway_url": f"ws://{HOST}:{self.port}/gateway",
            "shard": list(socket.shard),
            "application": {"id": str(APP_ID), "flags": 1 << 19},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": ["rotterdam"],
            "user_settings": {},
            "auth": {},
        }
        await self._send(socket, {"op": 0, "t": "READY", "d": ready})
        # Events tests send go out only after READY: a real gateway never sends one before it.
        socket.identified = True
        if owns_guild:
            await self._send(socket, {"op": 0, "t": "GUILD_CREATE", "d": guild_json()})
        self.sessions += 1

    # -- REST plumbing --------------------------------------------------------------------------------

    @web.middleware
    async def _record(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        if request.path == "/gateway":
            return await handler(request)  # type: ignore[no-any-return]
        raw = await request.text()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        resource = request.match_info.route.resource
        route = resource.canonical.removeprefix(API_PREFIX) if resource is not None else request.path
        call = Call(
            request.method, route, dict(request.match_info), dict(request.query), body, dict(request.headers)
        )
        self.calls.append(call)
        request[CALL] = call
        failure = self._take_failure(call.key)
        if failure is not None:
            response = self._failure_response(failure)
        else:
            response = await handler(request)
        call.status = response.status
        if isinstance(response, web.Response) and response.text:
            call.response = json.loads(response.text) if response.text[:1] in "{[" else response.text
        return response

    def _take_failure(self, key: str) -> _Failure | None:
        queue = self._failures.get(key)
        if not queue:
            return None
        failure = queue[0]
        failure.times -= 1
        if failure.times <= 0:
            queue.pop(0)
        return failure

    def _failure_response(self, failure: _Failure) -> web.Response:
        if failure.status == 429:
            after = failure.retry_after or 0.3
            headers = {
                "Retry-After": str(max(1, round(after))),
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": str(after),
                "X-RateLimit-Bucket": "fake-bucket",
                "X-RateLimit-Scope": "user",
                # discord.py takes a 429 without `Via` for a Cloudflare ban and gives up.
                "Via": "1.1 google",
            }
            return _json({"message": failure.message, "retry_after": after, "global": False}, 429, headers)
        return _json({"message": failure.message, "code": failure.code}, failure.status)

    def _authorised(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bot {self.token}"

    def _invalid(self, request: web.Request, problems: list[str]) -> web.Response:
        where = f"{request.method} {request['call'].route}"
        self.problems.extend(f"{where}: {problem}" for problem in problems)
        errors = {"_errors": [{"code": "BASE_TYPE_INVALID", "message": problem} for problem in problems]}
        return _json({"code": 50035, "errors": {"body": errors}, "message": "Invalid Form Body"}, 400)

    def _check_pings(self, request: web.Request, body: dict[str, Any]) -> None:
        if (body.get("content") or body.get("embeds")) and pings_allowed(body):
            self.pings.append(f"{request.method} {request['call'].route}: {body.get('allowed_mentions')}")

    async def _unknown(self, request: web.Request) -> web.Response:
        self.problems.append(f"unknown route {request.method} {request.path}")
        return _json({"message": "404: Not Found", "code": 0}, 404)

    async def _cdn(self, request: web.Request) -> web.Response:
        data = self.files.get(str(request.url))
        if data is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=data, headers={"Content-Type": "text/plain; charset=utf-8"})

    # -- REST routes ----------------------------------------------------------------------------------

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        limit = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
        return _json({"url": f"ws://{HOST}:{self.port}/gateway", "shards": 1, "session_start_limit": limit})

    async def _me(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        return _json({**USERS[BOT_ID], "verified": True, "mfa_enabled": False, "flags": 0, "bio": ""})

    async def _application(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        return _json(
            {
                "id": str(APP_ID),
                "name": BOT_NAME,
                "icon": None,
                "description": "Explains Rust panics",
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": USERS[MODERATOR_ID],
                "verify_key": "0" * 64,
                "flags": 1 << 19,
                "team": None,
                "summary": "",
                "bot": USERS[BOT_ID],
            }
        )

    async def _bulk_overwrite(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        body = request[CALL].body
        if request.match_info["application_id"] != str(APP_ID) or not isinstance(body, list):
            return _json({"message": "Unknown Application", "code": 10002}, 404)
        self.commands = [
            {
                **command,
                "id": str(snowflake()),
                "application_id": str(APP_ID),
                "version": str(snowflake()),
                "default_member_permissions": None,
                "dm_permission": True,
                "nsfw": False,
                "integration_types": [0],
                "contexts": None,
                "description": command.get("description", ""),
            }
            for command in body
        ]
        return _json(self.commands)

    def _bot_message(
        self,
        channel_id: int,
        body: dict[str, Any],
        *,
        flags: int = 0,
        interaction: FakeInteraction | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "id": str(snowflake()),
            "channel_id": str(channel_id),
            "author": USERS[BOT_ID],
            "content": body.get("content") or "",
            "timestamp": TIMESTAMP,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [{"type": "rich", **embed} for embed in body.get("embeds") or []],
            "components": body.get("components") or [],
            "pinned": False,
            "type": 0,
            "flags": flags,
        }
        reference = body.get("message_reference")
        if reference:
            message["type"] = 19
            message["message_reference"] = {"type": 0, "channel_id": str(channel_id), **reference}
        if interaction is not None:
            message["webhook_id"] = str(APP_ID)
            message["application_id"] = str(APP_ID)
            message["interaction_metadata"] = {
                "id": str(interaction.id),
                "type": interaction.type,
                "user": USERS[interaction.user_id],
                "authorizing_integration_owners": {"0": str(GUILD_ID)},
            }
        if not flags & EPHEMERAL:
            message["guild_id"] = str(GUILD_ID)
        self.messages[int(message["id"])] = message
        return message

    async def _announce(self, event: str, message: dict[str, Any]) -> None:
        """Discord tells the gateway about every change to a channel's messages, the bot's own too."""
        if not message["flags"] & EPHEMERAL:
            await self.dispatch(
                event, {**message, "guild_id": str(GUILD_ID), "member": member_json(BOT_ID, with_user=False)}
            )

    async def _get_channel(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        thread = self.threads.get(int(request.match_info["channel_id"]))
        if thread is None:
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        return _json(thread)

    async def _create_message(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        body = request[CALL].body or {}
        channel_id = int(request.match_info["channel_id"])
        self._check_pings(request, body)
        if problems := message_problems(body):
            return self._invalid(request, problems)
        reference = body.get("message_reference")
        if reference:
            target = self.messages.get(int(reference.get("message_id", 0)))
            if (target is None or target["channel_id"] != str(channel_id)) and reference.get(
                "fail_if_not_exists", True
            ):
                return self._invalid(request, ["message_reference: Unknown message"])
        message = self._bot_message(channel_id, body)
        await self._announce("MESSAGE_CREATE", message)
        return _json(message)

    def _channel_message(self, request: web.Request) -> dict[str, Any] | None:
        message = self.messages.get(int(request.match_info["message_id"]))
        if message is None or message["channel_id"] != request.match_info["channel_id"]:
            return None
        return None if message["flags"] & EPHEMERAL else message

    async def _get_message(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        message = self._channel_message(request)
        return _json(message) if message else _unknown_message()

    async def _edit_message(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        message = self._channel_message(request)
        if message is None:
            return _unknown_message()
        if message["author"]["id"] != str(BOT_ID):
            return _json({"message": "Cannot edit a message authored by another user", "code": 50005}, 403)
        return await self._apply_edit(request, message)

    async def _apply_edit(self, request: web.Request, message: dict[str, Any]) -> web.Response:
        body = request[CALL].body or {}
        self._check_pings(request, body)
        if problems := message_problems(body, edit=True):
            return self._invalid(request, problems)
        if "content" in body:
            message["content"] = body["content"] or ""
        if "embeds" in body:
            message["embeds"] = [{"type": "rich", **embed} for embed in body["embeds"] or []]
        if "components" in body:
            message["components"] = body["components"] or []
        message["edited_timestamp"] = "2024-01-01T00:10:00.000000+00:00"
        await self._announce("MESSAGE_UPDATE", message)
        return _json(message)

    async def _delete_message(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _unauthorised()
        message = self._channel_message(request)
        if message is None:
            return _unknown_message()
        if message["author"]["id"] != str(BOT_ID):
            return _json({"message": "Missing Permissions", "code": 50013}, 403)
        await self._remove(message)
        return web.Response(status=204)

    async def _remove(self, message: dict[str, Any]) -> None:
        self.messages.pop(int(message["id"]), None)
        if not message["flags"] & EPHEMERAL:
            await self.dispatch(
                "MESSAGE_DELETE",
                {"id": message["id"], "channel_id": message["channel_id"], "guild_id": str(GUILD_ID)},
            )

    # -- interactions ---------------------------------------------------------------------------------

    def _interaction_of(self, request: web.Request) -> FakeInteraction | None:
        token = request.match_info["token"]
        found = [i for i in self.interactions.values() if i.token == token]
        return found[0] if found else None

    async def _callback(self, request: web.Request) -> web.Response:
        interaction = self.interactions.get(int(request.match_info["interaction_id"]))
        if interaction is None or interaction.token != request.match_info["token"]:
            return _json({"message": "Unknown interaction", "code": 10062}, 404)
        if interaction.responded:
            return _json({"message": "Interaction has already been acknowledged.", "code": 40060}, 400)
        body = request[CALL].body or {}
        kind, data = body.get("type"), body.get("data") or {}
        resource: dict[str, Any] = {"type": kind}
        if kind == CALLBACK_MESSAGE:
            self._check_pings(request, data)
            if problems := message_problems(data):
                return self._invalid(request, problems)
            flags = data.get("flags", 0) & EPHEMERAL
            message = self._bot_message(interaction.channel_id, data, flags=flags, interaction=interaction)
            await self._announce("MESSAGE_CREATE", message)
            interaction.original_id = int(message["id"])
            resource["message"] = message
        elif kind == CALLBACK_DEFERRED:
            flags = (data.get("flags", 0) & EPHEMERAL) | LOADING
            message = self._bot_message(interaction.channel_id, {}, flags=flags, interaction=interaction)
            interaction.original_id, interaction.deferred_loading = int(message["id"]), True
            resource["message"] = message
        elif kind in (CALLBACK_DEFERRED_UPDATE, CALLBACK_UPDATE) and interaction.message_id is not None:
            updated = self.messages.get(interaction.message_id)
            if updated is None:
                return _unknown_message()
            message = updated
            interaction.original_id = interaction.message_id
            if kind == CALLBACK_UPDATE:
                self._check_pings(request, data)
                if problems := message_problems(data, edit=True):
                    return self._invalid(request, problems)
                for key in ("content", "embeds", "components"):
                    if key in data:
                        message[key] = (
                            data[key] if data[key] is not None else ([] if key != "content" else "")
                        )
                resource["message"] = message
        elif kind == CALLBACK_AUTOCOMPLETE and interaction.type == 4:
            if problems := choice_problems(data):
                return self._invalid(request, problems)
        else:
            return self._invalid(
                request, [f"callback type {kind} does not fit interaction type {interaction.type}"]
            )
        interaction.responded = True
        original = self.messages.get(interaction.original_id or 0)
        answer: dict[str, Any] = {
            "interaction": {
                "id": str(interaction.id),
                "type": interaction.type,
                "response_message_id": str(interaction.original_id) if interaction.original_id else None,
                "response_message_loading": kind == CALLBACK_DEFERRED,
                "response_message_ephemeral": bool(original and original["flags"] & EPHEMERAL),
            },
            "resource": resource,
        }
        if request.query.get("with_response") not in {"1", "true", "True"}:
            return web.Response(status=204)
        return _json(answer)

    async def _followup(self, request: web.Request) -> web.Response:
        if self.followup_delay:
            await asyncio.sleep(self.followup_delay)
        interaction = self._interaction_of(request)
        if interaction is None or not interaction.responded:
            return _json({"message": "Unknown Webhook", "code": 10015}, 404)
        body = request[CALL].body or {}
        self._check_pings(request, body)
        if problems := message_problems(body):
            return self._invalid(request, problems)
        if interaction.deferred_loading:
            # The first follow-up after a deferral fills the "thinking" message; the deferral set its flags.
            interaction.deferred_loading = False
            message = self.messages[interaction.original_id or 0]
            message["flags"] &= ~LOADING
            message.update(
                content=body.get("content") or "",
                embeds=[{"type": "rich", **e} for e in body.get("embeds") or []],
                components=body.get("components") or [],
            )
            return _json(message)
        flags = body.get("flags", 0) & EPHEMERAL
        message = self._bot_message(interaction.channel_id, body, flags=flags, interaction=interaction)
        await self._announce("MESSAGE_CREATE", message)
        return _json(message)

    def _webhook_message(self, request: web.Request) -> dict[str, Any] | None:
        interaction = self._interaction_of(request)
        if interaction is None:
            return None
        wanted = request.match_info["message_id"]
        message_id = interaction.original_id if wanted == "@original" else int(wanted)
        return self.messages.get(message_id or 0)

    async def _edit_webhook_message(self, request: web.Request) -> web.Response:
        message = self._webhook_message(request)
        return await self._apply_edit(request, message) if message else _unknown_message()

    async def _delete_webhook_message(self, request: web.Request) -> web.Response:
        message = self._webhook_message(request)
        if message is None:
            return _unknown_message()
        await self._remove(message)
        return web.Response(status=204)


def _as_seen(intents: int, event: str, data: dict[str, Any]) -> dict[str, Any]:
    """A message event as a session without the message content intent gets it: no content, embeds,
    attachments or components, unless the message mentions the bot or is the bot's own."""
    if event not in {"MESSAGE_CREATE", "MESSAGE_UPDATE"} or intents & MESSAGE_CONTENT_INTENT:
        return data
    mentioned = any(user["id"] == str(BOT_ID) for user in data.get("mentions", []))
    if mentioned or data["author"]["id"] == str(BOT_ID):
        return data
    return {**data, "content": "", "embeds": [], "attachments": [], "components": []}


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly `application/json`: discord.py parses a body as JSON only then (aiohttp would add a charset).
    body = json.dumps(data).encode()
    return web.Response(
        body=body, status=status, headers={"Content-Type": "application/json", **(headers or {})}
    )


def _unauthorised() -> web.Response:
    return _json({"message": "401: Unauthorized", "code": 0}, 401)


def _unknown_message() -> web.Response:
    return _json({"message": "Unknown Message", "code": 10008}, 404)
