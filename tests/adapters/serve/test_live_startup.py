"""Start-up against a database that accepts connections and never answers: it stops in bounded time, with one
line that names DATABASE_URL without its password, instead of hanging before /healthz ever answers."""

from __future__ import annotations

import time

import pytest

from adapters.serve.main import Service, ServiceError, ServiceSettings
from adapters.storage.engine import DEFAULT_CONNECT_TIMEOUT_SECONDS
from tests.adapters.storage.support import SECRET_PASSWORD, silent_database
from tests.adapters.storage.test_timeouts import outcome_within
from tests.support.local_only import isolate


def test_start_up_stops_in_bounded_time_when_the_database_never_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    isolate(
        monkeypatch, "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN", "PANICBOT_CATALOG", "REDIS_URL"
    )
    with silent_database() as url:
        settings = ServiceSettings(database_url=url, panicbot_http_port=0)  # type: ignore[arg-type]
        started = time.monotonic()
        error, _ = outcome_within(DEFAULT_CONNECT_TIMEOUT_SECONDS + 5, lambda: Service(settings, []))
        elapsed = time.monotonic() - started
    assert isinstance(error, ServiceError), repr(error)
    message = str(error)
    assert message.startswith(
        "DATABASE_URL: migrating the database failed on postgresql+psycopg://panicbot:***@"
    )
    assert "timeout" in message and "\n" not in message and SECRET_PASSWORD not in message
    assert elapsed < DEFAULT_CONNECT_TIMEOUT_SECONDS + 5
