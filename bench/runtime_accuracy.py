"""Accuracy on Rust runtime panics raised inside Burn, cubecl and tch-rs functions of harvested releases:
the runtime record top-1, the site (file and enclosing function of that release), auto-replies.

    uv run python bench/runtime_accuracy.py [--seeds 0,1,2] [--count 300] [--show-misses 10]

Uses the embedded default catalog. Prints; writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.lookup import PanicLookup  # noqa: E402
from bot.records import default_catalog  # noqa: E402
from tests.bot.test_rust_runtime import EXPECTED  # noqa: E402
from tests.support.runtime_pastes import runtime_cases  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--show-misses", type=int, default=10)
    args = parser.parse_args()
    catalog = default_catalog()
    service = PanicLookup(catalog)
    # cases, record right, site right, auto-replies, wrong auto-replies
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    misses = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for case in runtime_cases(catalog, EXPECTED, seed=seed, count=args.count):
            result = service.lookup(case.text)
            best = result.best
            right = best is not None and best.record.slug == case.record_slug
            site = service.site(result)
            site_right = site is not None and site.file == case.file_path and site.function == case.function
            for key in (f"fmt {case.fmt}", f"repo {case.repo}", f"echo {case.with_echo}", "all"):
                row = rows[key]
                row[0] += 1
                row[1] += right
                row[2] += site_right
                row[3] += result.auto_reply
                row[4] += result.auto_reply and not right
            if not (right and site_right):
                misses.append((case, best.record.slug if best else None, site))
    print(f"{'family':<28} {'cases':>6} {'record':>8} {'site':>8} {'auto':>8} {'wrong auto':>10}")
    for family, (count, right, site_right, auto, wrong) in sorted(rows.items()):
        print(
            f"{family:<28} {count:>6} {right / count:>8.2%} {site_right / count:>8.2%} "
            f"{auto / count:>8.2%} {wrong:>10}"
        )
    for case, got, site in misses[: args.show_misses]:
        print(
            f"\n--- {case.fixture} in {case.repo} {case.release} {case.file_path}:{case.line} {case.function}"
        )
        print(f"    record: want {case.record_slug}, got {got}")
        print(f"    site:   got {site.file if site else None} {site.function if site else None}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
