"""The rolling-deploy scenario of Slack's owed answers, shared by its test and `bench/slack_owed_restart.py`:
`commands` `/panic` acknowledged by `panicbot serve slack --http` (against the local fake Slack, whose
response_url answers take `delay` seconds), a real SIGTERM once `stop_after` answers were posted, the service
started again on the same outbox, and the posts to every response_url counted. The outbox is the database's
(a new SQLite file), or Redis's with `redis_url` (its `panicbot:slack` keys: run it on a Redis nobody else
uses for panicbot)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import statistics
import time
from dataclasses import dataclass
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.serve.main import Service
from tests.adapters.serve.test_service import settings, slack_over_http, started, stopped
from tests.adapters.serve.test_startup_and_stop import SLACK_VARIABLES
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import (
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    signed,
    slash_command,
    text_of,
)
from tests.support.local_only import isolate
from tests.support.log_lines import LogLines


@dataclass(frozen=True)
class RestartFigures:
    commands: int
    answered_before_stop: int
    kept_at_stop: int  # answers the stop logged as left in the outbox
    answered: int  # response_urls with at least one post after the restart
    duplicates: int  # posts beyond the first, over all response_urls
    cards: int  # posts that are the expected card
    ack_ms_p50: float
    ack_ms_p99: float
    seconds: float
    logged_urls: int  # log lines naming a response_url (a secret): must be 0


async def restart_scenario(
    env: pytest.MonkeyPatch,
    *,
    commands: int,
    stop_after: int,
    delay: float,
    users: int = 12,
    grace: float = 1.0,
    redis_url: str | None = None,
) -> RestartFigures:
    isolate(env, *SLACK_VARIABLES, "GITHUB_WEBHOOK_SECRET")
    lines = LogLines()
    logging.getLogger("panicbot").addHandler(lines)
    started_at = time.monotonic()
    try:
        async with FakeSlack(BOT_TOKEN) as fake:
            fake.response_delay = delay  # Slack's answer takes a while: answers are still owed at the stop
            slack_over_http(env, fake)
            # The same database (or Redis) across both starts; no per-user limit; each user's answers go
            # in order, one at a time.
            conf = settings(
                panicbot_user_rate_limit=0, panicbot_shutdown_grace_seconds=grace, redis_url=redis_url
            )
            service = Service(conf, ["slack"], slack_http=True)
            task, base = await started(service)
            urls, acks = [], []
            async with aiohttp.ClientSession() as http:
                for n in range(commands):
                    url = fake.response_url()
                    body = urlencode(slash_command(AVG_POOL_PASTE, url, user=f"U{n % users:09d}"))
                    headers = {**signed(body), "Content-Type": "application/x-www-form-urlencoded"}
                    sent = time.perf_counter()
                    async with http.post(f"{base}/slack/events", data=body, headers=headers) as response:
                        assert response.status == 200
                        assert await response.text() == ""  # a plain ack: the answer follows
                    acks.append(time.perf_counter() - sent)
                    urls.append(url)
            await fake.wait_for(
                lambda: len(fake.responses()) >= stop_after, what="the first answers", timeout=60
            )
            os.kill(os.getpid(), signal.SIGTERM)  # what a rolling deploy sends
            await asyncio.wait_for(task, timeout=30 + grace)
            assert service.signalled == "SIGTERM"
            before = sum(fake.posts_to(url) for url in urls)
            kept = next((line for line in lines.lines if "kept in the outbox" in line), "")

            service = Service(conf, ["slack"], slack_http=True)
            task, _ = await started(service)
            try:
                await fake.wait_for(
                    lambda: len(fake.responses()) >= commands,
                    what="every answer",
                    timeout=60 + commands * delay,
                )
                await asyncio.sleep(max(0.5, 2 * delay))  # a duplicate, if any, would come now
            finally:
                await stopped(service, task)
            posts = [fake.posts_to(url) for url in urls]
            acks_ms = sorted(1000 * ack for ack in acks)
            return RestartFigures(
                commands=commands,
                answered_before_stop=before,
                kept_at_stop=int(kept.split()[2]) if kept else 0,
                answered=sum(1 for count in posts if count),
                duplicates=sum(count - 1 for count in posts if count > 1),
                cards=sum(1 for call in fake.responses() if AVG_POOL_TITLE in text_of(call)),
                ack_ms_p50=statistics.median(acks_ms),
                ack_ms_p99=acks_ms[min(len(acks_ms) - 1, int(0.99 * len(acks_ms)))],
                seconds=time.monotonic() - started_at,
                logged_urls=sum(1 for line in lines.lines if "/response/" in line),
            )
    finally:
        logging.getLogger("panicbot").removeHandler(lines)
