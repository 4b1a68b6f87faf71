"""The Discord bot end to end: discord.py, the real `run_discord`, and a fake Discord on 127.0.0.1 (REST and
gateway) that records what Discord would receive: messages, interaction callbacks, follow-ups."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.discord import render
from adapters.discord.bot import DiscordState, owe_through
from adapters.discord.runner import StartupError, run_discord, sync_commands
from adapters.discord.settings import SettingsError, load_discord_settings
from adapters.local_memory import LocalMemory
from adapters.outbox import Outbox
from bot.lookup import PanicLookup
from tests.adapters.discord.fake_discord import (
    APP_ID,
    BOT_ID,
    FORUM_ID,
    FORUM_POST_ID,
    GENERAL_CHANNEL_ID,
    GUILD_ID,
    HELP_CHANNEL_ID,
    MESSAGE_CONTENT_INTENT,
    MODERATOR_ID,
    OTHER_BOT_ID,
    OTHER_USER_ID,
    USER_ID,
    Call,
    FakeDiscord,
    FakeInteraction,
)
from tests.support.catalogs import seeds_catalog
from tests.support.local_only import isolate
from tests.support.outboxes import sqlite_outbox

TOKEN = "MTE5MDAwMDAwMDAwMDAwMDAwMQ.GfAkEt.not-a-real-token-0123456789abcdefghij"

AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_TITLE = "Can't differentiate avg pool 2d backward."
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    f"{AVG_POOL_TITLE}\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
DEFORM_ID = "5c5da46720dbbf10"
DEFORM_TITLE = "Can't differentiate deform conv 2d backward."
DEFORM_PASTE = f"thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n{DEFORM_TITLE}"
UNKNOWN_PASTE = (
    "thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds: the len is 3 but the index is 7"
)
CHAT = "how do I train a model?"
CREATE = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"
DELETE = "DELETE /channels/{channel_id}/messages/{message_id}"
GET = "GET /channels/{channel_id}/messages/{message_id}"


# -- reading what Discord received -------------------------------------------------------------------------


def embeds_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("embeds") or [])


def title_of(body: dict[str, Any]) -> str | None:
    embeds = embeds_of(body)
    return embeds[0].get("title") if embeds else None


def components_of(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every button and select of a message body, by custom_id (link buttons by their label)."""
    found = {}
    for row in body.get("components") or []:
        for child in row["components"]:
            found[child.get("custom_id") or f"link:{child.get('label')}"] = child
    return found


def custom_id(body: dict[str, Any], prefix: str) -> str:
    [found] = [key for key in components_of(body) if key.startswith(prefix)]
    return found


def callback_data(call: Call) -> dict[str, Any]:
    return dict(call.body.get("data") or {})


# -- the bot on a fake Discord -----------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    fake: FakeDiscord
    state: DiscordState
    clock: FakeClock
    task: asyncio.Task[None]

    async def reply_to(self, message: dict[str, Any], *, before: int = 0) -> Call:
        """The message the bot created in answer to `message` (a reply referencing it)."""

        def probe() -> list[Call]:
            return [
                call
                for call in self.fake.created()[before:]
                if str((call.body.get("message_reference") or {}).get("message_id")) == message["id"]
            ]

        return (await self.fake.wait_for(probe, what=f"a reply to {message['id']}"))[0]

    async def auto_reply_to(self, paste: dict[str, Any]) -> Call:
        """The auto-reply to `paste`, once the bot has also noted it (its edits and deletion follow it).

        The fake records the call when it arrives; the bot notes the reply when Discord's answer is back.
        """
        reply = await self.reply_to(paste)
        noted = self.state.replies
        assert isinstance(noted, LocalMemory)  # this process's memory: read without awaiting
        await self.fake.wait_for(lambda: noted.items.get(int(paste["id"])), what="the reply noted")
        return reply

    async def settle(self) -> None:
        """Let every handler started so far finish before asserting that nothing happened.

        discord.py runs each event handler as a task, in order; a handler that stays silent returns without
        awaiting, so once a later mention has been answered, the earlier handlers have run.
        """
        sentinel = await self.fake.post(GENERAL_CHANNEL_ID, f"<@{BOT_ID}> help")
        await self.reply_to(sentinel)

    def answers(self) -> list[Call]:
        """Everything the bot created except the answers to `settle`'s sentinels."""
        return [
            call
            for call in self.fake.created()
            if "**panicbot** explains" not in (call.body.get("content") or "")
        ]


@pytest.fixture
def discord_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No inherited Discord settings or proxies: every request goes to 127.0.0.1."""
    return isolate(
        monkeypatch,
        "DISCORD_TOKEN",
        "DISCORD_HELP_CHANNEL_IDS",
        "DISCORD_API_URL",
        "DISCORD_SHARD_COUNT",
        "DISCORD_SHARD_IDS",
        "DISCORD_AUTO_REPLY_COOLDOWN_SECONDS",
        "PANICBOT_CATALOG",
    )


def logged_text(caplog: pytest.LogCaptureFixture) -> str:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in caplog.get_records("call"))


def logged_by_panicbot(caplog: pytest.LogCaptureFixture, word: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "panicbot.discord" and word in r.getMessage()]


@pytest.fixture(autouse=True)
def _no_secrets_in_logs(caplog: pytest.LogCaptureFixture) -> Any:
    """Whatever a scenario logs, at any level, never carries the token."""
    caplog.set_level(logging.DEBUG)
    # discord.py's own DEBUG lines too, whatever an earlier test made of its logger's level.
    caplog.set_level(logging.DEBUG, logger="discord")
    yield
    assert TOKEN not in logged_text(caplog), "the token was logged"


class RecordingObserver:
    """What the service's metrics would hear."""

    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def looked_up(self, platform: str, result: Any, seconds: float) -> None:
        self.events.append(("looked_up", platform, result.status))

    def auto_replied(self, platform: str, record_id: str) -> None:
        self.events.append(("auto_replied", platform, record_id))

    def voted(self, platform: str, vote: str) -> None:
        self.events.append(("voted", platform, vote))

    def api_error(self, platform: str, error: str) -> None:
        self.events.append(("api_error", platform, error))


@contextlib.asynccontextmanager
async def running(
    env: pytest.MonkeyPatch,
    *,
    feedback: Any = None,
    observer: Any = None,
    help_channels: str | None = None,
    outbox: Outbox | None = None,
    **settings_env: str,
) -> AsyncIterator[Harness]:
    """Fake Discord, then `run_discord` with settings from the environment, connected and given its guild.
    Follow-ups owed after an ack go through an outbox, as in the service (a SQLite one unless given)."""
    async with FakeDiscord(TOKEN) as fake:
        env.setenv("DISCORD_TOKEN", TOKEN)
        env.setenv("DISCORD_API_URL", fake.api_url)
        default = f"{HELP_CHANNEL_ID}, {FORUM_ID}"
        env.setenv("DISCORD_HELP_CHANNEL_IDS", default if help_channels is None else help_channels)
        for name, value in settings_env.items():
            env.setenv(name.upper(), value)
        settings = load_discord_settings()
        clock = FakeClock()
        state = DiscordState(clock=clock, cooldown_seconds=settings.discord_auto_reply_cooldown_seconds)
        state.feedback = feedback or state.feedback
        state.observer = observer or state.observer
        own_outbox = sqlite_outbox("discord") if outbox is None else None
        owed = owe_through(state, outbox if outbox is not None else own_outbox)
        task = asyncio.create_task(run_discord(settings, PanicLookup(seeds_catalog()), state))
        try:
            await fake.wait_for_identify()
            yield Harness(fake, state, clock, task)
        finally:
            await owed.worker.stop(1.0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if own_outbox is not None:
                own_outbox.close()
        assert fake.problems == [], "Discord would have refused these"
        assert fake.pings == [], "a message went out that could ping"
        assert fake.calls_to("PUT /applications/{application_id}/commands") == [], "synced on start"


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=30))


# -- auto-reply --------------------------------------------------------------------------------------------


def test_paste_in_a_help_channel_gets_the_card_as_a_reply(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            paste = await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            reply = await h.reply_to(paste)
            body = reply.body
            assert reply.params["channel_id"] == str(HELP_CHANNEL_ID)
            assert str(body["message_reference"]["message_id"]) == paste["id"]
            assert title_of(body) == AVG_POOL_TITLE
            assert body["allowed_mentions"] == {"parse": [], "replied_user": False}
            assert not body.get("flags", 0) & 64
            found = components_of(body)
            assert f"pb:del:{paste['author']['id']}" in found
            assert any(key.startswith("pb:vote:up:") and key.endswith(AVG_POOL_ID) for key in found)
            assert reply.headers["Authorization"] == f"Bot {TOKEN}"

    run(scenario())


def test_forum_posts_are_answered_in_their_thread(discord_env: pytest.MonkeyPatch) -> None:
    """A new post's starter message (same id as its thread), and a later message in an existing post."""

    async def scenario() -> None:
        async with running(discord_env) as h:
            starter = await h.fake.new_forum_post(AVG_POOL_PASTE)
            reply = await h.reply_to(starter)
            assert reply.params["channel_id"] == starter["channel_id"] == starter["id"]
            assert title_of(reply.body) == AVG_POOL_TITLE
            later = await h.fake.post(FORUM_POST_ID, DEFORM_PASTE)
            reply = await h.reply_to(later)
            assert reply.params["channel_id"] == str(FORUM_POST_ID)
            assert title_of(reply.body) == DEFORM_TITLE

    run(scenario())


def test_a_thread_the_bot_never_saw_is_answered_when_its_parent_is_a_help_channel(
    discord_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            revived = h.fake.unannounced_thread(FORUM_ID)
            reply = await h.reply_to(await h.fake.post(revived, AVG_POOL_PASTE))
            assert title_of(reply.body) == AVG_POOL_TITLE
            await h.reply_to(await h.fake.post(revived, DEFORM_PASTE))
            assert len(h.fake.calls_to("GET /channels/{channel_id}")) == 1  # its parent is asked once
            # A thread under a channel that is not a help channel stays quiet.
            elsewhere = h.fake.unannounced_thread(GENERAL_CHANNEL_ID)
            await h.fake.post(elsewhere, AVG_POOL_PASTE)
            # A channel Discord will not show the bot: asked once, then remembered as no help place.
            hidden = 1_190_000_000_000_000_999
            for _ in range(2):
                await h.fake.post(hidden, AVG_POOL_PASTE)
                await h.settle()
            assert len(h.answers()) == 2
            assert len(h.fake.calls_to("GET /channels/{channel_id}")) == 3

    run(scenario())


@pytest.mark.parametrize(
    ("channel", "text", "options"),
    [
        (GENERAL_CHANNEL_ID, AVG_POOL_PASTE, {}),  # not a help channel
        (HELP_CHANNEL_ID, AVG_POOL_PASTE, {"author": OTHER_BOT_ID}),
        (HELP_CHANNEL_ID, AVG_POOL_PASTE, {"webhook": True}),
        (HELP_CHANNEL_ID, CHAT, {}),
        (HELP_CHANNEL_ID, "avg pool 2d backward", {}),  # typed words are a query, not a paste
        (HELP_CHANNEL_ID, UNKNOWN_PASTE, {}),
    ],
    ids=["other-channel", "bot", "webhook", "chat", "query", "unknown-panic"],
)
def test_no_auto_reply_where_it_is_not_wanted(
    discord_env: pytest.MonkeyPatch, channel: int, text: str, options: dict[str, Any]
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            await h.fake.post(channel, text, **options)
            await h.settle()
            assert h.answers() == []

    run(scenario())


def test_auto_reply_once_per_record_per_channel_per_cooldown(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env, discord_auto_reply_cooldown_seconds="600") as h:
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))
            await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            await h.settle()
            assert len(h.answers()) == 1
            # Another record in the same channel, and the same record in another channel, are answered.
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, DEFORM_PASTE))
            await h.reply_to(await h.fake.post(FORUM_POST_ID, AVG_POOL_PASTE))
            h.clock.now += 601
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))
            assert len(h.answers()) == 4

    run(scenario())


def test_edited_paste_updates_then_removes_the_reply(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            paste = await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            reply = await h.auto_reply_to(paste)
            reply_id = reply.response["id"]
            await h.fake.edit(paste, DEFORM_PASTE)
            [edit] = await h.fake.wait_for(lambda: h.fake.calls_to(EDIT))
            assert edit.params == {"channel_id": str(HELP_CHANNEL_ID), "message_id": reply_id}
            assert title_of(edit.body) == DEFORM_TITLE
            assert edit.body["allowed_mentions"]["parse"] == []
            # The cooldown followed the reply: avg pool may be answered again, deform conv may not.
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))
            await h.fake.post(HELP_CHANNEL_ID, DEFORM_PASTE)
            # An update that changes nothing the bot reads (a link preview) edits nothing.
            await h.fake.edit(paste, DEFORM_PASTE)
            await h.settle()
            assert len(h.fake.calls_to(EDIT)) == 1
            assert len(h.answers()) == 2
            await h.fake.edit(paste, "never mind, fixed it")
            [delete] = await h.fake.wait_for(lambda: h.fake.calls_to(DELETE))
            assert delete.params == {"channel_id": str(HELP_CHANNEL_ID), "message_id": reply_id}
            assert delete.status == 204
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, DEFORM_PASTE))

    run(scenario())


def test_deleted_paste_takes_the_reply_with_it(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            paste = await h.fake.post(FORUM_POST_ID, AVG_POOL_PASTE)
            reply = await h.auto_reply_to(paste)
            await h.fake.delete(paste)
            [delete] = await h.fake.wait_for(lambda: h.fake.calls_to(DELETE))
            assert delete.params == {"channel_id": str(FORUM_POST_ID), "message_id": reply.response["id"]}
            # The reply went with the paste, so the next paste of the same panic is answered.
            await h.reply_to(await h.fake.post(FORUM_POST_ID, AVG_POOL_PASTE))

    run(scenario())


def test_paste_in_a_log_attachment_is_read(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            log_file = h.fake.add_file(HELP_CHANNEL_ID, "run.LOG", ("x\n" * 50 + AVG_POOL_PASTE).encode())
            image = h.fake.add_file(HELP_CHANNEL_ID, "screenshot.png", DEFORM_PASTE.encode())
            paste = await h.fake.post(
                HELP_CHANNEL_ID, "training crashed, log attached", attachments=[log_file, image]
            )
            reply = await h.reply_to(paste)
            assert title_of(reply.body) == AVG_POOL_TITLE
            fetched = [call for call in h.fake.calls if call.route.startswith("/cdn/")]
            assert [call.params["filename"] for call in fetched] == ["run.LOG"]

    run(scenario())


def test_attachment_over_the_cap_is_not_downloaded(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            huge = h.fake.add_file(HELP_CHANNEL_ID, "build.txt", AVG_POOL_PASTE.encode(), size=300 * 1024)
            await h.fake.post(HELP_CHANNEL_ID, "see attached", attachments=[huge])
            await h.settle()
            assert h.answers() == []
            assert not [call for call in h.fake.calls if call.route.startswith("/cdn/")]

    run(scenario())


# -- mentions ----------------------------------------------------------------------------------------------


def test_mention_with_a_paste_is_answered_once(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            for channel in (GENERAL_CHANNEL_ID, HELP_CHANNEL_ID):
                mention = await h.fake.post(channel, f"<@{BOT_ID}> what is this?\n{AVG_POOL_PASTE}")
                reply = await h.reply_to(mention)
                assert title_of(reply.body) == AVG_POOL_TITLE
                assert reply.body["allowed_mentions"] == {"parse": [], "replied_user": False}
                assert f"pb:del:{USER_ID}" in components_of(reply.body)
            await h.settle()
            # In the help channel the mention handler answered; auto-reply stayed out of it.
            assert len(h.answers()) == 2

    run(scenario())


def test_mention_in_a_reply_explains_the_replied_to_message(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            original = await h.fake.post(GENERAL_CHANNEL_ID, DEFORM_PASTE, author=OTHER_USER_ID)
            reference = {
                "message_id": original["id"],
                "channel_id": original["channel_id"],
                "guild_id": str(GUILD_ID),
            }
            mention = await h.fake.post(GENERAL_CHANNEL_ID, f"<@{BOT_ID}> any idea?", reference=reference)
            reply = await h.reply_to(mention)
            [fetched] = h.fake.calls_to(GET)
            assert fetched.params == {"channel_id": str(GENERAL_CHANNEL_ID), "message_id": original["id"]}
            assert title_of(reply.body) == DEFORM_TITLE
            # The card answers the person who asked, who may remove it.
            assert f"pb:del:{USER_ID}" in components_of(reply.body)

    run(scenario())


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", "**panicbot** explains"), (UNKNOWN_PASTE, "**No known record**")],
    ids=["bare", "unknown"],
)
def test_mention_without_a_known_panic_is_not_a_card(
    discord_env: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            mention = await h.fake.post(GENERAL_CHANNEL_ID, f"<@{BOT_ID}> {text}".strip())
            reply = await h.reply_to(mention)
            assert expected in reply.body["content"]
            assert embeds_of(reply.body) == []
            assert components_of(reply.body) == {}

    run(scenario())


def test_mention_everyone_in_a_paste_cannot_ping(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            text = f"<@{BOT_ID}> @everyone <@&{GUILD_ID}> look:\n" + UNKNOWN_PASTE.replace(
                "index", "@here index"
            )
            reply = await h.reply_to(await h.fake.post(GENERAL_CHANNEL_ID, text))
            assert reply.body["allowed_mentions"] == {"parse": [], "replied_user": False}
            assert "@here" not in reply.body["content"]  # escaped, so it does not even look like one

    run(scenario())


# -- /panic ------------------------------------------------------------------------------------------------


async def slash_card(h: Harness, query: str = AVG_POOL_PASTE) -> tuple[FakeInteraction, Call]:
    interaction = await h.fake.slash(query)
    return interaction, await h.fake.callback(interaction)


def test_slash_command_answers_privately_with_buttons_and_more_matches(
    discord_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            _, callback = await slash_card(h)
            assert callback.body["type"] == 4
            assert callback.query == {"with_response": "1"}
            data = callback_data(callback)
            assert data["flags"] == 64
            assert title_of(data) == AVG_POOL_TITLE
            assert data["allowed_mentions"]["parse"] == []
            found = components_of(data)
            assert found["link:Source"]["url"].startswith("https://github.com/tracel-ai/burn/")
            assert custom_id(data, "pb:post:").endswith(":" + AVG_POOL_ID)
            assert custom_id(data, "pb:vote:up:").endswith(":0:" + AVG_POOL_ID)
            menu = found[render.MORE_ID]
            assert menu["type"] == 3
            labels = [option["label"] for option in menu["options"]]
            assert labels[0] == AVG_POOL_TITLE and DEFORM_TITLE in labels
            assert [option.get("default", False) for option in menu["options"]][:1] == [True]
            assert not [key for key in found if key.startswith("pb:del:")]  # private: nothing to remove
            assert h.fake.created() == []  # nothing posted in the channel

    run(scenario())


def test_slash_command_can_answer_for_everyone(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            callback = await h.fake.callback(await h.fake.slash(AVG_POOL_PASTE, public=True))
            data = callback_data(callback)
            assert not data.get("flags", 0) & 64
            assert title_of(data) == AVG_POOL_TITLE
            found = components_of(data)
            assert f"pb:del:{USER_ID}" in found and render.MORE_ID not in found

    run(scenario())


@pytest.mark.parametrize(
    ("query", "expected"),
    [("help", "**panicbot** explains"), (UNKNOWN_PASTE, "**No known record**"), (CHAT, "No known record")],
    ids=["help", "unknown", "chat"],
)
def test_slash_command_without_a_known_panic_is_not_a_card(
    discord_env: pytest.MonkeyPatch, query: str, expected: str
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            _, callback = await slash_card(h, query)
            data = callback_data(callback)
            assert data["flags"] == 64
            assert expected in data["content"]
            assert embeds_of(data) == []
            assert components_of(data) == {}

    run(scenario())


class RefuseUser:
    """A per-user limit that one user is over."""

    def __init__(self, user_id: int) -> None:
        self.user_id = str(user_id)
        self.asked: list[str] = []

    async def allow(self, user_id: str) -> bool:
        if user_id == self.user_id:
            self.asked.append(user_id)
        return user_id != self.user_id


def test_one_user_asking_too_often_is_told_to_wait(discord_env: pytest.MonkeyPatch) -> None:
    from adapters.redis_memory import RateLimiter

    async def scenario() -> None:
        async with running(discord_env) as h:
            limiter = RateLimiter(2, 60.0, clock=h.clock)
            h.state.rate_limit = limiter
            for _ in range(2):
                _, callback = await slash_card(h)
                assert title_of(callback_data(callback)) == AVG_POOL_TITLE
            _, callback = await slash_card(h)
            refused = callback_data(callback)
            assert refused["flags"] == 64  # told privately
            assert "try again in a moment" in refused["content"]
            assert embeds_of(refused) == []
            h.clock.now += 61  # the window has passed
            _, callback = await slash_card(h)
            assert title_of(callback_data(callback)) == AVG_POOL_TITLE

            # Over the limit, a mention gets nothing in public (settle()'s sentinel mention comes from
            # USER_ID, who is not over it). A paste in a help channel is not asking: its unasked reply is
            # held back by the channel cooldown, not by the user's limit.
            h.state.rate_limit = RefuseUser(OTHER_USER_ID)
            mention = f"<@{BOT_ID}> what is this?\n{AVG_POOL_PASTE}"
            await h.fake.post(GENERAL_CHANNEL_ID, mention, author=OTHER_USER_ID)
            await h.settle()
            assert h.answers() == []
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, DEFORM_PASTE, author=OTHER_USER_ID))
            assert h.state.rate_limit.asked == [str(OTHER_USER_ID)]

    run(scenario())


def test_autocomplete_offers_record_messages_and_tags(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            for current, wanted in (
                ("avg pool", AVG_POOL_TITLE),
                ("autodiff", AVG_POOL_TITLE),
                ("", DEFORM_TITLE),
            ):
                interaction = await h.fake.autocomplete(current)
                callback = await h.fake.callback(interaction)
                assert callback.body["type"] == 8
                choices = callback_data(callback)["choices"]
                assert 0 < len(choices) <= 25
                names = {choice["name"]: choice["value"] for choice in choices}
                assert wanted in names, (current, names)
            # A pick sends `id:<record>`: the command shows exactly that record.
            _, callback = await slash_card(h, names[DEFORM_TITLE])
            assert names[DEFORM_TITLE] == f"id:{DEFORM_ID}"
            assert title_of(callback_data(callback)) == DEFORM_TITLE

    run(scenario())


# -- the card's buttons ------------------------------------------------------------------------------------


def ephemeral_message(callback: Call) -> int:
    """The id of the private card an interaction callback created (from `?with_response=1`)."""
    return int(callback.response["resource"]["message"]["id"])


def test_post_publicly_shares_the_card_and_closes_the_private_one(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            _, callback = await slash_card(h)
            card_id = ephemeral_message(callback)
            click = await h.fake.click(card_id, custom_id(callback_data(callback), "pb:post:"))
            update = await h.fake.callback(click)
            assert update.body["type"] == 7
            assert update.body["data"]["embeds"] == [] and update.body["data"]["components"] == []
            assert "Posted" in update.body["data"]["content"]
            [shared] = await h.fake.wait_for(lambda: h.fake.followups(click))
            assert shared.query.get("wait") in {"1", "true"}
            assert not shared.body.get("flags", 0) & 64
            [embed] = embeds_of(shared.body)
            assert embed["title"] == AVG_POOL_TITLE
            assert embed["author"]["name"] == "Shared by Ferris"
            found = components_of(shared.body)
            assert f"pb:del:{USER_ID}" in found and not [k for k in found if k.startswith("pb:post:")]
            assert shared.body["allowed_mentions"]["parse"] == []

    run(scenario())


def test_more_matches_switches_the_private_card(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            _, callback = await slash_card(h)
            menu = components_of(callback_data(callback))[render.MORE_ID]
            deform = next(option for option in menu["options"] if option["label"] == DEFORM_TITLE)
            click = await h.fake.click(ephemeral_message(callback), render.MORE_ID, values=[deform["value"]])
            update = await h.fake.callback(click)
            assert update.body["type"] == 7
            data = callback_data(update)
            assert title_of(data) == DEFORM_TITLE
            options = components_of(data)[render.MORE_ID]["options"]
            assert [option["value"] for option in options] == [option["value"] for option in menu["options"]]
            assert [option["value"] for option in options if option.get("default")] == [deform["value"]]
            assert custom_id(data, "pb:post:").endswith(":" + DEFORM_ID)

    run(scenario())


def test_vote_on_a_private_card_marks_the_button_and_is_stored(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            _, callback = await slash_card(h)
            up = custom_id(callback_data(callback), "pb:vote:up:")
            click = await h.fake.click(ephemeral_message(callback), up)
            update = await h.fake.callback(click)
            data = callback_data(update)
            assert update.body["type"] == 7
            assert "embeds" not in data  # only the buttons change
            assert components_of(data)[up]["style"] == 3  # success
            assert render.MORE_ID in components_of(data)  # the menu survives the vote
            assert (
                h.state.feedback.vote_of(record_id=AVG_POOL_ID, user_id=str(USER_ID), platform="discord")
                == "up"
            )

    run(scenario())


def test_votes_on_a_public_card_show_everyones_counts(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            reply = await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))
            message_id = int(reply.response["id"])
            down = custom_id(reply.body, "pb:vote:down:")
            update = await h.fake.callback(await h.fake.click(message_id, down, user=OTHER_USER_ID))
            assert components_of(callback_data(update))[down]["label"] == "1"
            up = custom_id(reply.body, "pb:vote:up:")
            update = await h.fake.callback(await h.fake.click(message_id, up, user=MODERATOR_ID))
            found = components_of(callback_data(update))
            assert found[up]["label"] == "1" and found[down]["label"] == "1"
            assert found[up]["style"] == found[down]["style"] == 2  # nobody's own vote is shown to all
            assert f"pb:del:{USER_ID}" in found

    run(scenario())


class BrokenStore:
    """A feedback database that is down."""

    def record_vote(self, **_: Any) -> None:
        raise ConnectionError("feedback database unreachable")

    def vote_of(self, **_: Any) -> str | None:
        return None

    def tally(self, **_: Any) -> dict[str, int]:
        return {"up": 0, "down": 0}


def test_vote_that_cannot_be_stored_tells_the_user(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(discord_env, feedback=BrokenStore()) as h:
            _, callback = await slash_card(h)
            click = await h.fake.click(
                ephemeral_message(callback), custom_id(callback_data(callback), "pb:vote:up:")
            )
            note = await h.fake.callback(click)
            assert note.body["type"] == 4
            assert callback_data(note)["flags"] == 64
            assert "could not be saved" in callback_data(note)["content"]

    run(scenario())
    [error] = [r for r in caplog.records if r.name == "panicbot.discord" and r.levelno >= logging.ERROR]
    assert error.exc_info is not None


def test_dismiss_is_for_the_asker_and_moderators(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            paste = await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            reply = await h.auto_reply_to(paste)
            dismiss = custom_id(reply.body, "pb:del:")
            refused = await h.fake.callback(
                await h.fake.click(int(reply.response["id"]), dismiss, user=OTHER_USER_ID)
            )
            assert refused.body["type"] == 4 and callback_data(refused)["flags"] == 64
            assert "Only the person who asked" in callback_data(refused)["content"]
            assert h.fake.calls_to(DELETE) == []
            done = await h.fake.callback(await h.fake.click(int(reply.response["id"]), dismiss, user=USER_ID))
            assert done.body["type"] == 6
            [delete] = await h.fake.wait_for(lambda: h.fake.calls_to(DELETE))
            assert delete.params["message_id"] == reply.response["id"]
            # A moderator may remove someone else's card.
            other = await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, DEFORM_PASTE))
            await h.fake.callback(
                await h.fake.click(
                    int(other.response["id"]), custom_id(other.body, "pb:del:"), user=MODERATOR_ID
                )
            )
            await h.fake.wait_for(lambda: len(h.fake.calls_to(DELETE, ok_only=True)) == 2)
            # The removed reply is forgotten: editing its paste edits nothing.
            await h.fake.edit(paste, DEFORM_PASTE)
            await h.settle()
            assert h.fake.calls_to(EDIT) == []

    run(scenario())


# -- the message command -----------------------------------------------------------------------------------


def test_explain_this_panic_answers_privately_without_the_content_intent(
    discord_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with running(discord_env, help_channels="") as h:
            assert not h.fake.identifies[0]["intents"] & MESSAGE_CONTENT_INTENT
            target = await h.fake.post(GENERAL_CHANNEL_ID, DEFORM_PASTE, author=OTHER_USER_ID)
            callback = await h.fake.callback(await h.fake.context_menu(target))
            assert callback.body["type"] == 4
            data = callback_data(callback)
            assert data["flags"] == 64
            assert title_of(data) == DEFORM_TITLE
            assert custom_id(data, "pb:post:").endswith(":" + DEFORM_ID)

    run(scenario())


def test_explain_this_panic_reads_a_log_file_after_deferring(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            log_file = h.fake.add_file(GENERAL_CHANNEL_ID, "panic.txt", AVG_POOL_PASTE.encode())
            target = await h.fake.post(GENERAL_CHANNEL_ID, "CI log", attachments=[log_file])
            interaction = await h.fake.context_menu(target)
            deferred = await h.fake.callback(interaction)
            assert deferred.body == {"type": 5, "data": {"flags": 64}}
            [followup] = await h.fake.wait_for(lambda: h.fake.followups(interaction))
            assert title_of(followup.body) == AVG_POOL_TITLE
            assert followup.body["flags"] & 64
            # The follow-up filled the "thinking" message the deferral made: still private.
            assert followup.response["flags"] & 64 and not followup.response["flags"] & 128

    run(scenario())


def test_explain_this_panic_on_a_message_without_text(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            image = h.fake.add_file(GENERAL_CHANNEL_ID, "photo.png", b"\x89PNG")
            target = await h.fake.post(GENERAL_CHANNEL_ID, "", attachments=[image])
            callback = await h.fake.callback(await h.fake.context_menu(target))
            assert "no text to explain" in callback_data(callback)["content"]
            assert callback_data(callback)["flags"] == 64

    run(scenario())


# -- Discord saying no -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [(403, 50013, "Missing Permissions"), (400, 50035, "Invalid Form Body"), (404, 10003, "Unknown Channel")],
)
def test_refused_reply_is_logged_once_and_the_bot_keeps_serving(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, status: int, code: int, message: str
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            h.fake.fail(CREATE, status, code, message)
            paste = await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            await h.fake.wait_for(lambda: logged_by_panicbot(caplog, str(code)), what="the warning")
            refused = h.fake.calls_to(CREATE)
            assert [call.status for call in refused] == [status]  # tried once, never again
            assert str(paste["id"]) in logged_by_panicbot(caplog, str(code))[0].getMessage()
            # The failed reply does not hold the cooldown: the next paste is answered.
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))

    run(scenario())
    [warning] = logged_by_panicbot(caplog, str(code))
    assert warning.levelno == logging.WARNING
    assert f"HTTP {status}" in warning.getMessage()


def test_observers_hear_lookups_replies_votes_and_refusals(discord_env: pytest.MonkeyPatch) -> None:
    observer = RecordingObserver()

    async def scenario() -> None:
        async with running(discord_env, observer=observer) as h:
            reply = await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))
            down = custom_id(reply.body, "pb:vote:down:")
            await h.fake.callback(await h.fake.click(int(reply.response["id"]), down, user=OTHER_USER_ID))
            h.fake.fail(CREATE, 403, 50013, "Missing Permissions")
            await h.fake.post(HELP_CHANNEL_ID, DEFORM_PASTE)
            await h.fake.wait_for(lambda: ("api_error", "discord", "50013") in observer.events)

    run(scenario())
    assert observer.events[:3] == [
        ("looked_up", "discord", "matched"),
        ("auto_replied", "discord", AVG_POOL_ID),
        ("voted", "discord", "down"),
    ]
    assert ("looked_up", "discord", "matched") in observer.events[3:]


def test_rate_limited_reply_is_sent_after_retry_after(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            h.fake.rate_limit(CREATE, retry_after=0.3)
            await h.fake.post(GENERAL_CHANNEL_ID, f"<@{BOT_ID}> {AVG_POOL_PASTE}")
            limited, delivered = await h.fake.wait_for(
                lambda: (calls := h.fake.calls_to(CREATE))[1:] and calls
            )
            assert limited.status == 429 and delivered.ok
            assert delivered.at - limited.at >= 0.3
            assert delivered.body["embeds"] == limited.body["embeds"]

    run(scenario())


def test_a_graceful_stop_lets_a_reply_in_flight_finish(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            h.fake.rate_limit(CREATE, retry_after=0.5)  # the reply is held up in flight
            paste = await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            await h.fake.wait_for(lambda: h.fake.calls_to(CREATE))
            assert h.state.pending  # the handler is counted while it waits
            await h.state.drain(5.0)
            assert [c for c in h.fake.calls_to(CREATE, ok_only=True) if c.body.get("message_reference")]
            assert str(h.answers()[-1].body["message_reference"]["message_id"]) == paste["id"]
            assert not h.state.pending

    run(scenario())


def test_edit_of_a_reply_that_is_gone_is_logged(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            paste = await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            reply = await h.auto_reply_to(paste)
            # Deleted without the gateway telling the bot (it was offline, say).
            del h.fake.messages[int(reply.response["id"])]
            await h.fake.edit(paste, DEFORM_PASTE)
            [edit] = await h.fake.wait_for(lambda: h.fake.calls_to(EDIT))
            assert edit.status == 404
            await h.fake.wait_for(lambda: logged_by_panicbot(caplog, "10008"), what="the warning")
            await h.fake.edit(paste, AVG_POOL_PASTE)
            await h.settle()
            assert len(h.fake.calls_to(EDIT)) == 1  # forgotten, not retried
            # Nothing shows either record in the channel now: both are answered again.
            for text in (DEFORM_PASTE, AVG_POOL_PASTE):
                await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, text))

    run(scenario())


def test_failed_interaction_answer_is_logged(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            h.fake.fail(
                "POST /interactions/{interaction_id}/{token}/callback", 404, 10062, "Unknown interaction"
            )
            interaction = await h.fake.slash(AVG_POOL_PASTE)
            await h.fake.callback(interaction)
            await h.fake.wait_for(lambda: logged_by_panicbot(caplog, "10062"), what="the warning")
            _, callback = await slash_card(h)
            assert callback.ok

    run(scenario())


def test_logs_carry_no_token_and_no_paste(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """discord.py logs every gateway event and request body at DEBUG: the pastes must not be in them."""
    marker = "user-secret-path-9f8e7d"
    paste = AVG_POOL_PASTE.replace("crates/", f"/home/{marker}/crates/")
    interaction_tokens: list[str] = []

    async def scenario() -> None:
        async with running(discord_env) as h:
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, paste))
            await h.reply_to(await h.fake.post(GENERAL_CHANNEL_ID, f"<@{BOT_ID}> {UNKNOWN_PASTE} {marker}"))
            _, callback = await slash_card(h, paste)
            await h.fake.click(ephemeral_message(callback), custom_id(callback_data(callback), "pb:post:"))
            await h.fake.wait_for(lambda: h.fake.calls_to("POST /webhooks/{application_id}/{token}"))
            interaction_tokens.extend(i.token for i in h.fake.interactions.values())

    run(scenario())
    logged = logged_text(caplog)
    assert "WebSocket Event" in logged and "/webhooks/" in logged  # discord.py did log at DEBUG
    assert marker not in logged
    assert TOKEN not in logged
    assert len(interaction_tokens) == 2
    for token in interaction_tokens:
        assert token not in logged  # an interaction token answers for the bot for 15 minutes


# -- start-up ----------------------------------------------------------------------------------------------


def test_state_says_when_the_bot_is_connected(discord_env: pytest.MonkeyPatch) -> None:
    """For a readiness probe: READY comes once the guilds have arrived (discord.py waits 2 s for more)."""

    async def scenario() -> None:
        async with running(discord_env) as h:
            await h.fake.wait_for(lambda: h.state.connected, what="READY handled")
            await h.fake.drop_sessions()
            await h.fake.wait_for(lambda: not h.state.connected, what="the disconnect noticed")

    run(scenario())


def test_message_content_intent_is_asked_only_for_auto_reply(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(discord_env) as h:
            [identify] = h.fake.identifies
            assert identify["intents"] & MESSAGE_CONTENT_INTENT
            assert identify["token"] == TOKEN
            assert "shard" not in identify
        async with running(discord_env, help_channels=" ") as h:
            [identify] = h.fake.identifies
            assert not identify["intents"] & MESSAGE_CONTENT_INTENT
            # Mentions still work without it: Discord sends their content anyway.
            await h.reply_to(await h.fake.post(GENERAL_CHANNEL_ID, f"<@{BOT_ID}> {AVG_POOL_PASTE}"))
            # Other messages come without content: nothing to auto-reply to, even in a help channel.
            await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            await h.settle()
            assert len(h.answers()) == 1

    run(scenario())


def test_missing_message_content_intent_says_what_to_turn_on(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            fake.reject_intents = True
            discord_env.setenv("DISCORD_TOKEN", TOKEN)
            discord_env.setenv("DISCORD_API_URL", fake.api_url)
            discord_env.setenv("DISCORD_HELP_CHANNEL_IDS", str(HELP_CHANNEL_ID))
            with pytest.raises(StartupError) as raised:
                await run_discord(load_discord_settings(), PanicLookup(seeds_catalog()))
            message = str(raised.value)
            assert "MESSAGE CONTENT INTENT" in message
            assert f"https://discord.com/developers/applications/{APP_ID}/bot" in message
            assert "4014" in message
            assert TOKEN not in message

    run(scenario())
    assert logged_by_panicbot(caplog, "MESSAGE CONTENT INTENT")


def test_refused_token_says_so_without_showing_it(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            wrong = "MTE5MDAwMDAwMDAwMDAwMDAwMQ.GwRoNg.this-is-not-the-right-token-000000"
            discord_env.setenv("DISCORD_TOKEN", wrong)
            discord_env.setenv("DISCORD_API_URL", fake.api_url)
            settings = load_discord_settings()
            for start in (run_discord(settings, PanicLookup(seeds_catalog())), sync_commands(settings)):
                with pytest.raises(StartupError, match="DISCORD_TOKEN") as raised:
                    await start
                assert wrong not in str(raised.value)
            assert fake.identifies == []

    run(scenario())


def test_sync_commands_overwrites_the_global_commands_once(discord_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            discord_env.setenv("DISCORD_TOKEN", TOKEN)
            discord_env.setenv("DISCORD_API_URL", fake.api_url)
            names = await sync_commands(load_discord_settings())
            assert names == ["panic", "Explain this panic"]
            [put] = fake.calls_to("PUT /applications/{application_id}/commands")
            assert put.params["application_id"] == str(APP_ID)
            panic, menu = put.body
            assert panic["type"] == 1 and panic["name"] == "panic"
            query, public = panic["options"]
            assert query["name"] == "query" and query["type"] == 3 and query["required"] is True
            assert query["autocomplete"] is True and query["max_length"] == 6000
            assert public["name"] == "public" and public["type"] == 5 and not public.get("required")
            assert menu == {**menu, "name": "Explain this panic", "type": 3}
            assert fake.identifies == []  # REST only: no gateway session spent on a sync

    run(scenario())


def test_sharded_bot_identifies_with_its_shard(discord_env: pytest.MonkeyPatch) -> None:
    shard = (GUILD_ID >> 22) % 2  # the shard Discord routes the guild's events to

    async def scenario() -> None:
        async with running(discord_env, discord_shard_count="2", discord_shard_ids=str(shard)) as h:
            [identify] = h.fake.identifies
            assert identify["shard"] == [shard, 2]
            await h.reply_to(await h.fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE))
            assert [call.key for call in h.fake.calls[:3]].count("GET /gateway/bot") == 1

    run(scenario())


# -- settings ----------------------------------------------------------------------------------------------


def test_settings_errors_name_the_variable_never_the_value(discord_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError, match="DISCORD_TOKEN is not set"):
        load_discord_settings()
    discord_env.setenv("DISCORD_TOKEN", f"Bot {TOKEN}")
    discord_env.setenv("DISCORD_HELP_CHANNEL_IDS", "123, not-an-id-secretish")
    discord_env.setenv("DISCORD_API_URL", "discord.com/api")
    with pytest.raises(SettingsError) as raised:
        load_discord_settings()
    message = str(raised.value)
    for variable in ("DISCORD_TOKEN", "DISCORD_HELP_CHANNEL_IDS", "DISCORD_API_URL"):
        assert variable in message
    assert TOKEN not in message and "secretish" not in message
    discord_env.setenv("DISCORD_TOKEN", TOKEN)
    discord_env.setenv("DISCORD_HELP_CHANNEL_IDS", "")
    discord_env.setenv("DISCORD_API_URL", "http://127.0.0.1:9/api/v10/")
    discord_env.setenv("DISCORD_SHARD_IDS", "0,3")
    with pytest.raises(SettingsError, match="DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT"):
        load_discord_settings()
    discord_env.setenv("DISCORD_SHARD_COUNT", "2")
    with pytest.raises(SettingsError, match="below DISCORD_SHARD_COUNT"):
        load_discord_settings()
    discord_env.setenv("DISCORD_SHARD_IDS", "1, 0")
    settings = load_discord_settings()
    assert settings.discord_shard_ids == (1, 0) and settings.sharded
    assert settings.discord_api_url == "http://127.0.0.1:9/api/v10"
    assert settings.discord_help_channel_ids == frozenset()
    assert TOKEN not in repr(settings)


def test_the_handlers_keep_no_reloaded_catalog_alive() -> None:
    """After a reload the service frees the old index in steps, off the event loop; the handlers' record
    keys must not hold it (a strong reference made its last holder free it all at once, on the loop)."""
    import gc
    import weakref
    from types import SimpleNamespace

    from adapters.discord.bot import PanicHandlers

    serving = [PanicLookup(seeds_catalog())]

    def record_ids() -> Iterable[str]:  # of the catalog serving now, not of the one at the start
        return serving[0].record_ids()

    service = SimpleNamespace(matcher=serving[0].matcher, record_ids=record_ids)
    handlers = PanicHandlers(None, None, service, DiscordState())  # type: ignore[arg-type]
    first = handlers.keys
    assert handlers.keys is first  # made once per catalog
    old = weakref.ref(service.matcher)
    serving[0] = PanicLookup(seeds_catalog())  # the reload, before any interaction
    service.matcher = serving[0].matcher
    gc.collect()
    assert old() is None
    assert handlers.keys is not first  # the new catalog's keys on the next interaction


def test_record_keys_of_a_prebuilt_catalog_read_none_of_its_records(tmp_path: Path) -> None:
    """Keys come from the catalog's ids: a prebuilt catalog's records stay on disk (validating 100k of them
    took seconds and their memory)."""
    from adapters.discord.bot import PanicHandlers
    from bot.prebuilt import LazyRecords, read_prebuilt, write_prebuilt

    catalog = seeds_catalog()
    path = tmp_path / "seeds.pbcat"
    write_prebuilt(PanicLookup(catalog), path)
    service = read_prebuilt(path)
    records = service.matcher.records
    assert isinstance(records, LazyRecords)
    handlers = PanicHandlers(None, None, service, DiscordState())  # type: ignore[arg-type]
    assert handlers.keys.resolve(AVG_POOL_ID) == AVG_POOL_ID
    assert records.validations == 0
    assert sorted(service.record_ids()) == sorted(record.id for record in catalog.records)


@pytest.mark.parametrize(
    ("name", "message", "args"),
    [
        ("discord.client", "Attempting a reconnect in %.2fs", (1.5,)),
        ("discord.shard", "Attempting a reconnect for shard ID %s in %.2fs", (0, 1.5)),
    ],
)
def test_a_gateway_reconnect_attempt_is_one_log_line(name: str, message: str, args: tuple[Any, ...]) -> None:
    """discord.py logs each attempt with a traceback; every platform's attempts are one line each."""
    import sys

    from adapters.discord.runner import quiet_discord_logs

    quiet_discord_logs()
    logger = logging.getLogger(name)
    try:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    except OSError:
        record = logger.makeRecord(name, logging.ERROR, "client.py", 781, message, args, sys.exc_info())
    assert logger.filter(record)
    assert record.exc_info is None and record.exc_text is None  # before: the whole traceback
    text = record.getMessage()
    assert text.startswith("Attempting a reconnect") and "1.50s" in text
    assert text.endswith("(ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 9))")
