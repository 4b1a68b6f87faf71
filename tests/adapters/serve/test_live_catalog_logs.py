"""Catalog problems are summarised in the logs: thousands of duplicate ids or bad lines are one line per load,
a count and the first few, not a line each (88,726 duplicates once wrote 19.5 MB a reload)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from adapters.serve.live_catalog import LiveLookup
from adapters.serve.logs import SUMMARY_FIRST

SEEDS = Path(__file__).resolve().parents[3] / "bot" / "data" / "default_catalog.jsonl"
COPIES = 5_000


def catalog_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "panicbot.catalog" and r.levelno >= logging.WARNING]


def test_thousands_of_duplicate_ids_are_one_summary_line_per_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = SEEDS.read_text(encoding="utf-8").splitlines()[0]
    catalog = tmp_path / "dupes.jsonl"
    catalog.write_text("\n".join([record] * COPIES) + "\n", encoding="utf-8")
    caplog.set_level(logging.INFO, logger="panicbot.catalog")

    live = LiveLookup([str(catalog)])
    assert live.reload() is True  # a catalog with duplicates still serves, and a reload reports them again

    lines = catalog_lines(caplog)
    assert len(lines) == 2, f"{len(lines)} warnings"  # one per load
    for line in lines:
        message = line.getMessage()
        assert f"{COPIES - 1} duplicate ids" in message
        assert message.count("duplicate id 5c5da46720dbbf10: replaces") == SUMMARY_FIRST
        assert f"and {COPIES - 1 - SUMMARY_FIRST} more" in message
        assert len(message) < 2_000
        assert getattr(line, "count", None) == COPIES - 1  # for log queries, beside the text


def test_many_bad_lines_at_start_up_are_one_summary_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = SEEDS.read_text(encoding="utf-8")
    catalog = tmp_path / "bad.jsonl"
    catalog.write_text(good + "{not json\n" * 500, encoding="utf-8")
    caplog.set_level(logging.INFO, logger="panicbot.catalog")

    LiveLookup([str(catalog)])  # at start-up the good records serve; the bad lines are reported

    lines = catalog_lines(caplog)
    assert len(lines) == 1, [r.getMessage()[:100] for r in lines]
    message = lines[0].getMessage()
    assert "500 problems" in message and f"{catalog}:4:" in message and "and 497 more" in message
