"""A logging handler that keeps every message as text: what a scenario's run logged, read afterwards."""

from __future__ import annotations

import logging


class LogLines(logging.Handler):
    """The messages logged to the loggers it is added to, at `level` or above, in order."""

    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__(level)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
