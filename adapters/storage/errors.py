"""`StorageError`, and turning a database exception into one without leaking the URL's password."""

from __future__ import annotations

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, SQLAlchemyError


class StorageError(Exception):
    """A database operation failed: the message says what was being done, where (password hidden) and why."""


def safe_location(url: URL) -> str:
    """The URL as it may appear in logs: the password replaced by `***`."""
    return url.render_as_string(hide_password=True)


def storage_error(action: str, url: URL, exc: SQLAlchemyError) -> StorageError:
    """One line: what failed, where, and the driver's own reason (its first line; the SQL is left out)."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = str(cause).strip().splitlines()
    detail = f"{type(cause).__name__}: {lines[0] if lines else 'no detail'}"
    if "no such table" in detail or "UndefinedTable" in detail:
        detail += " (was the database migrated? run upgrade_database at start-up)"
    # Drivers do not echo passwords, but a password could still turn up in a reason: never pass it on.
    if url.password:
        detail = detail.replace(str(url.password), "***")
    return StorageError(f"{action} failed on {safe_location(url)}: {detail}")
