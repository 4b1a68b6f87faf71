"""Load on Slack HTTP mode: N concurrent, correctly signed `/panic` requests on 127.0.0.1.

Every request must be acknowledged within Slack's 3 seconds. Reports ack time p50/p99/max and answered
lookups per second, for one replica and for two replicas behind a local round-robin. Slack's Web API and
response_url are a local fake; nothing leaves 127.0.0.1, and nothing is written into the repository.

    uv run python bench/bench_slack_load.py [--requests 500]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.adapters.slack.fake_slack import FakeSlack  # noqa: E402
from tests.adapters.slack.test_app import (  # noqa: E402
    AVG_POOL_PASTE,
    BOT_TOKEN,
    SIGNING_SECRET,
    signed,
    slash_command,
)

ACK_LIMIT = 3.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def start_replica(api_url: str) -> tuple[asyncio.subprocess.Process, str]:
    """A replica is its own process (`panicbot serve slack --http`), as in a deployment."""
    port = free_port()
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": api_url,
        "PANICBOT_LOG_FORMAT": "text",
        "DATABASE_URL": f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-bench-')}/panicbot.db",
        "NO_PROXY": "127.0.0.1",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adapters.cli.main", "serve", "slack", "--http", "--host", "127.0.0.1",
        "--port", str(port), env=env, cwd=str(ROOT), stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            try:
                async with http.get(f"http://127.0.0.1:{port}/readyz") as response:
                    if response.status == 200:
                        return process, f"http://127.0.0.1:{port}/slack/events"
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    process.terminate()
    raise RuntimeError("a replica did not become ready in 15 s")


async def one_round(replicas: int, requests: int) -> dict[str, float]:
    async with FakeSlack(BOT_TOKEN) as fake:
        started = [await start_replica(fake.api_url) for _ in range(replicas)]
        targets = itertools.cycle([url for _, url in started])
        acks: list[float] = []
        failures = 0
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def send(url: str) -> None:
                nonlocal failures
                body = urlencode(slash_command(AVG_POOL_PASTE, fake.response_url()))
                headers = {**signed(body), "Content-Type": "application/x-www-form-urlencoded"}
                begin = time.perf_counter()
                try:
                    async with http.post(url, data=body, headers=headers) as response:
                        await response.read()
                        ok = response.status == 200
                except aiohttp.ClientError:
                    ok = False
                acks.append(time.perf_counter() - begin)
                failures += 0 if ok else 1

            begin = time.perf_counter()
            await asyncio.gather(*(send(next(targets)) for _ in range(requests)))
            await fake.wait_for(
                lambda: len(fake.responses()) >= requests or None, timeout=60.0, what="every answer"
            )
            elapsed = time.perf_counter() - begin
        for process, _ in started:
            process.terminate()
            await process.wait()
    return {
        "replicas": replicas,
        "requests": requests,
        "failed": failures,
        "ack_p50_ms": statistics.median(acks) * 1000,
        "ack_p99_ms": percentile(acks, 0.99) * 1000,
        "ack_max_ms": max(acks) * 1000,
        "late_acks": sum(1 for a in acks if a > ACK_LIMIT),
        "answers_per_s": requests / elapsed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    os.environ.setdefault("NO_PROXY", "127.0.0.1")
    rows = [asyncio.run(one_round(replicas, args.requests)) for replicas in (1, 2)]
    print(f"{'replicas':>8} {'requests':>8} {'failed':>6} {'ack p50 ms':>10} {'ack p99 ms':>10} "
          f"{'ack max ms':>10} {'acks > 3 s':>10} {'answers/s':>9}")  # fmt: skip
    for row in rows:
        print(f"{row['replicas']:>8} {row['requests']:>8} {row['failed']:>6} {row['ack_p50_ms']:>10.1f} "
              f"{row['ack_p99_ms']:>10.1f} {row['ack_max_ms']:>10.1f} {row['late_acks']:>10} "
              f"{row['answers_per_s']:>9.1f}")  # fmt: skip
    verdict = all(row["late_acks"] == 0 and row["failed"] == 0 for row in rows)
    print("PASS: every request acked within 3 s" if verdict else "FAIL: some requests were late or failed")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
