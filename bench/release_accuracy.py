"""Accuracy on pastes from old releases (the ecosystem catalog's side table): top-1 by the message and file
of that release, auto-reply rate, wrong auto-replies, and "in release" (right, and the card's site is in the
pasted release: the release is known), per format and per repository.

    uv run python bench/release_accuracy.py [--seeds 0,1,2] [--count 320] [--show-misses 10]
        [--window default|pre-0.13] [--cases FILE]

`--window pre-0.13` draws the pastes from Burn v0.3.0 to v0.12.1 only (its crates at the top level).
`--cases FILE` reads the cases from a file `python -m tests.support.release_pastes --out FILE` wrote
(the same pastes against another catalog: before and after a rebuild).

Uses the embedded default catalog, as `panicbot lookup` does with no --catalog. Prints; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.lookup import PanicLookup  # noqa: E402
from bot.records import default_catalog  # noqa: E402
from tests.support.release_pastes import WINDOWS, ReleaseCase, release_cases  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--count", type=int, default=320)
    parser.add_argument("--show-misses", type=int, default=10)
    parser.add_argument("--window", choices=sorted(WINDOWS), default="default")
    parser.add_argument("--cases", type=Path, help="cases written by tests.support.release_pastes --out")
    args = parser.parse_args()
    started = time.perf_counter()
    catalog = default_catalog()
    service = PanicLookup(catalog)
    elapsed = time.perf_counter() - started
    print(f"catalog: {len(catalog.entries)} records, loaded and indexed in {elapsed:.2f} s")
    # cases, right, auto, auto wrong, release known (the card's site is in the pasted release)
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    misses = []
    if args.cases:
        lines = args.cases.read_text(encoding="utf-8").splitlines()
        cases = [ReleaseCase.from_json(json.loads(line)) for line in lines if line.strip()]
    else:
        cases = [
            case
            for seed in (int(s) for s in args.seeds.split(","))
            for case in release_cases(catalog, seed=seed, count=args.count, window=args.window)
        ]
    for case in cases:
        result = service.lookup(case.text)
        top = result.matches[0].record.id if result.matches and result.matches[0].known else None
        right = top in case.accepted_ids
        site = service.site(result) if right else None
        known = site is not None and site.in_pasted_release is True
        for key in (f"fmt {case.fmt}", f"repo {case.repo}", "all"):
            row = rows[key]
            row[0] += 1
            row[1] += right
            row[2] += result.auto_reply
            row[3] += result.auto_reply and not right
            row[4] += known
        if not right or (result.auto_reply and not right):
            misses.append((case, result))
    print(
        f"{'family':<34} {'cases':>6} {'top-1':>8} {'auto-reply':>10} {'wrong auto':>10} {'in release':>10}"
    )
    for family, (count, right, auto, wrong, known) in sorted(rows.items()):
        print(
            f"{family:<34} {count:>6} {right / count:>8.2%} {auto / count:>10.2%} {wrong:>10}"
            f" {known / count:>10.2%}"
        )
    for case, result in misses[: args.show_misses]:
        got = result.matches[0] if result.matches else None
        print("\n--- miss:", case.repo, case.release, case.crate, case.version, case.file_path)
        print("    want:", case.message[:100])
        if got is not None:
            print(f"    got:  {got.record.errorMessage[:100]} @ {got.record.filePath} ({got.confidence})")
        print("    " + case.text.replace("\n", "\n    ")[:600])
    return 0


if __name__ == "__main__":
    sys.exit(main())
