"""Slack events in, core calls, Block Kit out: `/panic`, mentions, the message shortcut, opt-in auto-reply,
share / more / full-fix buttons and 👍/👎 feedback, on Bolt's AsyncApp (HTTP and Socket Mode alike)."""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.logger.messages import (
    warning_client_prioritized_and_token_skipped,
    warning_token_skipped,
)
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters import chat
from adapters.answers import paste_digest
from adapters.chat.owed import CONCURRENCY, NOT_STORED_MESSAGE, OwedReplies, digest_key, expired
from adapters.outbox import Outbox, OutboxEntry, OutboxWorker, TryLater, Undeliverable
from adapters.slack import render
from adapters.slack.settings import SlackSettings
from bot import Card, Lookup, LookupResult, redact

log = logging.getLogger("panicbot.slack")

COMMAND = "/panic"
SHORTCUT_CALLBACK_ID = "explain_panic"
PLATFORM = "slack"
BOLT_LOGGER = "slack_bolt.panicbot"
# Set on a Bolt request's context by the route once it checked the signature (`refuse_unchecked_requests`).
SIGNATURE_CHECKED = "panicbot_signature_checked"
# chat.update errors that mean the reply is not there to change any more.
REPLY_GONE_ERRORS = frozenset({"message_not_found", "channel_not_found", "is_archived"})
_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
# Messages that are someone's words; joins, topic changes, bot posts and the like are not.
_AUTO_REPLY_SUBTYPES = {None, "thread_broadcast", "file_share"}
# How a call to Slack fails: Slack's refusal (SlackApiError) or no answer at all (after the client's retries).
SLACK_FAILURES = (SlackClientError, aiohttp.ClientError, OSError, TimeoutError)
# A response_url takes posts for 30 minutes after the request (and 5 of them): a reply owed longer is dropped.
RESPONSE_URL_SECONDS = 30 * 60
RESPONSE_URL_TIMEOUT_SECONDS = 10
# What a message posted from the outbox carries (Slack's message metadata): the delivery it answers, so a
# delivery tried again after a stop that may have cut its post short looks for it before posting again.
# An unasked reply also carries the paste it answers (its ts), the record it shows and the paste's digest,
# rewritten by each chat.update: after a restart an edit or deletion of the paste finds its reply by them.
REPLY_METADATA_TYPE = "panicbot_reply"
# How far back a channel's history is read for a shared card (posted at most this long before the click).
HISTORY_MARGIN_SECONDS = 60.0
# A Share tried again that could not tell whether its earlier try posted the card (not posted again).
SHARE_UNCHECKED_MESSAGE = (
    "I may have shared this card already, but I could not check. If it is not in the conversation, "
    "press Share again."
)
# How many messages of a thread or a channel's history are read at a time looking for that reply, and how
# many such pages at most (following Slack's cursor): past them, whether it is there cannot be told.
LOOKED_AT_MESSAGES = 200
LOOKED_AT_PAGES = 5


class SlackState(chat.ChatState[tuple[str, ...]]):
    """Everything the handlers remember, built once per process. Unasked replies are keyed by (channel,
    paste ts); shared by replicas in Redis when given (Slack may deliver the edit to another replica).
    `owed`: the answers to `/panic`, the message shortcut, the card's buttons (Share, More matches, Full fix,
    👍/👎), mentions and unasked replies to pastes, kept in the outbox from before the ack until posted (None:
    answered from a task of this process). A post that a stop may have cut short is looked for (its
    metadata names the delivery) before it is posted again."""

    platform = PLATFORM
    owed: OwedReplies | None = None


def _reply_key(reply: chat.PostedReply) -> tuple[str, ...]:
    return (reply.channel, reply.reply_id)


async def _already_acknowledged(*_: Any, **__: Any) -> None:
    """Stands in for `ack` once the listener has acknowledged."""


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


class NoTokenNotes(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment even when it is given a client (which holds that very
    token) and an `authorize`, then warns that the variable "will be unused" or "will be ignored": true of
    Bolt's copy, false of the bot's, and alarming to an operator at every start."""

    _NOTES = frozenset({warning_client_prioritized_and_token_skipped(), warning_token_skipped()})

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in self._NOTES


def bolt_logger() -> logging.Logger:
    """The base logger Bolt's loggers copy their level, handlers and filters from (slack_bolt.logger).

    Without one Bolt copies the root's level onto each, overriding what `slack_bolt` was set to; left at
    NOTSET here, they follow `slack_bolt`'s level, and the filters keep request bodies (and Bolt's notes on
    a token it does not use) out of their lines."""
    logger = logging.getLogger(BOLT_LOGGER)
    if not any(isinstance(existing, NoTokenNotes) for existing in logger.filters):
        logger.filters.insert(0, NoTokenNotes())  # first: NoRequestBodies cuts these notes short
    if not any(isinstance(existing, NoRequestBodies) for existing in logger.filters):
        logger.addFilter(NoRequestBodies())
    return logger


async def _chat_post(
    client: AsyncWebClient,
    channel: str,
    message: render.SlackMessage,
    thread_ts: str | None,
    metadata: dict[str, Any] | None,
) -> str | None:
    """chat.postMessage of a rendered message (links never unfurled); the new message's ts. Raises what
    slack_sdk raises."""
    response = await client.chat_postMessage(
        channel=channel,
        thread_ts=thread_ts,
        text=message.text,
        blocks=message.blocks,
        unfurl_links=False,
        metadata=metadata,
    )
    ts = response.get("ts")
    return ts if isinstance(ts, str) else None


def _no_answer(exc: BaseException) -> bool:
    """Slack gave no answer to a call (no connection, a timeout, its outage, a rate limit after the client's
    retries), as opposed to refusing it: the call may be tried again."""
    if isinstance(exc, SlackApiError):
        status = exc.response.status_code
        return isinstance(status, int) and (status == 429 or status >= 500)
    return True


def _failure_name(exc: BaseException) -> str:
    """Slack's error code (`not_in_channel`), else what kept Slack from answering (`ClientConnectorError`)."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error"))
    return exc.__class__.__name__


class SlackAuthorization(AsyncAuthorize):
    """Who the bot is, for every request Bolt handles: the bot token's `auth.test`, asked once.

    Bolt's own single-workspace authorization asks `auth.test` on the first request, and answers that request
    500 when Slack's Web API cannot be reached. The service checks the token at start-up and hands Slack's
    answer over (`remember`); a request that comes first (Slack unreachable meanwhile) is authorized with the
    token alone: it is acknowledged, and its reply fails as any call to an unreachable Slack does (logged and
    counted). With `ask_on_request` (no start-up check), the first request asks, and a failure is not kept."""

    def __init__(self, token: str, *, ask_on_request: bool = True) -> None:
        self.token, self.ask_on_request = token, ask_on_request
        self.known: AuthorizeResult | None = None

    def remember(self, auth_test: AsyncSlackResponse) -> None:
        """Slack's answer to `auth.test` for the bot token (what Bolt's own authorization keeps of it)."""
        self.known = AuthorizeResult(
            enterprise_id=auth_test.get("enterprise_id"),
            team_id=auth_test.get("team_id"),
            bot_id=auth_test.get("bot_id"),
            bot_user_id=auth_test.get("user_id"),
            bot_token=self.token,
            bot_scopes=auth_test.headers.get("x-oauth-scopes"),
        )

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult:
        if self.known is None and self.ask_on_request:
            try:
                self.remember(await context.client.auth_test(token=self.token))
            except SLACK_FAILURES as exc:
                log.warning("auth.test failed: %s", _failure_name(exc))
        known = self.known
        if known is None:
            return AuthorizeResult(
                enterprise_id=enterprise_id, team_id=team_id, user_id=user_id, bot_token=self.token
            )
        # The requester is this request's user, as in Bolt's own single-workspace authorization.
        return AuthorizeResult(
            enterprise_id=known.enterprise_id,
            team_id=known.team_id,
            bot_id=known.bot_id,
            bot_user_id=known.bot_user_id,
            bot_token=self.token,
            bot_scopes=known.bot_scopes,
            user_id=user_id,
        )


def build_slack_app(
    settings: SlackSettings,
    service: Lookup,
    state: SlackState | None = None,
    authorization: SlackAuthorization | None = None,
    outbox: Outbox | None = None,
) -> AsyncApp:
    """The Bolt app with every listener registered; the same app serves HTTP and Socket Mode. With an
    `outbox`, answers owed through a response_url wait there (`state.owed`; start its worker)."""
    state = state or SlackState(cooldown_seconds=settings.slack_auto_reply_cooldown_seconds)
    secret = settings.slack_signing_secret
    token = settings.slack_bot_token.get_secret_value()
    app = AsyncApp(
        client=build_web_client(settings),
        authorize=authorization or SlackAuthorization(token),
        logger=bolt_logger(),
        name=BOLT_LOGGER,  # listener loggers are named after the app: keep them under `slack_bolt` too
        signing_secret=secret.get_secret_value() if secret else None,
        # The route (adapters/slack/server.py) checks the signature on the raw bytes before Bolt sees a
        # request and marks it `SIGNATURE_CHECKED`; Bolt's own check would hash every body a second time on
        # the event loop (6 ms a megabyte). Anything unmarked over HTTP is refused below instead.
        request_verification_enabled=False,
        # Each listener stores what it owes (or starts a task) and returns: Bolt then answers Slack. Bolt's
        # other way (process_before_response=False) polls for the ack every 10 ms per request, and under a
        # burst the acks queue behind other requests' lookups.
        process_before_response=True,
        raise_error_for_unhandled_request=False,
    )
    if secret is not None:
        app.middleware(refuse_unchecked_requests)
    handlers = _Handlers(settings, service, state, app.client)
    if outbox is not None:
        worker = OutboxWorker(outbox, handlers.answer_owed, name="Slack", log=log, concurrency=CONCURRENCY)
        state.owed = OwedReplies(outbox, worker, log)
    handlers.register(app)
    return app


async def refuse_unchecked_requests(req: AsyncBoltRequest, next: Callable[[], Any]) -> BoltResponse | None:
    """An HTTP request whose signature the route did not check is refused as Bolt's own check would refuse
    it (401), without logging its body; Socket Mode requests come over an authenticated connection."""
    if req.mode == "http" and req.context.get(SIGNATURE_CHECKED) is not True:
        log.debug("refused an HTTP request whose signature was not checked")
        return BoltResponse(status=401, body={"error": "invalid request"})
    await next()
    return None


class SlackView:
    """Block Kit for each kind of answer; a card carries the other matches in its buttons (no paste is
    kept in memory for "More matches")."""

    def __init__(self, *, ephemeral: bool) -> None:
        self.ephemeral = ephemeral

    def note(self, text: str) -> render.SlackMessage:
        return render.error_message(text)

    def usage(self) -> render.SlackMessage:
        return render.usage_message()

    def no_match(self, result: LookupResult, query: str) -> render.SlackMessage:
        return render.no_match_message(result, query=query)

    def card(self, card: Card, result: LookupResult) -> render.SlackMessage:
        key = render.encode_alternatives(
            [(m.record.id, m.confidence) for m in result.matches if m.record.id != card.record_id]
        )
        return render.card_message(
            card,
            ephemeral=self.ephemeral,
            record_id=card.record_id,
            lookup_key=key,
            more_available=len(result.matches) > 1,
        )


def render_answer(answer: chat.Answer, *, ephemeral: bool) -> render.SlackMessage:
    return answer.shown(SlackView(ephemeral=ephemeral))


def _unasked_message(card: Card) -> render.SlackMessage:
    return render.card_message(card, ephemeral=False, record_id=card.record_id, more_available=False)


class SlackReplier:
    """Slack's side of an unasked reply: posted in the paste's thread, changed with chat.update, removed
    with chat.delete. Its metadata names the paste (`paste_ts`), the record shown and the digest of the
    paste's text (`digest`: as written, for a post; as edited, for an update). From the outbox (`owed`) a
    call Slack did not answer raises `TryLater` (tried again: a chat.update or chat.delete applied twice
    changes nothing)."""

    def __init__(
        self,
        handlers: _Handlers,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str | None = None,
        owed: Owed | None = None,
        *,
        paste_ts: str = "",
        digest: str = "",
    ) -> None:
        self.handlers, self.client, self.channel, self.thread_ts = handlers, client, channel, thread_ts
        self.owed, self.paste_ts, self.digest = owed, paste_ts, digest

    def _about(self, card: Card) -> dict[str, Any]:
        return {"paste": self.paste_ts, "record": card.record_id, "digest": self.digest}

    async def post(self, card: Card) -> str | None:
        message = _unasked_message(card)
        if self.owed is not None:  # from the outbox: raises `TryLater` when Slack did not answer
            return await self.handlers.post_once(
                self.client,
                self.channel,
                message,
                self.owed,
                thread_ts=self.thread_ts,
                about=self._about(card),
            )
        metadata = {"event_type": REPLY_METADATA_TYPE, "event_payload": self._about(card)}
        return await self.handlers._post(
            self.client, self.channel, message, thread_ts=self.thread_ts, metadata=metadata
        )

    async def update(self, reply: chat.PostedReply, card: Card) -> chat.Update:
        message = _unasked_message(card)
        metadata = {"event_type": REPLY_METADATA_TYPE, "event_payload": self._about(card)}
        try:
            await self.client.chat_update(
                channel=reply.channel,
                ts=reply.reply_id,
                text=message.text,
                blocks=message.blocks,
                metadata=metadata,
            )
        except SLACK_FAILURES as exc:
            error = self.handlers.failed("chat.update", exc, reply.channel)
            if self.owed is not None and _no_answer(exc):
                raise TryLater(f"chat.update failed: {error}") from None
            return chat.Update.GONE if error in REPLY_GONE_ERRORS else chat.Update.FAILED
        return chat.Update.DONE

    async def delete(self, reply: chat.PostedReply) -> None:
        try:
            await self.client.chat_delete(channel=reply.channel, ts=reply.reply_id)
        except SLACK_FAILURES as exc:
            if isinstance(exc, SlackApiError) and exc.response.get("error") in REPLY_GONE_ERRORS:
                # Already gone (deleted by someone, or by an earlier try of this very deletion).
                log.info("reply %s in %s was already gone", reply.reply_id, reply.channel)
                return
            error = self.handlers.failed("chat.delete", exc, reply.channel)
            if self.owed is not None and _no_answer(exc):
                raise TryLater(f"chat.delete failed: {error}") from None


# The buttons whose answer is owed through the click's response_url, and the job kind each is stored as.
BUTTON_KINDS = {
    render.ACTION_SHARE: "share",
    render.ACTION_MORE: "more",
    render.ACTION_FULL_FIX: "full_fix",
    render.ACTION_VOTE_UP: "vote",
    render.ACTION_VOTE_DOWN: "vote",
}
# How a button's answer goes out: a post to its response_url (from the outbox, or from memory).
Send = Callable[..., Coroutine[Any, Any, None]]
# The Events API deliveries answered from the outbox, by the job kind each is stored as: a mention and an
# unasked reply (chat.postMessage), and the edit and deletion of a paste (its reply's chat.update or
# chat.delete), which wait in the paste author's lane behind the reply they change.
EVENT_KINDS = ("mention", "auto_reply", "edit", "delete")
FOLLOW_KINDS = ("edit", "delete")


@dataclass(frozen=True)
class Owed:
    """The outbox's delivery a post answers (`key`, carried in the post's metadata), when it was asked, and
    whether it was claimed before (its post may have gone out before a stop cut the answer short)."""

    key: str
    asked: float
    resumed: bool

    def metadata(self, about: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"event_type": REPLY_METADATA_TYPE, "event_payload": {"delivery": self.key, **(about or {})}}


@dataclass(frozen=True)
class Looked:
    """What looking for a reply in a thread or a channel came to: the message `found`, else whether its
    absence was `checked` (Slack showed every message since the time looked from), and `why` not."""

    found: dict[str, Any] | None
    checked: bool
    why: str = ""


class Unchecked(Exception):
    """Whether an earlier try of a delivery posted could not be checked (`Looked.why`): not posted again."""


def event_key(event_id: str) -> str:
    """An event's entry in the outbox, named by Slack's event id (the same on every re-delivery)."""
    return f"slack-{event_id}"


@dataclass(frozen=True)
class EventJob:
    """What a mention, an unasked reply or a paste's edit or deletion needs, as stored in the outbox: where
    the message is (its thread, if it is in one), who wrote it, its text (redacted when stored; an edit's
    new text) and the digest of the text as it was written (an unasked reply follows the paste's edits by
    it). `threaded`: an edited or deleted paste has a thread, where its reply may be found when memory does
    not know it. Never a rendered message, never a token."""

    kind: str
    channel: str
    ts: str
    thread_ts: str | None
    user: str
    text: str
    digest: str
    threaded: bool = False

    @classmethod
    def of_event(cls, kind: str, event: dict[str, Any]) -> EventJob:
        text = str(event.get("text") or "")
        thread_ts = event.get("thread_ts")
        return cls(
            kind=kind,
            channel=str(event.get("channel") or ""),
            ts=str(event.get("ts") or ""),
            thread_ts=str(thread_ts) if thread_ts else None,
            user=str(event.get("user") or ""),
            text=text,
            digest=paste_digest(text),
        )

    @classmethod
    def of(cls, data: dict[str, Any]) -> EventJob:
        thread_ts = data.get("thread_ts")
        return cls(
            kind=str(data.get("kind") or ""),
            channel=str(data.get("channel") or ""),
            ts=str(data.get("ts") or ""),
            thread_ts=str(thread_ts) if thread_ts else None,
            user=str(data.get("user") or ""),
            text=str(data.get("text") or ""),
            digest=str(data.get("digest") or ""),
            threaded=bool(data.get("threaded")),
        )

    @classmethod
    def of_change(cls, event: dict[str, Any]) -> EventJob:
        """The edit (message_changed) or deletion (message_deleted, or a thread parent's tombstone) of a
        message: the message's ts, author and thread as they were, the new text."""
        before = event.get("previous_message") or {}
        if event.get("subtype") == "message_changed":
            after = event.get("message") or {}
            deleted = after.get("subtype") == "tombstone"  # a thread parent deleted: its replies stay
        else:
            after, deleted = {"ts": event.get("deleted_ts")}, True
        text = "" if deleted else str(after.get("text") or "")
        thread_ts = after.get("thread_ts") or before.get("thread_ts")
        return cls(
            kind="delete" if deleted else "edit",
            channel=str(event.get("channel") or ""),
            ts=str(after.get("ts") or before.get("ts") or ""),
            thread_ts=str(thread_ts) if thread_ts else None,
            user=str(before.get("user") or after.get("user") or ""),
            text=text,
            digest=paste_digest(text),
            threaded=bool(thread_ts),
        )

    def stored(self) -> dict[str, Any]:
        # The paste is kept redacted (secrets and home paths never stored); it looks up the same record.
        return {
            "kind": self.kind,
            "channel": self.channel,
            "ts": self.ts,
            "thread_ts": self.thread_ts,
            "user": self.user,
            "text": redact(self.text),
            "digest": self.digest,
            "threaded": self.threaded,
        }

    @property
    def reply_ts(self) -> str:
        """The thread the reply goes in: the message's own, else the one the reply starts under it."""
        return self.thread_ts or self.ts


@dataclass(frozen=True)
class ButtonJob:
    """What a button's answer needs, as stored in the outbox: the click's action (its value names the
    record, the other matches and who shared the card), who clicked, and where the card is."""

    kind: str
    action_id: str
    raw_value: str
    user: str
    channel: str
    message_ts: str
    ephemeral: bool
    thread_ts: str | None = None  # the thread the card is in (Share posts in it)

    @classmethod
    def of(cls, data: dict[str, Any]) -> ButtonJob:
        container = data.get("container")
        if not isinstance(container, dict):
            container = {}
        return cls(
            kind=str(data.get("kind") or ""),
            action_id=str(data.get("action_id") or ""),
            raw_value=str(data.get("value") or ""),
            user=str(data.get("user") or ""),
            channel=str(container.get("channel_id") or ""),
            message_ts=str(container.get("message_ts") or ""),
            ephemeral=bool(container.get("is_ephemeral")),
            thread_ts=str(container["thread_ts"]) if container.get("thread_ts") else None,
        )

    def stored(self) -> dict[str, Any]:
        container: dict[str, Any] = {
            "channel_id": self.channel,
            "message_ts": self.message_ts,
            "is_ephemeral": self.ephemeral,
        }
        if self.thread_ts:
            container["thread_ts"] = self.thread_ts
        return {
            "kind": self.kind,
            "action_id": self.action_id,
            "value": self.raw_value,
            "user": self.user,
            "container": container,
        }

    @property
    def value(self) -> render.ActionValue:
        return render.parse_action_value(self.raw_value)


class _Handlers:
    def __init__(
        self, settings: SlackSettings, service: Lookup, state: SlackState, client: AsyncWebClient
    ) -> None:
        self.settings, self.service, self.state = settings, service, state
        self.client = client  # the bot's Web API client, for what the outbox's worker does (chat.update)
        self.flows = chat.ChatFlows(PLATFORM, service, state, _reply_key)

    def register(self, app: AsyncApp) -> None:
        app.middleware(self.drop_redelivered_events)
        app.command(COMMAND)(self.on_command_owed)
        app.event("app_mention")(self.on_mention_owed)
        app.shortcut(SHORTCUT_CALLBACK_ID)(self.on_shortcut_owed)
        app.event("message")(self.on_message_owed)
        for button in BUTTON_KINDS:  # Share, More matches, Full fix, 👍/👎: answered from the outbox
            app.action(button)(self.on_button_owed)
        app.error(self.on_error)

    # -- plumbing -------------------------------------------------------------------------------------

    async def drop_redelivered_events(self, body: dict[str, Any], next: Any) -> BoltResponse | None:
        """Slack re-delivers an event it thinks was missed; the first delivery that reached us wins."""
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if isinstance(event_id, str) and not await self.flows.first_time(event_id):
            log.info("event %s already handled; acknowledging the re-delivery", event_id)
            return BoltResponse(status=200, body="", headers={"x-slack-no-retry": "1"})
        await next()
        return None

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("slack handler failed (%s): %s", body.get("type"), error.__class__.__name__, exc_info=error)

    def failed(self, call: str, exc: BaseException, channel: str | None = None) -> str:
        """A Slack call that failed (refused, or no answer after the client's retries): counted by the
        observers, logged in one line, never raised. Slack's error code, else the failure's name."""
        error = _failure_name(exc)
        self.state.observer.api_error(PLATFORM, error)
        if channel:
            log.warning("%s failed in %s: %s", call, channel, error)
        else:
            log.warning("%s failed: %s", call, error)
        return error

    def _replier(self, client: AsyncWebClient, job: EventJob, owed: Owed | None = None) -> SlackReplier:
        """Where `job`'s paste is answered: in its thread, the paste and its digest in the metadata."""
        return SlackReplier(self, client, job.channel, job.reply_ts, owed, paste_ts=job.ts, digest=job.digest)

    # -- answers owed through a response_url, kept in the outbox ------------------------------------------

    async def _owe(self, kind: str, url: Any, team: Any, user: str, text: str) -> bool | None:
        """Store the answer owed through `url` before the ack: True when stored, False when it could not be
        (the user must be told), None when there is no outbox (or no URL) to keep it in."""
        # The paste is kept redacted (secrets and home paths never stored); it looks up the same record.
        return await self._owe_job(url, team, user, {"kind": kind, "user": user, "text": redact(text)})

    async def _owe_job(self, url: Any, team: Any, user: str, job: dict[str, Any]) -> bool | None:
        """Store `job` (what the worker needs to answer, never a rendered message), owed through `url`."""
        owed = self.state.owed
        if owed is None or not isinstance(url, str) or not url:
            return None
        return await owed.record(
            digest_key("slack", url), str(team or ""), user, {**job, "response_url": url}
        )

    async def on_command_owed(self, ack: Any, command: dict[str, Any], respond: Any) -> None:
        """`/panic`: stored, then acknowledged; the outbox's worker posts the answer (`answer_owed`). Not
        stored: the ack itself says so (Slack shows it to the user)."""
        user = str(command.get("user_id") or "")
        text = str(command.get("text") or "")
        stored = await self._owe("command", command.get("response_url"), command.get("team_id"), user, text)
        if stored is None:
            await ack()
            self.state.spawn(self.on_command(ack=_already_acknowledged, command=command, respond=respond))
        elif stored:
            await ack()
        else:
            await ack(text=NOT_STORED_MESSAGE)

    async def on_shortcut_owed(self, ack: Any, shortcut: dict[str, Any], respond: Any) -> None:
        """ "Explain this panic": as `/panic`; a shortcut's ack carries no message, so a reply that could not
        be stored is told through the response_url at once."""
        user = str((shortcut.get("user") or {}).get("id") or "")
        text = str((shortcut.get("message") or {}).get("text") or "")
        team = (shortcut.get("team") or {}).get("id")
        stored = await self._owe("shortcut", shortcut.get("response_url"), team, user, text)
        await ack()
        if stored is None:
            self.state.spawn(self.on_shortcut(ack=_already_acknowledged, shortcut=shortcut, respond=respond))
        elif not stored:
            note = render.error_message(NOT_STORED_MESSAGE)
            self.state.spawn(self._respond(respond, note, response_type="ephemeral"))

    async def _owe_event(self, body: dict[str, Any], job: EventJob) -> bool:
        """Store the reply an Events API delivery owes before its ack, under its event id (a re-delivery
        names the same entry). False when there is no outbox, no event id, or it could not be stored in
        time (logged in one line): the caller answers from this process then, as without an outbox."""
        owed, event_id = self.state.owed, body.get("event_id")
        if owed is None or not isinstance(event_id, str) or not event_id:
            return False
        return await owed.record(
            event_key(event_id), job.channel, job.user, job.stored(), instead="answered from memory instead"
        )

    async def on_mention_owed(
        self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient
    ) -> None:
        """@panicbot: the reply owed is stored before the ack (Bolt sends it once this returns) and the
        outbox's worker posts it (`answer_owed`); not stored, it is answered from a task, as before."""
        job = EventJob.of_event("mention", event)
        if not await self._owe_event(body, job):
            self.state.spawn(self.answer_mention(job, client))

    async def on_message_owed(
        self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient, context: Any
    ) -> None:
        """A message: a paste that may get an unasked reply, and the edit or deletion of a message that may
        have one (its reply then changes or goes), are stored before the ack and answered by the outbox's
        worker, in the author's lane: an edit waits behind the reply it changes. Not stored (no outbox, a
        store that failed), or a change that cannot concern a reply (a bot's message, a channel without
        auto-reply, the same text), from a task, as before."""
        if event.get("subtype") in {"message_changed", "message_deleted"}:
            change = EventJob.of_change(event)
            if not self._may_change_a_reply(event, change, context):
                # Memory alone decides (our own reply deleted is forgotten): no thread to read.
                change = dataclasses.replace(change, threaded=False)
            elif await self._owe_event(body, change):
                return
            self.state.spawn(self.follow_paste(change, client))
            return
        job = self._unasked_job(event, context)
        if job is not None and not await self._owe_event(body, job):
            self.state.spawn(self.answer_unasked(job, client))

    def _may_change_a_reply(self, event: dict[str, Any], change: EventJob, context: Any) -> bool:
        """The edit or deletion of a message that may have an unasked reply: someone's words (not a bot's)
        in an auto-reply channel, whose text changed (a link preview or a pin does not)."""
        if change.channel not in self.settings.slack_auto_reply_channels or not change.ts:
            return False
        before = event.get("previous_message") or {}
        if before.get("bot_id") or change.user in {"", context.get("bot_user_id")}:
            return False
        unchanged = change.kind == "edit" and "text" in before and before.get("text") == change.text
        return not unchanged

    async def answer_owed(self, entry: OutboxEntry) -> None:
        """One answer from the outbox: looked up now, posted to its response_url, or in the channel for a
        mention, an unasked reply and Share. An expired response_url, or one Slack refuses as gone, drops
        it (`Undeliverable`); no answer from Slack tries again (`TryLater`), after looking for the post."""
        payload = entry.payload
        owed = self.state.owed
        now = owed.clock() if owed else time.time()
        asked = payload.get("at")
        done = Owed(entry.key, asked if isinstance(asked, int | float) else now, entry.attempts > 0)
        if payload.get("kind") in EVENT_KINDS:
            job = EventJob.of(payload)
            if job.kind in FOLLOW_KINDS:
                await self.answer_change(job, self.client, done)
                return
            if entry.attempts:
                job = dataclasses.replace(job, user="")  # tried before: the per-user limit counted it then
            if job.kind == "mention":
                await self.answer_mention(job, self.client, done)
            else:
                await self.answer_unasked(job, self.client, done)
            return
        expired(payload, RESPONSE_URL_SECONDS, now, "its response_url")
        url = str(payload.get("response_url") or "")
        if payload.get("kind") in BUTTON_KINDS.values():

            async def send(message: render.SlackMessage | None, **options: Any) -> None:
                await self.post_owed(url, message, **options)

            await self.answer_button(ButtonJob.of(payload), send, self.client, done)
            return
        user, text = str(payload.get("user") or ""), str(payload.get("text") or "")
        if entry.attempts:
            user = ""  # tried before: the per-user limit counted it then
        if payload.get("kind") == "shortcut":

            async def read() -> str:
                return text

            answer = await self.flows.explain(user, read)
        else:
            answer = await self.flows.ask_off_loop(user, text)
        await self.post_owed(url, render_answer(answer, ephemeral=True), response_type="ephemeral")

    async def post_owed(self, url: str, message: render.SlackMessage | None, **options: Any) -> None:
        """A post to a response_url for the outbox: raises what the worker makes of a failure."""
        client = AsyncWebhookClient(url, timeout=RESPONSE_URL_TIMEOUT_SECONDS)
        try:
            if message is None:
                response = await client.send(**options)
            else:
                response = await client.send(text=message.text, blocks=message.blocks, **options)
        except SLACK_FAILURES as exc:  # no answer: the URL may well still work
            error = self.failed("response_url post", exc)
            raise TryLater(f"response_url post failed: {error}") from None
        status = response.status_code
        if status < 400:
            return
        # The webhook client returns Slack's refusal (expired_url after 30 minutes) instead of raising.
        self.state.observer.api_error(PLATFORM, f"response_url {status}")
        said = " ".join(str(response.body or "").split())[:200]
        if status in (404, 410):
            raise Undeliverable(f"Slack refused its response_url ({status} {said})")
        if status == 429 or status >= 500:
            raise TryLater(f"response_url post answered {status} {said}")
        log.warning("response_url post refused: %s %s", status, said)

    # -- entry points ---------------------------------------------------------------------------------

    async def on_command(self, ack: Any, command: dict[str, Any], respond: Any) -> None:
        await ack()
        answer = await self.flows.ask_off_loop(command.get("user_id", ""), command.get("text") or "")
        await self._respond(respond, render_answer(answer, ephemeral=True), response_type="ephemeral")

    async def on_shortcut(self, ack: Any, shortcut: dict[str, Any], respond: Any) -> None:
        await ack()

        async def read() -> str:
            return str((shortcut.get("message") or {}).get("text") or "")

        answer = await self.flows.explain((shortcut.get("user") or {}).get("id", ""), read)
        await self._respond(respond, render_answer(answer, ephemeral=True), response_type="ephemeral")

    async def answer_mention(self, job: EventJob, client: AsyncWebClient, owed: Owed | None = None) -> None:
        """The card for what a mention holds (else for its thread's first message), in its thread. From the
        outbox (`owed`) a reply already there is not posted again, and no answer from Slack raises."""
        channel, thread_ts, user = job.channel, job.reply_ts, job.user
        if await self.flows.too_many(user):
            try:
                await client.chat_postEphemeral(
                    channel=channel, user=user, text=chat.RATE_LIMITED_MESSAGE, thread_ts=thread_ts
                )
            except SLACK_FAILURES as exc:
                self.failed("chat.postEphemeral", exc, channel)
            return
        text = strip_mentions(job.text)
        answer = await self.flows.answer_off_loop(text) if text else None
        if (answer is None or (answer.result is not None and not answer.known)) and job.thread_ts:
            # "@panicbot what does this mean?" under a pasted panic: the thread's first message is the paste.
            parent = await self._thread_parent_text(client, channel, job.thread_ts)
            if parent:
                parent_answer = await self.flows.answer_off_loop(parent)
                if parent_answer.known or answer is None:
                    answer = parent_answer
        message = render_answer(answer, ephemeral=False) if answer is not None else render.usage_message()
        if owed is not None:
            await self.post_once(client, channel, message, owed, thread_ts=thread_ts)
        else:
            await self._post(client, channel, message, thread_ts=thread_ts)

    async def follow_paste(self, change: EventJob, client: AsyncWebClient) -> None:
        """An edited or deleted message, from this process: its unasked reply, if it has one, follows."""
        try:
            await self.answer_change(change, client)
        except TryLater as exc:  # looking for the reply in its thread got no answer from Slack
            log.warning("the reply to %s in %s was not followed: %s", change.ts, change.channel, exc)

    async def answer_change(self, job: EventJob, client: AsyncWebClient, owed: Owed | None = None) -> None:
        """An edited or deleted paste: its unasked reply shows the card for the new text (chat.update), or
        goes (chat.delete). The reply is known from memory, else (a restart, memory lost) found in the
        paste's thread by its metadata; from the outbox, a change tried again reads the reply there first
        (its earlier try may have changed memory and not the reply), whether or not the paste had a thread
        when it was edited. A paste without a reply gets none: an
        edit never posts (an unasked reply still owed is posted before, in the same lane, then changed)."""
        key = (job.channel, job.ts)
        replier = self._replier(client, job, owed)
        resumed = owed is not None and owed.resumed
        recover: chat.Recover | None = None
        # A change tried again reads the thread even when the paste had none at the event (its reply was
        # still owed then): its earlier try may have changed memory (shared, on a replica since stopped)
        # and not the reply.
        if job.threaded or resumed:

            async def recover() -> chat.PostedReply | None:
                return await self._find_reply(client, job)

        if job.kind == "delete":
            await self.flows.deleted(key, replier, recover=recover)
        else:
            await self.flows.edited(
                key, job.text, replier, digest=job.digest, recover=recover, resumed=resumed
            )

    def _unasked_job(self, event: dict[str, Any], context: Any) -> EventJob | None:
        """The unasked reply a message may get: someone's words (not a bot's, not a join) in a channel
        where auto-reply is on, that do not mention the bot (answer_mention answers those). Whether its text
        warrants a card is the lookup's to say, later."""
        channel = event.get("channel", "")
        if event.get("subtype") not in _AUTO_REPLY_SUBTYPES:
            return None
        if channel not in self.settings.slack_auto_reply_channels or not event.get("ts"):
            return None
        if event.get("bot_id") or event.get("user") in {None, context.get("bot_user_id")}:
            return None
        text = event.get("text") or ""
        bot_user = context.get("bot_user_id")
        if bot_user and f"<@{bot_user}" in text:
            return None  # a mention: answer_mention answers it
        return EventJob.of_event("auto_reply", event)

    async def answer_unasked(self, job: EventJob, client: AsyncWebClient, owed: Owed | None = None) -> None:
        """The card for a paste confident enough, in its thread (`flows.unasked_reply`: cooldown, memory of
        the reply for the paste's edits). From the outbox (`owed`) a reply already there is not posted again,
        and is remembered as this paste's reply."""
        paste: chat.Paste[tuple[str, ...]] = chat.Paste(
            (job.channel, job.ts), job.channel, job.text, job.user, digest=job.digest
        )
        await self.flows.unasked_reply(paste, self._replier(client, job, owed))

    # -- buttons --------------------------------------------------------------------------------------

    async def on_share(self, job: ButtonJob, send: Send, client: AsyncWebClient, owed: Owed | None) -> None:
        """The card posted in the channel (in the card's thread), then the ephemeral one removed. From the
        outbox (`owed`), a card a stop may have cut short is looked for before it is posted again."""
        value = job.value
        record_id = value.record_id
        card = self.flows.card_for(record_id, value.confidence)
        if card is None or not job.channel:
            await send(render.error_message(chat.CARD_GONE_MESSAGE))
            return
        message = render.card_message(
            card, ephemeral=False, record_id=record_id, shared_by=job.user, more_available=False
        )
        if owed is not None:
            try:
                # Not posted again when the earlier try cannot be looked for: a Share is the user's click,
                # and the ephemeral card (kept, with a note) can be shared again; a second card cannot be
                # taken back.
                posted = await self.post_once(
                    client, job.channel, message, owed, thread_ts=job.thread_ts, unchecked_posts=False
                )
            except Unchecked as exc:
                log.warning("Share %s may have been posted before (%s): not posted again", owed.key, exc)
                await send(
                    render.error_message(SHARE_UNCHECKED_MESSAGE),
                    response_type="ephemeral",
                    replace_original=False,
                )
                return
        else:
            posted = await self._post(client, job.channel, message, thread_ts=job.thread_ts)
        if posted is not None:
            await send(None, delete_original=True)
        else:
            await send(
                render.error_message(
                    "I could not post in this channel: invite me with /invite @panicbot and try again."
                ),
            )

    async def on_button_owed(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, client: AsyncWebClient
    ) -> None:
        """Share, More matches, Full fix, 👍/👎: the click (its action's data) stored, then acknowledged; the
        outbox's worker answers it (`answer_owed`), once, after a restart too. Not stored: told through the
        response_url at once (a button's ack shows nothing). Without an outbox: answered from a task."""
        container = body.get("container")
        if isinstance(container, dict) and not container.get("channel_id"):
            container = {**container, "channel_id": (body.get("channel") or {}).get("id")}
        job = ButtonJob.of(
            {
                "kind": BUTTON_KINDS.get(str(action.get("action_id") or ""), ""),
                "action_id": action.get("action_id"),
                "value": action.get("value"),
                "user": (body.get("user") or {}).get("id"),
                "container": container,
            }
        )
        url, team = body.get("response_url"), (body.get("team") or {}).get("id")
        stored = await self._owe_job(url, team, job.user, job.stored())
        await ack()
        if stored is None:

            async def send(message: render.SlackMessage | None, **options: Any) -> None:
                await self._respond(respond, message, **options)

            self.state.spawn(self.answer_button(job, send, client))
        elif not stored:
            note = render.error_message(NOT_STORED_MESSAGE)
            self.state.spawn(self._respond(respond, note, response_type="ephemeral", replace_original=False))

    async def answer_button(
        self, job: ButtonJob, send: Send, client: AsyncWebClient, owed: Owed | None = None
    ) -> None:
        """A button's answer, sent with `send` (a response_url post) or, for a vote on a public card, by
        changing the card (chat.update); Share posts the card in the channel (from the outbox: `owed`)."""
        if job.kind == "share":
            await self.on_share(job, send, client, owed)
        elif job.kind == "more":
            await self.on_more(job, send)
        elif job.kind == "full_fix":
            await self.on_full_fix(job, send)
        elif job.kind == "vote":
            await self.on_vote(job, send, client)

    async def on_more(self, job: ButtonJob, send: Send) -> None:
        value = job.value
        result = self.flows.alternatives(render.decode_alternatives(value.lookup_key))
        await send(
            render.more_matches_message(result, skip_record_id=value.record_id),
            response_type="ephemeral",
            replace_original=False,
        )

    async def on_full_fix(self, job: ButtonJob, send: Send) -> None:
        value = job.value
        record_id, key = value.record_id, value.lookup_key
        card = self.flows.card_for(record_id, value.confidence)
        if card is None:
            await send(render.error_message(chat.CARD_GONE_MESSAGE))
            return
        ephemeral = job.ephemeral
        message = render.card_message(
            card,
            ephemeral=ephemeral,
            record_id=record_id,
            lookup_key=key,
            full_fix=True,
            more_available=ephemeral,
        )
        await send(message, replace_original=ephemeral, response_type="ephemeral")

    async def on_vote(self, job: ButtonJob, send: Send, client: AsyncWebClient) -> None:
        """Stored again when the job is tried again: a user's vote at a place replaces their last one."""
        value = job.value
        record_id, key = value.record_id, value.lookup_key
        vote = "up" if job.action_id == render.ACTION_VOTE_UP else "down"
        place = f"{job.channel}/{job.message_ts}"
        if not await self.flows.vote(record_id=record_id, user=job.user, vote=vote, place=place):
            await send(
                render.error_message(chat.VOTE_FAILED_MESSAGE),
                response_type="ephemeral",
                replace_original=False,
            )
            return
        card = self.flows.card_for(record_id, value.confidence)
        if card is None:
            return
        if job.ephemeral:
            message = render.card_message(
                card, ephemeral=True, record_id=record_id, lookup_key=key, vote=vote
            )
            await send(message, replace_original=True, response_type="ephemeral")
            return
        # A public card speaks for nobody in particular: it shows everyone's count, and who shared it.
        tally = await self.flows.tally(record_id=record_id, place=place)
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
                channel=job.channel, ts=job.message_ts, text=message.text, blocks=message.blocks
            )
        except SLACK_FAILURES as exc:
            self.failed("chat.update after a vote", exc)

    # -- Slack calls that never raise -----------------------------------------------------------------

    async def _thread_parent_text(self, client: AsyncWebClient, channel: str, thread_ts: str) -> str:
        try:
            replies = await client.conversations_replies(
                channel=channel, ts=thread_ts, limit=1, inclusive=True
            )
        except SLACK_FAILURES as exc:
            self.failed("conversations.replies", exc, channel)
            return ""
        messages = replies.get("messages") or []
        return strip_mentions(messages[0].get("text", "")) if messages else ""

    async def _post(
        self,
        client: AsyncWebClient,
        channel: str,
        message: render.SlackMessage,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str | None:
        """chat.postMessage; the new message's ts, or None (logged) when Slack refused."""
        try:
            return await _chat_post(client, channel, message, thread_ts, metadata)
        except SLACK_FAILURES as exc:  # refused, or timeouts and connection errors after the retries
            self.failed("chat.postMessage", exc, channel)
            return None

    async def post_once(
        self,
        client: AsyncWebClient,
        channel: str,
        message: render.SlackMessage,
        owed: Owed,
        *,
        thread_ts: str | None = None,
        about: dict[str, Any] | None = None,
        unchecked_posts: bool = True,
    ) -> str | None:
        """chat.postMessage for the outbox, the delivery named in the message's metadata (with `about`: what
        an unasked reply answers and shows): the new message's ts, or, for a delivery tried again, that of
        the message an earlier try posted; None when Slack refused it (logged). No answer from Slack (after
        the client's retries) raises `TryLater`: the post may have gone out, and the next try looks for it
        first. When that look cannot be made (Slack refuses to show the conversation, a missing scope; or
        more messages than `LOOKED_AT_PAGES` pages since it was asked), the delivery is posted again, one
        line says so; unless not `unchecked_posts`: then `Unchecked` is raised and nothing is posted."""
        if owed.resumed:
            earlier = await self._posted_before(client, channel, thread_ts, owed)
            if isinstance(earlier, str):
                return earlier
            if earlier is not None:
                if not unchecked_posts:
                    raise Unchecked(earlier.why)
                log.warning(
                    "delivery %s may have been posted before (%s): posted again", owed.key, earlier.why
                )
        try:
            return await _chat_post(client, channel, message, thread_ts, owed.metadata(about))
        except SLACK_FAILURES as exc:
            error = self.failed("chat.postMessage", exc, channel)
            if _no_answer(exc):
                raise TryLater(f"chat.postMessage failed: {error}") from None
            return None

    async def _posted_before(
        self, client: AsyncWebClient, channel: str, thread_ts: str | None, owed: Owed
    ) -> str | Looked | None:
        """The ts of the message an earlier try of `owed` posted (its metadata names the delivery), in the
        thread or, outside one, in the channel since it was asked; None when there is none; what was looked
        at (`Looked`, not `checked`) when that could not be told. Slack not answering raises `TryLater`."""
        oldest = max(owed.asked - HISTORY_MARGIN_SECONDS, 0.0)

        def earlier(payload: dict[str, Any]) -> bool:
            return payload.get("delivery") == owed.key

        looked = await self._look_for(client, channel, thread_ts, oldest, "an earlier reply", earlier)
        if looked.found is not None:
            log.info("delivery %s was posted before its answer was cut short: not posted again", owed.key)
            ts = looked.found.get("ts")
            return ts if isinstance(ts, str) else ""
        return None if looked.checked else looked

    async def _find_reply(self, client: AsyncWebClient, job: EventJob) -> chat.PostedReply | None:
        """The unasked reply to `job`'s paste in its thread (its metadata names the paste), as the reply
        shows it now (record and paste digest); None when there is none (or it could not be looked for)."""
        try:
            oldest = max(float(job.ts) - HISTORY_MARGIN_SECONDS, 0.0)
        except ValueError:
            return None

        def reply(payload: dict[str, Any]) -> bool:
            record = payload.get("record")
            return payload.get("paste") == job.ts and isinstance(record, str) and bool(record)

        looked = await self._look_for(client, job.channel, job.reply_ts, oldest, "the paste's reply", reply)
        found = looked.found
        ts = found.get("ts") if found is not None else None
        if found is None or not isinstance(ts, str):
            return None
        log.info("the reply to %s in %s found in its thread", job.ts, job.channel)
        payload = found["metadata"]["event_payload"]
        digest = payload.get("digest")
        return chat.PostedReply(job.channel, ts, payload["record"], digest if isinstance(digest, str) else "")

    async def _look_for(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str | None,
        oldest: float,
        looking_for: str,
        wanted: Callable[[dict[str, Any]], bool],
    ) -> Looked:
        """The first of the bot's replies (a message with `panicbot_reply` metadata) whose payload is
        `wanted`, in the thread or, outside one, the channel since `oldest`: a page of `LOOKED_AT_MESSAGES`
        at a time, following Slack's cursor for at most `LOOKED_AT_PAGES` pages. Slack refusing to show them
        (a missing scope, a thread gone) is logged, and what was looked at says it was not `checked`, as
        when the pages ran out first; Slack not answering raises `TryLater`."""
        since = f"{oldest:.6f}"
        # The thread's replies, or the channel's history: the same paging and metadata either way.
        read = (
            functools.partial(client.conversations_replies, ts=thread_ts)
            if thread_ts
            else client.conversations_history
        )
        cursor: str | None = None
        for _ in range(LOOKED_AT_PAGES):
            try:
                response = await read(
                    channel=channel,
                    oldest=since,
                    include_all_metadata=True,
                    limit=LOOKED_AT_MESSAGES,
                    cursor=cursor,
                )
            except SLACK_FAILURES as exc:
                error = self.failed(f"looking for {looking_for}", exc, channel)
                if _no_answer(exc):
                    raise TryLater(f"looking for {looking_for} failed: {error}") from None
                return Looked(None, False, f"Slack did not show the conversation: {error}")
            for found in response.get("messages") or []:
                metadata = found.get("metadata") if isinstance(found, dict) else None
                if not isinstance(metadata, dict) or metadata.get("event_type") != REPLY_METADATA_TYPE:
                    continue
                payload = metadata.get("event_payload")
                if isinstance(payload, dict) and wanted(payload):
                    return Looked(found, True)
            metadata = response.get("response_metadata") or {}
            cursor = metadata.get("next_cursor") if isinstance(metadata, dict) else None
            if not response.get("has_more") or not cursor:
                return Looked(None, True)
        return Looked(
            None, False, f"more than {LOOKED_AT_PAGES * LOOKED_AT_MESSAGES} messages since it was asked"
        )

    async def _respond(self, respond: Any, message: render.SlackMessage | None, **options: Any) -> None:
        try:
            if message is None:
                response = await respond(**options)
            else:
                response = await respond(text=message.text, blocks=message.blocks, **options)
        except SLACK_FAILURES as exc:  # response_url unreachable
            self.failed("response_url post", exc)
            return
        status = getattr(response, "status_code", 200)
        if isinstance(status, int) and status >= 400:
            # The webhook client returns Slack's refusal (expired_url after 30 minutes) instead of raising.
            self.state.observer.api_error(PLATFORM, f"response_url {status}")
            log.warning("response_url post refused: %s %s", status, getattr(response, "body", ""))
