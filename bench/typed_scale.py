"""Typed queries with a typo as the catalog grows: right answers at 1,199 / 10k / 100k / 1M records.

A query is 3-5 consecutive literal words of a record's message, one word of four letters or more misspelt
(a swap, a dropped or a doubled letter; half of them lower-cased), as someone types `/panic` from memory.
It is answered right when the answer (a known record) holds the fragment as it was before the typo, the
way the header pastes of bench_lookup.py count "same message": in a catalog of near-identical messages,
any record holding the words typed is as right as the one they were taken from. The catalog is the real
one (`tests/fixtures/burn-panics.jsonl`) plus bench_lookup.py's synthetic records (`--shape plain` or
`releases`: each message 80 times, the shape of a multi-release catalog).

    uv run python bench/typed_scale.py [--sizes 1199,10000,100000] [--queries 600] [--shape plain]

Prints, per size: right / wrong (another message answered) / unanswered, the share right, and the typed
lookups' p50/p99. Target (issue 15): >= 95 % right at 100k and 1M.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import bench_lookup  # noqa: E402
from bot.matcher import Matcher  # noqa: E402
from bot.records import Record  # noqa: E402

TARGET = 0.95


def folded(text: str) -> str:
    return " ".join(bench_lookup.unbrace(text).lower().split())


def measure(records: list[Record], queries: int, seed: int) -> dict[str, float]:
    started = time.perf_counter()
    matcher = Matcher(records)
    build = time.perf_counter() - started
    gc.collect()
    gc.freeze()  # as the service does (adapters/serve/live_catalog.settle_heap)
    rng = random.Random(seed)
    counts = {"right": 0, "wrong": 0, "unanswered": 0}
    latencies: list[float] = []
    while sum(counts.values()) < queries:
        made = bench_lookup.typed_fragment(records[rng.randrange(len(records))].errorMessage, rng)
        if made is None:
            continue
        typed, original = made
        started = time.perf_counter()
        best = matcher.lookup(typed).best
        latencies.append(time.perf_counter() - started)
        if best is None:
            counts["unanswered"] += 1
        elif folded(original) in folded(best.record.errorMessage):
            counts["right"] += 1
        else:
            counts["wrong"] += 1
    latencies.sort()
    return {
        **counts,
        "share": counts["right"] / queries,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "build_s": build,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1199,10000,100000")
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--shape", choices=("plain", "releases"), default="plain")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    sizes = bench_lookup.parse_sizes(args.sizes)
    records = bench_lookup.scaled_records(max(sizes), args.shape)
    print(f"typed queries with one typo, {args.queries} per size, shape {args.shape}")
    header = ("records", "right", "wrong", "unans.", "right %", "p50 ms", "p99 ms", "build s")
    print(f"{header[0]:>9} " + " ".join(f"{name:>{max(6, len(name))}}" for name in header[1:]))
    verdicts = []
    for size in sizes:
        row = measure(records[:size], args.queries, args.seed)
        verdicts.append(size < 100_000 or row["share"] >= TARGET)
        print(f"{size:>9,} {row['right']:>6} {row['wrong']:>6} {row['unanswered']:>6} {row['share']:>8.1%} "
              f"{row['p50_ms']:>7.2f} {row['p99_ms']:>7.2f} {row['build_s']:>7.1f}", flush=True)  # fmt: skip
    ok = all(verdicts)
    print("PASS: >= 95 % right from 100k records" if ok else "FAIL: under 95 % right at 100k records or more")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
