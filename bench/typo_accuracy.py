"""Top-1 of typed queries with two typos, on the Burn catalog (tests/fixtures) and the embedded default one.

    uv run python bench/typo_accuracy.py [--seeds 0,1,2] [--per-seed 500] [--show-misses 20]

Queries come from tests/support/typos.py (3-6 words of a message, two edits in words of four letters or
more). Right: the answer (`result.best`) has the source's literal text. Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.matcher import Matcher  # noqa: E402
from bot.records import Record, default_catalog, load_catalog  # noqa: E402
from tests.support.typos import literal_text, two_typo_queries  # noqa: E402


def measure(name: str, records: list[Record], seeds: list[int], per_seed: int, show: int) -> None:
    started = time.perf_counter()
    matcher = Matcher(records)
    built = time.perf_counter() - started
    cases = right = unanswered = auto = 0
    latencies: list[float] = []
    misses: list[str] = []
    for seed in seeds:
        for query in two_typo_queries(records, random.Random(f"{seed}:two-typos"), per_seed):
            started = time.perf_counter()
            result = matcher.lookup(query.text)
            latencies.append((time.perf_counter() - started) * 1000)
            cases += 1
            auto += result.auto_reply
            best = result.best
            if best is not None and literal_text(best.record) == query.literal:
                right += 1
                continue
            unanswered += best is None
            top = result.matches[0] if result.matches else None
            got = f"{top.record.errorMessage[:70]!r} known={top.known} {top.confidence}" if top else "nothing"
            misses.append(f"  {query.text!r}  <- {query.fragment!r}\n      top: {got}")
    latencies.sort()
    p50 = latencies[len(latencies) // 2] if latencies else 0.0
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
    print(
        f"{name:<22} {len(records):>8,} {cases:>6} {right / max(cases, 1):>8.2%} {unanswered:>10} "
        f"{cases - right - unanswered:>6} {auto:>5} {p50:>7.3f} {p99:>7.3f}   (index {built:.2f} s)"
    )
    for line in misses[:show]:
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--per-seed", type=int, default=500, help="queries per seed and catalog")
    parser.add_argument("--show-misses", type=int, default=0, help="print this many misses per catalog")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    print(
        f"{'catalog':<22} {'records':>8} {'cases':>6} {'top-1':>8} {'unanswered':>10} {'wrong':>6} "
        f"{'auto':>5} {'p50 ms':>7} {'p99 ms':>7}"
    )
    burn = ROOT / "tests" / "fixtures" / "burn-panics.jsonl"
    measure("burn-panics.jsonl", load_catalog([burn]).records, seeds, args.per_seed, args.show_misses)
    measure("default_catalog()", default_catalog().records, seeds, args.per_seed, args.show_misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
