"""GitHub issues in, core calls, one markdown comment out: a GitHub App (or a single-repository token)
behind `POST /github/events` on the service's HTTP port.

- `issues` opened/edited and `issue_comment` created/edited: in the repositories of
  `GITHUB_AUTO_REPLY_REPOS`, a paste the core marks for auto-reply gets one comment with the card, changed in
  place when the paste is edited and deleted when the panic is gone (never on pull requests unless
  `GITHUB_AUTO_REPLY_PULL_REQUESTS`);
- `@panicbot` in a comment, anywhere the app is installed: the card for the comment (and what it quotes),
  else for the issue, always answered;
- 👍/👎 reactions on the bot's comments are read back as votes on the issue's next event and on a schedule.

Deliveries are checked on their raw bytes (`X-Hub-Signature-256`) before anything parses them, deduplicated
on `X-GitHub-Delivery` (through Redis with several replicas), acknowledged at once and answered afterwards
(GitHub wants a 2XX within 10 seconds)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
from aiohttp import web

from adapters import chat
from adapters.answers import paste_digest
from adapters.github import render
from adapters.github.api import (
    REQUEST_TIMEOUT_SECONDS,
    AppAuth,
    Auth,
    GitHubApi,
    GitHubApiError,
    GitHubUnreachable,
    TokenAuth,
)
from adapters.github.settings import GitHubSettings, load_github_settings, read_private_key
from adapters.local_memory import ExpiringMap, KeyedMemory, LocalMemory
from adapters.outbox import Outbox, OutboxEntry, OutboxWorker, TryLater
from adapters.platforms import Host, ServeOptions, until_reachable
from adapters.redis_memory import RedisKeyedMemory
from adapters.settings import PlatformRefused, PlatformUnreachable
from adapters.webhooks import read_body
from bot import Card, Lookup, LookupResult, redact

log = logging.getLogger("panicbot.github")

NAME = "github"
EVENTS_PATH = "/github/events"
# GitHub caps a delivery at 25 MB; an issue body of a megabyte (escaped in JSON) fits easily in this. The
# core reads a paste within its own limits (bot.extract), so a larger text costs no more than that.
MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_READ_TIMEOUT_SECONDS = 10.0
# One card per record per issue for as long as the bot follows a paste's edits.
COOLDOWN_SECONDS = float(chat.REPLY_TTL_SECONDS)
# Reactions are not delivered by webhook: the bot's recent comments are read back this often.
VOTE_SYNC_SECONDS = 15 * 60
RECENT_REPLIES = 1_000  # comments whose reactions the schedule reads (this process's newest)
_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")
_DELIVERY = re.compile(r"[0-9A-Za-z-]{1,64}")
_VOTES = {"+1": "up", "-1": "down"}


@dataclass(frozen=True)
class Handled:
    """The newest state of an issue's description or a comment the bot acted on: GitHub's `updated_at`
    of it and a digest of its text (`deleted` once it is gone)."""

    updated_at: str
    digest: str
    deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"updated_at": self.updated_at, "digest": self.digest, "deleted": self.deleted}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Handled:
        updated_at, digest, deleted = data.get("updated_at"), data.get("digest"), data.get("deleted", False)
        if not isinstance(updated_at, str) or not isinstance(digest, str) or not isinstance(deleted, bool):
            raise ValueError("not a handled state")
        return cls(updated_at, digest, deleted)


def _stamp(text: str) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def is_stale(event: Handled, newest: Handled | None) -> bool:
    """True when `event` is older than the newest state already handled (or that same state again): a
    redelivery or a late delivery, which must change nothing. An event without a readable time is never
    stale (nothing to compare)."""
    if newest is None:
        return False
    mine, theirs = _stamp(event.updated_at), _stamp(newest.updated_at)
    if mine is None or theirs is None:
        return False
    if mine != theirs:
        return mine < theirs
    # The same second: the same text again (or anything after a deletion) is a replay; other text is a
    # second edit within that second.
    return newest.deleted or event.digest == newest.digest


@dataclass
class GitHubState(chat.ChatState[str]):
    """What the handlers remember, built once per process. Pastes and replies are keyed `owner/name#12`
    (an issue's description) and `owner/name#c345` (a comment); with Redis, shared by every replica."""

    platform = NAME
    # The newest state handled of each issue description and comment (`Handled`), by the same keys.
    handled: KeyedMemory[tuple[str, ...], Handled] | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.outbox: OutboxWorker | None = None  # answers the deliveries acknowledged (set at start)
        if self.handled is None:
            self.handled = LocalMemory(COOLDOWN_SECONDS, 100_000, self.clock)

    @property
    def newest(self) -> KeyedMemory[tuple[str, ...], Handled]:
        assert self.handled is not None
        return self.handled


def shared_github_state(client: Any, prefix: str) -> dict[str, Any]:
    """What GitHub's replicas share in Redis besides dedupe and cooldowns: the cards, and the newest state
    handled of each paste (so a late delivery to another replica changes nothing either)."""
    handled = RedisKeyedMemory(
        client, prefix, "handled", COOLDOWN_SECONDS, Handled.to_json, Handled.from_json
    )
    return {**chat.shared_replies(client, prefix), "handled": handled}


def issue_key(repo: str, number: int) -> str:
    return f"{repo.lower()}#{number}"


def comment_key(repo: str, comment_id: int | str) -> str:
    return f"{repo.lower()}#c{comment_id}"


def _reply_key(reply: chat.PostedReply) -> str:
    # A reply's channel is its issue (`owner/name#12`, the cooldown's place); its id, the comment's.
    return comment_key(reply.channel.rsplit("#", 1)[0], reply.reply_id)


def signature_is_valid(secret: str, body: bytes, signature: str | None) -> bool:
    """GitHub's `X-Hub-Signature-256` (`sha256=` and the hex HMAC-SHA256 of the raw body), constant time."""
    if not signature or not _SIGNATURE.fullmatch(signature):
        return False
    expected = "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii"))


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _id(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True)
class Issue:
    """The issue (or pull request) an event is about, and the installation that may write to it."""

    repo: str
    number: int
    installation: int | None
    pull_request: bool = False

    @property
    def key(self) -> str:
        return issue_key(self.repo, self.number)


@dataclass(frozen=True)
class _Tracked:
    issue: Issue
    comment_id: str
    record_id: str


class AnswerLater(TryLater):
    """GitHub could not take an answer now (no answer, or its own error): the delivery stays in the outbox
    and is tried again later."""


class GitHubView:
    """A comment's markdown for each kind of answer to a mention."""

    def __init__(self, slug: str, source: str) -> None:
        self.slug, self.source = slug, source

    # Every answer carries the hidden marker naming the mention it answers, so an answer posted just before
    # a crash is found again instead of posted twice (`answered_before`).
    def note(self, text: str) -> str:
        return render.marked(render.note_comment(text), render.Marker(render.NO_RECORD, self.source))

    def usage(self) -> str:
        return render.marked(render.usage_comment(self.slug), render.Marker(render.NO_RECORD, self.source))

    def no_match(self, result: LookupResult, query: str) -> str:
        marker = render.Marker(render.NO_RECORD, self.source)
        return render.marked(render.no_match_comment(result, query), marker)

    def card(self, card: Card, result: LookupResult) -> str:
        return render.card_comment(card, render.Marker(card.record_id, self.source))


class GitHubReplier:
    """GitHub's side of an unasked reply: a comment on the paste's issue, edited and deleted in place. The
    comment's marker names the paste (`source`) and its digest, so the bot finds it again after a restart."""

    def __init__(self, handlers: GitHubHandlers, issue: Issue, source: str, text: str) -> None:
        self.handlers, self.issue, self.source, self.text = handlers, issue, source, text

    def _comment(self, card: Card) -> str:
        return render.card_comment(card, render.Marker(card.record_id, self.source, paste_digest(self.text)))

    async def post(self, card: Card) -> str | None:
        return await self.handlers.post(self.issue, self._comment(card), card.record_id)

    async def update(self, reply: chat.PostedReply, card: Card) -> chat.Update:
        api = self.handlers.api
        try:
            await api.update_comment(
                self.issue.repo, reply.reply_id, self._comment(card), self.issue.installation
            )
        except GitHubApiError as exc:
            self.handlers.refused(exc)
            return chat.Update.GONE if exc.status in (404, 410) else chat.Update.FAILED
        self.handlers.track(self.issue, reply.reply_id, card.record_id)
        return chat.Update.DONE

    async def delete(self, reply: chat.PostedReply) -> None:
        self.handlers.untrack(reply.reply_id)
        try:
            await self.handlers.api.delete_comment(self.issue.repo, reply.reply_id, self.issue.installation)
        except GitHubApiError as exc:
            if exc.status != 404:  # already gone is what we wanted
                self.handlers.refused(exc)


class GitHubHandlers:
    """Each delivery turned into `ChatFlows` calls."""

    def __init__(self, settings: GitHubSettings, service: Lookup, state: GitHubState, api: GitHubApi) -> None:
        self.settings, self.service, self.state, self.api = settings, service, state, api
        self.flows = chat.ChatFlows(NAME, service, state, _reply_key)
        slug = re.escape(settings.github_app_slug)
        self.mention = re.compile(rf"(?<![\w/@.-])@{slug}(?:\[bot\])?(?![\w-])", re.IGNORECASE)
        self.bot_login = f"{settings.github_app_slug}[bot]"
        self.own_logins: set[str] = {self.bot_login}
        self.recent: OrderedDict[str, _Tracked] = OrderedDict()
        self._votes_seen: ExpiringMap[tuple[str, str], str] = ExpiringMap(
            COOLDOWN_SECONDS, 100_000, state.clock
        )

    # -- deliveries ---------------------------------------------------------------------------------------

    async def handle_entry(self, entry: OutboxEntry) -> None:
        """One delivery from the outbox (its `job`)."""
        event = _text(entry.payload.get("event"))
        await self.handle(event, entry.payload, delivery=entry.key, resumed=entry.attempts > 0)

    async def handle(
        self, event: str, payload: dict[str, Any], *, delivery: str = "", resumed: bool = False
    ) -> None:
        """One delivery, after it was acknowledged. `resumed`: it was in hand before (a stop cut it short, or
        its replica died): what it may have posted already is looked for first, never posted twice."""
        repo = _text(_dict(payload.get("repository")).get("full_name"))
        issue_info = _dict(payload.get("issue"))
        number = _id(issue_info.get("number"))
        if not repo or number is None or event not in ("issues", "issue_comment"):
            return
        issue = Issue(
            repo, number, _id(_dict(payload.get("installation")).get("id")), "pull_request" in issue_info
        )
        action = _text(payload.get("action"))
        if await self.stale(event, action, issue, payload):
            log.info("delivery %s is older than what was handled already: it changes nothing", delivery)
            return
        sender = _dict(payload.get("sender"))
        by_bot = sender.get("type") == "Bot" or _text(sender.get("login")) in self.own_logins
        author = _text(sender.get("login"))
        if event == "issues":
            await self.on_issue(action, issue, issue_info, author, by_bot=by_bot, resumed=resumed)
        else:
            comment = _dict(payload.get("comment"))
            await self.on_comment(action, issue, comment, issue_info, author, by_bot=by_bot, resumed=resumed)
        await self.read_votes_of(issue)

    async def stale(self, event: str, action: str, issue: Issue, payload: dict[str, Any]) -> bool:
        """Whether this event is older than the newest one handled for its issue or comment (then it
        changes nothing); when it is the newest, it is remembered as such. Only the actions the bot acts
        on count: a label changes `updated_at` but not the text."""
        if event == "issues":
            if action not in ("opened", "edited", "deleted"):
                return False
            target, key = _dict(payload.get("issue")), issue.key
        else:
            target = _dict(payload.get("comment"))
            comment_id = _id(target.get("id"))
            if action not in ("created", "edited", "deleted") or comment_id is None:
                return False
            key = comment_key(issue.repo, comment_id)
        updated_at = _text(target.get("updated_at"))
        if not updated_at:
            return False
        this = Handled(updated_at, paste_digest(_text(target.get("body"))), action == "deleted")
        if is_stale(this, await self.state.newest.get((key,))):
            return True
        await self.state.newest.put((key,), this)
        return False

    def auto_reply(self, issue: Issue) -> bool:
        if issue.repo.lower() not in self.settings.github_auto_reply_repos:
            return False
        return not issue.pull_request or self.settings.github_auto_reply_pull_requests

    async def on_issue(
        self,
        action: str,
        issue: Issue,
        info: dict[str, Any],
        author: str,
        *,
        by_bot: bool,
        resumed: bool = False,
    ) -> None:
        key = issue.key
        if action == "deleted":  # its comments went with it
            reply = await self.state.replies.pop(key)
            if reply is not None:
                self.untrack(reply.reply_id)
            return
        if by_bot or action not in ("opened", "edited") or not self.auto_reply(issue):
            return
        text = _text(info.get("body"))
        paste = chat.Paste(key, issue.key, text, author)
        replier = GitHubReplier(self, issue, "issue", text)
        if action == "opened":
            if resumed and await self.answered_before(paste.key, "issue", issue, remember=True):
                return
            await self.flows.unasked_reply(paste, replier)
        else:
            await self.follow(paste, "issue", issue, replier)

    async def on_comment(
        self,
        action: str,
        issue: Issue,
        comment: dict[str, Any],
        issue_info: dict[str, Any],
        author: str,
        *,
        by_bot: bool,
        resumed: bool = False,
    ) -> None:
        comment_id = _id(comment.get("id"))
        if comment_id is None:
            return
        key = comment_key(issue.repo, comment_id)
        source = f"c{comment_id}"
        body = _text(comment.get("body"))
        if action == "deleted":
            self.untrack(str(comment_id))
            await self.flows.deleted(key, GitHubReplier(self, issue, source, ""))
            return
        if by_bot or _dict(comment.get("user")).get("type") == "Bot" or render.MARKER_PREFIX in body:
            return  # our own comments (and other bots') come back as events too
        if action == "created" and self.mention.search(body):
            if resumed and await self.answered_before(key, source, issue, remember=False):
                return
            await self.answer_mention(issue, comment_id, body, _text(issue_info.get("body")), author)
            return
        if action not in ("created", "edited") or not self.auto_reply(issue):
            return
        paste = chat.Paste(key, issue.key, body, author)
        replier = GitHubReplier(self, issue, source, body)
        if action == "created":
            if resumed and await self.answered_before(key, source, issue, remember=True):
                return
            await self.flows.unasked_reply(paste, replier)
        else:
            await self.follow(paste, source, issue, replier)

    async def follow(self, paste: chat.Paste[str], source: str, issue: Issue, replier: GitHubReplier) -> None:
        """An edited paste: its card follows (edited, or deleted when the panic is gone). A card this
        process does not remember is looked for on the issue by its marker; a paste that had none and now
        holds a panic gets one."""
        if await self.state.replies.get(paste.key) is None:
            await self.recover(paste.key, source, issue)
        if await self.state.replies.get(paste.key) is None:
            await self.flows.unasked_reply(paste, replier)
            return
        await self.flows.edited(paste.key, paste.text, replier)

    async def recover(self, key: str, source: str, issue: Issue) -> None:
        """Our comment answering `source`, found again by its marker (after a restart without Redis)."""
        found = await self.find_own(source, issue)
        if found is not None:
            await self._recovered(key, issue, *found)

    async def _recovered(self, key: str, issue: Issue, comment_id: str, marker: render.Marker) -> None:
        if marker.record_id == render.NO_RECORD:
            return  # an answer to a mention without a card: nothing to follow
        await self.state.replies.put(
            key, chat.PostedReply(issue.key, comment_id, marker.record_id, marker.digest)
        )
        await self.state.gate.allow(issue.key, marker.record_id)
        self.track(issue, comment_id, marker.record_id)

    async def find_own(self, source: str, issue: Issue) -> tuple[str, render.Marker] | None:
        """Our comment on the issue whose marker answers `source`: its id and marker, or None."""
        try:
            comments = await self.api.issue_comments(issue.repo, issue.number, issue.installation)
        except GitHubApiError as exc:
            self.refused(exc)
            return None
        for comment in comments:
            marker = render.read_marker(_text(comment.get("body")))
            comment_id = _id(comment.get("id"))
            if (
                marker is not None
                and marker.source == source
                and comment_id is not None
                and self._own(comment)
            ):
                return str(comment_id), marker
        return None

    async def answered_before(self, key: str, source: str, issue: Issue, *, remember: bool) -> bool:
        """Whether one of our comments on the issue already answers `source` (found by its marker): a
        delivery resumed after its replica stopped or died may have been answered just before. An unasked
        card found so is remembered (`remember`), to follow the paste's edits."""
        if await self.state.replies.get(key) is None:
            found = await self.find_own(source, issue)
            if found is None:
                return False
            if remember:
                await self._recovered(key, issue, *found)
        log.info("%s on %s was answered before: not again", source, issue.key)
        return True

    def _own(self, comment: dict[str, Any]) -> bool:
        return _text(_dict(comment.get("user")).get("login")) in self.own_logins

    async def answer_mention(
        self, issue: Issue, comment_id: int, body: str, issue_body: str, author: str
    ) -> None:
        """`@panicbot` in a comment: the card for what the comment holds or quotes, else for the issue."""
        if await self.flows.too_many(author):
            return  # GitHub has no private note: a public "slow down" would be one more comment
        text = self.mention.sub(" ", body).strip()
        answer = await self.flows.answer_off_loop(text) if text else None
        if (answer is None or (answer.result is not None and not answer.known)) and issue_body.strip():
            parent = await self.flows.answer_off_loop(issue_body)
            if parent.known or answer is None:
                answer = parent
        view = GitHubView(self.settings.github_app_slug, f"c{comment_id}")
        message = answer.shown(view) if answer is not None else view.usage()
        record_id = answer.card.record_id if answer and answer.card else None
        await self.post(issue, message, record_id, retry_later=True)

    # -- GitHub calls that never raise ---------------------------------------------------------------------

    def refused(self, exc: GitHubApiError) -> None:
        if isinstance(exc, GitHubUnreachable):  # no answer at all: nothing was refused
            self.state.observer.api_error(NAME, "unreachable")
            log.warning("%s", exc)
            return
        self.state.observer.api_error(NAME, str(exc.status))
        log.warning("GitHub refused %s (%s)", exc.route, exc.status)

    async def post(
        self, issue: Issue, body: str, record_id: str | None, *, retry_later: bool = False
    ) -> str | None:
        """A new comment on the issue; its id, or None (logged) when GitHub refused. With `retry_later`,
        no answer from GitHub or its own failure (5xx) raises `AnswerLater` instead: the outbox tries the
        delivery again."""
        try:
            created = await self.api.create_comment(issue.repo, issue.number, body, issue.installation)
        except GitHubApiError as exc:
            self.refused(exc)
            if retry_later and (isinstance(exc, GitHubUnreachable) or exc.status >= 500):
                raise AnswerLater(str(exc)) from None
            return None
        login = _text(_dict(created.get("user")).get("login"))
        if login:
            self.own_logins.add(login)  # a token's user: its comments are ours too
        comment_id = str(created["id"])
        if record_id is not None:
            self.track(issue, comment_id, record_id)
        return comment_id

    # -- votes ---------------------------------------------------------------------------------------------

    def track(self, issue: Issue, comment_id: str, record_id: str) -> None:
        self.recent[comment_id] = _Tracked(issue, comment_id, record_id)
        self.recent.move_to_end(comment_id)
        while len(self.recent) > RECENT_REPLIES:
            self.recent.popitem(last=False)

    def untrack(self, comment_id: str) -> None:
        self.recent.pop(comment_id, None)

    async def read_votes_of(self, issue: Issue) -> None:
        """The votes on the bot's comments on this issue (reactions come with no event of their own)."""
        tracked = [entry for entry in self.recent.values() if entry.issue.key == issue.key]
        remembered = await self.state.replies.get(issue.key)  # another replica's card on the description
        if remembered is not None and all(entry.comment_id != remembered.reply_id for entry in tracked):
            tracked.append(_Tracked(issue, remembered.reply_id, remembered.record_id))
        for entry in tracked:
            await self.read_votes(entry)

    async def read_votes(self, entry: _Tracked) -> None:
        issue = entry.issue
        try:
            reactions = await self.api.comment_reactions(issue.repo, entry.comment_id, issue.installation)
        except GitHubApiError as exc:
            if exc.status == 404:
                self.untrack(entry.comment_id)
                return
            self.refused(exc)
            return
        place = comment_key(issue.repo, entry.comment_id)
        for reaction in reactions:
            vote = _VOTES.get(_text(reaction.get("content")))
            user = _dict(reaction.get("user"))
            user_id = str(user.get("id") or _text(user.get("login")))
            if vote is None or user.get("type") == "Bot" or user_id in ("", "None"):
                continue
            seen = (place, user_id)
            if self._votes_seen.get(seen) == vote:
                continue  # read before: neither stored nor counted twice
            if await self.flows.vote(record_id=entry.record_id, user=user_id, vote=vote, place=place):
                self._votes_seen.put(seen, vote)

    async def read_votes_regularly(self, every: float = VOTE_SYNC_SECONDS) -> None:
        """The schedule: this process's recent comments, read back every `every` seconds."""
        while True:
            await asyncio.sleep(every)
            for entry in list(self.recent.values()):
                try:
                    await self.read_votes(entry)
                except Exception:
                    log.exception("reading the votes of a comment failed")


# -- the webhook ------------------------------------------------------------------------------------------


def _person(value: object) -> dict[str, Any]:
    person = _dict(value)
    return {"login": _text(person.get("login")), "type": _text(person.get("type"))}


def delivery_job(event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """What the outbox keeps of a delivery: the fields the handlers read, pastes redacted (secrets and
    home paths never stored); None for a delivery that owes no answer."""
    repo = _text(_dict(payload.get("repository")).get("full_name"))
    issue_info = _dict(payload.get("issue"))
    number = _id(issue_info.get("number"))
    if event not in ("issues", "issue_comment") or not repo or number is None:
        return None
    issue: dict[str, Any] = {
        "number": number,
        "body": redact(_text(issue_info.get("body"))),
        "updated_at": _text(issue_info.get("updated_at")),
    }
    if "pull_request" in issue_info:
        issue["pull_request"] = True
    job: dict[str, Any] = {
        "event": event,
        "action": _text(payload.get("action")),
        "repository": {"full_name": repo},
        "issue": issue,
        "sender": _person(payload.get("sender")),
    }
    installation = _id(_dict(payload.get("installation")).get("id"))
    if installation is not None:
        job["installation"] = {"id": installation}
    if event == "issue_comment":
        comment = _dict(payload.get("comment"))
        job["comment"] = {
            "id": _id(comment.get("id")),
            "body": redact(_text(comment.get("body"))),
            "user": _person(comment.get("user")),
            "updated_at": _text(comment.get("updated_at")),
        }
    return job


def _refused(status: int, error: str) -> web.Response:
    return web.json_response({"error": error}, status=status)


def add_github_routes(
    web_app: web.Application,
    handlers: GitHubHandlers,
    outbox: Outbox,
    worker: OutboxWorker,
    *,
    secret: str,
    read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> None:
    """`POST /github/events`: signature first (401, nothing parsed), then dedupe, the delivery stored in
    the outbox, ack, and the answer after (the outbox's worker)."""
    if not secret:
        raise ValueError("the GitHub webhook needs its secret")
    state = handlers.state

    async def events(request: web.Request) -> web.Response:
        raw = await read_body(request, limit=max_body_bytes, timeout=read_timeout)
        headers = request.headers
        if not signature_is_valid(secret, raw, headers.get("X-Hub-Signature-256")):
            log.debug("refused a delivery without a valid GitHub signature (%d bytes)", len(raw))
            return _refused(401, "invalid signature")
        event = headers.get("X-GitHub-Event", "")
        delivery = headers.get("X-GitHub-Delivery", "")
        if not _DELIVERY.fullmatch(delivery) or not event:
            return _refused(400, "a delivery without X-GitHub-Event or X-GitHub-Delivery")
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError):
            log.warning("refused a signed delivery that is not JSON (%s)", event)
            return _refused(400, "malformed delivery")
        if not isinstance(payload, dict):
            return _refused(400, "malformed delivery")
        if event == "ping":
            return web.json_response({"ok": True})
        if state.stopping:
            # A failed delivery can be redelivered from the app's settings; a dropped one is lost.
            return _refused(503, "stopping")
        if not await handlers.flows.first_time(f"delivery:{delivery}"):
            log.info("delivery %s already handled; acknowledging the redelivery", delivery)
            return web.json_response({"ok": True, "duplicate": True})
        # Redacting a megabyte of text takes a while: not on the event loop.
        job = await asyncio.to_thread(delivery_job, event, payload)
        if job is None:
            return web.json_response({"ok": True}, status=202)  # nothing owed
        sender = _dict(job.get("sender")).get("login") or ""
        entry = OutboxEntry(delivery, job["repository"]["full_name"].lower(), str(sender), job)
        try:
            await outbox.add(entry)
        except Exception as exc:
            # Not stored, not acknowledged: GitHub records a failed delivery, which can be redelivered.
            await state.dedupe.forget(f"delivery:{delivery}")
            log.error("delivery %s not stored in the outbox (%s): answered 503", delivery, exc)
            return _refused(503, "cannot store the delivery")
        worker.wake()
        return web.json_response({"ok": True}, status=202)

    web_app.router.add_post(EVENTS_PATH, events)


# -- inside `panicbot serve` ------------------------------------------------------------------------------


def build_auth(settings: GitHubSettings) -> Auth:
    if settings.github_app_id is not None:
        return AppAuth(settings.github_app_id, read_private_key(settings))
    assert settings.github_token is not None  # load_github_settings checked it
    return TokenAuth(settings.github_token.get_secret_value())


def _one_line(text: str) -> str:
    return " ".join(text.split())


async def check_app(api: GitHubApi, auth: AppAuth, settings: GitHubSettings) -> dict[str, Any]:
    """The app as GitHub knows it (`GET /app` with its JWT), once GitHub answers. An App ID or a key GitHub
    refuses is a `PlatformRefused` naming the variables (GitHub cannot tell which of the two is wrong); no
    answer, GitHub's outage or a rate limit is retried as every platform's start is (`until_reachable`)."""
    key = "GITHUB_PRIVATE_KEY" if settings.github_private_key is not None else "GITHUB_PRIVATE_KEY_FILE"

    async def attempt() -> dict[str, Any]:
        try:
            return await api.the_app(auth.app_jwt())
        except GitHubUnreachable as exc:
            raise PlatformUnreachable(str(exc)) from None
        except GitHubApiError as exc:
            said = _one_line(f"{exc.status} {exc.message}")
            if exc.status >= 500 or exc.status == 429 or "rate limit" in exc.message.lower():
                raise PlatformUnreachable(f"GitHub unreachable at {api.base_url} (app: {said})") from None
            raise PlatformRefused(
                f"GitHub refused the app's credentials ({said}): check GITHUB_APP_ID (the App ID on the "
                f"app's settings page) and {key} (a private key generated on that same page)"
            ) from None

    app = await until_reachable(attempt, log)
    slug = _text(app.get("slug"))
    if slug and slug != settings.github_app_slug:
        log.warning(
            "GitHub names this app %r but GITHUB_APP_SLUG is %r: mentions of @%s are not answered",
            slug,
            settings.github_app_slug,
            slug,
        )
    log.info("GitHub accepted app %s (%s)", settings.github_app_id, slug or "no slug")
    return app


class GitHubPlatform:
    """GitHub inside `panicbot serve`: the webhook on the service's HTTP port, the REST API on one session."""

    name = NAME

    def load_settings(self, options: ServeOptions) -> GitHubSettings:
        return load_github_settings()

    async def start(self, host: Host, settings: GitHubSettings, options: ServeOptions) -> GitHubState:
        shared = await host.shared_state("panicbot:github", COOLDOWN_SECONDS, more=shared_github_state)
        state = GitHubState(
            cooldown_seconds=COOLDOWN_SECONDS, observer=host.observer, feedback=host.feedback, **shared
        )
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS))
        auth = build_auth(settings)
        api = GitHubApi(session, settings.github_api_url, auth)
        handlers = GitHubHandlers(settings, host.live, state, api)
        outbox = host.outbox(NAME)
        worker = state.outbox = OutboxWorker(outbox, handlers.handle_entry, name="GitHub", log=log)
        add_github_routes(
            host.web_app,
            handlers,
            outbox,
            worker,
            secret=settings.github_webhook_secret.get_secret_value(),
            read_timeout=host.http_read_timeout,
        )
        worker.start()  # deliveries left by a stop (this replica's or another's) are answered first
        votes = asyncio.get_running_loop().create_task(handlers.read_votes_regularly())

        async def close() -> None:
            votes.cancel()
            await asyncio.gather(votes, return_exceptions=True)
            await session.close()

        # The reply in hand finishes before the session closes (the rest stays in the outbox); deliveries
        # meanwhile get a 503.
        host.on_stop(worker.stop, before_close=True)
        host.on_stop(state.drain, before_close=True)
        host.on_close(close)
        if isinstance(auth, AppAuth):
            # The app's credentials are checked before GitHub is ready, in the background: deliveries are
            # acknowledged meanwhile, and a refused App ID or key ends start-up naming the variable.
            checked = asyncio.Event()
            host.ready_when(self.name, lambda: checked.is_set() and not session.closed)
            host.run_for_life(self._checked(api, auth, settings, checked), "GitHub")
        else:
            host.ready_when(self.name, lambda: not session.closed)
        repos = len(settings.github_auto_reply_repos)
        log.info(
            "GitHub webhook on %s (%s; auto-reply in %d repositor%s)",
            EVENTS_PATH,
            "app" if settings.app_mode else "token",
            repos,
            "y" if repos == 1 else "ies",
        )
        return state

    async def _checked(
        self, api: GitHubApi, auth: AppAuth, settings: GitHubSettings, checked: asyncio.Event
    ) -> None:
        await check_app(api, auth, settings)
        checked.set()
        await asyncio.Event().wait()  # GitHub posts to the service's port until it stops


PLATFORM = GitHubPlatform()
