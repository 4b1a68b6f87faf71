"""What adapters report about their work (lookups, auto-replies, votes, API errors), to metrics and storage.

Adapters call one `Observer`; the service composes the real ones. An observer must never break a reply, so
`Observers` swallows and logs their failures.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from bot.matcher import LookupResult

log = logging.getLogger("panicbot.observe")


class Observer(Protocol):
    def looked_up(self, platform: str, result: LookupResult, seconds: float) -> None: ...

    def auto_replied(self, platform: str, record_id: str) -> None: ...

    def voted(self, platform: str, vote: str) -> None: ...

    def api_error(self, platform: str, error: str) -> None: ...


class Observers:
    """Several observers behind one; a failing observer is logged and skipped, never raised."""

    def __init__(self, *observers: Observer, on_failure: Callable[[str], None] | None = None) -> None:
        self.observers = list(observers)
        self._on_failure = on_failure

    def _each(self, method: str, *args: object) -> None:
        for observer in self.observers:
            try:
                getattr(observer, method)(*args)
            except Exception as exc:
                name = observer.__class__.__name__
                # One line, no traceback: a database outage would otherwise flood the log on every lookup.
                log.warning("observer %s.%s failed: %s", name, method, exc.__class__.__name__)
                if self._on_failure is not None:
                    self._on_failure(name)

    def looked_up(self, platform: str, result: LookupResult, seconds: float) -> None:
        self._each("looked_up", platform, result, seconds)

    def auto_replied(self, platform: str, record_id: str) -> None:
        self._each("auto_replied", platform, record_id)

    def voted(self, platform: str, vote: str) -> None:
        self._each("voted", platform, vote)

    def api_error(self, platform: str, error: str) -> None:
        self._each("api_error", platform, error)
