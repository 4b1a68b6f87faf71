"""Every connection has a connect and a statement timeout: a database that accepts and never answers, or a
statement stuck behind a lock, ends in one `StorageError` in bounded time, never a hang."""

from __future__ import annotations

import sqlite3
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine, text

from adapters.storage import SqlStore, StorageError, upgrade_database
from adapters.storage.engine import DEFAULT_CONNECT_TIMEOUT_SECONDS
from adapters.storage.migrate import MIGRATION_LOCK_KEY
from tests.adapters.storage.support import SECRET_PASSWORD, private_schema, silent_database

# The connect timeout, plus room for a slow shared machine (never the minutes a hang would take).
BOUND_SECONDS = DEFAULT_CONNECT_TIMEOUT_SECONDS + 5


def outcome_within(seconds: float, call: Callable[[], object]) -> tuple[BaseException | None, float]:
    """Run `call` in a thread; fail the test if it is still running after `seconds` (a hang)."""
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # the test inspects whatever came out
            result.append(exc)
        else:
            result.append(None)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    elapsed = time.monotonic() - started
    assert result, f"still waiting after {elapsed:.1f} s: no timeout bounds it"
    return result[0], elapsed


def assert_one_line_without_password(error: BaseException | None, action: str) -> str:
    assert isinstance(error, StorageError), repr(error)
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"{action} failed on postgresql+psycopg://panicbot:***@127.0.0.1:")
    assert "timeout" in message
    assert SECRET_PASSWORD not in "".join(traceback.format_exception(error))
    return message


def test_migrations_against_a_database_that_never_answers_fail_in_bounded_time() -> None:
    with silent_database() as url:
        error, elapsed = outcome_within(BOUND_SECONDS, lambda: upgrade_database(url))
    assert_one_line_without_password(error, "migrating the database")
    assert elapsed >= DEFAULT_CONNECT_TIMEOUT_SECONDS - 1  # it did wait for the timeout, not fail on sight


def test_the_store_against_a_database_that_never_answers_fails_in_bounded_time() -> None:
    with silent_database() as url:
        store = SqlStore(url, connect_timeout=1)
        error, _ = outcome_within(6, lambda: store.tally(record_id="r", platform="slack", place="m"))
    assert_one_line_without_password(error, "counting votes")


def test_postgres_connections_carry_the_statement_timeout(migrated_postgres_url: str) -> None:
    store = SqlStore(migrated_postgres_url, statement_timeout=2.5)
    with store, store.engine.connect() as connection:
        assert connection.execute(text("SHOW statement_timeout")).scalar() == "2500ms"
        # The URL's own options (the test schema's search_path) are kept beside it.
        assert connection.execute(text("SHOW search_path")).scalar_one().startswith("panicbot_test_")
    with SqlStore(migrated_postgres_url) as store, store.engine.connect() as connection:
        assert connection.execute(text("SHOW statement_timeout")).scalar() == "15s"


def test_a_migration_stuck_behind_the_lock_gives_up_after_its_statement_timeout(
    postgres_admin: Engine,
) -> None:
    # Another replica "migrating" a fresh database forever: it holds the migration lock and never lets go.
    with private_schema(postgres_admin) as fresh_url, postgres_admin.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        try:
            error, elapsed = outcome_within(10, lambda: upgrade_database(fresh_url, statement_timeout=1))
        finally:
            holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
    assert isinstance(error, StorageError), repr(error)
    assert "waiting for another replica's migration failed" in str(error)
    assert "statement timeout" in str(error)
    assert elapsed < 5


def test_a_sqlite_migration_stuck_behind_another_gives_up_after_its_statement_timeout(tmp_path: Path) -> None:
    holder = sqlite3.connect(tmp_path / "panicbot.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another replica migrating the new file, forever
    try:
        url = f"sqlite:///{tmp_path / 'panicbot.db'}"
        error, elapsed = outcome_within(5, lambda: upgrade_database(url, statement_timeout=0.5))
    finally:
        holder.close()
    assert isinstance(error, StorageError) and "database is locked" in str(error), repr(error)
    assert elapsed < 3


def test_sqlite_waits_for_a_lock_only_as_long_as_its_timeout(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'panicbot.db'}"
    upgrade_database(url)
    holder = sqlite3.connect(tmp_path / "panicbot.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, forever
    try:
        with SqlStore(url, statement_timeout=0.5) as store:
            vote = lambda: store.record_vote(  # noqa: E731
                record_id="r", user_id="u", vote="up", platform="slack", place="m"
            )
            error, elapsed = outcome_within(5, vote)
    finally:
        holder.close()
    assert isinstance(error, StorageError) and "database is locked" in str(error), repr(error)
    assert 0.4 <= elapsed < 3
