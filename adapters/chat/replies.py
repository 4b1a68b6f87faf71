"""Replies the bot posted unasked, remembered to follow the edits and deletion of the paste they answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis.asyncio

from adapters.redis_memory import RedisKeyedMemory

# A paste edited or deleted a week after its auto-reply is left alone.
REPLY_TTL_SECONDS = 7 * 24 * 3600
_FIELDS = ("channel", "ts", "record_id")  # as stored; "ts" is the reply's id (named after Slack's first)


@dataclass(frozen=True)
class PostedReply:
    """An unasked reply: its channel, its own id there (Slack's ts, Discord's message id), the record it
    shows, and a digest of the paste it answers (an edit that keeps the text, an unfurl, changes nothing)."""

    channel: str
    reply_id: str
    record_id: str
    paste_digest: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "ts": self.reply_id,
            "record_id": self.record_id,
            "paste_digest": self.paste_digest,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PostedReply:
        """Raises ValueError on data that is not a reply."""
        missing = [name for name in _FIELDS if name not in data]
        if missing:
            raise ValueError(f"a reply without {', '.join(missing)}")
        values = [data["channel"], data["ts"], data["record_id"], data.get("paste_digest", "")]
        if not all(isinstance(value, str) for value in values):
            raise ValueError("a reply's fields are strings")
        return cls(*values)


def shared_replies(client: redis.asyncio.Redis, prefix: str) -> dict[str, Any]:
    """The part of a chat state that replicas share in Redis besides dedupe and cooldowns: the unasked
    replies, so an edit or deletion delivered to any replica updates or removes the card."""
    replies = RedisKeyedMemory(
        client, prefix, "reply", REPLY_TTL_SECONDS, PostedReply.to_json, PostedReply.from_json
    )
    return {"posted_replies": replies}
