"""Start-up and stop in every state: the endpoints answer before any platform connects, a refused token ends
start-up with one line naming its variable, an unreachable Slack is retried with backoff (one log line per
attempt), SIGTERM and SIGINT end the process whatever the connection is doing, and on SIGTERM `/readyz`
answers 503 for the drain delay before the listener closes."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import pytest

from adapters.serve.main import Service
from adapters.slack import server as slack_server
from tests.adapters.serve.test_service import SEEDS, settings, started, stopped
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import BOT_TOKEN, SIGNING_SECRET
from tests.support.local_only import PROXY_VARIABLES, isolate

ROOT = Path(__file__).resolve().parents[3]
APP_TOKEN = "xapp-1-A1-test-app-token"
SLACK_VARIABLES = (
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_URL",
    "SLACK_AUTO_REPLY_CHANNELS",
    "PANICBOT_CATALOG",
    "DISCORD_TOKEN",
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    isolate(monkeypatch, *SLACK_VARIABLES)
    monkeypatch.setattr(slack_server, "RETRY_FIRST_SECONDS", 0.05, raising=False)
    monkeypatch.setattr(slack_server, "RETRY_MAX_SECONDS", 0.2, raising=False)
    return monkeypatch


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on: Slack 'unreachable' without leaving the machine."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def status_of(http: aiohttp.ClientSession, url: str) -> int:
    async with http.get(url) as response:
        return response.status


def test_socket_mode_with_slack_unreachable_serves_health_and_retries_one_line_per_attempt(
    env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    env.setenv("SLACK_API_URL", f"http://127.0.0.1:{closed_port()}/api/")

    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(SEEDS)), ["slack"])
        task, base = await started(service)  # before: start-up waited for Slack forever
        async with aiohttp.ClientSession() as http:
            assert await status_of(http, f"{base}/healthz") == 200
            async with http.get(f"{base}/readyz") as response:
                assert response.status == 503
                assert (await response.json())["slack"] is False
            deadline = time.monotonic() + 10
            while len(retries()) < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        began = time.monotonic()
        await stopped(service, task)
        assert time.monotonic() - began < 5

    def retries() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "Slack is not reachable" in r.getMessage()]

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    lines = retries()
    assert len(lines) >= 3
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)
    assert "attempt 1," in lines[0].getMessage() and "attempt 2," in lines[1].getMessage()


def test_a_refused_app_token_ends_start_up_with_one_line_naming_it(env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN, app_token="xapp-1-the-token-slack-knows") as fake:
            env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            env.setenv("SLACK_APP_TOKEN", APP_TOKEN)
            env.setenv("SLACK_API_URL", fake.api_url)
            service = Service(settings(panicbot_catalog=str(SEEDS)), ["slack"])
            await asyncio.wait_for(service.run(), timeout=10)  # before: retried forever
            assert service.failure is not None
            assert "SLACK_APP_TOKEN" in service.failure and "invalid_auth" in service.failure
            assert "\n" not in service.failure and APP_TOKEN not in service.failure
            assert len(fake.calls_to("apps.connections.open")) == 1  # never retried

    asyncio.run(scenario())


def test_a_refused_bot_token_in_http_mode_is_never_ready(env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeSlack("xoxb-the-token-slack-knows") as fake:
            env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
            env.setenv("SLACK_API_URL", fake.api_url)
            service = Service(settings(panicbot_catalog=str(SEEDS)), ["slack"], slack_http=True)
            await asyncio.wait_for(service.run(), timeout=10)  # before: "ready" with a revoked token
            assert service.failure is not None
            assert service.failure.startswith("Slack refused SLACK_BOT_TOKEN (invalid_auth)")
            assert BOT_TOKEN not in service.failure

    asyncio.run(scenario())


def test_readyz_answers_503_for_the_drain_delay_before_the_listener_closes(env: pytest.MonkeyPatch) -> None:
    drain = 0.8

    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(SEEDS), panicbot_shutdown_drain_seconds=drain), [])
        task, base = await started(service)
        statuses: list[int] = []
        async with aiohttp.ClientSession() as http:
            assert await status_of(http, f"{base}/readyz") == 200
            stop_at = time.monotonic()
            service.stop()
            while time.monotonic() - stop_at < drain / 2:  # well inside the delay, on 2 noisy cores
                statuses.append(await status_of(http, f"{base}/readyz"))  # before: connection refused
                await asyncio.sleep(0.02)
        await asyncio.wait_for(task, timeout=10)
        assert time.monotonic() - stop_at >= drain * 0.9
        assert statuses and set(statuses) == {503}

    asyncio.run(scenario())


def serve_process(extra: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    environ = {k: v for k, v in os.environ.items() if k not in (*SLACK_VARIABLES, *PROXY_VARIABLES)}
    environ.update(
        NO_PROXY="127.0.0.1",
        PANICBOT_CATALOG=str(SEEDS),
        DATABASE_URL=f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-test-')}/panicbot.db",
        PANICBOT_HTTP_HOST="127.0.0.1",
        PANICBOT_LOG_FORMAT="text",
        PANICBOT_CATALOG_WATCH_SECONDS="0",
        PANICBOT_SHUTDOWN_DRAIN_SECONDS="0.2",
        **extra,
    )
    command = [sys.executable, "-m", "adapters.cli.main", "serve", "slack", "--port", str(port)]
    return subprocess.Popen(command, cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_health(process: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
                connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if connection.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("/healthz never answered while Slack was unreachable")


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_serve_while_slack_is_unreachable(sent: signal.Signals) -> None:
    port = closed_port()
    slack = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": f"http://127.0.0.1:{closed_port()}/api/",
    }
    process = serve_process(slack, port)
    try:
        wait_for_health(process, port)
        time.sleep(4)  # an attempt or two (slack_sdk itself retries a refused connection once)
        process.send_signal(sent)
        _, stderr = process.communicate(timeout=10)  # before: only SIGKILL ended it
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    text = stderr.decode()
    assert "Traceback" not in text
    assert "Slack is not reachable" in text
