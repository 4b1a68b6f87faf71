"""Discord's follow-ups owed after an ack (the deferred "Explain this panic" of a log file, "Post publicly")
kept in the outbox: stored before the ack, sent once after a SIGTERM and a restart, dropped (one line) once
the interaction's token has expired, and a store that fails before the ack is an answer the user sees."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from typing import Any

import pytest

from adapters.chat.owed import NOT_STORED_MESSAGE
from adapters.outbox import OutboxEntry, OutboxWorker
from adapters.serve.main import Service
from adapters.storage.errors import StorageError
from tests.adapters.discord.fake_discord import (
    GENERAL_CHANNEL_ID,
    MODERATOR_ID,
    OTHER_USER_ID,
    USER_ID,
    FakeDiscord,
    FakeInteraction,
)
from tests.adapters.discord.test_bot import (
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    TOKEN,
    callback_data,
    custom_id,
    discord_env,
    ephemeral_message,
    running,
    slash_card,
    title_of,
)
from tests.adapters.serve.test_service import SEEDS, settings, started, stopped
from tests.support.log_lines import LogLines
from tests.support.outboxes import sqlite_outbox

__all__ = ["discord_env"]  # a fixture, used by name

EXPLAINS = 60
USERS = (USER_ID, OTHER_USER_ID, MODERATOR_ID)
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"


async def explain_a_log_file(fake: FakeDiscord, user: int) -> FakeInteraction:
    log_file = fake.add_file(GENERAL_CHANNEL_ID, "panic.txt", AVG_POOL_PASTE.encode())
    target = await fake.post(GENERAL_CHANNEL_ID, "CI log", attachments=[log_file])
    return await fake.context_menu(target, user=user)


def test_follow_ups_owed_at_sigterm_are_sent_after_a_restart_exactly_once(
    discord_env: pytest.MonkeyPatch,
) -> None:
    lines = LogLines()
    logging.getLogger("panicbot").addHandler(lines)
    tokens: list[str] = []

    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            fake.followup_delay = (
                0.25  # Discord's answer takes a while: follow-ups are still owed at the stop
            )
            discord_env.setenv("DISCORD_TOKEN", TOKEN)
            discord_env.setenv("DISCORD_API_URL", fake.api_url)
            # The same database across both starts; three users, whose follow-ups each go in order.
            conf = settings(
                panicbot_catalog=str(SEEDS), panicbot_user_rate_limit=0, panicbot_shutdown_grace_seconds=1
            )
            service = Service(conf, ["discord"])
            task, _ = await started(service)
            await fake.wait_for_identify()
            asked = [await explain_a_log_file(fake, USERS[n % 3]) for n in range(EXPLAINS)]
            tokens.extend(interaction.token for interaction in asked)
            for interaction in asked:
                deferred = await fake.callback(interaction)
                assert deferred.body == {"type": 5, "data": {"flags": 64}}
            await fake.wait_for(lambda: len(fake.calls_to(FOLLOW_UP)) >= 8, what="the first follow-ups")
            os.kill(os.getpid(), signal.SIGTERM)  # what a rolling deploy sends
            await asyncio.wait_for(task, timeout=30)
            assert service.signalled == "SIGTERM"
            before = len(fake.calls_to(FOLLOW_UP))
            assert 8 <= before < EXPLAINS
            [kept] = [line for line in lines.lines if "kept in the outbox" in line]
            assert kept.startswith(f"stopping with {EXPLAINS - before} Discord deliveries not answered yet")

            service = Service(conf, ["discord"])
            task, _ = await started(service)
            await fake.wait_for(
                lambda: len(fake.calls_to(FOLLOW_UP)) >= EXPLAINS, what="every follow-up", timeout=60
            )
            await asyncio.sleep(0.5)  # a duplicate, if any, would come now
            await stopped(service, task)
            assert [len(fake.followups(interaction)) for interaction in asked] == [1] * EXPLAINS
            assert all(title_of(call.body) == AVG_POOL_TITLE for call in fake.calls_to(FOLLOW_UP))
            assert all(call.ok for call in fake.calls_to(FOLLOW_UP))

    try:
        asyncio.run(asyncio.wait_for(scenario(), timeout=120))
    finally:
        logging.getLogger("panicbot").removeHandler(lines)
    logged = "\n".join(lines.lines)
    assert not [token for token in tokens if token in logged]  # an interaction token is a secret


class _BrokenOutbox:
    async def add(self, entry: OutboxEntry) -> bool:
        raise StorageError("the database is not answering")

    async def claim(self, owner: str, lease_seconds: float) -> OutboxEntry | None:
        return None

    async def done(self, key: str) -> None:
        return None

    async def release(self, key: str, owner: str, delay: float = 0.0) -> None:
        return None

    async def pending(self) -> list[str]:
        return []


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=30))


def test_a_store_failing_before_the_ack_is_an_answer_the_user_sees(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running(discord_env, outbox=_BrokenOutbox()) as h:  # type: ignore[arg-type]
            interaction = await explain_a_log_file(h.fake, USER_ID)
            note = await h.fake.callback(interaction)
            # Answered at once instead of deferred: Discord shows it to the user.
            assert note.body["type"] == 4
            assert callback_data(note)["flags"] == 64
            assert NOT_STORED_MESSAGE in callback_data(note)["content"]
            _, callback = await slash_card(h)  # a /panic is answered in its callback: no outbox needed
            click = await h.fake.click(
                ephemeral_message(callback), custom_id(callback_data(callback), "pb:post:")
            )
            refused = await h.fake.callback(click)
            assert refused.body["type"] == 4 and NOT_STORED_MESSAGE in callback_data(refused)["content"]
            await asyncio.sleep(0.2)
            assert h.fake.calls_to(FOLLOW_UP) == []

    run(scenario())
    failures = [r for r in caplog.records if "not stored in the Discord outbox" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info is None for r in failures)


def test_an_expired_token_is_dropped_with_one_line_and_never_used(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = sqlite_outbox("discord")

    async def scenario() -> None:
        async with running(discord_env, outbox=outbox) as h:
            owed = h.state.owed
            assert owed is not None
            await owed.worker.stop(0.1)  # this replica is gone: the follow-up waits in the outbox
            interaction = await explain_a_log_file(h.fake, USER_ID)
            assert (await h.fake.callback(interaction)).body["type"] == 5
            [key] = await h.fake.wait_for(outbox.pending_now, what="the follow-up stored")
            assert key == f"discord-{interaction.id}"
            # Another replica starts 16 minutes later: an interaction's token lasts 15.
            later = time.time() + 16 * 60
            owed.clock = lambda: later
            other = OutboxWorker(outbox, owed.worker.handle, name="Discord", log=owed.log, poll_seconds=0.02)
            other.start()
            await h.fake.wait_for(lambda: other.dropped == 1, what="the expired follow-up dropped")
            await other.stop(0.1)
            assert await outbox.pending() == []
            assert h.fake.followups(interaction) == []

    run(scenario())
    outbox.close()
    dropped = [r for r in caplog.records if "dropped from the Discord outbox" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].exc_info is None
    assert "its interaction token expired" in dropped[0].getMessage()


def test_a_deferral_discord_refuses_owes_nothing(discord_env: pytest.MonkeyPatch) -> None:
    outbox = sqlite_outbox("discord")

    async def scenario() -> None:
        async with running(discord_env, outbox=outbox) as h:
            h.fake.fail(
                "POST /interactions/{interaction_id}/{token}/callback", 404, 10062, "Unknown interaction"
            )
            interaction = await explain_a_log_file(h.fake, USER_ID)
            await h.fake.wait_for(lambda: h.fake.callbacks(interaction), what="the refused deferral")
            await asyncio.sleep(0.3)
            assert await outbox.pending() == []  # withdrawn: no follow-up through a dead interaction
            assert h.fake.followups(interaction) == []

    run(scenario())
    outbox.close()


def test_a_token_discord_refuses_as_invalid_is_dropped_not_retried(
    discord_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # After its 15 minutes Discord answers a token 401 "Invalid Webhook Token" (50027), whatever our clock.
    async def scenario() -> None:
        async with running(discord_env) as h:
            h.fake.fail(FOLLOW_UP, 401, 50027, "Invalid Webhook Token")
            interaction = await explain_a_log_file(h.fake, USER_ID)
            await h.fake.wait_for(lambda: h.fake.followups(interaction), what="the refused follow-up")
            owed = h.state.owed
            assert owed is not None
            await h.fake.wait_for(lambda: owed.worker.dropped == 1, what="the follow-up dropped")
            await asyncio.sleep(0.3)
            assert len(h.fake.followups(interaction)) == 1  # never sent again

    run(scenario())
    dropped = [r for r in caplog.records if "dropped from the Discord outbox" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].exc_info is None and "50027" in dropped[0].getMessage()
