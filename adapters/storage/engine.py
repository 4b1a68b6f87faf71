"""Engines for the store and the migrations, every connection with a connect and a statement timeout.

A database that accepts connections but never answers (a half-dead server, a firewall dropping replies, a
wrong port that happens to listen) must not hang start-up or a chat handler: each connection attempt gives up
after `connect_timeout` seconds and each statement after `statement_timeout` seconds. A timeout already given
in the URL's query (`?connect_timeout=...`, `statement_timeout` in `?options=...`, SQLite's `?timeout=...`) is
kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_CONNECT_TIMEOUT_SECONDS = 5
DEFAULT_STATEMENT_TIMEOUT_SECONDS = 30


def timeout_connect_args(
    url: URL,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
    statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """The driver's connect arguments that bound connecting and every statement on `url`'s database."""
    backend = url.get_backend_name()
    if backend == "postgresql":
        args: dict[str, Any] = {}
        if "connect_timeout" not in url.query:
            # libpq takes whole seconds; 0 would mean "wait forever".
            args["connect_timeout"] = max(1, round(connect_timeout))
        options = url.query.get("options", "")
        options = " ".join(options) if isinstance(options, tuple) else options
        if "statement_timeout" not in options:
            # Enforced by the server, so a statement stuck on a lock or a slow plan is cancelled there too.
            # Added to the URL's own options (a search_path, say), which connect_args would otherwise replace.
            timeout = f"-c statement_timeout={max(1, round(statement_timeout * 1000))}"
            args["options"] = f"{options} {timeout}".strip()
        return args
    if backend == "sqlite" and "timeout" not in url.query:
        # How long a statement waits for another connection's lock before "database is locked".
        return {"timeout": float(statement_timeout)}
    return {}


def make_engine(
    url: URL,
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
    statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
    **options: Any,
) -> Engine:
    """`create_engine` with the timeouts above merged under any `connect_args` the caller passes."""
    extra: Mapping[str, Any] = options.pop("connect_args", None) or {}
    connect_args = {**timeout_connect_args(url, connect_timeout, statement_timeout), **extra}
    return create_engine(url, connect_args=connect_args, **options)


def missing_sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names, when it does not exist (SQLite would create it, empty, on connecting);
    None for any other URL, an in-memory database, or one SQLAlchemy cannot read (its own error says why)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # a URI filename (`?uri=true`): SQLite's own syntax, left to it
        return None
    path = Path(database).absolute()
    return None if path.exists() else path
