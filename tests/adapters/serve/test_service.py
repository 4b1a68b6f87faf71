"""The one-process service: health, readiness and metrics endpoints, Slack over HTTP through it, catalog hot
reload that never serves a broken file, JSON logs, graceful stop."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import tempfile
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.serve.live_catalog import LiveLookup
from adapters.serve.logs import JsonFormatter
from adapters.serve.main import Service, ServiceSettings
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import (
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    event_callback,
    mention_event,
    signed,
    slash_command,
)
from tests.support.local_only import isolate

SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds.jsonl"  # the upstream seed records


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return isolate(
        monkeypatch,
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_API_URL",
        "SLACK_AUTO_REPLY_CHANNELS",
        "PANICBOT_CATALOG",
        "DISCORD_TOKEN",
    )


def settings(**overrides: Any) -> ServiceSettings:
    values: dict[str, Any] = {
        "panicbot_http_host": "127.0.0.1",
        "panicbot_http_port": 0,
        "panicbot_catalog_watch_seconds": 0,
        "panicbot_shutdown_grace_seconds": 2,
        "panicbot_shutdown_drain_seconds": 0,
        # Never the default ./panicbot.db: each service gets a database of its own, outside the repository.
        "database_url": f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-test-')}/panicbot.db",
    }
    values.update(overrides)
    return ServiceSettings(**values)


async def started(service: Service) -> tuple[asyncio.Task[None], str]:
    task = asyncio.create_task(service.run())
    await asyncio.wait_for(service.started.wait(), timeout=10)
    host, port = service.bound[:2]
    return task, f"http://{host}:{port}"


async def stopped(service: Service, task: asyncio.Task[None]) -> None:
    service.stop()
    await asyncio.wait_for(task, timeout=10)


def slack_over_http(env: pytest.MonkeyPatch, fake: FakeSlack) -> None:
    """The Slack settings of a service in HTTP mode whose Web API is `fake`."""
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    env.setenv("SLACK_API_URL", fake.api_url)


def test_health_readiness_and_metrics_endpoints(clean_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(SEEDS)), [])
        task, base = await started(service)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as response:
                assert response.status == 200
                assert await response.json() == {"ok": True}
            async with http.get(f"{base}/readyz") as response:
                assert response.status == 200
                body = await response.json()
                assert body["ready"] is True and body["catalog"] is True and body["records"] == 3
            async with http.get(f"{base}/metrics") as response:
                text = await response.text()
                assert response.status == 200
                assert "panicbot_catalog_records 3.0" in text
                assert 'panicbot_catalog_reloads_total{outcome="loaded"} 1.0' in text
        service.status.stopping = True
        ready, _ = service.status.ready()
        assert not ready  # a stopping replica leaves the load balancer's rotation first
        await stopped(service, task)

    asyncio.run(scenario())


def test_slack_over_http_through_the_service_counts_lookups(clean_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            slack_over_http(clean_env, fake)
            service = Service(settings(), ["slack"], slack_http=True)
            task, base = await started(service)
            body = urlencode(slash_command(AVG_POOL_PASTE, fake.response_url()))
            headers = {**signed(body), "Content-Type": "application/x-www-form-urlencoded"}
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{base}/slack/events", data=body, headers=headers) as response:
                    assert response.status == 200
                [answer] = await fake.wait_for(fake.responses, what="the /panic answer")
                assert AVG_POOL_TITLE in json.dumps(answer.body)
                async with http.get(f"{base}/metrics") as response:
                    text = await response.text()
            assert 'panicbot_lookups_total{platform="slack",status="matched"} 1.0' in text
            assert 'panicbot_matches_total{band="0.9-1",platform="slack"} 1.0' in text
            assert 'panicbot_lookup_seconds_count{platform="slack"} 1.0' in text
            await stopped(service, task)
            # The service gives Slack its database store and the per-user rate limit, not in-memory stand-ins.
            assert service.states["slack"].feedback is service.store
            assert service.states["slack"].rate_limit is not None
            report = service.store.report(limit=5, catalog_ids=["8d1d2fa6df3880bd", "5c5da46720dbbf10"])
            assert report.never_matched == ("5c5da46720dbbf10",)  # the avg pool answer was counted

    asyncio.run(scenario())


async def post_mention(http: aiohttp.ClientSession, base: str, number: int) -> None:
    body = json.dumps(event_callback(mention_event(AVG_POOL_PASTE, user=f"U{number:09d}"), f"Ev{number:08d}"))
    headers = {**signed(body), "Content-Type": "application/json"}
    async with http.post(f"{base}/slack/events", data=body, headers=headers) as response:
        assert response.status == 200


def test_slack_web_api_calls_share_one_connection_pool(clean_env: pytest.MonkeyPatch) -> None:
    """Replies reuse connections: slack_sdk opened a session and a TCP connection per call, which under a
    burst of replies cost the event loop more than the replies and delayed every ack behind them."""

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            slack_over_http(clean_env, fake)
            service = Service(settings(), ["slack"], slack_http=True)
            task, base = await started(service)
            async with aiohttp.ClientSession() as http:
                for number in range(4):
                    await post_mention(http, base, number)
                    await fake.wait_for_calls("chat.postMessage", number + 1)
            posts = fake.calls_to("chat.postMessage")
            assert [post.body["channel"] for post in posts] == [CHANNEL] * 4
            assert len({post.peer for post in posts}) == 1
            await stopped(service, task)

    asyncio.run(scenario())


def test_stopping_lets_a_slack_reply_in_flight_finish(clean_env: pytest.MonkeyPatch) -> None:
    """A reply retried after Slack's 429 while the service stops is still posted: the shared connection pool
    closes only after the replies in flight."""

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            slack_over_http(clean_env, fake)
            service = Service(settings(panicbot_shutdown_grace_seconds=5), ["slack"], slack_http=True)
            task, base = await started(service)
            fake.rate_limit("chat.postMessage", retry_after=1)
            async with aiohttp.ClientSession() as http:
                await post_mention(http, base, 1)
            await fake.wait_for_calls("chat.postMessage", ok_only=False)
            await stopped(service, task)
            [posted] = fake.calls_to("chat.postMessage", ok_only=True)
            assert posted.body["channel"] == CHANNEL

    asyncio.run(scenario())


def test_hot_reload_swaps_a_good_catalog_and_keeps_serving_on_a_broken_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = tmp_path / "catalog.jsonl"
    lines = SEEDS.read_text(encoding="utf-8").splitlines()
    catalog.write_text(lines[0] + "\n", encoding="utf-8")
    loaded: list[int] = []
    live = LiveLookup([str(catalog)], on_loaded=lambda _, report: loaded.append(report.records))
    assert len(live.matcher) == 1 and loaded == [1]
    assert not live.changed_on_disk()

    catalog.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert live.changed_on_disk()
    before = live.current
    assert live.reload()
    assert live.current is not before and len(live.matcher) == 3 and loaded == [1, 3]
    assert live.lookup("avg pool 2d backward").best is not None

    catalog.write_text("\n".join(lines) + '\n{"record": {"id": "x"', encoding="utf-8")  # caught mid-save
    with caplog.at_level(logging.ERROR, logger="panicbot.catalog"):
        assert not live.reload()
    assert len(live.matcher) == 3 and loaded == [1, 3]
    assert "reload refused" in caplog.text and "catalog.jsonl:4" in caplog.text

    catalog.write_text("not json at all\n", encoding="utf-8")
    assert not live.reload()
    assert len(live.matcher) == 3


def test_json_logs_carry_context_on_one_line() -> None:
    record = logging.LogRecord("panicbot.slack", logging.WARNING, __file__, 1, "posted %s", ("card",), None)
    record.platform = "slack"
    record.confidence = 0.97
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "posted card"
    assert (entry["level"], entry["logger"], entry["platform"], entry["confidence"]) == (
        "warning",
        "panicbot.slack",
        "slack",
        0.97,
    )


def test_redis_url_gives_shared_dedupe_and_cooldowns(clean_env: pytest.MonkeyPatch) -> None:
    from adapters.chat import shared_replies
    from adapters.redis_memory import (
        RateLimiter,
        RedisCooldown,
        RedisEventDeduper,
        RedisKeyedMemory,
        RedisRateLimiter,
    )

    async def scenario() -> None:
        service = Service(settings(redis_url="redis://127.0.0.1:6379/0"), [])
        shared = await service._shared_state("panicbot:test", 60)
        assert isinstance(shared["seen"], RedisEventDeduper)
        assert isinstance(shared["cooldown"], RedisCooldown)
        assert isinstance(shared["rate_limit"], RedisRateLimiter)
        slack = await service._shared_state("panicbot:test", 60, more=shared_replies)
        assert isinstance(slack["posted_replies"], RedisKeyedMemory)  # edits on any replica follow the card
        for client in service._shared_clients:
            await client.aclose()
        alone = await Service(settings(), [])._shared_state("panicbot:test", 60)
        assert set(alone) == {"rate_limit"} and isinstance(alone["rate_limit"], RateLimiter)
        assert (
            await Service(settings(panicbot_user_rate_limit=0), [])._shared_state("panicbot:test", 60) == {}
        )

    asyncio.run(scenario())


def test_a_malformed_redis_url_stops_start_up_without_its_password(clean_env: pytest.MonkeyPatch) -> None:
    from adapters.serve.main import ServiceError

    service = Service(settings(redis_url="notredis://user:hunter2@host"), [])
    with pytest.raises(ServiceError) as failure:
        asyncio.run(service._shared_state("panicbot:test", 60))
    assert "REDIS_URL" in str(failure.value) and "hunter2" not in str(failure.value)


def discord_service(env: pytest.MonkeyPatch, fake: Any) -> Service:
    """A service serving Discord through `fake`, auto-replying in its help channel."""
    from tests.adapters.discord.fake_discord import HELP_CHANNEL_ID
    from tests.adapters.discord.test_bot import TOKEN

    env.setenv("DISCORD_TOKEN", TOKEN)
    env.setenv("DISCORD_API_URL", fake.api_url)
    env.setenv("DISCORD_HELP_CHANNEL_IDS", str(HELP_CHANNEL_ID))
    return Service(settings(), ["discord"])


def test_discord_runs_in_the_service_and_readiness_follows_its_connection(
    clean_env: pytest.MonkeyPatch,
) -> None:
    from tests.adapters.discord.fake_discord import HELP_CHANNEL_ID, FakeDiscord
    from tests.adapters.discord.test_bot import TOKEN

    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            service = discord_service(clean_env, fake)
            task, base = await started(service)
            async with aiohttp.ClientSession() as http:
                for _ in range(250):  # the gateway handshake: HELLO, IDENTIFY, READY
                    async with http.get(f"{base}/readyz") as response:
                        body = await response.json()
                    if response.status == 200:
                        break
                    await asyncio.sleep(0.02)
                assert body["ready"] is True and body["discord"] is True
            await fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            [reply] = await fake.wait_for(lambda: fake.created(HELP_CHANNEL_ID), what="the auto-reply")
            assert AVG_POOL_TITLE in json.dumps(reply.body)
            await stopped(service, task)
            assert service.failure is None

    asyncio.run(scenario())


def test_stopping_lets_a_discord_reply_in_flight_finish(clean_env: pytest.MonkeyPatch) -> None:
    from tests.adapters.discord.fake_discord import HELP_CHANNEL_ID, FakeDiscord
    from tests.adapters.discord.test_bot import TOKEN

    create = "POST /channels/{channel_id}/messages"

    async def scenario() -> None:
        async with FakeDiscord(TOKEN) as fake:
            service = discord_service(clean_env, fake)
            task, _ = await started(service)
            await fake.wait_for_identify()
            fake.rate_limit(create, retry_after=0.5)  # the reply waits in flight when SIGTERM comes
            await fake.post(HELP_CHANNEL_ID, AVG_POOL_PASTE)
            await fake.wait_for(lambda: fake.calls_to(create), what="the first attempt")
            await stopped(service, task)
            delivered = fake.calls_to(create, ok_only=True)
            assert len(delivered) == 1 and AVG_POOL_TITLE in json.dumps(delivered[0].body)

    asyncio.run(scenario())


def test_a_refused_reload_is_counted_once_and_not_retried_every_poll(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(SEEDS.read_text(encoding="utf-8"), encoding="utf-8")
    refused: list[int] = []
    live = LiveLookup([str(catalog)], on_refused=lambda: refused.append(1))
    catalog.write_text("broken\n", encoding="utf-8")
    assert live.changed_on_disk()
    assert not live.reload()
    assert refused == [1]
    assert not live.changed_on_disk()  # the watcher waits for the next edit
    assert len(live.matcher) == 3


def test_the_serving_catalog_is_frozen_out_of_the_collector_and_the_old_one_is_freed(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(SEEDS.read_text(encoding="utf-8"), encoding="utf-8")
    try:
        live = LiveLookup([str(catalog)])
        assert gc.get_freeze_count() > 0
        old = weakref.ref(live.current)
        assert live.reload()
        assert old() is None  # the previous catalog did not stay behind in the frozen generation
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
