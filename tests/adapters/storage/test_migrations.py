"""Migrations from an empty database, on SQLite and on a private PostgreSQL schema: every table, the head
revision, and no difference between the migrated schema and the models."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, inspect, text

from adapters.storage import upgrade_database
from adapters.storage.migrate import alembic_config
from adapters.storage.models import Base
from tests.adapters.storage.support import TABLES, database_unavailable, private_schema

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def assert_at_head_like_models(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection)
            assert context.get_current_revision() == HEAD
            assert set(TABLES) <= set(inspect(connection).get_table_names())
            # A model changed without a migration (or the reverse) shows up here.
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def table_names(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return set(inspect(connection).get_table_names())
    finally:
        engine.dispose()


def test_head_is_the_shared_logouts_revision() -> None:
    assert HEAD == "0004"


def test_a_database_at_0001_keeps_its_rows_and_gains_the_pasted_path_and_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade_database(url, "0001")
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO unmatched_panics (fingerprint, message, path, count, first_seen, "
                    "last_seen, last_platform) "
                    "VALUES ('f', 'boom', 'src/main.rs', 3, '2026-01-01', '2026-01-02', 'slack')"
                )
            )
        upgrade_database(url)
        assert_at_head_like_models(url)
        with engine.connect() as connection:
            row = connection.execute(
                text("SELECT message, count, raw_path, line FROM unmatched_panics")
            ).one()
        assert tuple(row) == ("boom", 3, None, None)
    finally:
        engine.dispose()


def test_sqlite_from_empty_to_head_twice_and_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade_database(url)
    assert_at_head_like_models(url)
    upgrade_database(url)  # start-up runs it every time: a database at head is left as it is
    assert_at_head_like_models(url)

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, "base")
    finally:
        engine.dispose()
    assert table_names(url) == {"alembic_version"}


def test_postgresql_from_empty_to_head(postgres_admin: Engine) -> None:
    with private_schema(postgres_admin) as url:
        assert table_names(url) == set()
        upgrade_database(url)
        assert_at_head_like_models(url)
        upgrade_database(url)
        assert_at_head_like_models(url)


def test_unreachable_database_skips_locally_and_fails_on_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        database_unavailable("no server")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        database_unavailable("no server")
