"""Load on Slack HTTP mode: N concurrent, correctly signed `/panic` requests on 127.0.0.1.

Every request must be acknowledged within Slack's 3 seconds. Reports ack time p50/p99/max and answered
lookups per second, for one replica and for two replicas behind a local round-robin. Slack's Web API and
response_url are a local fake; nothing leaves 127.0.0.1, and nothing is written into the repository.

    uv run python bench/bench_slack_load.py [--requests 500]

`--burst N --paste-kb K` measures instead what a burst of large pastes does to everyone else: N mentions,
each a K KB training log ending in a panic, sent at once by N users, while a probe sends a `/panic` and a
`/healthz` every 20 ms. It reports the probes' p50/p99/max during the burst (target: `/panic` ack p99
<= 300 ms) and how long the burst took to be answered.

    uv run python bench/bench_slack_load.py --burst 300 --paste-kb 40
    uv run python bench/bench_slack_load.py --burst 100 --paste-kb 1024
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.adapters.slack.fake_slack import FakeSlack  # noqa: E402
from tests.adapters.slack.test_app import (  # noqa: E402
    AVG_POOL_PASTE,
    BOT_TOKEN,
    DEFORM_PASTE,
    SIGNING_SECRET,
    event_callback,
    mention_event,
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


PROBE_EVERY = 0.02
BURST_ACK_P99 = 0.3


def training_log(kilobytes: int) -> str:
    """A training run's log of `kilobytes` KB that ends in a panic, as pasted in a help channel."""
    line = "[00:01:02] Epoch 3/10 - Iteration 1234 - Loss 0.4521 - Accuracy 0.8812 - lr 1.0e-3\n"
    return line * (kilobytes * 1024 // len(line)) + DEFORM_PASTE


def probe_loop(events_url: str, response_url: str, stop: Any, results: Any, ready: Any) -> None:
    """In a process of its own (so the burst's sender never delays it): a signed `/panic` and a
    `/healthz`, one after the other, every `PROBE_EVERY` seconds until `stop` is set; the latencies go to
    `results` as (ack seconds, healthz seconds, failures)."""
    import http.client
    from urllib.parse import urlsplit

    target = urlsplit(events_url)
    acks: list[float] = []
    checks: list[float] = []
    failures = 0
    number = 0
    ready.set()  # imported and about to probe: the burst may start
    while not stop.is_set():
        number += 1
        body = urlencode(slash_command(AVG_POOL_PASTE, response_url, user=f"UP{number}"))
        headers = {**signed(body), "Content-Type": "application/x-www-form-urlencoded"}
        for method, path, data, into in (
            ("POST", target.path, body, acks),
            ("GET", "/healthz", None, checks),
        ):
            connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=30)
            begin = time.perf_counter()
            try:
                connection.request(method, path, body=data, headers=headers if data else {})
                response = connection.getresponse()
                response.read()
                failures += 0 if response.status == 200 else 1
            except OSError:
                failures += 1
            finally:
                connection.close()
            into.append(time.perf_counter() - begin)
        time.sleep(PROBE_EVERY)
    results.put((acks, checks, failures))


async def burst_round(count: int, kilobytes: int) -> dict[str, float]:
    """`count` large mentions at once, with `/panic` and `/healthz` probes every `PROBE_EVERY` seconds."""
    async with FakeSlack(BOT_TOKEN) as fake:
        process, url = await start_replica(fake.api_url)
        paste = training_log(kilobytes)
        bodies = []
        for number in range(count):  # signed before the clock starts: the sender must be quick
            event = mention_event(paste, user=f"U{number:09d}")
            body = json.dumps(event_callback(event, f"Ev{number:08d}")).encode()
            bodies.append((body, {**signed(body.decode()), "Content-Type": "application/json"}))
        context = multiprocessing.get_context("spawn")
        stop, results, ready = context.Event(), context.Queue(), context.Event()
        prober = context.Process(target=probe_loop, args=(url, fake.response_url(), stop, results, ready))
        prober.start()
        failures = 0
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def mention(body: bytes, headers: dict[str, str]) -> None:
                nonlocal failures
                try:
                    async with http.post(url, data=body, headers=headers) as response:
                        await response.read()
                        failures += 0 if response.status == 200 else 1
                except aiohttp.ClientError:
                    failures += 1

            # The prober imports what it needs first (a second or more on a busy machine): the burst starts
            # once it probes, so the probes see it.
            await asyncio.to_thread(ready.wait, 60)
            await asyncio.sleep(0.2)
            begin = time.perf_counter()
            await asyncio.gather(*(mention(body, headers) for body, headers in bodies))
            intake = time.perf_counter() - begin
            await fake.wait_for(
                lambda: len(fake.posts()) >= count or None, timeout=300.0, what="every mention answered"
            )
            elapsed = time.perf_counter() - begin
            await asyncio.sleep(0.5)
            stop.set()
            acks, checks, probe_failures = await asyncio.to_thread(results.get, True, 60)
            prober.join()
        process.terminate()
        await process.wait()
    return {
        "mentions": count,
        "paste_kb": kilobytes,
        "failed": failures + probe_failures,
        "probes": len(acks),
        "ack_p50_ms": statistics.median(acks) * 1000,
        "ack_p99_ms": percentile(acks, 0.99) * 1000,
        "ack_max_ms": max(acks) * 1000,
        "healthz_p50_ms": statistics.median(checks) * 1000,
        "healthz_p99_ms": percentile(checks, 0.99) * 1000,
        "healthz_max_ms": max(checks) * 1000,
        "burst_answered_s": elapsed,
        "burst_acked_s": intake,
        "slowest_acks": " ".join(f"{ack * 1000:.0f}" for ack in sorted(acks)[-5:]),
    }


def report_burst(row: dict[str, float]) -> int:
    print(f"{row['mentions']} mentions of {row['paste_kb']} KB at once; {row['probes']} probe pairs, "
          f"{row['failed']} failed requests; every mention acked in {row['burst_acked_s']:.2f} s, "
          f"answered in {row['burst_answered_s']:.2f} s")  # fmt: skip
    print(f"{'probe':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, key in (("/panic ack", "ack"), ("/healthz", "healthz")):
        p50, p99, worst = (row[f"{key}_{stat}_ms"] for stat in ("p50", "p99", "max"))
        print(f"{name:>10} {p50:>8.1f} {p99:>8.1f} {worst:>8.1f}")
    print("slowest /panic acks, ms:", row["slowest_acks"])
    verdict = row["ack_p99_ms"] <= BURST_ACK_P99 * 1000 and row["failed"] == 0
    print("PASS: /panic ack p99 <= 300 ms in the burst" if verdict else "FAIL: ack p99 > 300 ms or failures")
    return 0 if verdict else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--burst", type=int, default=0, help="mentions sent at once (0: the /panic load)")
    parser.add_argument("--paste-kb", type=int, default=40, help="size of each burst paste, in KB")
    args = parser.parse_args()
    os.environ.setdefault("NO_PROXY", "127.0.0.1")
    if args.burst:
        return report_burst(asyncio.run(burst_round(args.burst, args.paste_kb)))
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
