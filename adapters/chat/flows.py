"""The conversation every chat platform has, written once: lookups with their metrics, the per-user rate
limit, the answer to a question, the unasked reply with its cooldown, following the paste's edits and
deletion, votes, "more matches", and the drain on shutdown. A platform translates its events into these
calls and renders what they return; it sends messages through a `Replier` bound to the event."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from adapters.answers import follow_edit, paste_digest, unasked_card, undo_edit
from adapters.chat.paste_readers import LARGE_PASTE_CHARS, PasteReaders
from adapters.chat.replies import REPLY_TTL_SECONDS, PostedReply
from adapters.local_memory import (
    Clock,
    Cooldown,
    CooldownGate,
    EventDeduper,
    ExpiringMap,
    FeedbackStore,
    InMemoryFeedbackStore,
    KeyedMemory,
    LocalMemory,
    SeenEvents,
)
from adapters.observe import Observer, Observers
from adapters.redis_memory import RATE_LIMITED_MESSAGE, RateLimit
from bot import Card, Lookup, LookupResult, Match, PasteReading

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")
T = TypeVar("T")
M_co = TypeVar("M_co", covariant=True)

NO_TEXT_MESSAGE = "That message has no text to explain."
CARD_GONE_MESSAGE = "That card is no longer available."
VOTE_FAILED_MESSAGE = "Your vote could not be saved; try again later."

# Lookups of the unasked path run in a small pool of their own, off the event loop, so acks and health checks
# never wait behind a large paste. The core is pure Python: its threads share the GIL, but the loop gets it
# back every switch interval, and two threads keep the default executor (DNS, votes) free.
LOOKUP_THREADS = 2
_LOOKUPS = ThreadPoolExecutor(max_workers=LOOKUP_THREADS, thread_name_prefix="panicbot-lookup")
# A large paste is read in a worker process first (adapters/chat/paste_readers.py): its lookup thread then
# holds the GIL only for the short part.
PASTE_READERS = PasteReaders()
# Unasked lookups queued or running per channel; beyond, a paste is dropped (counted): no per-user limit
# holds this path back, so one noisy channel must not queue work for everyone.
UNASKED_PER_CHANNEL = 4


class Update(Enum):
    """What became of a reply the flows asked a platform to change."""

    DONE = "done"
    FAILED = "failed"  # it still shows what it showed
    GONE = "gone"  # it is not there any more (deleted, channel gone)


@dataclass(frozen=True)
class Paste(Generic[K]):
    """Someone's message, as the flows see it: its key in the replies memory, the channel whose cooldown
    it counts against, its text, and who wrote it. `digest`: its text's digest when `text` is not the text
    as written (a paste kept redacted in an outbox); by default the digest of `text`."""

    key: K
    channel: str
    text: str
    author: str = ""
    digest: str = ""

    @property
    def text_digest(self) -> str:
        return self.digest or paste_digest(self.text)


def holder_of(key: Hashable) -> str:
    """A paste's name as the cooldown's holder of the record its reply shows (`CooldownGate.allow`)."""
    if isinstance(key, tuple):
        return "/".join(str(part) for part in key)
    return str(key)


# Finds a paste's reply on the platform (by what the reply carries) when memory does not know it, or no
# longer can be trusted to: after a restart, or for work tried again. None: no reply found.
Recover = Callable[[], Awaitable[PostedReply | None]]


class Replier(Protocol):
    """How a platform shows a card unasked, bound to the event that asks for it (where to thread, whom
    the card answers). Each method logs and counts a refusal itself and never raises."""

    async def post(self, card: Card) -> str | None:
        """Post the card as a reply to the paste; the reply's id, or None when the platform refused."""

    async def update(self, reply: PostedReply, card: Card) -> Update:
        """Show `card` in the reply instead of what it shows."""

    async def delete(self, reply: PostedReply) -> None:
        """Remove the reply."""


AnswerKind = Literal["usage", "refused", "no_text", "no_match", "card"]


@dataclass(frozen=True)
class Answer:
    """What a question comes to; each platform renders it (`card` with `result` for a card, `result`
    for "no known record", nothing else for usage, a refusal or a message without text)."""

    kind: AnswerKind
    query: str = ""
    result: LookupResult | None = None
    card: Card | None = None

    @property
    def known(self) -> bool:
        """A known record answers it."""
        return self.result is not None and self.result.best is not None

    def shown(self, view: AnswerView[M]) -> M:
        """The platform's message for this answer."""
        if self.kind == "refused":
            return view.note(RATE_LIMITED_MESSAGE)
        if self.kind == "no_text":
            return view.note(NO_TEXT_MESSAGE)
        if self.result is None:
            return view.usage()
        if self.card is None:
            return view.no_match(self.result, self.query)
        return view.card(self.card, self.result)


class AnswerView(Protocol[M_co]):
    """How a platform shows each kind of answer (its messages are `M_co`)."""

    def note(self, text: str) -> M_co:
        """A short plain note: a refusal, a message without text."""

    def usage(self) -> M_co:
        """How to ask."""

    def no_match(self, result: LookupResult, query: str) -> M_co:
        """No known record: nearby ones, and what was looked up."""

    def card(self, card: Card, result: LookupResult) -> M_co:
        """The answer's card, the other matches of `result` at hand."""


async def _logged(work: Coroutine[Any, Any, None], platform: str) -> None:
    try:
        await work
    except Exception:
        logging.getLogger(f"panicbot.{platform}").exception("a %s reply failed", platform.capitalize())


@dataclass
class ChatState(Generic[K]):
    """What a platform's handlers remember, built once per process: the replies memory is keyed by
    the platform's name for a paste (`K`). Shared parts (dedupe, cooldowns, rate limit, replies) may be
    Redis-backed ones the deployment passes; in-process by default."""

    platform: ClassVar[str] = "chat"  # names the logger: panicbot.<platform>
    clock: Clock = time.monotonic
    cooldown_seconds: float = 600.0
    feedback: FeedbackStore = field(default_factory=InMemoryFeedbackStore)
    observer: Observer = field(default_factory=Observers)
    seen: EventDeduper | None = None
    cooldown: CooldownGate | None = None
    # Per user, on what a user asks for (unasked replies: the channel cooldown); None: no limit.
    rate_limit: RateLimit | None = None
    # Unasked replies by their paste's key, to follow its edits and deletion.
    posted_replies: KeyedMemory[K, PostedReply] | None = None

    def __post_init__(self) -> None:
        if self.seen is None:
            self.seen = SeenEvents(self.clock)
        if self.cooldown is None:
            self.cooldown = Cooldown(self.cooldown_seconds, self.clock)
        if self.posted_replies is None:
            self.posted_replies = LocalMemory(REPLY_TTL_SECONDS, 50_000, self.clock)
        # A reply's key -> its paste's key, so a deleted reply is forgotten (this process's replies).
        self.reply_sources: ExpiringMap[K, K] = ExpiringMap(REPLY_TTL_SECONDS, 50_000, self.clock)
        # Handlers and replies in flight: a graceful stop lets them finish and takes no new work.
        self.pending: set[asyncio.Task[Any]] = set()
        # Unasked lookups queued or running, per channel, and those dropped over the cap (a metric).
        self.unasked_queued: dict[str, int] = {}
        self.unasked_dropped = 0
        self.stopping = False

    @property
    def replies(self) -> KeyedMemory[K, PostedReply]:
        """The unasked replies, given or in-process (never None after construction)."""
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
        """Run a reply in the background, counted in flight; failures are logged, never lost silently."""
        task = asyncio.get_running_loop().create_task(_logged(work, self.platform))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def track(self) -> bool:
        """Count the running handler in flight until it ends; False once stopping (it should return)."""
        if self.stopping:
            return False
        task = asyncio.current_task()
        if task is not None and task not in self.pending:
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)
        return True

    async def drain(self, timeout: float) -> None:
        """Take no new work and let what is in flight finish, for at most `timeout` seconds."""
        self.stopping = True
        running = {task for task in self.pending if task is not asyncio.current_task()}
        if not running:
            return
        _, late = await asyncio.wait(running, timeout=timeout)
        if late:
            logging.getLogger(f"panicbot.{self.platform}").warning(
                "stopping with %d %s handler(s) still running", len(late), self.platform.capitalize()
            )


class ChatFlows(Generic[K]):
    """The platform-neutral conversation over one catalog (`Lookup`) and one `ChatState`.

    `reply_key` names a posted reply as the platform names a message, so that deleting our reply is
    recognised as such."""

    def __init__(
        self,
        platform: str,
        service: Lookup,
        state: ChatState[K],
        reply_key: Callable[[PostedReply], K],
    ) -> None:
        self.platform, self.service, self.state, self.reply_key = platform, service, state, reply_key
        self.log = logging.getLogger(f"panicbot.{platform}")
        # Edits being looked up: a paste's latest, by its number, so an earlier one finishing late is dropped.
        self._edit_count = 0
        self._latest_edit: dict[K, int] = {}

    # -- asking ---------------------------------------------------------------------------------------

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        """The core's lookup, timed and reported to the observers."""
        started = time.perf_counter()
        result = self.service.lookup(text, limit=limit)
        self.state.observer.looked_up(self.platform, result, time.perf_counter() - started)
        return result

    async def lookup_off_loop(self, text: str, limit: int = 5, *, observed: bool = True) -> LookupResult:
        """The core's lookup in the lookup pool, a large paste read in a worker process first; reported to
        the observers from the loop (unless not `observed`: a probe whose text is looked up again, and
        counted, afterwards)."""
        reading: PasteReading | None = None
        read_seconds = 0.0
        if len(text) >= LARGE_PASTE_CHARS:
            started = time.perf_counter()
            reading = await PASTE_READERS.read(text)
            read_seconds = time.perf_counter() - started

        def timed() -> tuple[LookupResult, float]:
            started = time.perf_counter()
            if reading is None:
                result = self.service.lookup(text, limit=limit)
            else:
                result = self.service.lookup_reading(reading, limit=limit)
            return result, read_seconds + time.perf_counter() - started

        loop = asyncio.get_running_loop()
        result, seconds = await loop.run_in_executor(_LOOKUPS, timed)
        if observed:
            self.state.observer.looked_up(self.platform, result, seconds)
        return result

    async def off_loop(self, work: Callable[[], T]) -> T:
        """`work` (a call into the core: autocomplete, say) in the lookup pool, never on the event loop."""
        return await asyncio.get_running_loop().run_in_executor(_LOOKUPS, work)

    async def too_many(self, user: str) -> bool:
        """True when this user has asked more than the per-user limit allows (one person cannot flood)."""
        limiter = self.state.rate_limit
        if limiter is None or not user or await limiter.allow(user):
            return False
        self.log.info("user %s is over the per-user limit: not answered", user)
        return True

    @staticmethod
    def _usage(text: str) -> bool:
        return not text.strip() or text.strip().lower() == "help"

    def _answered(self, text: str, result: LookupResult) -> Answer:
        card = self.service.card(result)
        if card is None:
            return Answer("no_match", text, result)
        return Answer("card", text, result, card)

    def answer(self, text: str) -> Answer:
        """The answer to a paste or query: a card, "no known record", or usage for an empty one. It looks
        up on the calling thread: a handler on the event loop awaits `answer_off_loop` instead."""
        if self._usage(text):
            return Answer("usage", text)
        return self._answered(text, self.lookup(text))

    async def answer_off_loop(self, text: str) -> Answer:
        """`answer`, its lookup in the lookup pool: a large paste never holds up the event loop."""
        if self._usage(text):
            return Answer("usage", text)
        return self._answered(text, await self.lookup_off_loop(text))

    async def ask_off_loop(self, user: str, text: str) -> Answer:
        """A typed question (`/panic`): refused over the per-user limit, else the answer, its lookup in
        the lookup pool."""
        if await self.too_many(user):
            return Answer("refused", text)
        return await self.answer_off_loop(text)

    async def explain(self, user: str, read: Callable[[], Awaitable[str]]) -> Answer:
        """ "Explain this panic" on a message: refused over the limit (before reading it), else the answer
        to the message's text, read by `read` (a download may come first)."""
        if await self.too_many(user):
            return Answer("refused")
        text = await read()
        if not text.strip():
            return Answer("no_text", text)
        return await self.answer_off_loop(text)

    async def first_time(self, event_id: str) -> bool:
        """False for an event already handled (a platform's re-delivery, maybe to another replica)."""
        return await self.state.dedupe.first_time(event_id)

    # -- unasked replies --------------------------------------------------------------------------------

    async def unasked_reply(self, paste: Paste[K], replier: Replier) -> None:
        """The card, posted without being asked, for a paste confident enough; at most one per record per
        channel per cooldown. Remembered, to follow the paste's edits and deletion. Over
        `UNASKED_PER_CHANNEL` lookups waiting in the paste's channel, it is dropped and counted."""
        queued = self.state.unasked_queued
        if queued.get(paste.channel, 0) >= UNASKED_PER_CHANNEL:
            self.state.unasked_dropped += 1
            self.log.debug("too many unasked lookups queued in %s: paste dropped", paste.channel)
            return
        queued[paste.channel] = queued.get(paste.channel, 0) + 1
        try:
            result = await self.lookup_off_loop(paste.text)
        finally:
            queued[paste.channel] -= 1
            if not queued[paste.channel]:
                del queued[paste.channel]
        card = unasked_card(self.service, result)
        if card is None:
            return
        # Held by this paste: its reply tried again (after a stop, a crash, no answer from the platform)
        # is not held back by the hold its earlier try took and could not give back.
        if not await self.state.gate.allow(paste.channel, card.record_id, holder_of(paste.key)):
            self.log.info(
                "record %s answered in %s within the cooldown: not again", card.record_id, paste.channel
            )
            return
        # Cut short (a stop) or to be tried again (an outbox's retry), the post may have gone out: the hold
        # stays, in this paste's name. Its retry (on any replica) takes it again and finds a reply that did
        # go out (a platform's marker); meanwhile no other paste's card for the record is posted. A reply
        # never tried again keeps the record held until the cooldown ends. Only a refusal gives it back.
        reply_id = await replier.post(card)
        if reply_id is None:
            await self.state.gate.release(paste.channel, card.record_id)
            return
        await self._remember(
            paste.key, PostedReply(paste.channel, reply_id, card.record_id, paste.text_digest)
        )
        self.state.observer.auto_replied(self.platform, card.record_id)

    async def _remember(self, key: K, reply: PostedReply) -> None:
        await self.state.replies.put(key, reply)
        self.state.reply_sources.put(self.reply_key(reply), key)

    async def forget(self, reply_key: K) -> None:
        """Our reply `reply_key` is gone: its paste no longer has one to edit or delete."""
        source = self.state.reply_sources.pop(reply_key)
        if source is not None:
            await self.state.replies.pop(source)

    async def edited(
        self,
        key: K,
        text: str,
        replier: Replier,
        *,
        digest: str = "",
        recover: Recover | None = None,
        resumed: bool = False,
    ) -> None:
        """The paste `key` now reads `text`: its reply shows the card for it, or goes when the paste no
        longer warrants one. A link preview or a pin (same text) changes nothing. An edit never creates a
        reply: a paste without one (never answered, its reply refused or deleted) gets none.

        `digest`: that of the text as written when `text` is not (kept redacted in an outbox). `recover`
        finds the reply on the platform when memory does not know it (a restart), and for an edit tried
        again (`resumed`), whose earlier try may have changed memory but not the reply: then what the
        platform shows is the truth."""
        written = digest or paste_digest(text)
        reply = await self.state.replies.get(key)
        recovered = None
        if recover is not None and (reply is None or resumed):
            recovered = await recover()
            if recovered is not None:  # what the platform shows: remembered as the paste's reply again
                await self._remember(key, recovered)
                reply = recovered
        if reply is None or (reply.paste_digest and reply.paste_digest == written):
            return
        # The lookup runs in the lookup pool; meanwhile the paste may be edited again (the latest edit
        # wins: an earlier one still looking up is dropped) or deleted (its reply is gone: nothing to do).
        self._edit_count += 1
        edit = self._latest_edit[key] = self._edit_count
        try:
            card = unasked_card(self.service, await self.lookup_off_loop(text))
        finally:
            latest = self._latest_edit.get(key) == edit
            if latest:
                del self._latest_edit[key]
        if not latest:
            return
        reply = recovered or await self.state.replies.get(key)
        if reply is None:
            return
        holder = holder_of(key)
        outcome = await follow_edit(
            record_id=reply.record_id,
            digest=reply.paste_digest,
            text=text,
            answer=lambda _: card,
            gate=self.state.gate,
            place=reply.channel,
            holder=holder,
            text_digest=written,
        )
        if outcome is None:
            return
        card = outcome.card
        # Memory first, then the platform: an event handled while a call is in flight sees the new state.
        # A call cut short or to be tried again puts memory back (`_not_done`): the next try makes it again.
        if card is None:
            await self.state.replies.pop(key)
            self.state.reply_sources.pop(self.reply_key(reply))
            try:
                await self._remove(reply, replier)
            except BaseException:
                await self._not_done(key, None, reply)
                raise
            return
        changed = PostedReply(reply.channel, reply.reply_id, card.record_id, written)
        await self._remember(key, changed)
        try:
            done = await replier.update(reply, card)
        except BaseException:
            await self._not_done(key, changed, reply)
            raise
        if done is Update.DONE:
            return
        gone = done is Update.GONE
        if gone:
            await self.forget(self.reply_key(reply))
        else:
            await self._remember(key, reply)  # it still shows what it showed
        await undo_edit(
            self.state.gate,
            reply.channel,
            shown=card.record_id,
            previous=reply.record_id,
            reply_gone=gone,
            holder=holder,
        )

    async def deleted(self, key: K, replier: Replier, *, recover: Recover | None = None) -> None:
        """A deleted paste takes our reply with it (and frees the cooldown); a deleted reply is forgotten.
        `recover` finds the reply on the platform when memory does not know it (a restart, a try again)."""
        reply = await self.state.replies.pop(key)
        await self.forget(key)
        if reply is None and recover is not None:
            reply = await recover()
        if reply is not None:
            self.state.reply_sources.pop(self.reply_key(reply))
            try:
                await self._remove(reply, replier)
            except BaseException:
                await self._not_done(key, None, reply)
                raise

    async def _not_done(self, key: K, written: PostedReply | None, reply: PostedReply) -> None:
        """A change to `reply` (an update, a deletion) cut short (a stop) or to be tried again (no answer
        from the platform): it may not have been applied. Memory goes back to what the reply surely showed
        (unless something else replaced `written`, the change's own entry, meanwhile), so the next try
        makes the change again (twice is harmless) instead of finding it done; and the record the reply
        showed stays held in the paste's name until then, as the record it is to show is: no other paste's
        card for either meanwhile."""
        if await self.state.replies.get(key) == written:
            await self._remember(key, reply)
        await self.state.gate.allow(reply.channel, reply.record_id, holder_of(key))

    async def _remove(self, reply: PostedReply, replier: Replier) -> None:
        await replier.delete(reply)
        await self.state.gate.release(reply.channel, reply.record_id)

    # -- the card's buttons -----------------------------------------------------------------------------

    def card_for(self, record_id: str, confidence: float) -> Card | None:
        """A record's card, named by a button pressed later; None when the catalog no longer has it."""
        return self.service.card_for_record(record_id, confidence)

    def alternatives(self, named: Sequence[tuple[str, float]]) -> LookupResult:
        """ "More matches": the records a card's button names, with their confidence, as a result (no
        paste is kept: the names ride in the button). Records no longer in the catalog are left out."""
        matches = []
        for rank, (record_id, confidence) in enumerate(named):
            record = self.service.record(record_id)
            if record is not None:
                matches.append(Match.for_record(record, rank, confidence=confidence))
        return LookupResult(panics=(), matches=tuple(matches), answer_panic=None, auto_reply=False)

    async def vote(self, *, record_id: str, user: str, vote: str, place: str) -> bool:
        """Store a 👍/👎; False (logged) when the store failed, so the user is told instead of losing it."""
        try:
            await asyncio.to_thread(
                self.state.feedback.record_vote,
                record_id=record_id,
                user_id=user,
                vote=vote,
                platform=self.platform,
                place=place,
            )
        except Exception:  # the store may be a database
            self.log.exception("storing a vote on %s failed", record_id)
            return False
        self.state.observer.voted(self.platform, vote)
        return True

    async def tally(self, *, record_id: str, place: str) -> dict[str, int]:
        """Everyone's votes on a record at one place (a public card speaks for nobody in particular)."""
        return await asyncio.to_thread(
            self.state.feedback.tally, record_id=record_id, platform=self.platform, place=place
        )
