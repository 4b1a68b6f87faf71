"""The rolling-deploy scenario of the GitHub outbox, shared by its test and `bench/github_outbox_restart.py`:
`mentions` `@panicbot` comments acknowledged by `panicbot serve github` (against the local fake GitHub),
a real SIGTERM once `stop_after` of them are answered, the service started again on the same database, and
every mention's answers counted by the hidden marker (`source=c<comment id>`). The outbox is the database's
(a new SQLite file), or Redis's with `redis_url` (its `panicbot:github` keys: run it on a Redis nobody else
uses for panicbot).

Time is scaled down: comments go out every `spacing` seconds instead of GitHub's one a second, and the stop
gives the reply in hand `grace` seconds (the service's default is 10)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from adapters.github import api as github_api
from adapters.github.render import read_marker
from adapters.serve.main import Service
from tests.adapters.github.fake_github import APP_ID, FakeGitHub
from tests.adapters.github.test_app import (
    AVG_POOL_PASTE,
    GITHUB_VARIABLES,
    KEY,
    KEY_PEM,
    SECRET,
    Harness,
    comment_payload,
    service_settings,
)
from tests.support.local_only import isolate
from tests.support.log_lines import LogLines

REPOS = ("tracel-ai/burn", "tracel-ai/cubecl", "someone/elsewhere")
USERS = ({"login": "busy", "id": 601, "type": "User"}, {"login": "ferris", "id": 602, "type": "User"})


@dataclass(frozen=True)
class RestartFigures:
    mentions: int
    answered_before_stop: int
    kept_at_stop: int  # deliveries the stop logged as left in the outbox
    answered: int  # mentions with at least one answer after the restart
    duplicates: int  # answers beyond the first, over all mentions
    seconds: float


async def _start(settings: Any) -> tuple[Service, asyncio.Task[None], str]:
    service = Service(settings, ["github"])
    task = asyncio.create_task(service.run())
    await asyncio.wait_for(service.started.wait(), timeout=20)
    host, port = service.bound[:2]
    return service, task, f"http://{host}:{port}"


async def restart_scenario(
    env: pytest.MonkeyPatch,
    *,
    mentions: int,
    stop_after: int,
    spacing: float,
    grace: float,
    redis_url: str | None = None,
) -> RestartFigures:
    isolate(env, *GITHUB_VARIABLES, "PANICBOT_CATALOG", "SLACK_BOT_TOKEN", "DISCORD_TOKEN")
    env.setattr(github_api, "MUTATION_SPACING_SECONDS", spacing)
    lines = LogLines(logging.INFO)
    logging.getLogger("panicbot.github").addHandler(lines)
    started = time.monotonic()
    database = f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-outbox-')}/panicbot.db"
    settings = service_settings(
        database_url=database,
        panicbot_user_rate_limit=0,  # the per-user limit would drop most of one user's 300 mentions
        panicbot_shutdown_grace_seconds=grace,
        redis_url=redis_url,
    )
    try:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            env.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
            env.setenv("GITHUB_API_URL", fake.api_url)
            env.setenv("GITHUB_APP_ID", str(APP_ID))
            env.setenv("GITHUB_PRIVATE_KEY", KEY_PEM)
            asked: list[int] = []
            service, task, base_url = await _start(settings)
            async with aiohttp.ClientSession() as http:
                bot = Harness(fake, service, base_url, http)
                for n in range(mentions):
                    # Half of them from one busy user in one repository; one issue each.
                    busy = n % 2 == 0
                    payload = comment_payload(
                        "created",
                        f"@panicbot\n{AVG_POOL_PASTE}",
                        number=1_000 + n,
                        repo=REPOS[0] if busy else REPOS[1 + n % 4 // 2],
                        author=USERS[0] if busy else USERS[1],
                    )
                    status, _ = await bot.deliver("issue_comment", payload)
                    assert status == 202, status
                    asked.append(payload["comment"]["id"])
                await fake.wait_for(
                    lambda: len(fake.comments) >= stop_after, what="the first answers", timeout=120
                )
            os.kill(os.getpid(), signal.SIGTERM)  # what a rolling deploy sends
            await asyncio.wait_for(task, timeout=grace + 30)
            assert service.signalled == "SIGTERM"
            answered_before = len(fake.comments)
            kept = next((line for line in lines.lines if "kept in the outbox" in line), "")
            kept_count = int(kept.split()[2]) if kept else 0

            service, task, _ = await _start(settings)
            try:
                await fake.wait_for(
                    lambda: len(fake.comments) >= mentions,
                    what="every answer",
                    timeout=60 + mentions * spacing * 2,
                )
                await asyncio.sleep(0.3)  # a duplicate, if any, would come now
            finally:
                service.stop()
                await asyncio.wait_for(task, timeout=30)
            answers = Counter(
                marker.source
                for comment in fake.comments.values()
                if (marker := read_marker(comment["body"])) is not None
            )
            per_mention = [answers.get(f"c{comment_id}", 0) for comment_id in asked]
            return RestartFigures(
                mentions=mentions,
                answered_before_stop=answered_before,
                kept_at_stop=kept_count,
                answered=sum(1 for count in per_mention if count),
                duplicates=sum(count - 1 for count in per_mention if count > 1),
                seconds=time.monotonic() - started,
            )
    finally:
        logging.getLogger("panicbot.github").removeHandler(lines)
