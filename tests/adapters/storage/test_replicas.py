"""Several replicas on one database: started together on a fresh one (SQLite file or PostgreSQL database),
they all come up and the schema is made once; every replica's votes and statistics are everyone's."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, create_engine, inspect, text

from adapters.storage import SqlStore, upgrade_database
from adapters.storage.migrate import Migration
from adapters.storage.models import Base
from bot.lookup import PanicLookup
from tests.adapters.serve.test_service import SEEDS
from tests.adapters.serve.test_startup_and_stop import (
    OTHER_PLATFORMS,
    SLACK_VARIABLES,
    closed_port,
    http_status,
)
from tests.adapters.slack.test_app import BOT_TOKEN, SIGNING_SECRET
from tests.adapters.storage.support import TABLES, private_schema, scratch_database
from tests.adapters.storage.test_migrations import HEAD
from tests.support.catalogs import seeds_catalog
from tests.support.local_only import PROXY_VARIABLES
from tests.support.replica_migration import join, migrate_with_the_others

ROOT = Path(__file__).resolve().parents[3]
REPLICAS = 4
AT_HEAD: tuple[str, ...] = (HEAD,) if HEAD else ()


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database nothing ever touched: a SQLite file not yet made, or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'panicbot.db'}"
        return
    admin: Engine = request.getfixturevalue("postgres_admin")
    with scratch_database(admin) as url:
        yield url


def assert_schema_once_at_head(url: str) -> None:
    """One revision row, at head, and the tables exactly as the models say."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [
                HEAD
            ]
            assert set(TABLES) <= set(inspect(connection).get_table_names())
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    finally:
        engine.dispose()


def test_replicas_migrating_at_the_same_moment_migrate_once(fresh_database: str) -> None:
    # Processes, as replicas are: Alembic keeps its running migration in module globals, so threads of one
    # process can never migrate side by side (without the lock they crash the interpreter).
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(REPLICAS)
    with ProcessPoolExecutor(REPLICAS, mp_context=spawn, initializer=join, initargs=(barrier,)) as pool:
        # Before, on SQLite: "table votes already exists" in all but one.
        results = list(pool.map(migrate_with_the_others, [fresh_database] * REPLICAS))
    assert [r.after for r in results] == [AT_HEAD] * REPLICAS
    assert [r for r in results if r.migrated] == [Migration(before=(), after=AT_HEAD)]  # one replica migrated
    assert_schema_once_at_head(fresh_database)
    with SqlStore(fresh_database) as store:  # the schema is complete and usable
        store.record_vote(record_id="r", user_id="U", vote="up", platform="slack", place="C/1")
        assert store.tally(record_id="r", platform="slack", place="C/1") == {"up": 1, "down": 0}


def test_a_replica_that_finds_the_schema_current_takes_no_lock(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'panicbot.db'}"
    upgrade_database(url)
    holder = create_engine(url)
    try:
        with holder.connect() as connection:
            connection.exec_driver_sql("BEGIN IMMEDIATE")  # a serving replica writing: the file is reserved
            began = time.monotonic()
            # Before: every start took the migration lock, and waited behind any writer.
            assert upgrade_database(url, statement_timeout=2) == Migration(AT_HEAD, AT_HEAD)
            assert time.monotonic() - began < 1.5
            connection.rollback()
    finally:
        holder.dispose()


@contextmanager
def replicas_started_together(
    database_url: str, ports: list[int], go: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`panicbot serve slack --http` once per port on one database, each through the real start-up path;
    their start-up begins when `go` is created. Slack's Web API is a closed port: /healthz answers, /readyz
    waits for Slack, which this does not need."""
    unset = (*SLACK_VARIABLES, *OTHER_PLATFORMS, *PROXY_VARIABLES, "REDIS_URL")
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(
        NO_PROXY="127.0.0.1",
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_API_URL=f"http://127.0.0.1:{closed_port()}/api/",
        PANICBOT_CATALOG=str(SEEDS),
        DATABASE_URL=database_url,
        PANICBOT_HTTP_HOST="127.0.0.1",
        PANICBOT_LOG_FORMAT="text",
        PANICBOT_CATALOG_WATCH_SECONDS="0",
        PANICBOT_SHUTDOWN_DRAIN_SECONDS="0",
    )
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.gated_start",
                str(go),
                "serve",
                "slack",
                "--http",
                "--port",
                str(port),
            ],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        for port in ports
    ]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def test_four_replicas_started_together_on_a_fresh_database_all_come_up(
    fresh_database: str, tmp_path: Path
) -> None:
    ports = [closed_port() for _ in range(REPLICAS)]
    go = tmp_path / "go"
    with replicas_started_together(fresh_database, ports, go) as processes:
        for process in processes:  # every replica has imported what it needs and waits for the go
            assert process.stdout is not None and process.stdout.readline() == b"waiting\n"
        go.touch()
        up: set[int] = set()
        deadline = time.monotonic() + 60
        while len(up) < REPLICAS and time.monotonic() < deadline:
            for port, process in zip(ports, processes, strict=True):
                if process.poll() is not None:
                    _, stderr = process.communicate()
                    # Before, on SQLite: exit 2, "table votes already exists".
                    pytest.fail(f"a replica exited {process.returncode}: {stderr.decode().strip()}")
                if port not in up and http_status(port, "/healthz") == b"HTTP/1.1 200":
                    up.add(port)
            time.sleep(0.05)
        assert len(up) == REPLICAS, f"{len(up)}/{REPLICAS} up"
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            _, stderr = process.communicate(timeout=60)
            assert process.returncode == 0, stderr.decode()
    assert_schema_once_at_head(fresh_database)


def test_two_replicas_share_votes_and_match_counts(postgres_admin: Engine) -> None:
    lookup = PanicLookup(seeds_catalog())
    with private_schema(postgres_admin) as url:
        upgrade_database(url)
        with SqlStore(url) as replica_a, SqlStore(url) as replica_b:
            replica_a.record_vote(record_id="8d1d2fa6df3880bd", user_id="U1", vote="up", platform="slack",
                                  place="C/1")  # fmt: skip
            replica_b.record_vote(record_id="8d1d2fa6df3880bd", user_id="U2", vote="down", platform="slack",
                                  place="C/1")  # fmt: skip
            replica_b.record_vote(record_id="8d1d2fa6df3880bd", user_id="U1", vote="down", platform="slack",
                                  place="C/1")  # fmt: skip  # U1 changes their mind on the other replica
            for replica in (replica_a, replica_b):
                assert replica.tally(record_id="8d1d2fa6df3880bd", platform="slack", place="C/1") == {
                    "up": 0,
                    "down": 2,
                }
            replica_a.record_lookup(lookup.lookup("avg pool 2d backward"), "slack")
            replica_b.record_lookup(lookup.lookup("avg pool 2d backward"), "discord")
            report = replica_a.report(limit=5, catalog_ids=[r.id for r in lookup.matcher.records])
            assert "8d1d2fa6df3880bd" not in report.never_matched
            assert report.most_downvoted[0].record_id == "8d1d2fa6df3880bd"
