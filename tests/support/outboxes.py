"""Outboxes for tests: a migrated SQLite database of its own per call."""

from __future__ import annotations

import tempfile

from adapters.storage import upgrade_database
from adapters.storage.outbox import SqlOutbox


def sqlite_outbox(platform: str) -> SqlOutbox:
    """`platform`'s outbox in a new migrated SQLite database (outside the repository)."""
    url = f"sqlite:///{tempfile.mkdtemp(prefix=f'panicbot-{platform}-')}/panicbot.db"
    upgrade_database(url)
    return SqlOutbox(url, platform)
