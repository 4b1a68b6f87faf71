"""Typed questions worded like GitHub issue titles, without the words of the message they are about.

    uv run python bench/typed_questions.py [--no-analysis-search] [--show-misses 20]

Each row of bench/typed_questions.csv is a question ("second derivative through average pooling crashes")
and the errorMessage of the record it is about (one with an analysis written for it); the questions were
written after real issue titles of tracel-ai/burn and cubecl, in other words. Each is looked up as
`/panic QUESTION` is (`PanicLookup.lookup` on the embedded catalog). Top-1: the first match has the expected
message; top-3: one of the first three has. With `--no-analysis-search` the analyses' words are not searched
(`PanicLookup.prose_search = False`): message matching alone. Also printed: questions sharing a word of four
letters or more with their message (they should be few), how many were answered (`status == matched`), the
typed queries posted unasked (must be 0), and the mean and largest latency (the first question builds the
analysis index: its time is shown apart). Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.lookup import PanicLookup  # noqa: E402
from bot.prose_search import words  # noqa: E402
from bot.records import default_catalog  # noqa: E402

QUESTIONS = Path(__file__).with_name("typed_questions.csv")


def message_words(text: str) -> set[str]:
    return {word for word in words(re.sub(r"\{[^}]*\}", " ", text)) if len(word) >= 4}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-analysis-search", action="store_true", help="message matching alone")
    parser.add_argument(
        "--show-misses", type=int, default=0, help="print this many questions missed in top-3"
    )
    args = parser.parse_args()
    with QUESTIONS.open(newline="") as handle:
        rows = [(row["question"], row["errorMessage"]) for row in csv.DictReader(handle)]
    lookup = PanicLookup(default_catalog())
    lookup.prose_search = not args.no_analysis_search
    top1 = top3 = answered = auto = sharing = prose_first = 0
    latencies: list[float] = []
    misses: list[str] = []
    for question, expected in rows:
        sharing += bool(message_words(question) & message_words(expected))
        started = time.perf_counter()
        result = lookup.lookup(question)
        latencies.append((time.perf_counter() - started) * 1000)
        messages = [match.record.errorMessage for match in result.matches]
        top1 += messages[:1] == [expected]
        top3 += expected in messages[:3]
        prose = [
            m.record.errorMessage
            for m in result.matches
            if m.reasons[-1:] and m.reasons[-1].signal == "analysis"
        ]
        prose_first += prose[:1] == [expected]
        answered += result.best is not None
        auto += result.auto_reply
        if expected not in messages[:3] and len(misses) < args.show_misses:
            shown = " | ".join(message[:50] for message in messages[:3]) or "-"
            misses.append(f"  {question!r}\n    want {expected[:60]!r}\n    got  {shown}")
    count = len(rows)
    search = "off" if args.no_analysis_search else "on"
    print(f"typed questions: {count} ({len({e for _, e in rows})} records), analysis search {search}")
    print(f"  top-1 {top1}/{count} = {top1 / count:.1%}   top-3 {top3}/{count} = {top3 / count:.1%}")
    print(
        f"  the analysis search's own first hit is right: {prose_first}/{count} = {prose_first / count:.1%}"
    )
    print(f"  answered (a message match) {answered}; posted unasked {auto}; sharing a message word {sharing}")
    rest = latencies[1:] or latencies
    print(
        f"  latency: first {latencies[0]:.1f} ms; then mean {sum(rest) / len(rest):.2f} ms, "
        f"max {max(rest):.2f} ms"
    )
    for line in misses:
        print(line)


if __name__ == "__main__":
    main()
