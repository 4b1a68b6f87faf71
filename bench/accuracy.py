"""Accuracy on generated pastes: top-1 per format, exact site, auto-reply precision and rate, negatives.

    uv run python bench/accuracy.py [--seeds 0,1,2] [--per-format 200]

Pastes come from tests/support/pastes.py over tests/fixtures (every format of the core issue). Prints a
table; writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.matcher import Matcher  # noqa: E402
from bot.records import load_catalog  # noqa: E402
from tests.support.pastes import all_cases, shared_data_dir  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--per-format", type=int, default=200)
    args = parser.parse_args()
    data = shared_data_dir()
    matcher = Matcher(load_catalog([data / "burn-panics.jsonl"]).records)
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # cases, top-1 right, auto, auto wrong
    for seed in (int(s) for s in args.seeds.split(",")):
        for case in all_cases(data, seed=seed, per_format=args.per_format):
            result = matcher.lookup(case.text)
            top = result.matches[0].record.id if result.matches else None
            family = "negatives" if case.expect_auto_reply is False else case.fmt
            row = rows[family]
            row[0] += 1
            right = top in case.accepted_ids if case.expect_auto_reply is None else result.best is None
            row[1] += right
            row[2] += result.auto_reply
            row[3] += result.auto_reply and (case.expect_auto_reply is False or top not in case.accepted_ids)
    print(f"{'format':<14} {'cases':>6} {'top-1 / no card':>15} {'auto-reply':>10} {'wrong auto':>10}")
    for family, (count, right, auto, wrong) in sorted(rows.items()):
        print(f"{family:<14} {count:>6} {right / count:>15.2%} {auto / count:>10.2%} {wrong:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
