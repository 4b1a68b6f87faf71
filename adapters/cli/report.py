"""`panicbot report`: what the data set needs next, from what the bot has seen.

Panics nobody has a record for (write those records first: they are asked about most), records people voted
down (review their analysis), and records of the catalog never given as an answer (check their patterns).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from adapters.storage import Report, SqlStore, StorageError

EXIT_OK, EXIT_STORAGE = 0, 1
# Stored messages may be 2,000 characters; a table row shows the start, the JSON has all of it.
TABLE_MESSAGE_CHARS = 300


def report_json(report: Report) -> dict[str, Any]:
    """The `--json` shape: three lists, plus how many catalog records are unmatched in all."""
    return {
        "unmatched": [
            {
                "fingerprint": item.fingerprint,
                "message": item.message,
                "path": item.path,
                "count": item.count,
                "first_seen": item.first_seen.isoformat(),
                "last_seen": item.last_seen.isoformat(),
                "platform": item.platform,
            }
            for item in report.unmatched
        ],
        "most_downvoted": [
            {"record_id": item.record_id, "down": item.down, "up": item.up} for item in report.most_downvoted
        ],
        "never_matched": list(report.never_matched),
        "never_matched_total": report.never_matched_total,
    }


def run_report(
    store: SqlStore,
    catalog_ids: list[str],
    out: TextIO,
    *,
    as_json: bool,
    limit: int,
    err: TextIO | None = None,
) -> int:
    """Print the report (rich tables, or one JSON object). Exit 0; 1 when the database fails (the reason goes
    to `err`, default stderr)."""
    try:
        report = store.report(limit, catalog_ids)
    except StorageError as exc:
        print(f"panicbot: {exc}", file=err or sys.stderr)
        return EXIT_STORAGE
    if as_json:
        out.write(json.dumps(report_json(report), ensure_ascii=False) + "\n")
        return EXIT_OK
    console = Console(file=out, highlight=False)
    _print_unmatched(report, console)
    console.print()
    _print_downvoted(report, console)
    console.print()
    _print_never_matched(report, console)
    return EXIT_OK


def _print_unmatched(report: Report, console: Console) -> None:
    if not report.unmatched:
        console.print("No unmatched panics recorded: every pasted panic had a record.", markup=False)
        return
    # Cells are Text, never markup: a pasted message may hold `[bold]` or `[/]`.
    table = Table(
        title="Panics with no record, most frequent first: write these records", title_justify="left"
    )
    table.add_column("seen", justify="right")
    table.add_column("message")
    table.add_column("path")
    table.add_column("last seen")
    table.add_column("on")
    for item in report.unmatched:
        message = (
            item.message
            if len(item.message) <= TABLE_MESSAGE_CHARS
            else item.message[:TABLE_MESSAGE_CHARS] + "…"
        )
        table.add_row(
            Text(str(item.count)),
            Text(message),
            Text(item.path or "-"),
            Text(item.last_seen.strftime("%Y-%m-%d %H:%M")),
            Text(item.platform),
        )
    console.print(table)


def _print_downvoted(report: Report, console: Console) -> None:
    if not report.most_downvoted:
        console.print("No record has a 👎.", markup=False)
        return
    table = Table(title="Records voted down: review their analysis", title_justify="left")
    table.add_column("record")
    table.add_column("👎", justify="right")
    table.add_column("👍", justify="right")
    for item in report.most_downvoted:
        table.add_row(Text(item.record_id), Text(str(item.down)), Text(str(item.up)))
    console.print(table)


def _print_never_matched(report: Report, console: Console) -> None:
    if not report.catalog_size:
        return
    if not report.never_matched_total:
        console.print(f"Every one of the {report.catalog_size} catalog records was matched.", markup=False)
        return
    console.print(
        f"Catalog records never matched: {report.never_matched_total} of {report.catalog_size} "
        "(check their patterns, or whether anyone meets them)",
        markup=False,
    )
    for record_id in report.never_matched:
        console.print(f"  {record_id}", markup=False)
    hidden = report.never_matched_total - len(report.never_matched)
    if hidden:
        console.print(f"  … and {hidden} more (raise --limit to list them)", markup=False)
