"""Slack events in, core calls, Block Kit out: `/panic`, mentions, the message shortcut, opt-in auto-reply,
share / more / full-fix buttons and 👍/👎 feedback, on Bolt's AsyncApp (HTTP and Socket Mode alike)."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from adapters.answers import follow_edit, paste_digest, unasked_card, undo_edit
from adapters.chat import REPLY_TTL_SECONDS, PostedReply
from adapters.observe import Observer, Observers
from adapters.shared_state import RATE_LIMITED_MESSAGE, RateLimit
from adapters.slack import render
from adapters.slack.settings import SlackSettings
from adapters.state import (
    Clock,
    Cooldown,
    CooldownGate,
    EventDeduper,
    ExpiringMap,
    FeedbackStore,
    InMemoryFeedbackStore,
    KeyedMemory,
    SeenEvents,
)
from bot.matcher import LookupResult, Match
from bot.service import PanicLookup

log = logging.getLogger("panicbot.slack")

COMMAND = "/panic"
SHORTCUT_CALLBACK_ID = "explain_panic"
PLATFORM = "slack"
BOLT_LOGGER = "slack_bolt.panicbot"
# chat.update errors that mean the reply is not there to change any more.
REPLY_GONE_ERRORS = frozenset({"message_not_found", "channel_not_found", "is_archived"})
_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
# Messages that are someone's words; joins, topic changes, bot posts and the like are not.
_AUTO_REPLY_SUBTYPES = {None, "thread_broadcast", "file_share"}


@dataclass
class SlackState:
    """Everything the handlers remember, built once per process."""

    clock: Clock = time.monotonic
    cooldown_seconds: float = 600.0
    feedback: FeedbackStore = field(default_factory=InMemoryFeedbackStore)
    # Shared across replicas when the deployment passes Redis-backed ones; in-process by default.
    seen: EventDeduper | None = None
    cooldown: CooldownGate | None = None
    observer: Observer = field(default_factory=Observers)
    rate_limit: RateLimit | None = None  # per user, on /panic, mentions and the shortcut; None: no limit
    # Auto-replies by (channel, paste ts), to follow the paste's edits and deletion; shared by replicas in
    # Redis when given (Slack may deliver the edit to another replica than the paste).
    posted_replies: KeyedMemory[tuple[str, ...], PostedReply] | None = None

    def __post_init__(self) -> None:
        if self.seen is None:
            self.seen = SeenEvents(self.clock)
        if self.cooldown is None:
            self.cooldown = Cooldown(self.cooldown_seconds, self.clock)
        if self.posted_replies is None:
            self.posted_replies = ExpiringMap(REPLY_TTL_SECONDS, 50_000, self.clock)
        self.pending: set[asyncio.Task[None]] = set()

    @property
    def replies(self) -> KeyedMemory[tuple[str, ...], PostedReply]:
        """The auto-replies, given or in-process (never None after construction)."""
        assert self.posted_replies is not None
        return self.posted_replies

    @property
    def dedupe(self) -> EventDeduper:
        """The event deduper, given or in-process (never None after construction)."""
        assert self.seen is not None
        return self.seen

    @property
    def gate(self) -> CooldownGate:
        """The cooldown, given or in-process (never None after construction)."""
        assert self.cooldown is not None
        return self.cooldown

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a reply in the background; failures are logged, never lost silently."""
        task = asyncio.get_running_loop().create_task(_logged(work))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def drain(self, timeout: float) -> None:
        """Let the replies in flight finish, for at most `timeout` seconds (graceful shutdown)."""
        if self.pending:
            await asyncio.wait(set(self.pending), timeout=timeout)


async def _already_acknowledged(*_: Any, **__: Any) -> None:
    """Stands in for `ack` once the listener has acknowledged."""


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except Exception:
        log.exception("a Slack reply failed")


def strip_mentions(text: str) -> str:
    return _MENTION.sub(" ", text or "").strip()


def build_web_client(settings: SlackSettings) -> AsyncWebClient:
    """The Web API client: Slack's URL or a test server's, retrying where Slack says to (429, 5xx, resets)."""
    return AsyncWebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=settings.slack_api_url,
        timeout=10,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=2),
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            AsyncServerErrorRetryHandler(max_retry_count=1),
        ],
    )


class NoRequestBodies(logging.Filter):
    """Bolt writes request bodies into some of its messages: a refused signature (at INFO, the whole body),
    an unhandled request, a middleware that skipped `next()`. Such a message keeps only its first words."""

    _DETAILS = re.compile(r"\s*(?:\(|\{|\bbody\b).*", re.DOTALL | re.IGNORECASE)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cut = self._DETAILS.sub("", message, count=1)
        if cut != message:
            record.msg, record.args = f"{cut} (request details withheld)", ()
        return True


def bolt_logger() -> logging.Logger:
    """The base logger Bolt's loggers copy their level, handlers and filters from (slack_bolt.logger).

    Without one Bolt copies the root's level onto each, overriding what `slack_bolt` was set to; left at
    NOTSET here, they follow `slack_bolt`'s level, and the filter keeps request bodies out of their lines."""
    logger = logging.getLogger(BOLT_LOGGER)
    if not any(isinstance(existing, NoRequestBodies) for existing in logger.filters):
        logger.addFilter(NoRequestBodies())
    return logger


def build_slack_app(
    settings: SlackSettings,
    service: PanicLookup,
    state: SlackState | None = None,
) -> AsyncApp:
    """The Bolt app with every listener registered; the same app serves HTTP and Socket Mode."""
    state = state or SlackState(cooldown_seconds=settings.slack_auto_reply_cooldown_seconds)
    secret = settings.slack_signing_secret
    app = AsyncApp(
        client=build_web_client(settings),
        logger=bolt_logger(),
        name=BOLT_LOGGER,  # listener loggers are named after the app: keep them under `slack_bolt` too
        signing_secret=secret.get_secret_value() if secret else None,
        request_verification_enabled=secret is not None,
        process_before_response=True,  # see _Handlers.acked_then_later
        raise_error_for_unhandled_request=False,
    )
    handlers = _Handlers(settings, service, state)
    handlers.register(app)
    return app


class _Handlers:
    def __init__(self, settings: SlackSettings, service: PanicLookup, state: SlackState) -> None:
        self.settings, self.service, self.state = settings, service, state

    def register(self, app: AsyncApp) -> None:
        app.middleware(self.drop_redelivered_events)
        app.command(COMMAND)(self.acked_then_later(self.on_command))
        app.event("app_mention")(self.acked_then_later(self.on_mention))
        app.shortcut(SHORTCUT_CALLBACK_ID)(self.acked_then_later(self.on_shortcut))
        app.event("message")(self.acked_then_later(self.on_message))
        app.action(render.ACTION_SHARE)(self.acked_then_later(self.on_share))
        app.action(render.ACTION_MORE)(self.acked_then_later(self.on_more))
        app.action(render.ACTION_FULL_FIX)(self.acked_then_later(self.on_full_fix))
        app.action(render.ACTION_VOTE_UP)(self.acked_then_later(self.on_vote))
        app.action(render.ACTION_VOTE_DOWN)(self.acked_then_later(self.on_vote))
        app.error(self.on_error)

    def acked_then_later(
        self, handler: Callable[..., Coroutine[Any, Any, None]]
    ) -> Callable[..., Coroutine[Any, Any, None]]:
        """Acknowledge at once, do the work in a task of its own.

        Slack wants the ack within 3 s. Bolt's own way (process_before_response=False) polls for the ack
        every 10 ms per request; under a burst the acks then queue behind other requests' lookups. Acking
        first and answering from a task keeps every ack immediate, and the tasks are tracked so a shutdown
        can let the replies in flight finish."""

        @functools.wraps(handler)  # Bolt reads the wrapped handler's parameter names to inject arguments
        async def listener(**kwargs: Any) -> None:
            ack = kwargs.get("ack")
            if ack is not None:
                await ack()
                kwargs["ack"] = _already_acknowledged
            self.state.spawn(handler(**kwargs))

        return listener

    # -- plumbing -------------------------------------------------------------------------------------

    async def drop_redelivered_events(self, body: dict[str, Any], next: Any) -> BoltResponse | None:
        """Slack re-delivers an event it thinks was missed; the first delivery that reached us wins."""
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if isinstance(event_id, str) and not self.state.dedupe.first_time(event_id):
            log.info("event %s already handled; acknowledging the re-delivery", event_id)
            return BoltResponse(status=200, body="", headers={"x-slack-no-retry": "1"})
        await next()
        return None

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("slack handler failed (%s): %s", body.get("type"), error.__class__.__name__, exc_info=error)

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        started = time.perf_counter()
        result = self.service.lookup(text, limit=limit)
        self.state.observer.looked_up(PLATFORM, result, time.perf_counter() - started)
        return result

    def answer(self, text: str, *, ephemeral: bool) -> tuple[render.SlackMessage, LookupResult | None]:
        """The message for a paste or query: a card, "no known record", or usage for an empty one."""
        if not text.strip() or text.strip().lower() == "help":
            return render.usage_message(), None
        result = self.lookup(text)
        card = self.service.card(result)
        if card is None:
            return render.no_match_message(result, query=text), result
        # The other matches ride in the buttons: no paste is kept in memory for "More matches".
        key = render.encode_alternatives(
            [(m.record.id, m.confidence) for m in result.matches if m.record.id != card.record_id]
        )
        message = render.card_message(
            card,
            ephemeral=ephemeral,
            record_id=card.record_id,
            lookup_key=key,
            more_available=len(result.matches) > 1,
        )
        return message, result

    # -- entry points ---------------------------------------------------------------------------------

    def too_many(self, user_id: str) -> bool:
        """True when this user has asked more than the per-user limit allows (one person cannot flood)."""
        limiter = self.state.rate_limit
        return limiter is not None and bool(user_id) and not limiter.allow(user_id)

    async def on_command(self, ack: Any, command: dict[str, Any], respond: Any) -> None:
        await ack()
        if self.too_many(command.get("user_id", "")):
            refusal = render.error_message(RATE_LIMITED_MESSAGE)
            await self._respond(respond, refusal, response_type="ephemeral")
            return
        message, _ = self.answer(command.get("text") or "", ephemeral=True)
        await self._respond(respond, message, response_type="ephemeral")

    async def on_shortcut(self, ack: Any, shortcut: dict[str, Any], respond: Any) -> None:
        await ack()
        if self.too_many((shortcut.get("user") or {}).get("id", "")):
            refusal = render.error_message(RATE_LIMITED_MESSAGE)
            await self._respond(respond, refusal, response_type="ephemeral")
            return
        text = (shortcut.get("message") or {}).get("text") or ""
        if not text.strip():
            message = render.error_message("That message has no text to explain.")
        else:
            message, _ = self.answer(text, ephemeral=True)
        await self._respond(respond, message, response_type="ephemeral")

    async def on_mention(self, event: dict[str, Any], client: AsyncWebClient) -> None:
        channel = event.get("channel", "")
        thread_ts = event.get("thread_ts") or event.get("ts")
        user = event.get("user", "")
        if self.too_many(user):
            try:
                await client.chat_postEphemeral(
                    channel=channel, user=user, text=RATE_LIMITED_MESSAGE, thread_ts=thread_ts
                )
            except SlackApiError as exc:
                log.warning("chat.postEphemeral failed in %s: %s", channel, exc.response.get("error"))
            return
        text = strip_mentions(event.get("text", ""))
        message, result = self.answer(text, ephemeral=False) if text else (None, None)
        if (not text or (result is not None and result.best is None)) and event.get("thread_ts"):
            # "@panicbot what does this mean?" under a pasted panic: the thread's first message is the paste.
            parent = await self._thread_parent_text(client, channel, event["thread_ts"])
            if parent:
                parent_message, parent_result = self.answer(parent, ephemeral=False)
                if (parent_result is not None and parent_result.best is not None) or message is None:
                    message = parent_message
        if message is None:
            message = render.usage_message()
        await self._post(client, channel, message, thread_ts=thread_ts)

    async def on_message(self, event: dict[str, Any], client: AsyncWebClient, context: Any) -> None:
        subtype = event.get("subtype")
        channel = event.get("channel", "")
        if subtype == "message_changed":
            await self._on_edit(event, client)
            return
        if subtype == "message_deleted":
            await self._on_delete(event, client)
            return
        if subtype not in _AUTO_REPLY_SUBTYPES or channel not in self.settings.slack_auto_reply_channels:
            return
        if event.get("bot_id") or event.get("user") in {None, context.get("bot_user_id")}:
            return
        text = event.get("text") or ""
        bot_user = context.get("bot_user_id")
        if bot_user and f"<@{bot_user}" in text:
            return  # a mention: on_mention answers it
        card = unasked_card(self.service, self.lookup(text))
        if card is None or not self.state.gate.allow(channel, card.record_id):
            return
        message = render.card_message(card, ephemeral=False, record_id=card.record_id, more_available=False)
        posted = await self._post(client, channel, message, thread_ts=event.get("thread_ts") or event["ts"])
        if posted is None:
            self.state.gate.release(channel, card.record_id)
            return
        self.state.replies.put(
            (channel, event["ts"]), PostedReply(channel, posted, card.record_id, paste_digest(text))
        )
        self.state.observer.auto_replied(PLATFORM, card.record_id)

    async def _on_edit(self, event: dict[str, Any], client: AsyncWebClient) -> None:
        """An edited paste: update our reply, or remove it when the paste no longer warrants one."""
        channel = event.get("channel", "")
        edited = event.get("message") or {}
        key = (channel, edited.get("ts", ""))
        text = edited.get("text") or ""
        reply = self.state.replies.get(key)
        if reply is None:
            return
        outcome = follow_edit(
            record_id=reply.record_id,
            digest=reply.paste_digest,
            text=text,
            answer=lambda edited_text: unasked_card(self.service, self.lookup(edited_text)),
            gate=self.state.gate,
            place=channel,
        )
        if outcome is None:
            return
        card = outcome.card
        if card is None:
            self.state.replies.pop(key)
            await self._delete(client, reply)
            return
        # Memory first, then Slack: an event handled while the call is in flight sees the new state.
        self.state.replies.put(key, PostedReply(channel, reply.reply_id, card.record_id, paste_digest(text)))
        message = render.card_message(card, ephemeral=False, record_id=card.record_id, more_available=False)
        try:
            await client.chat_update(
                channel=channel, ts=reply.reply_id, text=message.text, blocks=message.blocks
            )
        except SlackApiError as exc:
            error = str(exc.response.get("error"))
            self.state.observer.api_error(PLATFORM, error)
            log.warning("chat.update failed in %s: %s", channel, error)
            gone = error in REPLY_GONE_ERRORS
            if gone:
                self.state.replies.pop(key)
            else:
                self.state.replies.put(key, reply)  # it still shows what it showed
            shown, previous = card.record_id, reply.record_id
            undo_edit(self.state.gate, channel, shown=shown, previous=previous, reply_gone=gone)

    async def _on_delete(self, event: dict[str, Any], client: AsyncWebClient) -> None:
        channel = event.get("channel", "")
        reply = self.state.replies.pop((channel, event.get("deleted_ts", "")))
        if reply is not None:
            await self._delete(client, reply)

    # -- buttons --------------------------------------------------------------------------------------

    async def on_share(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, client: AsyncWebClient
    ) -> None:
        await ack()
        value = render.parse_action_value(action.get("value", ""))
        record_id = value.record_id
        card = self.service.card_for_record(record_id, confidence=value.confidence)
        user = (body.get("user") or {}).get("id", "")
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        if card is None or not channel:
            await self._respond(respond, render.error_message("That card is no longer available."))
            return
        message = render.card_message(
            card, ephemeral=False, record_id=record_id, shared_by=user, more_available=False
        )
        thread_ts = (body.get("container") or {}).get("thread_ts")
        if await self._post(client, channel, message, thread_ts=thread_ts) is not None:
            await self._respond(respond, None, delete_original=True)
        else:
            await self._respond(
                respond,
                render.error_message(
                    "I could not post in this channel: invite me with /invite @panicbot and try again."
                ),
            )

    async def on_more(self, ack: Any, action: dict[str, Any], respond: Any) -> None:
        await ack()
        value = render.parse_action_value(action.get("value", ""))
        matches = []
        for position, (record_id, confidence) in enumerate(render.decode_alternatives(value.lookup_key)):
            record = self.service.record(record_id)
            if record is not None:
                matches.append(Match(record, 0.0, confidence, (), 0, True, position))
        result = LookupResult(panics=(), matches=tuple(matches), answer_panic=None, auto_reply=False)
        await self._respond(
            respond,
            render.more_matches_message(result, skip_record_id=value.record_id),
            response_type="ephemeral",
            replace_original=False,
        )

    async def on_full_fix(self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any) -> None:
        await ack()
        value = render.parse_action_value(action.get("value", ""))
        record_id, key = value.record_id, value.lookup_key
        card = self.service.card_for_record(record_id, confidence=value.confidence)
        if card is None:
            await self._respond(respond, render.error_message("That card is no longer available."))
            return
        ephemeral = bool((body.get("container") or {}).get("is_ephemeral"))
        message = render.card_message(
            card,
            ephemeral=ephemeral,
            record_id=record_id,
            lookup_key=key,
            full_fix=True,
            more_available=ephemeral,
        )
        await self._respond(respond, message, replace_original=ephemeral, response_type="ephemeral")

    async def on_vote(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, client: AsyncWebClient
    ) -> None:
        await ack()
        value = render.parse_action_value(action.get("value", ""))
        record_id, key = value.record_id, value.lookup_key
        vote = "up" if action.get("action_id") == render.ACTION_VOTE_UP else "down"
        user = (body.get("user") or {}).get("id", "")
        container = body.get("container") or {}
        place = f"{container.get('channel_id', '')}/{container.get('message_ts', '')}"
        try:
            await asyncio.to_thread(
                self.state.feedback.record_vote,
                record_id=record_id,
                user_id=user,
                vote=vote,
                platform=PLATFORM,
                place=place,
            )
        except Exception:  # the store may be a database: a failure must not lose the user's click silently
            log.exception("storing a vote failed")
            await self._respond(
                respond,
                render.error_message("Your vote could not be saved; try again later."),
                response_type="ephemeral",
                replace_original=False,
            )
            return
        self.state.observer.voted(PLATFORM, vote)
        card = self.service.card_for_record(record_id, confidence=value.confidence)
        if card is None:
            return
        if container.get("is_ephemeral"):
            message = render.card_message(
                card, ephemeral=True, record_id=record_id, lookup_key=key, vote=vote
            )
            await self._respond(respond, message, replace_original=True, response_type="ephemeral")
            return
        # A public card speaks for nobody in particular: it shows everyone's count, and who shared it.
        tally = await asyncio.to_thread(
            self.state.feedback.tally, record_id=record_id, platform=PLATFORM, place=place
        )
        message = render.card_message(
            card,
            ephemeral=False,
            record_id=record_id,
            lookup_key=key,
            tally=tally,
            shared_by=value.shared_by,
            more_available=False,
        )
        try:
            await client.chat_update(
                channel=container.get("channel_id", ""),
                ts=container.get("message_ts", ""),
                text=message.text,
                blocks=message.blocks,
            )
        except SlackApiError as exc:
            self.state.observer.api_error(PLATFORM, str(exc.response.get("error")))
            log.warning("chat.update after a vote failed: %s", exc.response.get("error"))

    # -- Slack calls that never raise -----------------------------------------------------------------

    async def _thread_parent_text(self, client: AsyncWebClient, channel: str, thread_ts: str) -> str:
        try:
            replies = await client.conversations_replies(
                channel=channel, ts=thread_ts, limit=1, inclusive=True
            )
        except SlackApiError as exc:
            self.state.observer.api_error(PLATFORM, str(exc.response.get("error")))
            log.warning("conversations.replies failed in %s: %s", channel, exc.response.get("error"))
            return ""
        messages = replies.get("messages") or []
        return strip_mentions(messages[0].get("text", "")) if messages else ""

    async def _post(
        self, client: AsyncWebClient, channel: str, message: render.SlackMessage, thread_ts: str | None = None
    ) -> str | None:
        """chat.postMessage; the new message's ts, or None (logged) when Slack refused."""
        try:
            response = await client.chat_postMessage(
                channel=channel,
                thread_ts=thread_ts,
                text=message.text,
                blocks=message.blocks,
                unfurl_links=False,
            )
        except SlackApiError as exc:
            self.state.observer.api_error(PLATFORM, str(exc.response.get("error")))
            log.warning("chat.postMessage failed in %s: %s", channel, exc.response.get("error"))
            return None
        except Exception as exc:  # timeouts and connection errors after the retries
            log.warning("chat.postMessage failed in %s: %s", channel, exc.__class__.__name__)
            return None
        ts = response.get("ts")
        return ts if isinstance(ts, str) else None

    async def _delete(self, client: AsyncWebClient, reply: PostedReply) -> None:
        try:
            await client.chat_delete(channel=reply.channel, ts=reply.reply_id)
        except SlackApiError as exc:
            self.state.observer.api_error(PLATFORM, str(exc.response.get("error")))
            log.warning("chat.delete failed in %s: %s", reply.channel, exc.response.get("error"))
        self.state.gate.release(reply.channel, reply.record_id)

    async def _respond(self, respond: Any, message: render.SlackMessage | None, **options: Any) -> None:
        try:
            if message is None:
                response = await respond(**options)
            else:
                response = await respond(text=message.text, blocks=message.blocks, **options)
        except Exception as exc:  # response_url unreachable
            log.warning("response_url post failed: %s", exc.__class__.__name__)
            return
        status = getattr(response, "status_code", 200)
        if isinstance(status, int) and status >= 400:
            # The webhook client returns Slack's refusal (expired_url after 30 minutes) instead of raising.
            log.warning("response_url post refused: %s %s", status, getattr(response, "body", ""))
