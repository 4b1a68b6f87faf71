"""Start-up and stop in every state: the endpoints answer before any platform connects, a refused token ends
start-up with one line naming its variable, an unreachable platform (Slack, Discord, GitHub alike) is retried
with backoff (one log line per attempt, `/readyz` 503 meanwhile), a Slack request is acknowledged while
Slack's Web API is unreachable, SIGTERM and SIGINT end the process whatever the connection is doing (during
start-up too: one line, exit 0), and on SIGTERM `/readyz` answers 503 for the drain delay before the listener
closes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters import platforms
from adapters.serve.main import Service
from tests.adapters.serve.test_service import SEEDS, settings, started, stopped
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import (
    AVG_POOL_PASTE,
    AVG_POOL_TITLE,
    BOT_TOKEN,
    SIGNING_SECRET,
    event_callback,
    header,
    mention_event,
    signed,
    slash_command,
)
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
OTHER_PLATFORMS = (
    "DISCORD_API_URL",
    "DISCORD_HELP_CHANNEL_IDS",
    "GITHUB_WEBHOOK_SECRET",
    "GITHUB_APP_ID",
    "GITHUB_PRIVATE_KEY",
    "GITHUB_PRIVATE_KEY_FILE",
    "GITHUB_TOKEN",
    "GITHUB_AUTO_REPLY_REPOS",
    "GITHUB_API_URL",
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    isolate(monkeypatch, *SLACK_VARIABLES, *OTHER_PLATFORMS)
    # Every platform's start-up retries follow the one policy: shortened here.
    monkeypatch.setattr(platforms, "RETRY_FIRST_SECONDS", 0.05, raising=False)
    monkeypatch.setattr(platforms, "RETRY_MAX_SECONDS", 0.2, raising=False)
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


async def readiness(http: aiohttp.ClientSession, base: str) -> tuple[int, dict[str, object]]:
    async with http.get(f"{base}/readyz") as response:
        return response.status, await response.json()


async def until(check: Callable[[], object], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def until_ready(http: aiohttp.ClientSession, base: str, timeout: float = 10) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        status, body = await readiness(http, base)
        if status == 200:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"never ready: {body}")
        await asyncio.sleep(0.02)


def logged(caplog: pytest.LogCaptureFixture, words: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if words in r.getMessage()]


def assert_one_line_per_attempt(lines: list[logging.LogRecord]) -> None:
    assert len(lines) >= 2
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)
    assert "attempt 1," in lines[0].getMessage() and "attempt 2," in lines[1].getMessage()


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


def serve_process(extra: dict[str, str], port: int, platform: str = "slack") -> subprocess.Popen[bytes]:
    unset = (*SLACK_VARIABLES, *OTHER_PLATFORMS, *PROXY_VARIABLES)
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(
        NO_PROXY="127.0.0.1",
        PANICBOT_CATALOG=str(SEEDS),
        DATABASE_URL=f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-test-')}/panicbot.db",
        PANICBOT_HTTP_HOST="127.0.0.1",
        PANICBOT_LOG_FORMAT="text",
        PANICBOT_CATALOG_WATCH_SECONDS="0",
        PANICBOT_SHUTDOWN_DRAIN_SECONDS="0.2",
    )
    environ.update(extra)
    command = [sys.executable, "-m", "adapters.cli.main", "serve", platform, "--port", str(port)]
    # A session of its own: killing it (`end_all`) ends its worker processes too, which hold its pipes.
    return subprocess.Popen(
        command, cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def slack_unreachable() -> dict[str, str]:
    """Socket Mode credentials with Slack's Web API on a closed port: /readyz stays 503 before and after."""
    return {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": f"http://127.0.0.1:{closed_port()}/api/",
    }


def end_all(process: subprocess.Popen[bytes]) -> None:
    """The process and whatever it started, killed if still running."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def http_status(port: int, path: str) -> bytes:
    """The status line's start of `GET path` on the service's port (b"" when nothing answers)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            return connection.recv(12)
    except OSError:
        return b""


def wait_for_health(process: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        if http_status(port, "/healthz") == b"HTTP/1.1 200":
            return
        time.sleep(0.1)
    raise AssertionError("/healthz never answered while the platform was unreachable")


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_serve_while_slack_is_unreachable(sent: signal.Signals) -> None:
    port = closed_port()
    slack = slack_unreachable()
    process = serve_process(slack, port)
    try:
        wait_for_health(process, port)
        time.sleep(4)  # an attempt or two (slack_sdk itself retries a refused connection once)
        process.send_signal(sent)
        _, stderr = process.communicate(timeout=10)  # before: only SIGKILL ended it
    finally:
        end_all(process)
    text = stderr.decode()
    assert "Traceback" not in text
    assert "Slack is not reachable" in text


# -- one policy for an unreachable platform ----------------------------------------------------------------


def test_discord_unreachable_is_retried_with_backoff_until_it_answers(
    env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.adapters.discord.fake_discord import API_PREFIX, FakeDiscord
    from tests.adapters.discord.test_bot import TOKEN

    port = closed_port()
    env.setenv("DISCORD_TOKEN", TOKEN)
    env.setenv("DISCORD_API_URL", f"http://127.0.0.1:{port}{API_PREFIX}")

    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(SEEDS)), ["discord"])
        task, base = await started(service)
        async with aiohttp.ClientSession() as http:
            # Before: the connection's end ended the process within a second ("Discord stopped", exit 69).
            await until(lambda: len(logged(caplog, "Discord is not reachable")) >= 2, "two attempts")
            assert not task.done() and service.failure is None
            status, body = await readiness(http, base)
            assert status == 503 and body["discord"] is False
            async with FakeDiscord(TOKEN, port=port):  # Discord is back: the next attempt connects
                body = await until_ready(http, base)
                assert body["discord"] is True
                await stopped(service, task)
        assert service.failure is None

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    lines = logged(caplog, "Discord is not reachable")
    assert_one_line_per_attempt(lines)
    assert f"at http://127.0.0.1:{port}{API_PREFIX}" in lines[0].getMessage()
    assert TOKEN not in "\n".join(r.getMessage() for r in caplog.records)


def github_app_env(env: pytest.MonkeyPatch, api_url: str) -> None:
    from tests.adapters.github.fake_github import APP_ID
    from tests.adapters.github.test_app import KEY_PEM, SECRET

    env.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    env.setenv("GITHUB_APP_ID", str(APP_ID))
    env.setenv("GITHUB_PRIVATE_KEY", KEY_PEM)
    env.setenv("GITHUB_API_URL", api_url)


def test_github_unreachable_at_start_is_retried_and_not_ready_until_the_app_is_checked(
    env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.adapters.github.fake_github import FakeGitHub
    from tests.adapters.github.test_app import KEY

    port = closed_port()
    github_app_env(env, f"http://127.0.0.1:{port}")

    async def scenario() -> None:
        service = Service(settings(panicbot_catalog=str(SEEDS)), ["github"])
        task, base = await started(service)
        async with aiohttp.ClientSession() as http:
            # Before: ready at once, the app's credentials never asked about.
            await until(lambda: len(logged(caplog, "GitHub unreachable at")) >= 2, "two attempts")
            status, body = await readiness(http, base)
            assert status == 503 and body["github"] is False
            async with FakeGitHub(public_key=KEY.public_key(), port=port) as fake:
                body = await until_ready(http, base)
                assert body["github"] is True
                [check] = fake.app_checks()
                assert check.status == 200 and check.headers["Authorization"].startswith("Bearer ")
                await stopped(service, task)
        assert service.failure is None

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    lines = logged(caplog, "GitHub unreachable at")
    assert_one_line_per_attempt(lines)
    assert lines[0].getMessage().startswith(f"GitHub unreachable at http://127.0.0.1:{port} (")


def test_a_slack_request_is_acknowledged_while_slack_api_is_unreachable(
    env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:  # its response_url answers; the Web API is elsewhere
            env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
            env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
            env.setenv("SLACK_API_URL", f"http://127.0.0.1:{closed_port()}/api/")
            service = Service(settings(panicbot_catalog=str(SEEDS)), ["slack"], slack_http=True)
            task, base = await started(service)
            async with aiohttp.ClientSession() as http:
                url = fake.response_url()
                body = urlencode(slash_command(AVG_POOL_PASTE, url))
                headers = {**signed(body), "Content-Type": "application/x-www-form-urlencoded"}
                async with http.post(f"{base}/slack/events", data=body, headers=headers) as response:
                    assert response.status == 200  # before: 500 (Bolt's auth.test on the first request)
                [answer] = await fake.wait_for(fake.responses, what="the answer at response_url")
                assert header(answer) == AVG_POOL_TITLE

                event = json.dumps(event_callback(mention_event(AVG_POOL_PASTE), "Ev0UNREACH"))
                headers = {**signed(event), "Content-Type": "application/json"}
                async with http.post(f"{base}/slack/events", data=event, headers=headers) as response:
                    assert response.status == 200
                # The reply cannot be posted: logged and counted, and the service goes on.
                failed = 'panicbot_platform_api_errors_total{error="ClientConnectorError",platform="slack"}'
                deadline = time.monotonic() + 10
                while True:
                    async with http.get(f"{base}/metrics") as response:
                        metrics = await response.text()
                    if failed in metrics or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.05)
                assert failed in metrics
                assert logged(caplog, "chat.postMessage failed")
                assert await status_of(http, f"{base}/healthz") == 200
            await stopped(service, task)

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("slack_bolt")]


# -- SIGTERM during start-up -------------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [0.25, 0.6, 1.2, 2.0, 3.0])
def test_sigterm_at_any_moment_of_start_up_is_one_line_and_exit_0(delay: float) -> None:
    slack = slack_unreachable()
    process = serve_process(slack, closed_port())
    try:
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    finally:
        end_all(process)
    text = stderr.decode()
    assert process.returncode == 0, text  # before: -15 (143 from a shell), and nothing said
    assert "Traceback" not in text
    lines = text.strip().splitlines()
    if "panicbot serving" not in text:  # stopped before serving: one line says so
        assert len(lines) == 1, text
        assert "SIGTERM" in lines[0] and "start-up" in lines[0]
    else:
        assert lines[-1].endswith("stopped")


def test_serve_discord_keeps_retrying_an_unreachable_discord_and_sigterm_exits_0() -> None:
    from tests.adapters.discord.fake_discord import API_PREFIX
    from tests.adapters.discord.test_bot import TOKEN

    port = closed_port()
    discord = {"DISCORD_TOKEN": TOKEN, "DISCORD_API_URL": f"http://127.0.0.1:{closed_port()}{API_PREFIX}"}
    process = serve_process(discord, port, "discord")
    try:
        wait_for_health(process, port)
        time.sleep(2.5)  # attempts at 0, 1 and 3 s
        assert process.poll() is None  # before: exit 69 within 1.5 s
        assert http_status(port, "/readyz") == b"HTTP/1.1 503"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=10)
    finally:
        end_all(process)
    text = stderr.decode()
    assert process.returncode == 0, text
    assert "Traceback" not in text and TOKEN not in text
    assert text.count("Discord is not reachable") >= 2
