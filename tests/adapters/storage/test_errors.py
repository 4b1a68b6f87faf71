"""Every database failure is one `StorageError` that says what failed and where, never the password."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.storage import SqlStore, StorageError, upgrade_database
from bot.lookup import PanicLookup
from bot.records import default_catalog
from tests.adapters.storage.support import SECRET_PASSWORD, UNREACHABLE_URL

LOOKUP = PanicLookup(default_catalog())
PASTE = "thread 'main' panicked at src/lib.rs:1:1:\nsomething nobody has written a record for\n"

CALLS: dict[str, Callable[[SqlStore], object]] = {
    "record_vote": lambda s: s.record_vote(
        record_id="r", user_id="u", vote="up", platform="slack", place="m"
    ),
    "vote_of": lambda s: s.vote_of(record_id="r", user_id="u", platform="slack"),
    "tally": lambda s: s.tally(record_id="r", platform="slack", place="m"),
    "record_lookup": lambda s: s.record_lookup(LOOKUP.lookup(PASTE), "slack"),
    "prune": lambda s: s.prune(30),
    "report": lambda s: s.report(5, ["r"]),
}


def full_text(error: BaseException) -> str:
    """The message and the whole traceback with its causes: what a log would show."""
    return "".join(traceback.format_exception(error))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_unreachable_database(name: str) -> None:
    store = SqlStore(UNREACHABLE_URL)
    with pytest.raises(StorageError) as caught:
        CALLS[name](store)
    message = str(caught.value)
    assert "127.0.0.1:1/panicbot" in message and "panicbot:***@" in message
    assert "failed" in message
    assert SECRET_PASSWORD not in full_text(caught.value)
    assert SECRET_PASSWORD not in repr(store)


def test_unreachable_database_when_migrating() -> None:
    with pytest.raises(StorageError, match="migrating the database failed") as caught:
        upgrade_database(UNREACHABLE_URL)
    assert SECRET_PASSWORD not in full_text(caught.value)


def test_unmigrated_database_says_so(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(StorageError, match="upgrade_database"):
        store.tally(record_id="r", platform="slack", place="m")


def test_unopenable_sqlite_file(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="recording a vote failed"):
        CALLS["record_vote"](SqlStore(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}"))


@pytest.mark.parametrize(
    "url",
    [
        "not a database url",
        f"nosuchdb://panicbot:{SECRET_PASSWORD}@host/db",
        f"postgresql+nosuchdriver://panicbot:{SECRET_PASSWORD}@host/db",
    ],
)
def test_bad_urls(url: str) -> None:
    for attempt in (lambda: SqlStore(url), lambda: upgrade_database(url)):
        with pytest.raises(StorageError, match="not a usable database URL") as caught:
            attempt()
        assert SECRET_PASSWORD not in full_text(caught.value)
