"""A failing observer (the database is down) costs a statistic and a counted failure, never a reply."""

from __future__ import annotations

import logging

import pytest

from adapters.observe import Observers
from adapters.serve.metrics import Metrics
from bot.lookup import PanicLookup
from tests.support.catalogs import seeds_catalog


class BrokenStore:
    def looked_up(self, platform: str, result: object, seconds: float) -> None:
        raise ConnectionError("database unreachable")

    def auto_replied(self, platform: str, record_id: str) -> None:
        raise ConnectionError("database unreachable")

    def voted(self, platform: str, vote: str) -> None:
        raise ConnectionError("database unreachable")

    def api_error(self, platform: str, error: str) -> None:
        raise ConnectionError("database unreachable")


def test_a_failing_observer_is_counted_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    metrics = Metrics()
    failures: list[str] = []
    observers = Observers(BrokenStore(), metrics, on_failure=failures.append)
    result = PanicLookup(seeds_catalog()).lookup("avg pool 2d backward")
    with caplog.at_level(logging.WARNING, logger="panicbot.observe"):
        observers.looked_up("slack", result, 0.001)
        observers.voted("slack", "up")
    assert failures == ["BrokenStore", "BrokenStore"]
    text = metrics.exposition().decode()
    assert 'panicbot_lookups_total{platform="slack",status="matched"} 1.0' in text
    assert 'panicbot_feedback_votes_total{platform="slack",vote="up"} 1.0' in text
    assert "ConnectionError" in caplog.text and "Traceback" not in caplog.text
