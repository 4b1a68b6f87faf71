"""The GitHub outbox end to end: acknowledged deliveries survive a SIGTERM and a restart, answered once."""

from __future__ import annotations

import asyncio

import pytest

from tests.adapters.github.outbox_restart import restart_scenario


def test_300_acknowledged_mentions_survive_sigterm_and_are_answered_once_after_a_restart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Scaled down: a comment every 10 ms instead of every second, half a second of grace instead of 10.
    figures = asyncio.run(restart_scenario(monkeypatch, mentions=300, stop_after=40, spacing=0.01, grace=0.5))
    assert 40 <= figures.answered_before_stop < 300  # the stop came with most of them still owed
    # What was not answered stayed in the outbox, and the stop said so (by delivery id).
    assert figures.kept_at_stop == 300 - figures.answered_before_stop
    assert (figures.answered, figures.duplicates) == (300, 0)
