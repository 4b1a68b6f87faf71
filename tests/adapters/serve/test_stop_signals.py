"""A stop signal delivered twice at once is one signal: systemd's default KillMode signals every process of
the unit, and `uv run` forwards a signal its process group also receives, so a service often gets its
SIGTERM twice within milliseconds. The copy must not cut the readiness drain to nothing: /readyz answers
503 for the whole drain. A signal sent again later still cuts the drain short."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time

import aiohttp
import pytest

from adapters.serve.main import Service
from adapters.settings import SAME_SIGNAL_SECONDS
from tests.adapters.serve.test_service import SEEDS, settings, started
from tests.adapters.serve.test_startup_and_stop import (
    OTHER_PLATFORMS,
    SLACK_VARIABLES,
    closed_port,
    end_all,
    http_status,
    serve_process,
    slack_unreachable,
    wait_for_health,
)
from tests.support.local_only import isolate


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return isolate(monkeypatch, *SLACK_VARIABLES, *OTHER_PLATFORMS)


async def readyz_until_closed(base: str, since: float) -> list[tuple[float, int]]:
    """(seconds since `since`, status) of /readyz, polled until the listener stops answering."""
    answers: list[tuple[float, int]] = []
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(f"{base}/readyz") as response:
                    answers.append((time.monotonic() - since, response.status))
            except aiohttp.ClientError:
                return answers
            await asyncio.sleep(0.02)


def test_sigterm_twice_at_once_keeps_the_whole_drain(env: pytest.MonkeyPatch) -> None:
    drain = 1.5

    async def scenario() -> list[tuple[float, int]]:
        service = Service(settings(panicbot_catalog=str(SEEDS), panicbot_shutdown_drain_seconds=drain), [])
        task, base = await started(service)
        async with aiohttp.ClientSession() as http, http.get(f"{base}/readyz") as response:
            assert response.status == 200
        sent = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)  # the process group's copy ...
        os.kill(os.getpid(), signal.SIGTERM)  # ... and the one `uv run` forwards
        answers = await readyz_until_closed(base, sent)
        await asyncio.wait_for(task, timeout=10)
        assert service.signalled == "SIGTERM"
        return answers

    answers = asyncio.run(scenario())
    assert answers and {status for _, status in answers} == {503}
    assert answers[-1][0] >= drain * 0.9  # before: the copy cut the drain, the listener closed at once


def test_a_signal_again_after_a_second_still_cuts_the_drain_short(env: pytest.MonkeyPatch) -> None:
    drain = 20.0
    again_after = SAME_SIGNAL_SECONDS + 0.3

    async def scenario() -> tuple[list[tuple[float, int]], float]:
        service = Service(settings(panicbot_catalog=str(SEEDS), panicbot_shutdown_drain_seconds=drain), [])
        task, base = await started(service)
        sent = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)
        asyncio.get_running_loop().call_later(again_after, os.kill, os.getpid(), signal.SIGINT)
        answers = await readyz_until_closed(base, sent)
        await asyncio.wait_for(task, timeout=10)
        return answers, time.monotonic() - sent

    answers, took = asyncio.run(scenario())
    assert answers and {status for _, status in answers} == {503}  # 503 from the first signal to the close
    assert answers[-1][0] >= again_after * 0.9
    assert took < again_after + 5  # the drain of 20 s was cut short


def test_serve_given_sigterm_twice_answers_503_for_the_whole_drain() -> None:
    """The process as systemd or `uv run` stops it: its process group and the process itself signalled."""
    drain = 2.0
    process, port = serve_slack_unreachable(drain)
    try:
        wait_for_health(process, port, timeout=60)
        sent = time.monotonic()
        os.killpg(process.pid, signal.SIGTERM)
        # `uv run` forwards it a moment later (sent at the same instant, the kernel would merge the two).
        time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        last_answer = sent
        while http_status(port, "/readyz") == b"HTTP/1.1 503":
            last_answer = time.monotonic()
            time.sleep(0.05)
        _, stderr = process.communicate(timeout=30)
    finally:
        end_all(process)
    text = stderr.decode()
    assert process.returncode == 0, text
    assert "Traceback" not in text
    assert last_answer - sent >= drain * 0.9, text  # before: closed within a few hundred milliseconds


def serve_slack_unreachable(drain: float) -> tuple[subprocess.Popen[bytes], int]:
    """`panicbot serve slack` (Socket Mode) with Slack's Web API on a closed port, and its HTTP port."""
    port = closed_port()
    extra = {**slack_unreachable(), "PANICBOT_SHUTDOWN_DRAIN_SECONDS": str(drain)}
    return serve_process(extra, port), port


def signal_twice(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to its process group, and again to it a moment later, as `uv run` forwards it (sent at the
    same instant, the kernel would merge the two)."""
    os.killpg(process.pid, signal.SIGTERM)
    time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)


@pytest.mark.parametrize("delay", [0.6, 1.5])
def test_sigterm_twice_during_start_up_is_one_line_and_exit_0(delay: float) -> None:
    process, _ = serve_slack_unreachable(drain=0)
    try:
        time.sleep(delay)
        signal_twice(process)
        _, stderr = process.communicate(timeout=30)
    finally:
        end_all(process)
    text = stderr.decode()
    assert process.returncode == 0, text
    assert "Traceback" not in text


def test_sigterm_twice_with_no_drain_is_exit_0() -> None:
    process, port = serve_slack_unreachable(drain=0)
    try:
        wait_for_health(process, port, timeout=60)
        signal_twice(process)  # the copy comes when the service has already stopped
        _, stderr = process.communicate(timeout=30)
    finally:
        end_all(process)
    text = stderr.decode()
    assert process.returncode == 0, text  # before: -15, the copy killed it on its way out
    assert "Traceback" not in text and text.strip().endswith("stopped")
