"""A logout on one replica ends the session on every replica: two services (two processes' worth of console,
one shared secret) on one database, or one Redis; and a session store that cannot be read refuses the
request rather than letting a logged-out cookie through."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.adapters.console.server import Running, running_console
from tests.adapters.console.test_pages import call, login
from tests.support.local_only import isolate
from tests.support.local_redis import answering_redis

SECRET = "one-secret-for-every-replica-" + "x" * 16
REDIS_URL = "redis://127.0.0.1:6379/0"


@contextmanager
def two_replicas(*, one_database: bool = True, **overrides: object) -> Iterator[tuple[Running, Running]]:
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        isolate(monkeypatch, "PANICBOT_CATALOG", "DATABASE_URL", "REDIS_URL", "PANICBOT_CONSOLE_TOKEN")
        folders = [Path(tempfile.mkdtemp(prefix="console-replica-")) for _ in range(2)]
        for folder in folders:
            stack.callback(shutil.rmtree, folder, ignore_errors=True)
        shared: dict[str, object] = {"panicbot_console_secret": SECRET, **overrides}
        if one_database:
            shared["database_url"] = f"sqlite:///{folders[0] / 'panicbot.db'}"
        first = stack.enter_context(running_console(folders[0], **shared))
        second = stack.enter_context(running_console(folders[1], **shared))
        yield first, second


def logged_out_everywhere(first: Running, second: Running) -> None:
    cookie, csrf = login(first)
    assert call(f"{second.base}/console/", cookie=cookie).status == 200  # one secret: valid on both
    assert call(f"{first.base}/console/logout", {"csrf": csrf}, cookie).status == 303
    for replica in (second, first):
        refused = call(f"{replica.base}/console/", cookie=cookie)
        assert refused.status == 302 and refused.headers["Location"].endswith("/console/login")
    # A new login works on both, and a logout on the second ends it on the first.
    cookie, csrf = login(first)
    assert call(f"{second.base}/console/logout", {"csrf": csrf}, cookie).status == 303
    assert call(f"{first.base}/console/", cookie=cookie).status == 302


def test_a_logout_on_one_replica_ends_the_session_on_the_other_through_the_database() -> None:
    with two_replicas() as (first, second):
        logged_out_everywhere(first, second)


def test_a_logout_on_one_replica_ends_the_session_on_the_other_through_redis() -> None:
    answering_redis(REDIS_URL).close()
    # Each replica on a database of its own: only Redis is shared.
    with two_replicas(one_database=False, redis_url=REDIS_URL) as (first, second):
        databases = {replica.service.settings.database_url.get_secret_value() for replica in (first, second)}
        assert len(databases) == 2
        logged_out_everywhere(first, second)


def test_sessions_that_cannot_be_checked_are_refused() -> None:
    with two_replicas() as (first, _):
        cookie, _csrf = login(first)
        store = first.service.store
        original = store.session_revoked

        def broken(nonce: str) -> bool:
            raise RuntimeError("database gone " + uuid.uuid4().hex)

        store.session_revoked = broken  # type: ignore[method-assign]
        try:
            reply = call(f"{first.base}/console/", cookie=cookie)
        finally:
            store.session_revoked = original  # type: ignore[method-assign]
        assert reply.status == 503 and "cannot check sessions" in reply.body
        assert call(f"{first.base}/console/", cookie=cookie).status == 200
