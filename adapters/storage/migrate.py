"""Bring a database to the current schema with Alembic, from code: no alembic.ini to ship or find."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from adapters.storage.engine import DEFAULT_CONNECT_TIMEOUT_SECONDS, make_engine
from adapters.storage.errors import StorageError, storage_error

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
MIGRATION_LOCK_KEY = 0x70616E6963  # "panic": any fixed 64-bit number all replicas agree on
# Longer than the store's: a replica waits on the migration lock while another one migrates.
MIGRATION_STATEMENT_TIMEOUT_SECONDS = 60


def alembic_config() -> Config:
    """The Alembic configuration, built in code; `script_location` is this package's migrations folder."""
    config = Config()
    # Config values go through configparser interpolation: a `%` in the path must be doubled.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    return config


def upgrade_database(
    url: str,
    revision: str = "head",
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
    statement_timeout: float = MIGRATION_STATEMENT_TIMEOUT_SECONDS,
) -> None:
    """Create or upgrade the tables at `url` (`sqlite:///path`, `postgresql+psycopg://...`) to `revision`.

    Safe to run at every start: an up-to-date database is left as it is. Blocks while it runs, at most
    `connect_timeout` seconds to connect and `statement_timeout` per statement (the lock wait included),
    then raises `StorageError`.
    """
    try:
        parsed = make_url(url)
        engine = make_engine(parsed, connect_timeout=connect_timeout, statement_timeout=statement_timeout)
    except (ArgumentError, ImportError, ValueError) as exc:
        # Never echo the URL: it may hold a password.
        raise StorageError(f"not a usable database URL ({type(exc).__name__})") from None
    config = alembic_config()
    try:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                # Replicas start together: one migrates, the others wait here, then find nothing to do.
                # A transaction-level lock is released with the transaction, even if this process dies.
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            # env.py runs the migrations on this connection, so the URL never goes through configparser.
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    except SQLAlchemyError as exc:
        raise storage_error("migrating the database", parsed, exc) from exc
    finally:
        engine.dispose()
