"""Discord events in, core calls, embeds and views out: auto-reply in help channels and forums, `/panic`
with autocomplete, @mentions, the "Explain this panic" message command, and the card's buttons.

Every Discord call goes through a helper that logs a refusal (403, 404, 50035) with its context and
returns None: a refused call never crashes the bot and is never retried here (discord.py waits out 429s).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket

from adapters import chat
from adapters.chat.owed import CONCURRENCY, NOT_STORED_MESSAGE, OwedReplies, expired
from adapters.discord import render
from adapters.discord.render import ComponentSpec, DiscordMessage, OptionSpec, SelectSpec
from adapters.discord.settings import DiscordSettings
from adapters.local_memory import ExpiringMap
from adapters.outbox import Outbox, OutboxEntry, OutboxWorker, TryLater, Undeliverable
from bot import Card, Lookup, LookupResult, Matcher, redact

log = logging.getLogger("panicbot.discord")

PLATFORM = "discord"
COMMAND_NAME = "panic"
CONTEXT_MENU_NAME = "Explain this panic"
# Slash command string options hold at most 6,000 characters.
QUERY_MAX = 6_000
ATTACHMENT_MAX_BYTES = 256 * 1024
# A slow download must not hold a handler (or an interaction's 15 minutes) for aiohttp's 5-minute default.
ATTACHMENT_TIMEOUT_SECONDS = 10.0
TEXT_SUFFIXES = (".txt", ".log")
NO_PINGS = discord.AllowedMentions.none()
# Someone's words: joins, pins, thread-created notices and the like are not pastes.
_PASTE_TYPES = {discord.MessageType.default, discord.MessageType.reply}
# An interaction's token takes follow-ups for 15 minutes: a follow-up owed longer is dropped.
INTERACTION_TOKEN_SECONDS = 15 * 60
# A follow-up refused as "Unknown Webhook" this soon after it was owed may have overtaken its own ack
# (another replica took it from the outbox before this one's deferral landed): it is tried again.
ACK_IN_FLIGHT_SECONDS = 30.0


@dataclass
class DiscordState(chat.ChatState[int]):
    """Everything the handlers remember, built once per process (all shards share it). Unasked replies
    are keyed by the paste's message id; the per-user limit counts what a user asks for (slash command,
    message command, mention), as on Slack."""

    platform = PLATFORM
    attachment_max_bytes: int = ATTACHMENT_MAX_BYTES
    # True from READY until a disconnect, again once resumed: what a readiness probe reports.
    connected: bool = field(default=False, init=False)
    # Follow-ups owed after a deferral or a card's update (the deferred "Explain this panic", "Post
    # publicly"), kept in the outbox until sent; None: sent from a task of this process (`owe_through`).
    owed: OwedReplies | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        # channel id -> its parent's id (0: none) for threads the client had not cached.
        self.thread_parents: ExpiringMap[int, int] = ExpiringMap(24 * 3600, 10_000, self.clock)
        self.handlers: PanicHandlers | None = None  # the logged-in client's, which the outbox's worker uses

    async def answer_owed(self, entry: OutboxEntry) -> None:
        """One follow-up from the outbox, through the client logged in (the worker starts with it)."""
        if self.handlers is None:
            raise TryLater("not logged in to Discord yet")
        await self.handlers.answer_owed(entry)


def owe_through(state: DiscordState, outbox: Outbox) -> OwedReplies:
    """Keep `state`'s owed follow-ups in `outbox`; the worker starts once the client has logged in."""
    worker = OutboxWorker(outbox, state.answer_owed, name="Discord", log=log, concurrency=CONCURRENCY)
    state.owed = OwedReplies(outbox, worker, log)
    return state.owed


def _reply_key(reply: chat.PostedReply) -> int:
    return int(reply.reply_id)


def panic_intents(settings: DiscordSettings) -> discord.Intents:
    """Guild messages and channels; message content (privileged) only when auto-reply is configured, since
    mentions, the slash command and the message command get their text without it."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.message_content = bool(settings.discord_help_channel_ids)
    return intents


def is_text_attachment(attachment: discord.Attachment) -> bool:
    return attachment.filename.lower().endswith(TEXT_SUFFIXES)


# -- views -------------------------------------------------------------------------------------------------


class _HasPanic(Protocol):
    panic: PanicHandlers


def _handlers(interaction: discord.Interaction[Any]) -> PanicHandlers:
    return cast(_HasPanic, interaction.client).panic


class _Routed:
    """A dynamic item: routed by its custom_id template, so a card's buttons keep working after a restart
    and no view is kept in memory per message."""

    custom_id: str

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> Any:
        return cls(item)  # type: ignore[call-arg]

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        item = getattr(self, "item", None)
        values = list(item.values) if isinstance(item, discord.ui.Select) else []
        await _handlers(interaction).on_component(interaction, self.custom_id, values)


class PostButton(_Routed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=render.POST_TEMPLATE):
    pass


class VoteButton(_Routed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=render.VOTE_TEMPLATE):
    pass


class DismissButton(
    _Routed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=render.DISMISS_TEMPLATE
):
    pass


class MoreSelect(_Routed, discord.ui.DynamicItem[discord.ui.Select[Any]], template=render.MORE_TEMPLATE):
    pass


DYNAMIC_ITEMS: tuple[type[Any], ...] = (PostButton, VoteButton, DismissButton, MoreSelect)
_BUTTON_STYLES = {
    "primary": discord.ButtonStyle.primary,
    "secondary": discord.ButtonStyle.secondary,
    "success": discord.ButtonStyle.success,
    "danger": discord.ButtonStyle.danger,
    "link": discord.ButtonStyle.link,
}


def _item(spec: ComponentSpec) -> discord.ui.Item[Any]:
    if isinstance(spec, SelectSpec):
        select: discord.ui.Select[Any] = discord.ui.Select(
            custom_id=spec.custom_id,
            placeholder=spec.placeholder,
            options=[
                discord.SelectOption(
                    label=o.label, value=o.value, description=o.description, default=o.default
                )
                for o in spec.options
            ],
            min_values=1,
            max_values=1,
            row=spec.row,
        )
        return MoreSelect(select)
    style = _BUTTON_STYLES[spec.style]
    if spec.url:
        return discord.ui.Button(style=style, label=spec.label, url=spec.url, emoji=spec.emoji, row=spec.row)
    button: discord.ui.Button[Any] = discord.ui.Button(
        style=style, label=spec.label, emoji=spec.emoji, custom_id=spec.custom_id, row=spec.row
    )
    action = render.parse_custom_id(spec.custom_id or "")
    kinds: dict[str, type[Any]] = {"post": PostButton, "vote": VoteButton, "dismiss": DismissButton}
    if action is None or action.kind not in kinds:
        raise ValueError(f"not one of panicbot's custom_ids: {spec.custom_id!r}")
    return cast(discord.ui.Item[Any], kinds[action.kind](button))


def build_view(components: Sequence[ComponentSpec]) -> discord.ui.View | None:
    """The discord.py view for component specs (no timeout: the items are dynamic, nothing is stored)."""
    if not components:
        return None
    view = discord.ui.View(timeout=None)
    for spec in components:
        view.add_item(_item(spec))
    return view


def select_options(message: discord.Message | None) -> list[OptionSpec]:
    """The "More matches" options of a card already sent (they travel with the message, not in memory)."""
    if message is None:
        return []
    for row in message.components:
        for child in getattr(row, "children", []):
            if isinstance(child, discord.SelectMenu) and child.custom_id == render.MORE_ID:
                return [
                    OptionSpec(option.label, option.value, option.description, option.default)
                    for option in child.options
                ]
    return []


def _send_kwargs(message: DiscordMessage) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"allowed_mentions": NO_PINGS}
    if message.content:
        kwargs["content"] = message.content
    if message.embeds:
        kwargs["embeds"] = message.embeds
    view = build_view(message.components)
    if view is not None:
        kwargs["view"] = view
    return kwargs


def _refusal(exc: Exception) -> str:
    if isinstance(exc, discord.HTTPException):
        return f"HTTP {exc.status}, Discord code {exc.code}: {exc.text[:300]}"
    return exc.__class__.__name__


def _error_name(exc: Exception) -> str:
    """A short name for metrics: Discord's JSON error code (50013, 10008), else the HTTP status."""
    if isinstance(exc, discord.HTTPException):
        return str(exc.code) if exc.code else f"http {exc.status}"
    return exc.__class__.__name__


# -- the handlers ------------------------------------------------------------------------------------------


class PanicHandlers:
    """What the bot does; the client classes below only route discord.py's events here."""

    def __init__(
        self, client: discord.Client, settings: DiscordSettings, service: Lookup, state: DiscordState
    ) -> None:
        self.client, self.settings, self.service, self.state = client, settings, service, state
        state.handlers = self
        self.flows = chat.ChatFlows(PLATFORM, service, state, _reply_key)
        # The matcher the keys were made for, weakly: a reloaded catalog's old index is not kept alive here
        # (the service frees it in steps, off the event loop).
        self._keys_of: weakref.ref[Matcher] | None = None
        self._keys = render.RecordKeys(())

    @property
    def keys(self) -> render.RecordKeys:
        """Hashed record keys back to ids, for the catalog serving now (the service may reload it)."""
        matcher = self.service.matcher
        if self._keys_of is None or self._keys_of() is not matcher:
            self._keys_of, self._keys = weakref.ref(matcher), render.RecordKeys(self.service.record_ids())
        return self._keys

    def _refused(self, exc: Exception, what: str, *context: object) -> None:
        """A Discord call that failed: logged with its context, counted by the observers, never raised."""
        self.state.observer.api_error(PLATFORM, _error_name(exc))
        log.warning(f"{what} failed: %s", *context, _refusal(exc))

    async def too_many(self, user_id: int) -> bool:
        """True when this user has asked more than the per-user limit allows (one person cannot flood)."""
        return await self.flows.too_many(str(user_id))

    # -- reading pastes -----------------------------------------------------------------------------------

    def _mention_pattern(self) -> re.Pattern[str] | None:
        user = self.client.user
        return re.compile(rf"<@!?{user.id}>") if user else None

    def mentions_me(self, message: discord.Message) -> bool:
        # The mention in the text, not `message.mentions`: a reply to the bot's card mentions it too.
        pattern = self._mention_pattern()
        return bool(pattern and pattern.search(message.content or ""))

    def message_text(self, message: discord.Message) -> str:
        """The message's text without mentions of the bot (its attachments left out)."""
        pattern = self._mention_pattern()
        content = message.content or ""
        return pattern.sub(" ", content).strip() if pattern else content.strip()

    async def paste_text(self, message: discord.Message) -> str:
        """The message's text without mentions of the bot, and its .txt/.log attachments (size-capped)."""
        parts = [self.message_text(message)]
        for attachment in message.attachments:
            if is_text_attachment(attachment):
                parts.append(await self._read(attachment, message))
        return "\n".join(part for part in parts if part.strip())

    async def _read_stored(self, attachment: dict[str, Any], message_id: object) -> str:
        """An attachment the outbox kept the address of (`_read` for an owed follow-up)."""
        cap = self.state.attachment_max_bytes
        size, url = attachment.get("size"), attachment.get("url")
        if not isinstance(url, str) or not isinstance(size, int) or size > cap:
            return ""
        try:
            data = await asyncio.wait_for(self.client.http.get_from_cdn(url), ATTACHMENT_TIMEOUT_SECONDS)
        except (TimeoutError, discord.HTTPException, aiohttp.ClientError) as exc:
            self._refused(exc, "reading attachment %s of message %s", attachment.get("id"), message_id)
            return ""
        return data[:cap].decode("utf-8", errors="replace")

    async def _read(self, attachment: discord.Attachment, message: discord.Message) -> str:
        cap = self.state.attachment_max_bytes
        if attachment.size > cap:
            log.info(
                "attachment %s of message %s skipped: %d bytes, over the %d-byte cap",
                attachment.id,
                message.id,
                attachment.size,
                cap,
            )
            return ""
        try:
            data = await asyncio.wait_for(attachment.read(), ATTACHMENT_TIMEOUT_SECONDS)
        except (TimeoutError, discord.HTTPException, aiohttp.ClientError) as exc:
            self._refused(exc, "reading attachment %s of message %s", attachment.id, message.id)
            return ""
        return data[:cap].decode("utf-8", errors="replace")

    async def in_help_place(self, message: discord.Message) -> bool:
        """`in_help_channel`, for a message whose channel the client has not cached too: a thread archived
        before the bot connected, brought back by this message. Its parent is asked once, then kept."""
        channel = message.channel
        if self.in_help_channel(channel):
            return True
        if not isinstance(channel, discord.PartialMessageable) or not self.settings.discord_help_channel_ids:
            return False
        parent = self.state.thread_parents.get(channel.id)
        if parent is None:
            try:
                fetched = await self.client.fetch_channel(channel.id)
            except discord.NotFound:
                fetched = None  # not a channel the bot may see: remembered as having no parent
            except discord.HTTPException as exc:
                self._refused(exc, "finding the parent of channel %s", channel.id)
                return False
            parent = getattr(fetched, "parent_id", None) or 0
            self.state.thread_parents.put(channel.id, parent)
        return parent in self.settings.discord_help_channel_ids

    def in_help_channel(self, channel: Any) -> bool:
        """A help channel itself, or a thread in one: a forum post is a thread whose parent is the forum."""
        ids = self.settings.discord_help_channel_ids
        return getattr(channel, "id", None) in ids or getattr(channel, "parent_id", None) in ids

    # -- answers ------------------------------------------------------------------------------------------

    def _severity(self, record_id: str) -> str | None:
        record = self.service.record(record_id)
        return record.severity if record else None

    def _card(self, card: Card, **options: Any) -> DiscordMessage:
        return render.card_message(card, severity=self._severity(card.record_id), **options)

    async def answer(self, text: str, *, ephemeral: bool, asker_id: int) -> DiscordMessage:
        """The message for a paste or query: a card, "no known record", or usage for an empty one."""
        text = text.strip()
        if text.startswith(render.ID_PREFIX):
            # A pick from autocomplete names its record exactly.
            chosen = self.flows.card_for(self.keys.resolve(text.removeprefix(render.ID_PREFIX)), 1.0)
            if chosen is not None:
                return self._card(chosen, ephemeral=ephemeral, asker_id=asker_id)
        answer = await self.flows.answer_off_loop(text)
        return self.render_answer(answer, ephemeral=ephemeral, asker_id=asker_id)

    def render_answer(self, answer: chat.Answer, *, ephemeral: bool, asker_id: int) -> DiscordMessage:
        return answer.shown(DiscordView(self, ephemeral=ephemeral, asker_id=asker_id))

    # -- messages -----------------------------------------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        if not self.state.track():
            return
        if message.author.bot or message.webhook_id is not None or message.type not in _PASTE_TYPES:
            return
        if self.mentions_me(message):
            await self.on_mention(message)
            return
        if message.guild is not None and await self.in_help_place(message):
            await self.auto_reply(message)

    async def auto_reply(self, message: discord.Message) -> None:
        text = await self.paste_text(message)
        paste = chat.Paste(message.id, str(message.channel.id), text, str(message.author.id))
        await self.flows.unasked_reply(paste, DiscordReplier(self, message.author.id, message=message))

    async def on_mention(self, message: discord.Message) -> None:
        """The card for the paste in the mention, else for the message it replies to. Over the per-user
        limit, nothing: a public "slow down" would be one more message in the channel."""
        if await self.too_many(message.author.id):
            return
        text = await self.paste_text(message)
        reference = message.reference
        if reference is not None and reference.message_id is not None:
            # Unobserved: `answer` below looks the chosen text up again, and that one counts.
            own = (
                self.service.card(await self.flows.lookup_off_loop(text, observed=False))
                if text.strip()
                else None
            )
            if own is None:
                referenced = await self._referenced(message, reference)
                if referenced is not None:
                    text = await self.paste_text(referenced) or text
        answer = await self.answer(text, ephemeral=False, asker_id=message.author.id)
        await self._reply(message, answer, "mention reply")

    async def _referenced(
        self, message: discord.Message, reference: discord.MessageReference
    ) -> discord.Message | None:
        """The replied-to message, fetched: the copy in the event may be stale (edited) or left out."""
        channel_id = reference.channel_id or message.channel.id
        assert reference.message_id is not None
        try:
            channel = self.client.get_partial_messageable(channel_id, guild_id=reference.guild_id)
            return await channel.fetch_message(reference.message_id)
        except discord.HTTPException as exc:
            self._refused(
                exc,
                "fetching message %s in %s (replied to by %s)",
                reference.message_id,
                channel_id,
                message.id,
            )
        resolved = reference.resolved
        return resolved if isinstance(resolved, discord.Message) else None

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        """An edited paste: the reply is matched again and edited, or removed when it no longer applies."""
        if not self.state.track():
            return
        if await self.state.replies.get(payload.message_id) is None:
            return  # not a paste we answered: its attachments are not read
        text = await self.paste_text(payload.message)
        replier = DiscordReplier(self, payload.message.author.id, guild_id=payload.guild_id)
        await self.flows.edited(payload.message_id, text, replier)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        if not self.state.track():
            return
        await self.flows.deleted(payload.message_id, DiscordReplier(self))

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        if not self.state.track():
            return
        for message_id in payload.message_ids:
            await self.flows.deleted(message_id, DiscordReplier(self))

    # -- application commands -----------------------------------------------------------------------------

    async def on_slash(self, interaction: discord.Interaction[Any], query: str, public: bool = False) -> None:
        """Private unless asked otherwise: a paste may hold more than the asker wants to show."""
        if not self.state.track():
            return
        if await self.too_many(interaction.user.id):
            await self.respond(interaction, render.error_message(chat.RATE_LIMITED_MESSAGE), ephemeral=True)
            return
        message = await self.answer(query, ephemeral=not public, asker_id=interaction.user.id)
        await self.respond(interaction, message, ephemeral=not public)

    async def on_autocomplete(self, interaction: discord.Interaction[Any], current: str) -> list[Any]:
        # In the lookup pool, never on the event loop: a catalog's suggestion index is built on its first
        # keystroke, and a keystroke may run a lookup (the guesses for a typo) over a large catalog.
        choices = await self.flows.off_loop(functools.partial(autocomplete_choices, self.service, current))
        return [app_commands.Choice(name=name, value=value) for name, value in choices]

    async def on_explain(self, interaction: discord.Interaction[Any], target: discord.Message) -> None:
        """The message command: its target arrives with its content even without the content intent. A
        log file to download first: deferred, and the follow-up owed is kept in the outbox until sent."""
        if not self.state.track():
            return
        files = [attachment for attachment in target.attachments if is_text_attachment(attachment)]
        if files and self.state.owed is not None:
            if await self.too_many(interaction.user.id):
                await self.respond(interaction, render.error_message(chat.RATE_LIMITED_MESSAGE))
                return
            job = {
                "kind": "explain",
                "text": redact(self.message_text(target)),
                "message_id": target.id,
                "files": [{"id": a.id, "url": a.url, "size": a.size} for a in files],
            }
            await self._owe(interaction, job, None)
            return

        async def read() -> str:
            if any(is_text_attachment(a) for a in target.attachments):
                # Downloading may take longer than the 3 s Discord waits for an answer.
                await self._defer(interaction, ephemeral=True)
            return await self.paste_text(target)

        answer = await self.flows.explain(str(interaction.user.id), read)
        message = self.render_answer(answer, ephemeral=True, asker_id=interaction.user.id)
        await self.respond(interaction, message, ephemeral=True)

    # -- components ---------------------------------------------------------------------------------------

    async def on_component(
        self, interaction: discord.Interaction[Any], custom_id: str, values: list[str]
    ) -> None:
        if not self.state.track():
            return
        action = render.parse_custom_id(custom_id)
        if action is None:
            return
        if action.kind == "post":
            await self.post_publicly(interaction, action)
        elif action.kind == "vote":
            await self.vote(interaction, action)
        elif action.kind == "dismiss":
            await self.dismiss(interaction, action)
        else:
            await self.more(interaction, values)

    def _card_for(self, action: render.Action) -> Card | None:
        return self.flows.card_for(self.keys.resolve(action.record_key), action.confidence)

    async def post_publicly(self, interaction: discord.Interaction[Any], action: render.Action) -> None:
        """The private card, for everyone. It shows the catalogued message, not the asker's paste."""
        card = self._card_for(action)
        if card is None:
            await self.respond(interaction, render.error_message(chat.CARD_GONE_MESSAGE))
            return
        if self.state.owed is not None:
            job = {
                "kind": "share",
                "record_id": card.record_id,
                "confidence": action.confidence,
                "shared_by": interaction.user.display_name,
            }
            await self._owe(interaction, job, render.posted_message())
            return
        public = self._card(
            card, ephemeral=False, asker_id=interaction.user.id, shared_by=interaction.user.display_name
        )
        if not await self._update(interaction, render.posted_message()):
            return
        try:
            await interaction.followup.send(wait=True, **_send_kwargs(public))
        except discord.HTTPException as exc:
            self._refused(exc, "posting a shared card in %s", interaction.channel_id)
            note = render.error_message("I could not post in this channel; the card was not shared.")
            await self.respond(interaction, note)

    async def vote(self, interaction: discord.Interaction[Any], action: render.Action) -> None:
        message = interaction.message
        place = f"{interaction.channel_id}/{message.id if message else 0}"
        record_id = self.keys.resolve(action.record_key)
        user = str(interaction.user.id)
        if not await self.flows.vote(record_id=record_id, user=user, vote=action.vote or "", place=place):
            await self.respond(interaction, render.error_message(chat.VOTE_FAILED_MESSAGE))
            return
        card = self._card_for(action)
        if card is None:
            await self.respond(interaction, render.error_message(chat.CARD_GONE_MESSAGE))
            return
        if message is not None and message.flags.ephemeral:
            components = render.card_components(
                card, ephemeral=True, options=select_options(message), vote=action.vote
            )
        else:
            # A public card speaks for nobody in particular: it shows everyone's counts.
            tally = await self.flows.tally(record_id=record_id, place=place)
            components = render.card_components(card, ephemeral=False, asker_id=action.asker_id, tally=tally)
        await self._update(interaction, DiscordMessage(components=components), components_only=True)

    async def dismiss(self, interaction: discord.Interaction[Any], action: render.Action) -> None:
        permissions = interaction.permissions
        if interaction.user.id != action.asker_id and not permissions.manage_messages:
            note = "Only the person who asked, or someone who can manage messages, can remove this card."
            await self.respond(interaction, render.error_message(note))
            return
        message = interaction.message
        if message is None:
            return
        await self.flows.forget(message.id)
        await self._defer_update(interaction)
        await self._delete(message.channel.id, message.id, "dismissed card")

    async def more(self, interaction: discord.Interaction[Any], values: list[str]) -> None:
        """Another match from the menu: the private card switches to it, keeping the menu."""
        parsed = render.parse_option_value(values[0]) if values else None
        card = self.flows.card_for(self.keys.resolve(parsed[0]), parsed[1]) if parsed else None
        if card is None:
            await self.respond(interaction, render.error_message("That record is no longer available."))
            return
        options = render.with_default(select_options(interaction.message), values[0])
        await self._update(interaction, self._card(card, ephemeral=True, options=options))

    # -- follow-ups owed, kept in the outbox --------------------------------------------------------------

    async def _owe(
        self,
        interaction: discord.Interaction[Any],
        job: dict[str, Any],
        update: DiscordMessage | None,
    ) -> None:
        """Store the follow-up `job` owes, then acknowledge: the clicked card replaced by `update`, else
        deferred. Not stored: the interaction is answered with a note saying so instead."""
        owed = self.state.owed
        assert owed is not None
        key = f"discord-{interaction.id}"
        payload = {
            **job,
            "application_id": interaction.application_id,
            "token": interaction.token,
            "user": interaction.user.id,
            "channel_id": interaction.channel_id,
        }
        group = str(interaction.guild_id or interaction.channel_id or "")
        if not await owed.record(key, group, str(interaction.user.id), payload, wake=False):
            await self.respond(interaction, render.error_message(NOT_STORED_MESSAGE))
            return
        if update is None:
            acked = await self._defer(interaction, ephemeral=True)
        else:
            acked = await self._update(interaction, update)
        if not acked:  # the interaction is gone: no follow-up can be sent through it
            await owed.withdraw(key)
            return
        owed.worker.wake()  # only now: a follow-up must not overtake its ack

    async def answer_owed(self, entry: OutboxEntry) -> None:
        """One owed follow-up: the explained log file's card (private), or the shared card (public). An
        expired token, or one Discord no longer knows, drops it (`Undeliverable`)."""
        payload = entry.payload
        owed = self.state.owed
        now = owed.clock() if owed is not None else time.time()
        expired(payload, INTERACTION_TOKEN_SECONDS, now, "its interaction token")
        asker = _int(payload.get("user"))
        if payload.get("kind") == "share":
            card = self.flows.card_for(str(payload.get("record_id") or ""), _float(payload.get("confidence")))
            if card is None:
                await self._follow_up(entry, render.error_message(chat.CARD_GONE_MESSAGE), ephemeral=True)
                return
            shared_by = str(payload.get("shared_by") or "")
            public = self._card(card, ephemeral=False, asker_id=asker, shared_by=shared_by)
            if not await self._follow_up(entry, public, ephemeral=False):
                note = render.error_message("I could not post in this channel; the card was not shared.")
                await self._follow_up(entry, note, ephemeral=True)
            return
        parts = [str(payload.get("text") or "")]
        for stored in payload.get("files") or []:
            if isinstance(stored, dict):
                parts.append(await self._read_stored(stored, payload.get("message_id")))
        text = "\n".join(part for part in parts if part.strip())
        answer = await self.flows.answer_off_loop(text) if text.strip() else chat.Answer("no_text", text)
        message = self.render_answer(answer, ephemeral=True, asker_id=asker)
        await self._follow_up(entry, message, ephemeral=True)

    async def _follow_up(self, entry: OutboxEntry, message: DiscordMessage, *, ephemeral: bool) -> bool:
        """A follow-up through the stored token; False when Discord refused it (logged). No answer from
        Discord (`TryLater`) or a token it no longer knows (`Undeliverable`) raise for the worker."""
        payload = entry.payload
        webhook = discord.Webhook.from_state(
            data={"id": _int(payload.get("application_id")), "type": 3, "token": str(payload.get("token"))},
            state=self.client._connection,
        )
        try:
            await webhook.send(ephemeral=ephemeral, wait=True, **_send_kwargs(message))
        except discord.NotFound as exc:
            self.state.observer.api_error(PLATFORM, _error_name(exc))
            asked = payload.get("at")
            young = isinstance(asked, int | float) and time.time() - asked < ACK_IN_FLIGHT_SECONDS
            if young:  # its ack may still be on its way (another replica's)
                raise TryLater(f"Discord does not know its interaction yet ({_error_name(exc)})") from None
            raise Undeliverable(f"Discord no longer knows its interaction ({_error_name(exc)})") from None
        except discord.DiscordServerError as exc:
            self.state.observer.api_error(PLATFORM, _error_name(exc))
            raise TryLater(f"Discord answered {exc.status}") from None
        except discord.HTTPException as exc:
            if exc.status == 401:  # an invalid webhook token: it expired
                self.state.observer.api_error(PLATFORM, _error_name(exc))
                raise Undeliverable(f"Discord refused its token ({_error_name(exc)})") from None
            self._refused(exc, "a follow-up in channel %s", payload.get("channel_id"))
            return False
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self.state.observer.api_error(PLATFORM, exc.__class__.__name__)
            raise TryLater(f"Discord did not answer ({exc.__class__.__name__})") from None
        return True

    # -- Discord calls that never raise -------------------------------------------------------------------

    async def _reply(
        self, message: discord.Message, answer: DiscordMessage, what: str
    ) -> discord.Message | None:
        try:
            return await message.reply(mention_author=False, **_send_kwargs(answer))
        except discord.HTTPException as exc:
            self._refused(exc, "%s to message %s in channel %s", what, message.id, message.channel.id)
            return None

    async def _delete(self, channel_id: int, message_id: int, what: str) -> None:
        channel = self.client.get_partial_messageable(channel_id)
        try:
            await channel.get_partial_message(message_id).delete()
        except discord.HTTPException as exc:
            self._refused(exc, "deleting %s %s in %s", what, message_id, channel_id)

    async def _defer(self, interaction: discord.Interaction[Any], *, ephemeral: bool) -> bool:
        try:
            await interaction.response.defer(ephemeral=ephemeral, thinking=True)
        except discord.HTTPException as exc:
            self._refused(exc, "deferring interaction in %s", interaction.channel_id)
            return False
        return True

    async def _defer_update(self, interaction: discord.Interaction[Any]) -> None:
        try:
            await interaction.response.defer()
        except discord.HTTPException as exc:
            self._refused(exc, "acknowledging a click in %s", interaction.channel_id)

    async def respond(
        self, interaction: discord.Interaction[Any], message: DiscordMessage, *, ephemeral: bool = True
    ) -> None:
        """The interaction's answer, or a follow-up once it was answered (deferred)."""
        kwargs = _send_kwargs(message)
        try:
            if interaction.response.is_done():
                await interaction.followup.send(ephemeral=ephemeral, wait=True, **kwargs)
            else:
                await interaction.response.send_message(ephemeral=ephemeral, **kwargs)
        except discord.HTTPException as exc:
            self._refused(
                exc, "answering %s in channel %s", _interaction_name(interaction), interaction.channel_id
            )

    async def _update(
        self, interaction: discord.Interaction[Any], message: DiscordMessage, *, components_only: bool = False
    ) -> bool:
        """Edit the message a clicked component is on (callback type 7)."""
        view = build_view(message.components)
        kwargs: dict[str, Any] = {"view": view, "allowed_mentions": NO_PINGS}
        if not components_only:
            kwargs.update(content=message.content, embeds=message.embeds)
        try:
            await interaction.response.edit_message(**kwargs)
        except discord.HTTPException as exc:
            self._refused(exc, "updating a card in %s", interaction.channel_id)
            return False
        return True


class DiscordView:
    """An embed and its components for each kind of answer; a private card offers the other matches."""

    def __init__(self, handlers: PanicHandlers, *, ephemeral: bool, asker_id: int) -> None:
        self.handlers, self.ephemeral, self.asker_id = handlers, ephemeral, asker_id

    def note(self, text: str) -> DiscordMessage:
        return render.error_message(text)

    def usage(self) -> DiscordMessage:
        return render.usage_message()

    def no_match(self, result: LookupResult, query: str) -> DiscordMessage:
        return render.no_match_message(result, query=query)

    def card(self, card: Card, result: LookupResult) -> DiscordMessage:
        options = render.match_options(result.matches, card.record_id) if self.ephemeral else []
        return self.handlers._card(card, ephemeral=self.ephemeral, asker_id=self.asker_id, options=options)


class DiscordReplier:
    """Discord's side of an unasked reply: a reply to the paste (no pings), an edit, a deletion. The card
    keeps a 🗑 for `asker_id`, who wrote the paste."""

    def __init__(
        self,
        handlers: PanicHandlers,
        asker_id: int = 0,
        *,
        message: discord.Message | None = None,
        guild_id: int | None = None,
    ) -> None:
        self.handlers, self.asker_id, self.message, self.guild_id = handlers, asker_id, message, guild_id

    async def post(self, card: Card) -> str | None:
        assert self.message is not None, "a reply needs the paste it answers"
        answer = self.handlers._card(card, ephemeral=False, asker_id=self.asker_id)
        reply = await self.handlers._reply(self.message, answer, "auto-reply")
        if reply is None:
            return None
        log.info(
            "auto-replied to message %s in %s with record %s",
            self.message.id,
            self.message.channel.id,
            card.record_id,
        )
        return str(reply.id)

    async def update(self, reply: chat.PostedReply, card: Card) -> chat.Update:
        message = self.handlers._card(card, ephemeral=False, asker_id=self.asker_id)
        channel = self.handlers.client.get_partial_messageable(int(reply.channel), guild_id=self.guild_id)
        try:
            await channel.get_partial_message(int(reply.reply_id)).edit(**_send_kwargs(message))
        except discord.HTTPException as exc:
            self.handlers._refused(exc, "editing reply %s in %s", reply.reply_id, reply.channel)
            return chat.Update.GONE if isinstance(exc, discord.NotFound) else chat.Update.FAILED
        return chat.Update.DONE

    async def delete(self, reply: chat.PostedReply) -> None:
        await self.handlers._delete(int(reply.channel), int(reply.reply_id), "reply to a changed paste")


def autocomplete_choices(service: Lookup, current: str) -> list[tuple[str, str]]:
    """(name, value) choices for `/panic query:`, from the core's suggestion index. A value is
    `id:<record key>`, so the pick is exact."""
    return [
        (
            render.cut(render.one_line(record.errorMessage) or record.id, render.CHOICE_TEXT_MAX),
            render.ID_PREFIX + render.record_key(record.id),
        )
        for record in service.suggest(current, render.CHOICES_MAX)
    ]


def _int(value: object) -> int:
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _interaction_name(interaction: discord.Interaction[Any]) -> str:
    command = interaction.command
    return f"/{command.name}" if command is not None else f"interaction type {interaction.type.value}"


# -- the clients -------------------------------------------------------------------------------------------


def register_commands(tree: app_commands.CommandTree[Any], handlers: PanicHandlers) -> None:
    """`/panic query:` (with autocomplete) and the "Explain this panic" message command."""

    @app_commands.command(
        name=COMMAND_NAME, description="Explain a Rust panic: paste it, or type words of it"
    )
    @app_commands.describe(
        query="The panic as printed, or a few words of its message",
        public="Post the answer for everyone (default: only you see it)",
    )
    async def panic(
        interaction: discord.Interaction[Any],
        query: app_commands.Range[str, 1, QUERY_MAX],
        public: bool = False,
    ) -> None:
        await handlers.on_slash(interaction, query, public)

    @panic.autocomplete("query")
    async def complete(interaction: discord.Interaction[Any], current: str) -> list[app_commands.Choice[str]]:
        return await handlers.on_autocomplete(interaction, current)

    async def explain(interaction: discord.Interaction[Any], message: discord.Message) -> None:
        await handlers.on_explain(interaction, message)

    tree.add_command(panic)
    tree.add_command(app_commands.ContextMenu(name=CONTEXT_MENU_NAME, callback=explain))

    @tree.error
    async def on_tree_error(
        interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        log.error(
            "%s in channel %s failed: %s",
            _interaction_name(interaction),
            interaction.channel_id,
            error.__class__.__name__,
            exc_info=error,
        )
        # Only a command can be answered with a message (an autocomplete cannot).
        if (
            interaction.type is discord.InteractionType.application_command
            and not interaction.response.is_done()
        ):
            await handlers.respond(interaction, render.error_message("Something went wrong; try again."))


class _PanicClient:
    """What panicbot adds to a discord.py client; mixed into `Client` and `AutoShardedClient` below."""

    def __init__(
        self, settings: DiscordSettings, service: Lookup, state: DiscordState, **options: Any
    ) -> None:
        super().__init__(  # type: ignore[call-arg]
            intents=panic_intents(settings), allowed_mentions=NO_PINGS, **options
        )
        client = cast(discord.Client, self)
        self.tree: app_commands.CommandTree[Any] = app_commands.CommandTree(client)
        self.panic = PanicHandlers(client, settings, service, state)
        register_commands(self.tree, self.panic)

    async def setup_hook(self) -> None:
        client = cast(discord.Client, self)
        # A plain Client never asks for the gateway URL: take it from the REST base (DISCORD_API_URL).
        _, url, _ = await client.http.get_bot_gateway()
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        client.add_dynamic_items(*DYNAMIC_ITEMS)
        owed = self.panic.state.owed
        if owed is not None:  # follow-ups need REST only: those left by a stop go out now
            owed.worker.start()

    async def on_ready(self) -> None:
        self.panic.state.connected = True
        log.info("connected to Discord as %s", cast(discord.Client, self).user)

    async def on_resumed(self) -> None:
        self.panic.state.connected = True

    async def on_disconnect(self) -> None:
        self.panic.state.connected = False

    async def on_message(self, message: discord.Message) -> None:
        await self.panic.on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.panic.on_raw_message_edit(payload)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.panic.on_raw_message_delete(payload)

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self.panic.on_raw_bulk_message_delete(payload)


class PanicBot(_PanicClient, discord.Client):
    """One gateway connection."""


class ShardedPanicBot(_PanicClient, discord.AutoShardedClient):
    """All shards (or the DISCORD_SHARD_IDS of DISCORD_SHARD_COUNT) in one process."""


def build_client(
    settings: DiscordSettings, service: Lookup, state: DiscordState | None = None, **options: Any
) -> PanicBot | ShardedPanicBot:
    """The client with every handler registered; `options` go to discord.py (tests shorten timeouts)."""
    # panicbot never joins voice: the "PyNaCl/davey is not installed" warnings would only alarm operators.
    discord.VoiceClient.warn_nacl = False
    discord.VoiceClient.warn_dave = False
    state = state or DiscordState(cooldown_seconds=settings.discord_auto_reply_cooldown_seconds)
    if settings.sharded:
        ids = list(settings.discord_shard_ids) if settings.discord_shard_ids is not None else None
        return ShardedPanicBot(
            settings, service, state, shard_count=settings.discord_shard_count, shard_ids=ids, **options
        )
    return PanicBot(settings, service, state, **options)
