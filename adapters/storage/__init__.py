"""Persistence for the bot: votes, panics the data set cannot answer yet, and which records get matched.

`SqlStore` backs the adapters' `FeedbackStore` with SQLite or PostgreSQL; `upgrade_database` brings a
database to the current schema (Alembic migrations in `migrations/`). Run it at start-up, before the store.
"""

from adapters.storage.engine import missing_sqlite_file
from adapters.storage.errors import StorageError
from adapters.storage.migrate import upgrade_database
from adapters.storage.store import RecordVotes, Report, SqlStore, UnmatchedPanicSummary, panic_fingerprint

__all__ = [
    "RecordVotes",
    "Report",
    "SqlStore",
    "StorageError",
    "UnmatchedPanicSummary",
    "missing_sqlite_file",
    "panic_fingerprint",
    "upgrade_database",
]
