"""Fuzz the `.pbcat` reader at scale (issue 25, item 4): mutations of a small real prebuilt catalog (seed
records and Burn records with their sites in two releases), each loaded with `read_prebuilt` and, when it
loads, asked the pastes' lookups, cards, autocomplete and a card by id. Every outcome must be a refusal
(`PrebuiltError`, at load or by the lookup that meets the damage) or a clean answer; anything else is
printed and makes the exit code 1.

Mutations (tests/support/damaged_pbcat.py `mutations`): flipped bits anywhere, truncation, bytes appended,
header fields (section starts and lengths 0, -1, 2**31, 2**50, 2**63, 2**64, off by one; records count;
format; fingerprint), header JSON bytes, the index pickle's bytes (replaced, deleted, inserted) and its
counted opcodes' lengths, the index's tables (an item set to a boundary or wrong-typed value, deleted,
duplicated, a table emptied), the records blob's JSON and the suggest section. All but the first five are
crafted: the header's sha256s and offsets are made to fit again, so the reader's later checks are reached.

    uv run python bench/pbcat_fuzz.py [--runs 20000] [--seed 0] [--records 24] [--dump DIR]

The test suite runs 2,000 (tests/bot/test_prebuilt_damage.py; PANICBOT_FUZZ_RUNS sets another count).
The same seed gives the same mutations when PYTHONHASHSEED is fixed too (sets are pickled in hash order).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.damaged_pbcat import SMALL_RECORDS, fuzz_prebuilt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--records", type=int, default=SMALL_RECORDS)
    parser.add_argument("--dump", type=Path, help="write the files of runs that were not clean here")
    args = parser.parse_args()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        result = fuzz_prebuilt(Path(folder), args.runs, seed=args.seed, records=args.records, dump=args.dump)
    print(result.summary())
    print("mutations:", ", ".join(f"{kind} {count}" for kind, count in result.by_kind.most_common()))
    for failure in result.failures:
        print("  ", failure)
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
