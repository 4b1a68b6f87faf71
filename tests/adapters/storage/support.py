"""Helpers shared by the storage and report tests: a settable clock, a private PostgreSQL schema, and the
skip-locally-fail-on-CI rule for a missing database."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NoReturn

import pytest
from sqlalchemy import Engine, text

POSTGRES_URL_ENV = "PANICBOT_TEST_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TABLES = ("votes", "unmatched_panics", "record_matches", "outbox", "outbox_lanes", "console_revoked")
# Nothing listens on port 1: connecting fails at once, and the password must never show in the error.
SECRET_PASSWORD = "Sup3r-Secret-Pw"
UNREACHABLE_URL = f"postgresql+psycopg://panicbot:{SECRET_PASSWORD}@127.0.0.1:1/panicbot"


def database_unavailable(reason: str) -> NoReturn:
    """Skip locally; fail on CI, where the database is part of the job and a skip would hide it."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass
class FakeClock:
    now: datetime = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@contextmanager
def private_schema(admin: Engine) -> Iterator[str]:
    """A new, uniquely named schema, dropped afterwards; yields a URL whose connections use it.

    The schema goes into libpq's `options` (search_path), so plain `upgrade_database(url)` and `SqlStore(url)`
    work in it and parallel runs on one server never see each other's tables.
    """
    schema = f"panicbot_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = admin.url.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


@contextmanager
def scratch_database(admin: Engine) -> Iterator[str]:
    """A new, empty, uniquely named database on `admin`'s server, dropped afterwards (connections still
    open to it are ended first); yields its URL."""
    name = f"panicbot_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def silent_database() -> Iterator[str]:
    """A PostgreSQL URL (with `SECRET_PASSWORD`) at a TCP server on 127.0.0.1 that accepts and never answers.

    Connecting succeeds at the TCP level and then waits for a reply that never comes: only a client-side
    timeout ends it. The sockets are closed afterwards, which also releases a client that had none.
    """
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, name="silent-database", daemon=True)
    thread.start()
    port = server.getsockname()[1]
    try:
        yield f"postgresql+psycopg://panicbot:{SECRET_PASSWORD}@127.0.0.1:{port}/panicbot"
    finally:
        done.set()
        thread.join(timeout=5)
        server.close()
        for connection in accepted:
            connection.close()
