"""Catalog hot reload under probe: how long `/healthz` waits while `panicbot serve` reloads a big catalog.

Writes a catalog of N records (the real Burn catalog of tests/fixtures plus records of bench_lookup.py's
synthetic generator) under /tmp, starts `uv run --no-sync python -m adapters.cli.main serve github` on
127.0.0.1 with that catalog (GitHub is the one platform that contacts nobody until a webhook arrives: a
dummy secret and token, its API URL pointed at a closed local port; no Slack or Discord token), waits for
/readyz, then probes /healthz every 5 ms from a process of its own: first a baseline without reload, then
during each reload (alternately SIGHUP and a touch of the file for the watcher). Per reload: its duration
(trigger to the "catalog serving" log line) and /healthz p50/p99/max over the reload plus a short tail; the
service's whole-process RSS (VmRSS) before and after each reload, so a leak would show. Target: the worst
/healthz latency during a reload <= 100 ms. Nothing is written into the repository. `--prebuilt` serves a
`.pbcat` built from the same catalog (`panicbot catalog build`), kept beside it.

    uv run --no-sync python bench/reload_latency.py                      # 100k records, 4 reloads
    uv run --no-sync python bench/reload_latency.py --records 20000 --reloads 2
    uv run --no-sync python bench/reload_latency.py --prebuilt
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_MS = 100.0
WORK_DIR = Path(tempfile.gettempdir()) / "panicbot-reload-bench"
# Probes sent this long after a reload's last log line still count for it (a late free or collection).
TAIL_SECONDS = 0.5


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100.0 * len(ordered))) - 1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


# -- the catalog ------------------------------------------------------------------------------------------


def make_catalog(records: int, seed: int) -> Path:
    """A JSONL catalog of `records` records under /tmp, kept for the next run (same size and seed)."""
    from bench.bench_lookup import DATA_FILE, generate_synthetic
    from bot.records import load_catalog

    WORK_DIR.mkdir(parents=True, exist_ok=True)
    path = WORK_DIR / f"catalog-{records}-{seed}.jsonl"
    if path.is_file():
        return path
    if not DATA_FILE.is_file():
        sys.exit(f"error: the Burn catalog is missing: expected {DATA_FILE}")
    started = time.perf_counter()
    real = load_catalog([DATA_FILE]).records[:records]
    bases = [record.model_dump() for record in real]
    synthetic = generate_synthetic(bases, max(0, records - len(real)), seed)
    partial = path.with_suffix(".partial")
    with partial.open("wb") as out:
        for record in [*real, *synthetic]:
            line = {"record": record.model_dump(mode="json"), "datasetVersion": "reload-bench"}
            out.write(orjson.dumps(line) + b"\n")
    partial.rename(path)
    size = path.stat().st_size / 1e6
    took = time.perf_counter() - started
    print(f"catalog: wrote {records:,} records to {path} ({size:,.0f} MB) in {took:.0f} s")
    return path


def make_prebuilt(source: Path) -> Path:
    """`panicbot catalog build SOURCE -o SOURCE.pbcat`, kept for the next run while newer than its source."""
    path = source.with_suffix(".pbcat")
    if path.is_file() and path.stat().st_mtime > source.stat().st_mtime:
        return path
    started = time.perf_counter()
    command = [sys.executable, "-m", "adapters.cli.main", "catalog", "build", str(source), "-o", str(path)]
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    took = time.perf_counter() - started
    print(f"catalog: built {path} ({path.stat().st_size / 1e6:,.0f} MB) in {took:.0f} s")
    return path


# -- the probe (a process of its own, so the bench's own work never delays a probe) -----------------------


def probe(port: int, interval: float, control: Connection) -> None:
    """GET /healthz every `interval` seconds on one keep-alive connection until told to stop; sends back
    (monotonic send time, seconds to the full answer) per probe. A probe that comes back late is followed by
    the next one at once, never by a burst of catch-up probes."""
    samples: list[tuple[float, float]] = []
    errors = 0
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    next_at = time.monotonic()
    while not control.poll():
        now = time.monotonic()
        if now < next_at:
            time.sleep(next_at - now)
        sent = time.monotonic()
        try:
            connection.request("GET", "/healthz")
            answer = connection.getresponse()
            answer.read()
            ok = answer.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        done = time.monotonic()
        if ok:
            samples.append((sent, done - sent))
        else:
            errors += 1
        next_at = max(next_at + interval, done)
    connection.close()
    control.send((samples, errors))


class Prober:
    def __init__(self, port: int, interval: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._ours, theirs = context.Pipe()
        self.process = context.Process(target=probe, args=(port, interval, theirs), daemon=True)
        self.process.start()

    def stop(self) -> tuple[list[tuple[float, float]], int]:
        self._ours.send("stop")
        samples, errors = self._ours.recv()
        self.process.join(timeout=10)
        return samples, errors


# -- the service ------------------------------------------------------------------------------------------


class ServiceLog:
    """The service's JSON log lines (stderr), each with the monotonic time it arrived."""

    def __init__(self, stream: object) -> None:
        self.lines: list[tuple[float, str]] = []
        self._lock = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for raw in stream:  # type: ignore[attr-defined]
            arrived = time.monotonic()
            text = raw.decode("utf-8", "replace").rstrip()
            try:
                message = str(json.loads(text).get("message", text))
            except ValueError:
                message = text
            with self._lock:
                self.lines.append((arrived, message))
                self._lock.notify_all()

    def wait_for(self, prefixes: tuple[str, ...], after: float, timeout: float) -> tuple[float, str] | None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for arrived, message in self.lines:
                    if arrived >= after and message.startswith(prefixes):
                        return arrived, message
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(left)


def service_pid(launcher: subprocess.Popen[bytes]) -> int:
    """The Python process serving (`uv run` runs it as its child rather than exec it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        family = {launcher.pid}
        for entry in sorted(Path("/proc").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0):
            if not entry.name.isdigit():
                continue
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            pid = int(entry.name)
            if parent in family or pid in family:
                family.add(pid)
                if b"adapters.cli.main" in cmdline and Path(cmdline[0].decode()).name.startswith("python"):
                    return pid
        time.sleep(0.1)
    raise SystemExit("error: could not find the service's python process")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_service(
    catalog: Path, port: int, watch_seconds: float, scratch: Path
) -> tuple[subprocess.Popen[bytes], ServiceLog]:
    database = scratch / "panicbot.db"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SLACK_", "DISCORD_", "GITHUB_", "REDIS_", "PANICBOT_"))
    }
    env.update(
        {
            "PANICBOT_CATALOG": str(catalog),
            "PANICBOT_CATALOG_WATCH_SECONDS": str(watch_seconds),
            "PANICBOT_LOG_FORMAT": "json",
            "PANICBOT_SHUTDOWN_DRAIN_SECONDS": "0",
            "PANICBOT_HTTP_READ_TIMEOUT_SECONDS": "60",
            "DATABASE_URL": f"sqlite:///{database}",
            # GitHub's webhook needs only a secret; the API is never called without a delivery, and points
            # at a closed local port in case it were.
            "GITHUB_WEBHOOK_SECRET": secrets.token_hex(16),
            "GITHUB_TOKEN": "bench-" + secrets.token_hex(8),
            "GITHUB_API_URL": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1",
        }
    )
    uv = shutil.which("uv") or str(Path.home() / ".local/bin/uv")
    command = [uv, "run", "--no-sync", "python", "-m", "adapters.cli.main", "serve", "github"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    launcher = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return launcher, ServiceLog(launcher.stderr)


def wait_ready(port: int, launcher: subprocess.Popen[bytes], timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if launcher.poll() is not None:
            raise SystemExit(f"error: the service exited ({launcher.returncode}) before it was ready")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/readyz")
            answer = connection.getresponse()
            body = answer.read()
            connection.close()
            if answer.status == 200:
                return float(json.loads(body)["records"])
        except (OSError, http.client.HTTPException, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise SystemExit("error: the service was not ready in time")


# -- one run ----------------------------------------------------------------------------------------------


@dataclass
class Window:
    name: str
    start: float
    end: float
    seconds: float | None  # the reload's duration (None for the baseline)
    outcome: str
    rss_before: float
    rss_after: float

    def samples(self, probes: list[tuple[float, float]]) -> list[float]:
        return [latency * 1000 for sent, latency in probes if self.start <= sent <= self.end]


LOADED = ("catalog serving",)
ENDED = ("catalog serving", "catalog reload refused", "catalog reload failed")
FREED = ("previous catalog",)


def run(args: argparse.Namespace) -> int:
    catalog = make_catalog(args.records, args.seed)
    if args.prebuilt:
        catalog = make_prebuilt(catalog)
    port = free_port()
    print(f"load average at start: {load_average()} ({os.cpu_count()} CPUs)")
    launch = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="panicbot-reload-bench-"))
    launcher, service_log = start_service(catalog, port, args.watch_seconds, scratch)
    pid = 0
    try:
        pid = service_pid(launcher)
        records = wait_ready(port, launcher, args.ready_timeout)
        print(
            f"service pid {pid} on 127.0.0.1:{port}: ready with {records:,.0f} records after "
            f"{time.monotonic() - launch:.1f} s, RSS {rss_mb(pid):,.0f} MB"
        )
        time.sleep(1.0)
        prober = Prober(port, args.interval)
        time.sleep(1.0)  # the probe process is up and connected
        windows: list[Window] = []
        rss = rss_mb(pid)
        start = time.monotonic()
        time.sleep(args.baseline_seconds)
        windows.append(Window("baseline", start, time.monotonic(), None, "-", rss, rss_mb(pid)))
        cpu_before = cpu_seconds(pid)
        for number in range(args.reloads):
            kind = "SIGHUP" if number % 2 == 0 else "touch"
            rss_before = rss_mb(pid)
            trigger = time.monotonic()
            if kind == "SIGHUP":
                os.kill(pid, signal.SIGHUP)
                begun = trigger
            else:
                stamp = time.time()
                os.utime(catalog, (stamp, stamp))
                seen = service_log.wait_for(
                    ("catalog files changed on disk",), trigger, args.watch_seconds + 10
                )
                begun = seen[0] if seen else trigger
            ended = service_log.wait_for(ENDED, trigger, args.reload_timeout)
            if ended is None:
                print(f"reload {number + 1} ({kind}): no end in the log after {args.reload_timeout:.0f} s")
                return 2
            end_at, message = ended
            # Where the service logs freeing the previous catalog (after it serves the new one), that is
            # part of the reload too.
            freed = None
            if message.startswith(LOADED):
                freed = service_log.wait_for(FREED, end_at, args.freed_timeout)
            if freed is not None:
                end_at = freed[0]
            time.sleep(TAIL_SECONDS)
            outcome = "loaded" if message.startswith(LOADED) else message[:60]
            windows.append(
                Window(
                    f"reload {number + 1} ({kind})",
                    begun,
                    end_at + TAIL_SECONDS,
                    end_at - begun,
                    outcome,
                    rss_before,
                    rss_mb(pid),
                )
            )
            time.sleep(args.pause)
        cpu_used = cpu_seconds(pid) - cpu_before
        probes, errors = prober.stop()
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGTERM)
            try:
                launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                launcher.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"load average at end: {load_average()}; service CPU during the reloads: {cpu_used:.1f} s")
    every = args.interval * 1000
    print(f"/healthz every {every:.0f} ms from another process: {len(probes):,} probes, {errors} errors")
    print()
    header = f"{'window':<20} {'reload s':>9} {'probes':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
    print(header + f" {'RSS before':>11} {'RSS after':>10}  outcome")
    worst = 0.0
    for window in windows:
        values = window.samples(probes)
        seconds = "-" if window.seconds is None else f"{window.seconds:.2f}"
        top = max(values, default=float("nan"))
        if window.seconds is not None and values:
            worst = max(worst, top)
        print(
            f"{window.name:<20} {seconds:>9} {len(values):>7} {percentile(values, 50):>8.1f} "
            f"{percentile(values, 99):>8.1f} {top:>8.1f} {window.rss_before:>8,.0f} MB "
            f"{window.rss_after:>7,.0f} MB  {window.outcome}"
        )
    reloads = [w for w in windows if w.seconds is not None]
    failed = [w for w in reloads if w.outcome != "loaded"]
    print()
    print(
        f"RSS: {windows[0].rss_before:,.0f} MB before the reloads, "
        + ", ".join(f"{w.rss_after:,.0f}" for w in reloads)
        + " MB after each"
    )
    verdict = "PASS" if worst <= TARGET_MS and not failed and reloads else "FAIL"
    print(
        f"{verdict}: worst /healthz latency during a reload of {args.records:,} records {worst:.1f} ms "
        f"(target <= {TARGET_MS:.0f} ms){'; some reload did not load' if failed else ''}"
    )
    return 0 if verdict == "PASS" else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000, help="catalog size (default 100,000)")
    parser.add_argument(
        "--reloads", type=int, default=4, help="reloads, alternately SIGHUP and touch (default 4)"
    )
    parser.add_argument(
        "--interval", type=float, default=0.005, help="seconds between probes (default 0.005)"
    )
    parser.add_argument("--baseline-seconds", type=float, default=5.0)
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between reloads")
    parser.add_argument("--watch-seconds", type=float, default=1.0, help="the service's file watch interval")
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    parser.add_argument("--reload-timeout", type=float, default=600.0)
    parser.add_argument(
        "--freed-timeout",
        type=float,
        default=5.0,
        help="seconds to wait for the 'previous catalog freed' log line after a reload (0: do not wait)",
    )
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--prebuilt", action="store_true", help="serve a prebuilt .pbcat of the catalog (`catalog build`)"
    )
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
