"""Extraction time on large and hostile pastes: the whole paste read, the panic at its very end found.

    uv run python bench/bench_extract.py [--sizes 1,5,10] [--repeat 5]

For each size (MB) it times `bot.extract.extract` on a realistic training log whose panic comes last, and on
hostile inputs (megabytes of `panicked at` fragments, one line of that size, ANSI codes, unwrap fragments).
"old" is what extraction did before long pastes were read through windows: the first
`chat_text.MAX_TEXT_CHARS` characters only (the panic at the end is then not found). Prints a table; writes
nothing. Times are the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.chat_text import MAX_TEXT_CHARS
from bot.extract import Extraction, extract, extract_panics

PANIC = (
    "thread 'main' panicked at crates/burn-fusion/src/stream/execution/ordering.rs:49:13:\n"
    "Ordering is bigger than operations\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
)
MB = 1024 * 1024


def training_log(size: int) -> str:
    line = "[00:01:02] Epoch 3/10 - Iteration 1234 - Loss 0.4521 - Accuracy 0.8812 - lr 1.0e-3\n"
    return line * (size // len(line)) + PANIC


def progress_log(size: int) -> str:
    bar = "\r\x1b[2K[00:01:02] \u2588\u2588\u2588\u2588\u2588\u2588\u2591\u2591\u2591\u2591 40/100 loss 0.45"
    return bar * (size // len(bar)) + "\n" + PANIC


def fragments(size: int) -> str:
    return "thread 'a' panicked at x:\n" * (size // 26) + PANIC


def one_line(size: int) -> str:
    return "panicked at " * (size // 12) + "\n" + PANIC


def ansi(size: int) -> str:
    return "\x1b[31m\x1b[1A\x1b[2K" * (size // 14) + PANIC


def unwraps(size: int) -> str:
    fragment = "called `Result::unwrap()` on an `Err` value: "
    return fragment * (size // len(fragment)) + "\n" + PANIC


CASES: dict[str, Callable[[int], str]] = {
    "training log": training_log,
    "progress bars": progress_log,
    "header fragments": fragments,
    "one line": one_line,
    "ANSI codes": ansi,
    "unwrap fragments": unwraps,
}


def best_time(function: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def found(result: Extraction) -> str:
    messages = [panic.message for panic in result.panics]
    return "found" if "Ordering is bigger than operations" in messages else "NOT found"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,5,10")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'case':<18} {'MB':>4} {'new ms':>9} {'new':>10} {'old ms':>9} {'old':>10}")
    for name, build in CASES.items():
        for size in (int(s) for s in args.sizes.split(",")):
            text = build(size * MB)
            new = best_time(lambda text=text: extract(text), args.repeat)  # type: ignore[misc]
            old_text = text[:MAX_TEXT_CHARS]
            old = best_time(lambda old_text=old_text: extract_panics(old_text), args.repeat)  # type: ignore[misc]
            old_found = found(Extraction(tuple(extract_panics(old_text))))
            print(
                f"{name:<18} {size:>4} {new * 1000:>9.1f} {found(extract(text)):>10} "
                f"{old * 1000:>9.1f} {old_found:>10}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
