"""The service's HTTP port against hostile clients: compressed bodies are refused before they are inflated,
and a client that sends its headers or its body slower than the read timeout has its connection closed."""

from __future__ import annotations

import asyncio
import time
import zlib
from typing import Any

import aiohttp
import pytest

from adapters.serve.main import Service, ServiceSettings
from tests.adapters.serve.test_service import settings, started, stopped
from tests.adapters.slack.fake_slack import FakeSlack
from tests.adapters.slack.test_app import BOT_TOKEN, SIGNING_SECRET
from tests.support.local_only import isolate

READ_TIMEOUT = 0.5
# The connection must be gone well before a client that never stops dribbling would be done.
CLOSED_WITHIN = READ_TIMEOUT + 2.5
DRIBBLE_SECONDS = 0.1
GIB = 1 << 30


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


def gzip_bomb(inflated: int = GIB) -> bytes:
    """About 1 MB of gzip that inflates to `inflated` zero bytes. Built from one fully flushed 1 MiB block
    repeated (compressing a whole GiB would take seconds); the trailer's checksum is wrong, which an inflater
    only finds once it has done all the work."""
    chunk = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    middle = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    return first + middle * (inflated // len(chunk) - 1) + compressor.flush()


async def slack_service(env: pytest.MonkeyPatch, fake: FakeSlack) -> tuple[Service, asyncio.Task[None], str]:
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    env.setenv("SLACK_API_URL", fake.api_url)
    overrides: dict[str, Any] = {"panicbot_http_read_timeout_seconds": READ_TIMEOUT}
    service = Service(settings(**overrides), ["slack"], slack_http=True)
    task, base = await started(service)
    await fake.wait_for_calls("auth.test")  # the start-up check of SLACK_BOT_TOKEN, before any request
    fake.calls.clear()
    return service, task, base


async def closed_by_server(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dribble: bytes
) -> float:
    """Send `dribble` a byte at a time until the server closes the connection; how long that took."""
    started_at = time.monotonic()
    for byte in dribble:
        if reader.at_eof():
            break
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            break
        try:
            await asyncio.wait_for(reader.read(65536), timeout=DRIBBLE_SECONDS)
        except TimeoutError:
            continue
        except ConnectionError:
            break
    else:
        raise AssertionError("the server kept the connection open for the whole dribble")
    return time.monotonic() - started_at


def test_the_read_timeout_is_a_setting_of_ten_seconds_by_default(clean_env: pytest.MonkeyPatch) -> None:
    assert ServiceSettings().panicbot_http_read_timeout_seconds == 10.0
    clean_env.setenv("PANICBOT_HTTP_READ_TIMEOUT_SECONDS", "2.5")
    assert ServiceSettings().panicbot_http_read_timeout_seconds == 2.5


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "GZIP"])
def test_a_compressed_body_is_refused_before_it_is_inflated(
    clean_env: pytest.MonkeyPatch, encoding: str
) -> None:
    bomb = gzip_bomb()

    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            service, task, base = await slack_service(clean_env, fake)
            cpu = time.process_time()
            headers = {"Content-Encoding": encoding, "Content-Type": "application/json"}
            async with aiohttp.ClientSession(auto_decompress=False) as http:
                async with http.post(f"{base}/slack/events", data=bomb, headers=headers) as response:
                    assert response.status == 415
                # Garbage that no inflater would take gets the same answer (not aiohttp's 400 from inflating).
                async with http.post(f"{base}/slack/events", data=b"\x00junk", headers=headers) as response:
                    assert response.status == 415
            await asyncio.sleep(0.5)  # whatever the server still does with the bomb, it does now
            # Inflating 1 GiB takes seconds of CPU; refusing it, sending it over loopback included, does not.
            assert time.process_time() - cpu < 1.5
            assert fake.calls == []
            await stopped(service, task)

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))


def test_headers_sent_slower_than_the_read_timeout_get_the_connection_closed(
    clean_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            service, task, base = await slack_service(clean_env, fake)
            host, port = base.removeprefix("http://").split(":")
            head = b"POST /slack/events HTTP/1.1\r\nHost: x\r\n" + b"X-Padding: " + b"a" * 200 + b"\r\n"
            reader, writer = await asyncio.open_connection(host, int(port))
            took = await closed_by_server(reader, writer, head)
            writer.close()
            assert took < CLOSED_WITHIN
            # A client that connects and says nothing is closed too.
            reader, writer = await asyncio.open_connection(host, int(port))
            started_at = time.monotonic()
            assert await asyncio.wait_for(reader.read(), timeout=CLOSED_WITHIN) == b""
            assert time.monotonic() - started_at < CLOSED_WITHIN
            writer.close()
            await stopped(service, task)

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))


def test_a_body_sent_slower_than_the_read_timeout_gets_the_connection_closed(
    clean_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with FakeSlack(BOT_TOKEN) as fake:
            service, task, base = await slack_service(clean_env, fake)
            host, port = base.removeprefix("http://").split(":")
            body = b"token=x&text=" + b"a" * 400
            head = (
                b"POST /slack/events HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(head)
            await writer.drain()
            took = await closed_by_server(reader, writer, body)
            writer.close()
            assert took < CLOSED_WITHIN
            assert fake.calls == []
            await stopped(service, task)

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))
