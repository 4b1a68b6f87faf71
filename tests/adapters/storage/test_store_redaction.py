"""Unmatched panics are stored through `redact`: no secret detect-secrets knows of, and no code point a
database refuses (a lone surrogate made PostgreSQL's insert fail, and the statistic with it)."""

from __future__ import annotations

from adapters.storage import SqlStore
from tests.adapters.storage.test_store import LOOKUP, UnmatchedPanic, everything_stored, rows

SECRETS = (
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "correct-horse-battery",
    "Zx9vQ2mN4pL7kR1t",
    "dXNlcjpwYXNzd29yZA==",
    "hunter2hunter2",
    "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8PDDfhmmrGqfmK3p6tQ9G",
)
SECRET_PASTE = (
    "thread 'main' panicked at src/config.rs:42:13:\n"
    "could not connect: aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY "
    "DB_PASSWORD=correct-horse-battery client_secret=Zx9vQ2mN4pL7kR1t "
    "Authorization: Basic dXNlcjpwYXNzd29yZA== password: hunter2hunter2 "
    "id_token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n"
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8PDDfhmmrGqfmK3p6tQ9G\n"
    "-----END RSA PRIVATE KEY-----\n"
)
SURROGATE_PASTE = (
    "thread 'main' panicked at src/codec.rs:7:9:\n"
    "invalid utf-16 in frame \ud800 (lone surrogate) \udfff and a NUL \x00 byte\n"
)


def test_secrets_in_an_unmatched_panic_are_not_stored(store: SqlStore) -> None:
    result = LOOKUP.lookup(SECRET_PASTE)
    assert result.status == "no_known_record"
    assert all(secret in SECRET_PASTE for secret in SECRETS)
    store.record_lookup(result, "slack")
    assert rows(store, UnmatchedPanic)
    dump = everything_stored(store)
    assert "[redacted]" in dump
    for secret in SECRETS:
        assert secret not in dump, secret


def test_a_lone_surrogate_in_a_paste_is_stored_without_it(store: SqlStore) -> None:
    result = LOOKUP.lookup(SURROGATE_PASTE)
    assert result.status == "no_known_record"
    assert "\ud800" in result.panics[0].message
    store.record_lookup(result, "discord")  # raised StorageError on PostgreSQL (and SQLite)
    [row] = rows(store, UnmatchedPanic)
    assert row["message"].startswith("invalid utf-16 in frame  (lone surrogate)  and a NUL  byte")
    row["message"].encode("utf-8")
    # Counted as the same panic next time.
    store.record_lookup(LOOKUP.lookup(SURROGATE_PASTE), "slack")
    [again] = rows(store, UnmatchedPanic)
    assert again["count"] == 2
