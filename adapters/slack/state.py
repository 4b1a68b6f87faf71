"""Slack-only state: the replies the bot posted, to follow edits and deletions of the paste they answer."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import redis

from adapters.shared_state import RedisKeyedMemory

# A paste edited or deleted a week after its auto-reply is left alone.
REPLY_TTL_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class PostedReply:
    channel: str
    ts: str
    record_id: str
    paste_digest: str = ""  # what the reply answered: an edit that keeps the text (an unfurl) changes nothing

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PostedReply:
        """Raises ValueError on data that is not a reply."""
        missing = [name for name in ("channel", "ts", "record_id") if name not in data]
        if missing:
            raise ValueError(f"a reply without {', '.join(missing)}")
        fields = {name: data[name] for name in ("channel", "ts", "record_id")}
        fields["paste_digest"] = data.get("paste_digest", "")
        if not all(isinstance(value, str) for value in fields.values()):
            raise ValueError("a reply's fields are strings")
        return cls(**fields)


def shared_slack_replies(client: redis.Redis, prefix: str) -> dict[str, Any]:
    """The part of `SlackState` that replicas share in Redis besides dedupe and cooldowns: the auto-replies,
    so an edit or deletion delivered to any replica updates or removes the card."""
    replies = RedisKeyedMemory(
        client, prefix, "reply", REPLY_TTL_SECONDS, PostedReply.to_json, PostedReply.from_json
    )
    return {"posted_replies": replies}
