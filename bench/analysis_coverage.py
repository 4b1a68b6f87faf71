"""Whose analysis the cards show: over the embedded catalog, and over panics really pasted in public issues.

    PYTHONPATH=. uv run python bench/analysis_coverage.py [--pastes /work/real_pastes.jsonl]
                                                          [--csv bench/real_pastes.csv]

(a) The embedded catalog (`bot.records.default_catalog()`): how many records a card shows with an analysis
    written for that record, with the analysis of its family (bot/families.py, bot/data/families.toml), or
    with none, as `PanicLookup.card` decides it (an analysis under review is not shown: it counts as none).
(b) The real pastes: `bench/real_pastes.csv` holds, per public issue/PR URL, the record a paste of that page
    should be answered with (facts only); the paste texts are other people's words and stay outside the
    repository, in a JSONL file of {"url", "text"} lines (default /work/real_pastes.jsonl, skipped when it
    is missing). The two are joined on the URL. An answer is right when the top match's errorMessage is the
    expected one (placeholders such as `{}` / `{id:?}` compared as equal: one message spelled by two
    releases) and its filePath is the expected one or one ends with the other's path (`burn-tensor/src/...`
    vs `crates/burn-tensor/src/...`); when no record is expected, the right answer is no answer. Among the
    right answers with a card, it prints the share with solutions and with an example fix, by analysis kind,
    then every wrong and unanswered paste.

(c) Needs no paste text: the records the CSV expects, by the analysis their card shows (the best of the
    records of that message and file, when several releases or files carry it).

Prints; writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.card import Card  # noqa: E402
from bot.lookup import PanicLookup  # noqa: E402
from bot.records import Record, default_catalog  # noqa: E402

DEFAULT_PASTES = Path("/work/real_pastes.jsonl")
DEFAULT_CSV = ROOT / "bench" / "real_pastes.csv"
KINDS = ("record", "family", "none")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def kind_of(analysis: str) -> str:
    """The kind of a card's `analysis`: "record", "family" (any "family:NAME") or "none"."""
    return "family" if analysis.startswith("family:") else analysis


def record_kind(service: PanicLookup, record: Record) -> tuple[str, str | None]:
    """What a card of `record` shows, as `PanicLookup.card` decides it: the kind and the family's name."""
    if record.has_analysis:
        return ("none", None) if record.id in service.under_review else ("record", None)
    family = service.family(record)
    return ("family", family.family) if family is not None else ("none", None)


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def catalog_table(service: PanicLookup) -> None:
    records = service.catalog.records
    total = len(records)
    kinds: Counter[str] = Counter()
    families: Counter[str] = Counter()
    by_repo: dict[str, Counter[str]] = {}
    under_review = 0
    for record in records:
        kind, family = record_kind(service, record)
        kinds[kind] += 1
        if family:
            families[family] += 1
        if record.has_analysis and record.id in service.under_review:
            under_review += 1
        by_repo.setdefault(record.repo or "?", Counter())[kind] += 1
    print(f"(a) Embedded catalog: {total:,} records, by the analysis their card shows")
    print(f"    {'analysis':<32} {'records':>8} {'share':>7}")
    labels = {"record": "written for the record", "family": "its family's", "none": "none"}
    for kind in KINDS:
        print(f"    {labels[kind]:<32} {kinds[kind]:>8,} {percent(kinds[kind], total):>7}")
    if under_review:
        print(f"    ({under_review} records have an analysis under review, not shown: counted as none)")
    print(f"\n    {'family':<32} {'records':>8} {'share':>7}")
    for family, count in families.most_common():
        print(f"    {family:<32} {count:>8,} {percent(count, total):>7}")
    print(f"\n    {'repository':<32} {'records':>8} {'record':>7} {'family':>7} {'none':>7}")
    for repo, counts in sorted(by_repo.items(), key=lambda item: -sum(item[1].values())):
        n = sum(counts.values())
        shares = " ".join(f"{percent(counts[kind], n):>7}" for kind in KINDS)
        print(f"    {repo:<32} {n:>8,} {shares}")


@dataclass(frozen=True)
class Expected:
    url: str
    message: str
    file: str
    note: str


def read_expected(path: Path) -> list[Expected]:
    with path.open(newline="", encoding="utf-8") as f:
        return [
            Expected(row["url"], row["expected_message"], row["expected_file"], row.get("note", ""))
            for row in csv.DictReader(f)
        ]


def read_pastes(path: Path) -> dict[str, str]:
    pastes = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                item = json.loads(line)
                pastes[str(item["url"])] = str(item["text"])
    return pastes


def same_message(got: str, want: str) -> bool:
    return PLACEHOLDER.sub("{}", got) == PLACEHOLDER.sub("{}", want)


def same_file(got: str, want: str) -> bool:
    """Equal, or one path ends with the other (the crates/ layout of later releases, a shorter tail)."""
    if got == want:
        return True
    if not got or not want:
        return False
    return got.endswith("/" + want) or want.endswith("/" + got)


@dataclass(frozen=True)
class Outcome:
    expected: Expected
    status: str
    got_message: str | None
    got_file: str | None
    card: Card | None

    @property
    def right(self) -> bool:
        if not self.expected.message:
            return self.status != "matched"
        return (
            self.status == "matched"
            and self.got_message is not None
            and same_message(self.got_message, self.expected.message)
            and same_file(self.got_file or "", self.expected.file)
        )


def answer(service: PanicLookup, expected: Expected, text: str) -> Outcome:
    result = service.lookup(text)
    best = result.best
    if result.status != "matched" or best is None:
        top = result.matches[0].record if result.matches else None
        return Outcome(
            expected, result.status, top.errorMessage if top else None, top.filePath if top else None, None
        )
    return Outcome(
        expected, result.status, best.record.errorMessage, best.record.filePath, service.card(result)
    )


def one_line(text: str, width: int = 110) -> str:
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def pastes_table(service: PanicLookup, csv_path: Path, pastes_path: Path) -> None:
    expected = read_expected(csv_path)
    pastes = read_pastes(pastes_path)
    missing = [e.url for e in expected if e.url not in pastes]
    outcomes = [answer(service, e, pastes[e.url]) for e in expected if e.url in pastes]
    n = len(outcomes)
    print(f"\n(b) Real pastes: {n} of {len(expected)} rows of {csv_path.name} found in {pastes_path}")
    if missing:
        more = " ..." if len(missing) > 5 else ""
        print(f"    {len(missing)} rows have no paste text: {', '.join(missing[:5])}{more}")
    if not n:
        return
    hosts = Counter("/".join(o.expected.url.split("/")[3:5]) for o in outcomes)
    print("    from " + ", ".join(f"{repo} {count}" for repo, count in hosts.most_common()))
    right = [o for o in outcomes if o.right]
    no_record = [o for o in outcomes if not o.expected.message]
    print(f"    right answers: {len(right)}/{n} ({percent(len(right), n).strip()})", end="")
    print(f"; {len(no_record)} pastes expect no record ({sum(o.right for o in no_record)} right)")
    strict = sum(
        o.right and o.got_message == o.expected.message for o in outcomes if o.expected.message
    ) + sum(o.right for o in no_record)
    if strict != len(right):
        print(f"    ({len(right) - strict} right only with placeholders compared as equal)")

    cards = [o.card for o in right if o.card is not None]
    print(f"\n    right answers with a card: {len(cards)}, by the analysis the card shows")
    print(f"    {'analysis':<10} {'answers':>8} {'solutions':>10} {'example fix':>12} {'both':>7}")
    for kind in (*KINDS, "all"):
        group = [c for c in cards if kind == "all" or kind_of(c.analysis) == kind]
        sol = sum(bool(c.solutions) for c in group)
        fix = sum(bool(c.example_fix) for c in group)
        both = sum(bool(c.solutions and c.example_fix) for c in group)
        m = len(group)
        print(f"    {kind:<10} {m:>8} {percent(sol, m):>10} {percent(fix, m):>12} {percent(both, m):>7}")
    families = Counter(c.analysis.removeprefix("family:") for c in cards if c.analysis.startswith("family:"))
    if families:
        print("    families: " + ", ".join(f"{name} {count}" for name, count in families.most_common()))

    wrong = [o for o in outcomes if not o.right and o.status == "matched"]
    unanswered = [o for o in outcomes if not o.right and o.status != "matched"]
    for title, misses in (("Wrong answers", wrong), ("Unanswered (no known record)", unanswered)):
        print(f"\n    {title}: {len(misses)}")
        for o in misses:
            want = (
                f"{o.expected.message!r} @ {o.expected.file or '-'}" if o.expected.message else "(no record)"
            )
            got = f"{o.got_message!r} @ {o.got_file or '-'}" if o.got_message is not None else "(nothing)"
            label = "got" if o.status == "matched" else "best candidate"
            print(f"    - {o.expected.url}")
            print(f"        expected: {one_line(want)}")
            print(f"        {label}: {one_line(got)}")


def expected_records_table(service: PanicLookup, csv_path: Path) -> None:
    """(c) Without the paste texts: the records real_pastes.csv expects (message and file, as `right`
    compares them), by the analysis their card shows. What a user reads once the paste is answered right."""
    rows = [e for e in read_expected(csv_path) if e.message]
    kinds: Counter[str] = Counter()
    unknown = []
    for row in rows:
        found = [
            record
            for record in service.catalog.records
            if same_message(record.errorMessage, row.message) and same_file(record.filePath or "", row.file)
        ]
        if not found:
            unknown.append(row.url)
            continue
        # One message at several sites (releases, files): the best card any of them shows.
        shown = {record_kind(service, record)[0] for record in found}
        kinds[next(kind for kind in KINDS if kind in shown)] += 1
    n = len(rows)
    print(f"\n(c) The records that {n} rows of {csv_path.name} expect, by the analysis their card shows")
    for kind in KINDS:
        print(f"    {kind:<10} {kinds[kind]:>4} {percent(kinds[kind], n):>7}")
    if unknown:
        print(f"    {len(unknown)} expected records are not in the catalog: {', '.join(unknown[:5])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--pastes", type=Path, default=None, help=f"{{url, text}} JSONL (default {DEFAULT_PASTES})"
    )
    parser.add_argument(
        "--csv", type=Path, default=DEFAULT_CSV, help="expected answers (default bench/real_pastes.csv)"
    )
    args = parser.parse_args()
    service = PanicLookup(default_catalog())
    catalog_table(service)
    expected_records_table(service, args.csv)
    pastes = args.pastes if args.pastes is not None else DEFAULT_PASTES
    if not pastes.exists():
        print(f"\n(b) Real pastes: {pastes} is missing; skipped (the texts are not in the repository)")
        return 0
    pastes_table(service, args.csv, pastes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
