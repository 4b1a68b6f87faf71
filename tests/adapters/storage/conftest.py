"""Fixtures for storage tests: migrated SQLite files, a private PostgreSQL schema per run, a fake clock.

PostgreSQL is at `PANICBOT_TEST_POSTGRES_URL` (default: trust auth on 127.0.0.1:5432, database `test`).
When it is unreachable the PostgreSQL tests skip with the reason, and fail when `CI` is set.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from adapters.storage import SqlStore, upgrade_database
from tests.adapters.storage.support import (
    DEFAULT_POSTGRES_URL,
    POSTGRES_URL_ENV,
    TABLES,
    FakeClock,
    database_unavailable,
    private_schema,
)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file; each test gets a copy, which is faster than migrating again."""
    path = tmp_path_factory.mktemp("sqlite-template") / "panicbot.db"
    upgrade_database(f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, _sqlite_template: Path) -> str:
    path = tmp_path / "panicbot.db"
    shutil.copyfile(_sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Engine]:
    """An autocommit engine on the test database, or a skip (a failure on CI) when it is unreachable."""
    url = make_url(os.environ.get(POSTGRES_URL_ENV, DEFAULT_POSTGRES_URL))
    engine = create_engine(url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        engine.dispose()
        where = url.render_as_string(hide_password=True)
        reason = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc).__name__
        database_unavailable(f"PostgreSQL unreachable at {where} (set {POSTGRES_URL_ENV}): {reason}")
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def migrated_postgres_url(postgres_admin: Engine) -> Iterator[str]:
    """One migrated private schema for the whole run; `database_url` empties its tables before each test."""
    with private_schema(postgres_admin) as url:
        upgrade_database(url)
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A migrated, empty database of each kind."""
    if request.param == "sqlite":
        sqlite: str = request.getfixturevalue("sqlite_url")
        return sqlite
    url: str = request.getfixturevalue("migrated_postgres_url")
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(f"TRUNCATE {', '.join(TABLES)}"))
    finally:
        engine.dispose()
    return url


@pytest.fixture
def store(database_url: str, clock: FakeClock) -> Iterator[SqlStore]:
    with SqlStore(database_url, clock=clock) as opened:
        yield opened
