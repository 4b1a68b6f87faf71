"""The rolling-deploy scenarios of Slack's owed answers, shared by their tests and
`bench/slack_owed_restart.py`: `commands` `/panic` (or, `events_restart_scenario`, `events` mentions and
pastes) acknowledged by `panicbot serve slack --http` (against the local fake Slack, whose response_url
answers, or chat.postMessage answers, take `delay` seconds), a real SIGTERM once `stop_after` answers were
posted, the service started again on the same outbox, and the posts to every response_url (or thread)
counted. The outbox is the database's (a new SQLite file), or Redis's with `redis_url` (its `panicbot:slack`
keys: run it on a Redis nobody else uses for panicbot)."""

from __future__ import annotations

import asyncio
import json
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
from tests.adapters.slack.fake_slack import Call, FakeSlack
from tests.adapters.slack.test_app import (
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    CHANNEL,
    event_callback,
    header,
    mention_event,
    message_event,
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


@dataclass(frozen=True)
class EventFigures:
    events: int  # mentions and pastes acknowledged, each owing one reply in its thread
    answered_before_stop: int
    kept_at_stop: int  # replies the stop logged as left in the outbox
    cut_short: int  # replies posted before the stop whose entry was still in the outbox (found, not reposted)
    answered: int  # threads with at least one reply after the restart
    duplicates: int  # replies beyond the first, over all threads
    cards: int  # replies that are the expected card
    ack_ms_p50: float
    ack_ms_p99: float
    seconds: float


async def events_restart_scenario(
    env: pytest.MonkeyPatch,
    *,
    events: int,
    stop_after: int,
    delay: float,
    users: int = 12,
    paste_every: int = 6,
    refused: int = 4,
    retry_after: int = 2,
    grace: float = 0.1,
    redis_url: str | None = None,
) -> EventFigures:
    """`events` Events API deliveries (mentions in one channel; every `paste_every`th a paste in an
    auto-reply channel of its own, so no cooldown holds it back) and a SIGTERM once `stop_after`
    chat.postMessage calls reached Slack. Slack refuses the first `refused` posts (429, `retry_after`
    seconds: the replies wait for it when the stop comes) and takes `delay` seconds to answer each post it
    has made: a stop with less grace than that cuts the posts in hand short after Slack posted them."""
    isolate(env, *SLACK_VARIABLES, "GITHUB_WEBHOOK_SECRET")
    pasted = [f"CAUTO{n:04d}" for n in range(0, events, paste_every)]
    env.setenv("SLACK_AUTO_REPLY_CHANNELS", ",".join(pasted))
    lines = LogLines()
    logging.getLogger("panicbot").addHandler(lines)
    started_at = time.monotonic()
    try:
        async with FakeSlack(BOT_TOKEN) as fake:
            slack_over_http(env, fake)
            conf = settings(
                panicbot_user_rate_limit=0, panicbot_shutdown_grace_seconds=grace, redis_url=redis_url
            )
            service = Service(conf, ["slack"], slack_http=True)
            task, base = await started(service)
            fake.post_delay = delay  # Slack posts each reply at once, and answers late
            fake.rate_limit("chat.postMessage", retry_after=retry_after, times=refused)
            threads, acks = [], []
            async with aiohttp.ClientSession() as http:
                for n in range(events):
                    user = f"U{n % users:09d}"
                    if n % paste_every == 0:
                        event = message_event(AVG_POOL_PASTE, channel=f"CAUTO{n:04d}", user=user)
                    else:
                        event = mention_event(AVG_POOL_PASTE, channel=CHANNEL, user=user)
                    fake.add_message(event["channel"], event["ts"], event["text"], user=user)
                    body = json.dumps(event_callback(event, f"Ev{n:08d}RESTART"))
                    headers = {**signed(body), "Content-Type": "application/json"}
                    sent = time.perf_counter()
                    async with http.post(f"{base}/slack/events", data=body, headers=headers) as response:
                        assert response.status == 200
                    acks.append(time.perf_counter() - sent)
                    threads.append((event["channel"], event["ts"]))
            posted = lambda: len(fake.calls_to("chat.postMessage")) >= stop_after  # noqa: E731
            await fake.wait_for(posted, what="the first posts", timeout=60)
            os.kill(os.getpid(), signal.SIGTERM)  # what a rolling deploy sends
            await asyncio.wait_for(task, timeout=30 + grace)
            assert service.signalled == "SIGTERM"
            before = len(fake.posts())
            kept = next((line for line in lines.lines if "kept in the outbox" in line), "")

            fake.post_delay = 0.0
            service = Service(conf, ["slack"], slack_http=True)
            task, _ = await started(service)
            try:
                await fake.wait_for(
                    lambda: len({_thread(call) for call in fake.posts()}) >= events,
                    what="every reply",
                    timeout=60 + events * 0.05,
                )
                await asyncio.sleep(1.0)  # a duplicate, if any, would come now
            finally:
                await stopped(service, task)
            replies = [sum(1 for call in fake.posts() if _thread(call) == thread) for thread in threads]
            acks_ms = sorted(1000 * ack for ack in acks)
            return EventFigures(
                events=events,
                answered_before_stop=before,
                kept_at_stop=int(kept.split()[2]) if kept else 0,
                # Each reply posted at most once before the stop: those beyond the ones answered and done.
                cut_short=before + (int(kept.split()[2]) if kept else 0) - events,
                answered=sum(1 for count in replies if count),
                duplicates=sum(count - 1 for count in replies if count > 1),
                cards=sum(1 for call in fake.posts() if header(call) == AVG_POOL_TITLE),
                ack_ms_p50=statistics.median(acks_ms),
                ack_ms_p99=acks_ms[min(len(acks_ms) - 1, int(0.99 * len(acks_ms)))],
                seconds=time.monotonic() - started_at,
            )
    finally:
        logging.getLogger("panicbot").removeHandler(lines)


def _thread(call: Call) -> tuple[str, str]:
    return str(call.body.get("channel")), str(call.body.get("thread_ts"))
