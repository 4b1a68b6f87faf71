"""`is_stale`: GitHub's `updated_at` decides whether an event is older than what was handled."""

from __future__ import annotations

from adapters.github.app import Handled, is_stale


def test_older_is_stale_newer_is_not() -> None:
    newest = Handled("2026-12-01T10:05:00Z", "b")
    assert is_stale(Handled("2026-12-01T10:00:00Z", "a"), newest)
    assert not is_stale(Handled("2026-12-01T10:06:00Z", "a"), newest)
    assert not is_stale(Handled("2026-12-01T10:00:00Z", "a"), None)
    # Offsets compare as times, not as text.
    assert is_stale(Handled("2026-12-01T12:04:00+02:00", "a"), newest)


def test_the_same_second_is_a_replay_only_for_the_same_text_or_after_a_deletion() -> None:
    newest = Handled("2026-12-01T10:05:00Z", "b")
    assert is_stale(Handled("2026-12-01T10:05:00Z", "b"), newest)
    assert not is_stale(Handled("2026-12-01T10:05:00Z", "c"), newest)  # two edits within one second
    assert is_stale(Handled("2026-12-01T10:05:00Z", "c"), Handled("2026-12-01T10:05:00Z", "b", deleted=True))


def test_an_unreadable_time_is_never_stale() -> None:
    assert not is_stale(Handled("yesterday", "a"), Handled("2026-12-01T10:05:00Z", "b"))
    assert not is_stale(Handled("2026-12-01T10:00:00", "a"), Handled("2026-12-01T10:05:00Z", "b"))
