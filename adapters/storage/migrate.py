"""Bring a database to the current schema with Alembic, from code: no alembic.ini to ship or find.

Replicas started together on a fresh database migrate it once: each takes the database's own lock before
upgrading (a PostgreSQL advisory lock; on SQLite an exclusive transaction, SQLite's lock on the file itself),
so one migrates while the others wait, then find the schema current and go on. A replica that finds the
schema already at the target revision takes no lock at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from adapters.storage.engine import DEFAULT_CONNECT_TIMEOUT_SECONDS, make_engine
from adapters.storage.errors import StorageError, storage_error

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
MIGRATION_LOCK_KEY = 0x70616E6963  # "panic": any fixed 64-bit number all replicas agree on
# Longer than the store's: a replica waits on the migration lock while another one migrates.
MIGRATION_STATEMENT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Migration:
    """What `upgrade_database` found and left: the database's revisions before and after (empty: none)."""

    before: tuple[str, ...]
    after: tuple[str, ...]

    @property
    def migrated(self) -> bool:
        return self.before != self.after


def alembic_config() -> Config:
    """The Alembic configuration, built in code; `script_location` is this package's migrations folder."""
    config = Config()
    # Config values go through configparser interpolation: a `%` in the path must be doubled.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    return config


def target_revisions(config: Config, revision: str) -> tuple[str, ...] | None:
    """The revisions `revision` names (`head`: the newest), sorted; None for a relative one (`+1`)."""
    try:
        scripts = ScriptDirectory.from_config(config).get_revisions(revision)
    except CommandError:
        return None
    return tuple(sorted(script.revision for script in scripts if script is not None))


def current_revisions(connection: Connection) -> tuple[str, ...]:
    """The revisions the database is at, sorted; empty for a database never migrated."""
    return tuple(sorted(MigrationContext.configure(connection).get_current_heads()))


def lock_for_migration(connection: Connection) -> None:
    """Wait (at most the statement timeout) until no other process migrates this database, and keep it so
    until `connection`'s transaction ends. Released with the transaction, even if this process dies."""
    dialect = connection.dialect.name
    if dialect == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
    elif dialect == "sqlite":
        # The driver begins no transaction before DDL: without this, two processes both see no tables and
        # both create them ("table votes already exists"). An exclusive transaction holds the file's lock
        # from here to the commit, so the migration is also all or nothing.
        connection.exec_driver_sql("BEGIN EXCLUSIVE")


def upgrade_database(
    url: str,
    revision: str = "head",
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
    statement_timeout: float = MIGRATION_STATEMENT_TIMEOUT_SECONDS,
) -> Migration:
    """Create or upgrade the tables at `url` (`sqlite:///path`, `postgresql+psycopg://...`) to `revision`.

    Safe to run at every start, by any number of replicas at once: an up-to-date database is left as it
    is, and one replica migrates while the others wait. Blocks while it runs, at most `connect_timeout`
    seconds to connect and `statement_timeout` per statement (the lock wait included), then raises
    `StorageError`.
    """
    try:
        parsed = make_url(url)
        engine = make_engine(parsed, connect_timeout=connect_timeout, statement_timeout=statement_timeout)
    except (ArgumentError, ImportError, ValueError) as exc:
        # Never echo the URL: it may hold a password.
        raise StorageError(f"not a usable database URL ({type(exc).__name__})") from None
    config = alembic_config()
    target = target_revisions(config, revision)
    try:
        with engine.connect() as connection:
            found = current_revisions(connection)
        if found == target:  # current: nothing to lock or run
            return Migration(found, found)
        with engine.begin() as connection:
            try:
                lock_for_migration(connection)
            except SQLAlchemyError as exc:
                raise storage_error("waiting for another replica's migration", parsed, exc) from exc
            before = current_revisions(connection)  # what the replica that held the lock left
            # env.py runs the migrations on this connection, so the URL never goes through configparser.
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
            after = current_revisions(connection)
    except SQLAlchemyError as exc:
        raise storage_error("migrating the database", parsed, exc) from exc
    finally:
        engine.dispose()
    return Migration(before, after)
