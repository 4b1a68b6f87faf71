"""Slack-only state: the replies the bot posted (to follow edits and deletions) and recent lookups behind
the "More matches" button. Bounded and time-limited, like the shared pieces in `adapters.state`."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from adapters.state import Clock, ExpiringMap


@dataclass(frozen=True)
class PostedReply:
    channel: str
    ts: str
    record_id: str
    paste_digest: str = ""  # what the reply answered: an edit that keeps the text (an unfurl) changes nothing


class RecentLookups:
    """Recent queries (redacted) behind a short key, for buttons that need the query back ("More matches")."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._queries: ExpiringMap[str, str] = ExpiringMap(24 * 3600, 20_000, clock)

    def remember(self, query: str) -> str:
        key = secrets.token_urlsafe(9)
        self._queries.put(key, query)
        return key

    def recall(self, key: str) -> str | None:
        return self._queries.get(key)
