"""Structured logs: one JSON object a line, with whatever context a handler gave (`extra=`)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

# How many items of a long list of problems a summary line shows, and how much of each.
SUMMARY_FIRST = 3
SUMMARY_ITEM_CHARS = 300

# LogRecord's own attributes: everything else on a record came from `extra=` and is context worth keeping.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, str | int | float | bool | type(None)) else str(value)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(fmt: str = "json", level: str = "INFO") -> None:
    """JSON lines for machines (the default in the service), plain text for a terminal."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The SDKs log request details at DEBUG; keep them at WARNING so no payload is ever written out.
    for noisy in ("slack_bolt", "slack_sdk", "discord", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def log_summary(
    logger: logging.Logger, level: int, what: str, items: Sequence[object], *, first: int = SUMMARY_FIRST
) -> None:
    """One line for a list of problems however long: `what` with their count, then the first few.

    A catalog with 88,726 duplicate ids once wrote 88,726 warnings (19.5 MB) a reload; the count is also in
    the record's `count` field for log queries.
    """
    if not items:
        return
    shown = "; ".join(_cut(str(item)) for item in items[:first])
    more = f"; and {len(items) - first} more" if len(items) > first else ""
    logger.log(level, "%d %s, first: %s%s", len(items), what, shown, more, extra={"count": len(items)})


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_ITEM_CHARS else text[: SUMMARY_ITEM_CHARS - 1] + "…"
